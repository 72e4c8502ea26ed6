"""Figures of an experiment, drawn from its stored points (matplotlib, no display needed).

One panel per system, one curve per policy label, the confidence interval as a band,
and the theory reference lines the figure declares.
Replications of a point are combined into their mean with a Student-t interval;
a single replication keeps the run's own (batch-means) interval. A point judged
unstable in any replication has no mean: its curve has a gap there, and the table
says ``unstable``.
"""

from __future__ import annotations

import math
import sys
from collections.abc import Iterable
from dataclasses import replace
from pathlib import Path

import matplotlib

if "ipykernel" not in sys.modules:  # a notebook keeps its inline backend (dispatchlab.plot)
    matplotlib.use("Agg")  # before pyplot: figures are files, never windows

import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402
from matplotlib import ticker  # noqa: E402
from matplotlib.lines import Line2D  # noqa: E402

from dispatchlab.core.paths import guarded_io, write_whole  # noqa: E402
from dispatchlab.report.derived import DERIVED_Y, derived_interval  # noqa: E402
from dispatchlab.report.labels import plain  # noqa: E402
from dispatchlab.specs.experiment import ExperimentSpec  # noqa: E402
from dispatchlab.specs.figure import (  # noqa: E402
    CI_SCALED_Y,
    JOBS_WAITING,
    OWN_CI_Y,
    QUEUE_PER_SERVER,
    SERVERS,
    FigureSpec,
    ReferenceLine,
)
from dispatchlab.stats.estimators import t_quantile  # noqa: E402

AXIS_LABELS = {"load": "load ρ", "epsilon": "ε = μ_Σ − λ_Σ", "beta": "β (ε = β·μ_Σ/√N)",
               SERVERS: "servers N"}
#: a panel's title against servers N: the swept axis's symbol
_AXIS_SYMBOLS = {"load": "ρ", "epsilon": "ε", "beta": "β"}
#: the legend entry of the dotted stability-threshold marks (FigureSpec.stability_thresholds)
THRESHOLD_LABEL = "dotted: the curve's predicted ρ̄ ([Π] Eq. (3))"
Y_LABELS = {
    "mean_total_queue": "E[ΣQ]",
    "mean_delay": "mean delay (slots)",
    "epsilon_total_queue": "ε·E[ΣQ]",
    "messages_per_arrival": "messages per arrival",
    QUEUE_PER_SERVER: "E[ΣQ]/N",
    JOBS_WAITING: "jobs waiting per server",
    # continuous time (specs.figure.CONTINUOUS_Y)
    "mean_response": "E[T]", "mean_slowdown": "E[slowdown]", "mean_in_system": "E[L]",
    "response_p50": "response time p50", "response_p90": "response time p90",
    "response_p99": "response time p99",
}
CONFIDENCE = 0.95
SUMMARY_COLUMNS = ["system", "policy", "x", "y", "ci_low", "ci_high", "replications", "stable"]


def y_column(frame: pd.DataFrame, y: str) -> str:
    """The frame column holding ``y``: a Result field, ``diag.y`` or ``messages.y``."""
    for column in (y, f"diag.{y}", f"messages.{y}"):
        if column in frame.columns:
            return column
    raise KeyError(y)


def _y_values(frame: pd.DataFrame, y: str) -> np.ndarray:
    """Each stored point's ``y`` (:func:`y_column`, or a :data:`DERIVED_Y` computed)."""
    if y in DERIVED_Y:
        return DERIVED_Y[y][0](frame)
    return pd.to_numeric(frame[y_column(frame, y)], errors="coerce").to_numpy(dtype=float)


