"""A figure against servers N (issue 53: "the store records the family and the scaling so a
report can draw vs N"): a panel per value of the swept axis, x = the systems' N, a curve per
policy, and per family when the grid has several; from the committed store (dispatchlab
report) and from a notebook sweep (dl.plot)."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import matplotlib.pyplot as plt
import pandas as pd
import pytest

import dispatchlab as dl
from dispatchlab.core.errors import ValidationError
from dispatchlab.experiments.store import Store
from dispatchlab.report.plots import draw_figure, summarize
from dispatchlab.specs.experiment import ExperimentSpec
from dispatchlab.specs.figure import FigureSpec, ReferenceLine
from dispatchlab.specs.run import PolicySpec, SystemSpec

STORE = Path(__file__).resolve().parents[2] / "results" / "reproductions" / "store.sqlite"


def _stored(experiment: str):
    with Store(STORE, readonly=True) as store:
        return (ExperimentSpec.from_json(store.experiment_spec(experiment)),
                store.frame(experiment))


def _curves(fig) -> dict[str, dict[str, list[tuple[float, float]]]]:
    """panel title → legend label → the drawn (x, y), from the figure's own lines."""
    labels = {id(handle): text.get_text()
              for handle, text in zip(fig.legends[0].legend_handles,
                                      fig.legends[0].get_texts(), strict=True)}
    drawn: dict[str, dict[str, list[tuple[float, float]]]] = {}
    for ax in fig.axes:
        for line in ax.get_lines():
            colour = line.get_color()
            label = next((labels[id(h)] for h in fig.legends[0].legend_handles
                          if getattr(h, "get_color", lambda: None)() == colour
                          and h.get_marker() == "o"), None)
            if label is not None and line.get_marker() == "o":
                drawn.setdefault(ax.get_title(), {})[label] = list(
                    zip(line.get_xdata(), line.get_ydata(), strict=True))
    return drawn


def test_the_halfin_whitt_waiting_probability_against_n() -> None:
    spec, frame = _stored("halfin-whitt")
    figure = FigureSpec("wait-vs-n", x="servers", y="waiting_probability", log_x=True)
    spec = replace(spec, figures=(figure,))
    spec.validate()
    fig = draw_figure(figure, frame, spec)
    try:
        drawn = _curves(fig)
        assert list(drawn) == ["β = 0.5", "β = 1", "β = 2"]
        assert [ax.get_xlabel() for ax in fig.axes] == ["servers N"] * 3
        jiq = drawn["β = 1"]["JIQ"]
        assert [x for x, _ in jiq] == [100, 1000, 10_000]
        for n, y in jiq:  # the mean of the stored replications at (β = 1, N, JIQ)
            rows = frame[(frame["x"] == 1.0) & (frame["system.n_servers"] == n)
                         & (frame["policy_label"] == "JIQ")]
            assert len(rows) == 4 and y == pytest.approx(rows["waiting_probability"].mean())
        # the claim the figure shows: JIQ's waiting probability falls as N grows, Po-2's rises
        assert jiq[0][1] > jiq[-1][1]
        assert drawn["β = 1"]["Po-2"][0][1] < drawn["β = 1"]["Po-2"][-1][1]
    finally:
        plt.close(fig)


def test_two_families_get_a_curve_each_and_a_selection_keeps_its_labels() -> None:
    spec, frame = _stored("large-system")
    figure = FigureSpec("queue-vs-n", x="servers", y="waiting_probability", log_x=True,
                        policies=("JSQ", "JIQ"), references=(ReferenceLine("zero", value=0),))
    spec = replace(spec, figures=(figure,))
    spec.validate()
    fig = draw_figure(figure, frame, spec)
    try:
        drawn = _curves(fig)
        assert list(drawn) == ["ρ = 0.9", "ρ = 0.95"]
        assert set(drawn["ρ = 0.9"]) == {"JSQ · M = 10", "JSQ · M = N/100", "JIQ · M = 10",
                                         "JIQ · M = N/100"}
        # N = 1000 with M = 10 is in both families, stored once, under the first's label
        assert [x for x, _ in drawn["ρ = 0.95"]["JIQ · M = 10"]] == [100, 1000, 10_000]
        assert [x for x, _ in drawn["ρ = 0.95"]["JIQ · M = N/100"]] == [100, 10_000]
    finally:
        plt.close(fig)


