"""Figures and the HTML report: drawn from the store, and rendered by headless Chromium."""

from __future__ import annotations

import math
import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest

from dispatchlab.cli import main
from dispatchlab.experiments.store import Store
from dispatchlab.report.plots import reference_curve, summarize
from dispatchlab.specs.experiment import ExperimentSpec
from dispatchlab.specs.figure import FigureSpec, ReferenceLine
from dispatchlab.specs.run import PolicySpec, SystemSpec
from dispatchlab.theory.bounds import heavy_traffic_limit

BROWSERS = ("chromium", "chromium-browser", "google-chrome")
CHROMIUM_FLAGS = ("--headless", "--no-sandbox", "--disable-gpu", "--disable-quic",
                  "--no-first-run", "--disable-background-networking",
                  "--disable-component-update", "--disable-sync")
INSTALL_ENV = "DISPATCHLAB_INSTALL_BROWSER"


def report_spec() -> ExperimentSpec:
    return ExperimentSpec(
        "report-test", systems=(SystemSpec("4x0.5", dispatchers=2),),
        policies=(PolicySpec("jsq", label="JSQ"), PolicySpec("rand", label="random")),
        epsilons=(0.4, 0.8), replications=2, slots=6_000, seed=5,
        figures=(
            FigureSpec("eps-queue", x="epsilon", y="epsilon_total_queue", log_x=True,
                       references=(ReferenceLine("ζ/2", field="heavy_traffic_limit"),
                                   ReferenceLine("ζ/2 (function)",
                                                 function=heavy_traffic_limit, style=":"))),
            FigureSpec("delay", x="epsilon", y="mean_delay", log_y=True),
        ),
        title="Report test", paper="none (a test)")


@pytest.fixture(scope="module")
def stored(tmp_path_factory) -> Path:
    from dispatchlab.experiments.runner import run_experiment

    path = tmp_path_factory.mktemp("report") / "store.sqlite"
    run_experiment(report_spec(), store=path, workers=2)
    return path


def test_summary_combines_replications_and_scales_the_ci(stored):
    spec = report_spec()
    with Store(stored) as store:
        frame = store.frame(spec.name)
    summary = summarize(frame, spec.figures[0])
    assert len(summary) == 4 and (summary["replications"] == 2).all()
    for row in summary.itertuples():
        rows = frame[(frame["policy_label"] == row.policy) & (frame["x"] == row.x)]
        assert math.isclose(row.y, rows["epsilon_total_queue"].mean())
        assert row.ci_low < row.y < row.ci_high
    single = summarize(frame[frame["replication"] == 0], spec.figures[1])
    for row in single.itertuples():  # one replication: the run's own CI, carried to delay
        source = frame[(frame["policy_label"] == row.policy) & (frame["x"] == row.x)
                       & (frame["replication"] == 0)].iloc[0]
        factor = source["mean_delay"] / source["mean_total_queue"]
        assert math.isclose(row.ci_low, source["ci_low"] * factor)
    xs, ys = reference_curve(spec.figures[0].references[0], frame, spec, spec.systems[0].name)
    _, from_function = reference_curve(spec.figures[0].references[1], frame, spec,
                                       spec.systems[0].name)
    assert list(xs) == [0.4, 0.8] and ys == pytest.approx(from_function)