def summarize(frame: pd.DataFrame, figure: FigureSpec) -> pd.DataFrame:
    """One row per (system, policy label, x): the y mean, its CI, replications, stability."""
    if frame.empty:
        return pd.DataFrame(columns=SUMMARY_COLUMNS)
    # the columns as arrays once and each group as its row positions: per-group pandas
    # indexing was most of a Reproductions page's build (52 summaries, 9 of its 19 s)
    y_values = _y_values(frame, figure.y)
    unstable = (frame["stability"] == "unstable").to_numpy()
    groups = frame.groupby(["system", "policy_label", "x"], sort=True).indices
    rows = []
    for (system, policy, x), positions in sorted(groups.items()):
        if figure.policies and policy not in figure.policies:
            continue
        if figure.systems and system not in figure.systems:
            continue
        values = y_values[positions]
        y = low = high = math.nan
        if values.size and np.all(np.isfinite(values)):
            y = float(values.mean())
            if values.size >= 2:
                half = (t_quantile(values.size - 1, CONFIDENCE) * values.std(ddof=1)
                        / math.sqrt(values.size))
                low, high = y - half, y + half
            elif figure.y in DERIVED_Y:
                low, high = derived_interval(frame.iloc[positions[0]], figure.y)
            elif figure.y in CI_SCALED_Y:
                low, high = _scaled_ci(frame.iloc[positions[0]], y)
            elif figure.y in OWN_CI_Y:
                first = frame.iloc[positions[0]]
                low, high = (float(pd.to_numeric(first.get(name, math.nan), errors="coerce"))
                             for name in OWN_CI_Y[figure.y])
        rows.append({"system": system, "policy": policy, "x": float(x), "y": y,
                     "ci_low": low, "ci_high": high, "replications": int(values.size),
                     "stable": not bool(unstable[positions].any())})
    return pd.DataFrame(rows, columns=SUMMARY_COLUMNS)


def _scaled_ci(row: pd.Series, y: float) -> tuple[float, float]:
    """The run's CI for E[ΣQ], carried to y = c·E[ΣQ] (delay: c = 1/λ; ε·E[ΣQ]: c = ε)."""
    mean = float(row.get("mean_total_queue", math.nan))
    if not (math.isfinite(mean) and mean > 0):
        return math.nan, math.nan
    factor = y / mean
    low, high = (pd.to_numeric(row.get(name), errors="coerce") for name in ("ci_low", "ci_high"))
    return float(low) * factor, float(high) * factor  # NaN for a run too short to say


def reference_curve(reference: ReferenceLine, frame: pd.DataFrame, spec: ExperimentSpec,
                    system: str) -> tuple[np.ndarray, np.ndarray]:
    """x and y of a reference line for one system (a constant gives a flat line)."""
    xs = np.array(sorted(spec.values), dtype=float)
    if reference.value is not None:
        ys = np.full(xs.size, float(reference.value))
    elif reference.field is not None:
        rows = frame[frame["system"] == system]
        per_x = rows.groupby("x")[y_column(rows, reference.field)].mean()
        ys = np.array([float(per_x.get(x, math.nan)) for x in xs])
    else:
        function = reference.resolved_function()
        assert function is not None
        by_name = {s.name: s for s in spec.systems}
        ys = np.array([float(function(by_name[system].build(**{spec.axis: x}))) for x in xs])
    if reference.scale_by_epsilon:
        by_name = {s.name: s for s in spec.systems}
        eps = np.array([by_name[system].build(**{spec.axis: x}).epsilon for x in xs])
        ys = ys * eps
    return xs, ys


def against_servers(frame: pd.DataFrame, figure: FigureSpec, axis: str,
                    values: Iterable[float]) -> tuple[pd.DataFrame, list[str]]:
    """The stored points re-keyed for a figure against servers N, and its panels: a panel
    per value of the swept axis (its label in the ``system`` column), x = N
    (``system.n_servers``), a curve per policy label, with the family (or the system's own
    label) after it when the grid has several; ``figure.systems`` and ``figure.policies``
    select by the stored labels first. ``axis``: the swept axis, ``values``: its values."""
    data = frame
    if figure.systems:
        data = data[data["system"].isin(figure.systems)]
    if figure.policies:
        data = data[data["policy_label"].isin(figure.policies)]
    data = data.copy()
    symbol = _AXIS_SYMBOLS[axis]
    curves = data["family"].where(data["family"] != "", data["system"])
    if curves.nunique() > 1:
        data["policy_label"] = data["policy_label"] + " · " + curves
    data["system"] = [f"{symbol} = {x:g}" for x in data["x"]]
    data["x"] = pd.to_numeric(data["system.n_servers"], errors="coerce")
    panels = [f"{symbol} = {x:g}" for x in sorted(values)]
    return data, [panel for panel in panels if panel in set(data["system"])]