def test_the_mean_queue_per_server_is_each_points_queue_over_its_n() -> None:
    """E[ΣQ]/N (``queue_per_server``), the herd figure's y: the mean over replications of
    each run's E[ΣQ] divided by its N, with a single run's CI scaled the same way."""
    spec, frame = _stored("large-system")
    figure = FigureSpec("per-server", x="servers", y="queue_per_server", log_x=True,
                        policies=("JSQ",))
    spec = replace(spec, figures=(figure,))
    fig = draw_figure(figure, frame, spec)
    try:
        drawn = _curves(fig)["ρ = 0.95"]["JSQ · M = N/100"]
        assert [x for x, _ in drawn] == [100, 10_000]
        for n, y in drawn:
            rows = frame[(frame["x"] == 0.95) & (frame["system.n_servers"] == n)
                         & (frame["policy_label"] == "JSQ") & (frame["family"] == "M = N/100")]
            assert y == pytest.approx((rows["mean_total_queue"] / n).mean())
    finally:
        plt.close(fig)
    one = frame[frame["policy_label"] == "JSQ"].iloc[:1].copy()
    summary = summarize(one, figure)
    n, mean = float(one["system.n_servers"].iloc[0]), float(one["mean_total_queue"].iloc[0])
    assert summary["y"].iloc[0] == pytest.approx(mean / n)
    if pd.notna(one["ci_low"].iloc[0]):
        assert summary["ci_low"].iloc[0] == pytest.approx(float(one["ci_low"].iloc[0]) / n)


def test_the_jobs_waiting_per_server_is_the_queue_per_server_less_rho_times_one_minus_mu(
        ) -> None:
    """``jobs_waiting_per_server`` (docs/statistics.md#jobs-waiting): each Halfin–Whitt
    point's E[ΣQ]/N − ρ(1 − μ), and a single run's E[ΣQ] interval carried through it."""
    spec, frame = _stored("halfin-whitt")
    figure = FigureSpec("waiting-jobs", x="servers", y="jobs_waiting_per_server", log_x=True,
                        policies=("JIQ",))
    rows = frame[frame["policy_label"] == "JIQ"]
    summary = summarize(rows, figure)
    for _, cell in summary.iterrows():
        chosen = rows[(rows["x"] == cell["x"]) & (rows["system"] == cell["system"])]
        expected = (chosen["mean_total_queue"] / chosen["system.n_servers"]
                    - chosen["system.load"] * 0.9).mean()
        assert cell["y"] == pytest.approx(expected)
    one = rows.iloc[:1].copy()
    one["ci_low"], one["ci_high"] = one["mean_total_queue"] - 50, one["mean_total_queue"] + 50
    cell = summarize(one, figure).iloc[0]
    n = float(one["system.n_servers"].iloc[0])
    assert (cell["ci_high"] - cell["y"], cell["y"] - cell["ci_low"]) == pytest.approx(
        (50 / n, 50 / n))


@pytest.mark.parametrize("figure, message", [
    (FigureSpec("q", x="servers", references=(ReferenceLine("ζ/2",
                                                            field="heavy_traffic_limit"),)),
     "constant"),
    (FigureSpec("q", x="nodes"), "servers"),
])
def test_a_bad_servers_figure_is_one_line(figure: FigureSpec, message: str) -> None:
    spec, _ = _stored("halfin-whitt")
    with pytest.raises(ValidationError, match=message):
        replace(spec, figures=(figure,)).validate()


def test_a_grid_of_one_size_has_no_servers_axis() -> None:
    spec = ExperimentSpec("one-size", systems=(SystemSpec("4x0.5"), SystemSpec("2x0.2,2x0.8")),
                          policies=(PolicySpec("jsq"),), loads=(0.5,),
                          figures=(FigureSpec("q", x="servers"),))
    with pytest.raises(ValidationError, match=r"at least two sizes .*N = \[4\]"):
        spec.validate()