def test_report_writes_png_svg_and_a_self_contained_page(stored, tmp_path):
    out = tmp_path / "out"
    assert main(["report", "report-test", "--store", str(stored), "--out", str(out)]) == 0
    for name in ("eps-queue", "delay"):
        assert (out / f"{name}.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
        assert "<svg" in (out / f"{name}.svg").read_text()
    page = (out / "index.html").read_text()
    assert page.count("src='data:image/png;base64,") == 2
    assert "dispatchlab sweep spec.json" in page and "numba" in page
    assert '"name": "report-test"' in page  # the spec
    assert not re.search(r"src=['\"](?!data:)", page)  # nothing loaded from outside
    again = ExperimentSpec.from_json((out / "spec.json").read_text())
    assert again.to_dict() == report_spec().to_dict()
    assert main(["report", "never-stored", "--store", str(stored), "--out", str(out)]) == 2


def _find_browser() -> str | None:
    for name in BROWSERS:
        found = shutil.which(name)
        if found:
            return found
    allowed = os.environ.get(INSTALL_ENV) == "1" or (
        os.environ.get("CI") == "true" and hasattr(os, "geteuid") and os.geteuid() == 0)
    if allowed and shutil.which("apt-get"):
        subprocess.run(["apt-get", "install", "-y", "chromium"], capture_output=True,
                       timeout=900, check=False)
        return shutil.which("chromium")
    return None


_PROBE = """<script>
window.addEventListener('load', () => {
  const images = Array.from(document.images);
  const decoded = images.filter(i => i.complete && i.naturalWidth > 0).length;
  const probe = document.createElement('div');
  probe.id = 'render-probe';
  probe.textContent = 'decoded ' + decoded + ' of ' + images.length;
  document.body.appendChild(probe);
});
</script></body>"""


@pytest.mark.browser
def test_report_renders_in_headless_chromium(stored, tmp_path):
    browser = _find_browser()
    if browser is None:
        pytest.skip(f"no Chromium ({', '.join(BROWSERS)}) on PATH; set {INSTALL_ENV}=1 "
                    "(or CI=true as root) to let this test apt-get install chromium")
    out = tmp_path / "out"
    assert main(["report", "report-test", "--store", str(stored), "--out", str(out)]) == 0
    page = (out / "index.html").read_text()
    probed = tmp_path / "probed.html"
    probed.write_text(page.replace("</body>", _PROBE))
    flags = [*CHROMIUM_FLAGS, f"--user-data-dir={tmp_path / 'profile'}"]
    dom = subprocess.run([browser, *flags, "--virtual-time-budget=5000", "--dump-dom",
                          probed.as_uri()], capture_output=True, text=True, timeout=120)
    match = re.search(r"decoded (\d+) of (\d+)", dom.stdout)
    assert match, f"no render probe in the DOM: {dom.stdout[-500:]} {dom.stderr[-1500:]}"
    assert match.group(1) == match.group(2) == "2"
    assert "Report test" in dom.stdout
    shot = tmp_path / "shot.png"
    subprocess.run([browser, *flags, f"--screenshot={shot}", "--window-size=1200,2400",
                    (out / "index.html").as_uri()], capture_output=True, timeout=120)
    assert shot.is_file() and shot.stat().st_size > 10_000  # a page with figures, not blank


def test_how_to_reproduce_gives_an_install_that_works(stored, tmp_path):
    out = tmp_path / "out"
    assert main(["report", "report-test", "--store", str(stored), "--out", str(out)]) == 0
    page = (out / "index.html").read_text()
    section = page.split("<h2>How to reproduce</h2>", 1)[1].split("</pre>", 1)[0]
    assert "pip install dispatchlab==" not in section  # not published on PyPI
    from dispatchlab.report.html import _git, _is_remote

    if _is_remote(_git("remote", "get-url", "origin")):
        assert "git clone " in section
    else:  # never a clone of this machine's path (issue 24)
        assert "git clone" not in section and "no public remote" in section
    assert "git checkout " in section
    assert "/" + "work/" not in section and "/" + "home/" not in section
    from dispatchlab.experiments.store import code_version

    commit = code_version().partition("+")[2].removesuffix("-dirty").rsplit("-g", 1)[-1]
    assert f"git checkout {commit}" in section


def test_a_reference_line_at_zero_on_a_log_axis_is_explained_not_listed(stored, tmp_path):
    from dispatchlab.report.html import render
    from dispatchlab.report.plots import draw_figure, write_figures

    figure = FigureSpec("log", x="epsilon", y="epsilon_total_queue", log_y=True,
                        references=(ReferenceLine("zero line", value=0.0),
                                    ReferenceLine("ζ/2", field="heavy_traffic_limit")))
    spec = ExperimentSpec(**{**report_spec().__dict__, "figures": (figure,)})
    with Store(stored) as store:
        frame = store.frame("report-test")
        fig = draw_figure(figure, frame, spec)
        legend = [t.get_text() for t in fig.legends[0].get_texts()]
        assert "ζ/2" in legend and "zero line" not in legend  # drawn ↔ listed
        note = "zero line = 0 at every x: ≤ 0 on a log axis, not drawn"
        assert fig.dispatchlab_notes == [note]
        assert any(note in t.get_text() for t in fig.texts)  # said on the figure itself
        write_figures(spec, frame, tmp_path)
        assert note in render(spec, frame, store, tmp_path, None)  # and in the caption


def test_a_point_too_short_to_say_draws_without_a_band() -> None:
    """A stored run whose CI is null (too short to say) gives NaN bounds, not a TypeError."""
    import pandas as pd

    from dispatchlab.report.plots import _scaled_ci

    low, high = _scaled_ci(pd.Series({"mean_total_queue": 10.0, "ci_low": None,
                                      "ci_high": None}), 0.1)
    assert math.isnan(low) and math.isnan(high)


def test_the_report_reads_as_text_and_gives_the_verdict(stored, tmp_path):
    """Issue 24: no raw reST in the description, the spec JSON without \\u escapes, a
    caption that promises bands only where there are some, and a verdict section."""
    import pandas as pd

    from dispatchlab.report.html import _bands, _is_remote
    from dispatchlab.report.text import to_html

    out = tmp_path / "out"
    assert main(["report", "report-test", "--store", str(stored), "--out", str(out)]) == 0
    page = (out / "index.html").read_text(encoding="utf-8")
    assert "<h2>Verdict</h2>" in page
    spec = page.split("<h2>Spec</h2>", 1)[1]
    assert "\\u03" not in spec
    assert (to_html("uses ``x`` and :func:`~a.b.fn`")
            == "<p>uses <code>x</code> and <code>fn</code></p>")
    figure = FigureSpec("q")
    none = pd.DataFrame({"ci_low": [float("nan")], "ci_high": [float("nan")]})
    some = pd.DataFrame({"ci_low": [1.0], "ci_high": [2.0]})
    assert _bands(figure, none).startswith("no confidence bands")
    assert _bands(figure, some) == "bands: 95 % confidence intervals."
    assert not _is_remote("/some/local/path") and not _is_remote("file:///x")
    assert _is_remote("https://github.com/o/r.git") and _is_remote("git@github.com:o/r.git")


def test_a_load_figure_marks_each_pi_policy_s_predicted_threshold(tmp_path) -> None:
    """Issue 51: the Π stability figure marks ρ̄ of [Π] Eq. (3) in each curve's colour
    (drawn from the committed store: RAND, Po2, periodic Po2 and 1-SLQ-2 have ρ̄ < 1;
    JSQ, throughput optimal, has none); off with ``stability_thresholds=False``."""
    from dataclasses import replace

    import matplotlib.pyplot as plt

    from dispatchlab.report.plots import THRESHOLD_LABEL, draw_figure, predicted_thresholds

    root = Path(__file__).resolve().parents[2]
    with Store(root / "results" / "reproductions" / "store.sqlite", readonly=True) as store:
        spec = ExperimentSpec.from_json(store.experiment_spec("pi-stability"))
        frame = store.frame("pi-stability")
    first, second = (system.name for system in spec.systems)
    expected = {first: {"RAND": 0.235, "Po2": 0.706, "periodic Po2 (T=4)": 0.706,
                        "1-SLQ-2": 0.824},
                second: {"RAND": 0.278, "Po2": 0.926, "periodic Po2 (T=4)": 0.926,
                         "1-SLQ-2": 0.833}}
    for system, bars in expected.items():
        found = predicted_thresholds(spec, system)
        assert found.keys() == bars.keys()
        assert all(abs(found[label] - bar) < 5e-4 for label, bar in bars.items()), found

    def dotted_verticals(figure: FigureSpec) -> list[list[float]]:
        fig = draw_figure(figure, frame, spec)
        try:
            legend = [t.get_text() for t in fig.legends[0].get_texts()]
            marks = [sorted(round(line.get_xdata()[0], 3) for line in ax.get_lines()
                            if line.get_linestyle() == ":" and len(set(line.get_xdata())) == 1)
                     for ax in fig.axes]
            assert (THRESHOLD_LABEL in legend) == any(marks)
            return marks
        finally:
            plt.close(fig)

    assert dotted_verticals(spec.figures[0]) == [[0.235, 0.706, 0.706, 0.824],
                                                 [0.278, 0.833, 0.926, 0.926]]
    off = replace(spec.figures[0], stability_thresholds=False)
    assert dotted_verticals(off) == [[], []]
    led = replace(spec, policies=(PolicySpec("l-jba-pull"), *spec.policies[:1]))
    assert predicted_thresholds(led, first).keys() == {"RAND"}  # LED: no Π theory, skipped


def test_stability_thresholds_is_a_figure_option_old_specs_lack() -> None:
    figure = FigureSpec("q")
    data = figure.to_dict()
    assert data["stability_thresholds"] is True
    del data["stability_thresholds"]  # a spec stored before the option existed
    assert FigureSpec.from_dict(data, "figures[0]").stability_thresholds is True
    from dispatchlab.core.errors import ValidationError

    with pytest.raises(ValidationError, match=r"figures\[0\]\.stability_thresholds: must be "
                                              r"true or false"):
        FigureSpec(**{**figure.__dict__, "stability_thresholds": "yes"}).validate("figures[0]")