def draw_figure(figure: FigureSpec, frame: pd.DataFrame, spec: ExperimentSpec) -> plt.Figure:
    """The matplotlib figure of ``figure`` from the stored points of ``spec``: one panel per
    system (sharing the y axis; against servers N, one per value of the swept axis: see
    :func:`against_servers`), a policy keeps its colour across panels, one legend."""
    if figure.x == SERVERS:
        frame, systems = against_servers(frame, figure, spec.axis, spec.values)
        figure = replace(figure, policies=(), systems=())  # (selected above)
    else:
        systems = [s.name for s in spec.systems
                   if not figure.systems or s.name in figure.systems]
    summary = summarize(frame, figure)
    systems = systems or ["(no points)"]
    fig, axes = plt.subplots(1, len(systems), figsize=(1.0 + 5.0 * len(systems), 4.4),
                             dpi=110, sharey=True, squeeze=False)
    colors = plt.rcParams["axes.prop_cycle"].by_key()["color"]
    color_of = {policy: colors[i % len(colors)]
                for i, policy in enumerate(dict.fromkeys(summary["policy"]))}
    legend: dict[str, object] = {}
    notes: dict[str, str] = {}
    for ax, system in zip(axes[0], systems, strict=True):
        for policy, curve in summary[summary["system"] == system].groupby("policy", sort=False):
            curve = curve.sort_values("x")
            color = color_of[policy]
            (line,) = ax.plot(curve["x"], curve["y"], marker="o", markersize=4, color=color)
            legend.setdefault(policy, line)
            if figure.ci and np.isfinite(curve["ci_low"]).any():
                ax.fill_between(curve["x"], curve["ci_low"], curve["ci_high"], color=color,
                                alpha=0.2, linewidth=0)
            unstable = curve[~curve["stable"]]
            if not unstable.empty:
                (marks,) = ax.plot(unstable["x"], np.zeros(len(unstable)), linestyle="none",
                                   marker="x", color=color, transform=ax.get_xaxis_transform(),
                                   clip_on=False)
                legend.setdefault(f"{policy}: unstable", marks)
        if figure.stability_thresholds and figure.x == "load":
            drawn = summary[summary["system"] == system]
            for policy, bar in predicted_thresholds(spec, system).items():
                if policy in set(drawn["policy"]) and drawn["x"].min() <= bar <= drawn["x"].max():
                    ax.axvline(bar, color=color_of[policy], linestyle=":", linewidth=1.3)
                    legend.setdefault(THRESHOLD_LABEL, Line2D([], [], color="0.35",
                                                              linestyle=":", linewidth=1.3))
        for reference in figure.references:
            if figure.x == SERVERS:  # a constant (FigureSpec.validate)
                xs = np.array(sorted(frame["x"].dropna().unique()), dtype=float)
                ys = np.full(xs.size, float(reference.value))
            else:
                xs, ys = reference_curve(reference, frame, spec, system)
            drawable = drawable_mask(ys, figure.log_y)
            if not drawable.any():  # nothing to draw: say so instead of an empty legend entry
                notes.setdefault(reference.label, reference_note(reference.label, xs, ys,
                                                                 drawable, figure.log_y))
                continue
            if not drawable.all():
                notes.setdefault(reference.label, reference_note(reference.label, xs, ys,
                                                                 drawable, figure.log_y))
            (line,) = ax.plot(xs[drawable], ys[drawable], linestyle=reference.style,
                              color="0.25", linewidth=1.2)
            legend.setdefault(reference.label, line)
        if figure.log_x:  # ticks at the grid's values, not crowded minor labels
            ticks = (sorted(frame["x"].dropna().unique()) if figure.x == SERVERS
                     else sorted(spec.values))
            ax.set_xscale("log")
            ax.set_xticks(ticks, [f"{x:g}" for x in ticks])
            ax.xaxis.set_minor_formatter(ticker.NullFormatter())
        if figure.log_y:
            ax.set_yscale("log")
        ax.set_xlabel(plain(figure.xlabel) if figure.xlabel else AXIS_LABELS[figure.x])
        ax.grid(True, which="both", alpha=0.3)
        if len(systems) > 1:
            ax.set_title(plain(system), fontsize=10)
    axes[0][0].set_ylabel(plain(figure.ylabel or Y_LABELS.get(figure.y, figure.y)))
    fig.suptitle(plain(figure.title or f"{spec.title or spec.name}: {figure.name}"),
                 fontsize=11)
    if legend:  # explicit labels: one starting with "_" is shown too
        fig.legend(list(legend.values()), [plain(label) for label in legend], fontsize=8,
                   loc="center left", bbox_to_anchor=(1.0, 0.5), frameon=False)
    fig.tight_layout()
    if notes:
        fig.text(0.01, 0.005, plain("\n".join(notes.values())), fontsize=7, color="0.3",
                 ha="left", va="bottom")
        fig.subplots_adjust(bottom=0.14 + 0.04 * len(notes))
    fig.dispatchlab_notes = list(notes.values())  # the HTML report repeats them in text
    return fig