def test_a_notebook_sweep_of_a_family_is_drawn_against_n(frame_of_a_family) -> None:
    fig = dl.plot(frame_of_a_family, x="servers", y="mean_total_queue", log_x=True)
    try:
        assert [ax.get_title() for ax in fig.axes] == ["ρ = 0.5", "ρ = 0.8"]
        for ax, load in zip(fig.axes, (0.5, 0.8), strict=True):
            lines = {text.get_text(): line for text, line in zip(
                ax.get_legend().get_texts(), ax.get_legend().legend_handles, strict=True)}
            assert set(lines) == {"JSQ", "random"}
            drawn = next(line for line in ax.get_lines()
                         if line.get_color() == lines["JSQ"].get_color())
            assert list(drawn.get_xdata()) == [4, 16]
            rows = frame_of_a_family[(frame_of_a_family["x"] == load)
                                     & (frame_of_a_family["policy_label"] == "JSQ")
                                     & (frame_of_a_family["system.n_servers"] == 16)]
            assert drawn.get_ydata()[-1] == pytest.approx(rows["mean_total_queue"].mean())
    finally:
        plt.close(fig)
    fig = dl.plot(frame_of_a_family, x="servers", y="queue_per_server", log_x=True)
    try:  # E[ΣQ]/N from a notebook sweep as from the store
        ax = fig.axes[1]
        lines = {text.get_text(): line for text, line in zip(
            ax.get_legend().get_texts(), ax.get_legend().legend_handles, strict=True)}
        drawn = next(line for line in ax.get_lines()
                     if line.get_color() == lines["JSQ"].get_color())
        rows = frame_of_a_family[(frame_of_a_family["x"] == 0.8)
                                 & (frame_of_a_family["policy_label"] == "JSQ")
                                 & (frame_of_a_family["system.n_servers"] == 16)]
        assert drawn.get_ydata()[-1] == pytest.approx((rows["mean_total_queue"] / 16).mean())
        assert ax.figure.axes[0].get_ylabel() == "E[ΣQ]/N"
    finally:
        plt.close(fig)
    fig = dl.plot(frame_of_a_family, x="servers", y="jobs_waiting_per_server", log_x=True)
    try:  # the jobs waiting per server from a notebook sweep too (one rate: 0.5)
        rows = frame_of_a_family[(frame_of_a_family["x"] == 0.8)
                                 & (frame_of_a_family["policy_label"] == "JSQ")
                                 & (frame_of_a_family["system.n_servers"] == 16)]
        expected = (rows["mean_total_queue"] / 16 - 0.8 * (1 - 0.5)).mean()
        assert any(line.get_ydata()[-1] == pytest.approx(expected)
                   for line in fig.axes[1].get_lines() if len(line.get_ydata()))
    finally:
        plt.close(fig)
    with pytest.raises(ValidationError, match="Bernoulli service of one rate"):
        dl.plot(frame_of_a_family.assign(**{"system.service": "geometric"}),
                y="jobs_waiting_per_server")
    with pytest.raises(ValidationError, match="queue_per_server"):  # no N to divide by
        dl.plot(frame_of_a_family.drop(columns=["system.n_servers"]), y="queue_per_server")
    one_size = frame_of_a_family[frame_of_a_family["system.n_servers"] == 4]
    with pytest.raises(ValidationError, match="two sizes"):
        dl.plot(one_size, x="servers")
    with pytest.raises(ValidationError, match="two sizes"):  # a frame not from dl.sweep
        dl.plot(frame_of_a_family.drop(columns=["family"]), x="servers")


@pytest.fixture(scope="module")
def frame_of_a_family():
    family = dl.SystemFamily("1x0.5", (4, 16), dispatchers=2, label="halves")
    return dl.sweep(family, {"JSQ": "jsq", "random": "rand"}, load=[0.5, 0.8], slots=2_000,
                    replications=2, workers=1)


SWEEP = """name = "vs-n"
loads = [0.5, 0.8]
slots = 2000
replications = 2
[[families]]
classes = "0.5x0.2,0.5x0.8"
sizes = [4, 16]
dispatchers = 2
label = "halves"
[[policies]]
name = "jsq"
[[policies]]
name = "rand"
[[figures]]
name = "queue-vs-n"
x = "servers"
y = "mean_total_queue"
log_x = true
[[figures.references]]
label = "one"
value = 1.0
"""


def test_a_sweep_file_draws_against_n_from_the_command_line(tmp_path: Path, capsys) -> None:
    from dispatchlab.cli import main

    spec = tmp_path / "vs-n.toml"
    spec.write_text(SWEEP, encoding="utf-8")
    out = tmp_path / "out"
    assert main(["sweep", str(spec), "--store", str(tmp_path / "s.sqlite"), "--workers", "1",
                 "--no-progress", "--out", str(out)]) == 0
    assert (out / "queue-vs-n.png").stat().st_size > 10_000
    bad = tmp_path / "bad.toml"
    bad.write_text(SWEEP.replace('value = 1.0', 'field = "heavy_traffic_limit"'),
                   encoding="utf-8")
    capsys.readouterr()
    assert main(["sweep", str(bad), "--store", str(tmp_path / "s.sqlite")]) == 2
    err = capsys.readouterr().err
    assert "figures[0].references[0]" in err and "constant" in err and "Traceback" not in err