def predicted_thresholds(spec: ExperimentSpec, system: str) -> dict[str, float]:
    """Policy label → ρ̄ = λ̄/μ_Σ of [Π] Eq. (3) on the system labelled ``system``, for each
    policy of ``spec`` that is a member of framework Π with exact dispatch fractions and
    ρ̄ < 1 (the others have no threshold below capacity to mark)."""
    from dispatchlab.core.errors import ValidationError
    from dispatchlab.model.service import parse_rates
    from dispatchlab.theory.stability import induced_threshold

    systems = [s for s in spec.systems if s.name == system]
    if not systems:
        return {}
    out = {}
    for policy_spec in spec.policies:
        try:
            mu = parse_rates(systems[0].servers)
            fractions = policy_spec.make().dispatch_fractions(mu)
            if fractions is None or fractions.method != "exact":
                continue
            region = induced_threshold(fractions, mu)
        except ValidationError:  # e.g. too many servers to enumerate the orders
            continue
        if not region.throughput_optimal and region.threshold_load < 1:
            out[policy_spec.display] = region.threshold_load
    return out


def drawable_mask(ys: np.ndarray, log_y: bool) -> np.ndarray:
    """Points of a curve that can be drawn: finite, and > 0 on a log axis."""
    ys = np.asarray(ys, dtype=float)
    return np.isfinite(ys) & (ys > 0) if log_y else np.isfinite(ys)


def reference_note(label: str, xs: np.ndarray, ys: np.ndarray, drawable: np.ndarray,
                   log_y: bool) -> str:
    """Why (part of) a reference line is missing from a figure, with its values."""
    missing = ~drawable
    values = ", ".join(f"{y:g}" for y in np.unique(np.asarray(ys)[missing])[:3])
    reason = "≤ 0 on a log axis" if log_y else "not a finite number"
    where = ("at every x" if missing.all() else
             "at x = " + ", ".join(f"{x:g}" for x in np.asarray(xs)[missing]))
    return f"{label} = {values} {where}: {reason}, not drawn"


def figure_notes(figure: FigureSpec, frame: pd.DataFrame, spec: ExperimentSpec) -> list[str]:
    """The notes :func:`draw_figure` writes under ``figure`` (reference lines not drawn)."""
    systems = [s.name for s in spec.systems if not figure.systems or s.name in figure.systems]
    notes: dict[str, str] = {}
    for system in systems:
        for reference in figure.references:
            if figure.x == SERVERS:  # a constant (FigureSpec.validate), over the sizes N
                sizes = pd.to_numeric(frame["system.n_servers"], errors="coerce")
                xs = np.array(sorted(sizes.dropna().unique()), dtype=float)
                ys = np.full(xs.size, float(reference.value))
            else:
                xs, ys = reference_curve(reference, frame, spec, system)
            drawable = drawable_mask(ys, figure.log_y)
            if not drawable.all():
                notes.setdefault(reference.label, reference_note(
                    reference.label, xs, ys, drawable, figure.log_y))
    return list(notes.values())


def write_figures(spec: ExperimentSpec, frame: pd.DataFrame, directory: str | Path,
                  formats: Iterable[str] = ("png", "svg")) -> list[Path]:
    """Draw every figure of ``spec`` into ``directory`` as ``NAME.FORMAT``; return the paths."""
    directory = Path(directory)
    guarded_io("out", directory, lambda: directory.mkdir(parents=True, exist_ok=True))
    paths = []
    for figure in figures_of(spec):
        fig = draw_figure(figure, frame, spec)
        try:
            for fmt in formats:
                path = directory / f"{figure.name}.{fmt}"
                write_whole("out", path, lambda temporary, fig=fig, fmt=fmt: fig.savefig(
                    temporary, format=fmt, bbox_inches="tight"))
                paths.append(path)
        finally:
            plt.close(fig)
    return paths


def figures_of(spec: ExperimentSpec) -> tuple[FigureSpec, ...]:
    """The figures ``spec`` declares, or E[ΣQ] over its axis when it declares none."""
    if spec.figures:
        return spec.figures
    return (FigureSpec("queue", x=spec.axis, y="mean_total_queue", log_y=True),)
