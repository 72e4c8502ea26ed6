"""``dispatchlab.plot``: the standard figure of a notebook sweep (a ``sweep`` DataFrame).

It sits in the report layer, above :mod:`dispatchlab.experiments.sweeps` whose frames it
draws, and reuses the report's summaries (Student-t intervals over replications).
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
from matplotlib import ticker

from dispatchlab.core.errors import ValidationError, require
from dispatchlab.report.derived import DERIVED_Y
from dispatchlab.report.labels import plain
from dispatchlab.report.plots import (
    AXIS_LABELS,
    Y_LABELS,
    FigureSpec,
    against_servers,
    summarize,
)
from dispatchlab.specs.figure import AXES, SERVERS, ReferenceLine

#: the columns of a ``dispatchlab.sweep`` frame that the figure reads
FRAME_COLUMNS = ("system", "policy_label", "stability", "load", "epsilon")
#: ``references=`` shorthands: the catalog figures' theory lines, read per point from the
#: frame (ζ/2 of docs/model.md#heavy-traffic, the finite-ε bound of
#: docs/model.md#lower-bound)
REFERENCE_SHORTHANDS = {
    "zeta/2": ReferenceLine("ζ/2", field="heavy_traffic_limit"),
    "lower_bound": ReferenceLine("lower bound on E[ΣQ]", field="lower_bound_total_queue"),
}


def reference_lines(references: object, frame: pd.DataFrame) -> list[ReferenceLine]:
    """``references`` as lines: each a shorthand (:data:`REFERENCE_SHORTHANDS`), a number
    (a constant), a numeric column of the frame (its per-point mean), or a
    :class:`~dispatchlab.specs.figure.ReferenceLine` with ``value`` or ``field`` (a
    ``function`` needs the experiment's systems: draw it with ``dispatchlab report``)."""
    require(isinstance(references, Sequence) and not isinstance(references, str | bytes),
            "references", f"expected a list of references (got {references!r}); allowed: "
            f"{', '.join(REFERENCE_SHORTHANDS)}, a number, a column, or a ReferenceLine")
    lines = []
    for i, item in enumerate(references):
        name = f"references[{i}]"
        if isinstance(item, ReferenceLine):
            item.validate(name)
            require(item.function is None, name, "a function reference needs the "
                    "experiment's systems; give value= or field= (or use dispatchlab report)")
            line = item
        elif isinstance(item, int | float) and not isinstance(item, bool):
            require(math.isfinite(item), name, f"expected a finite number (got {item!r})")
            line = ReferenceLine(f"{item:g}", value=float(item))
        elif isinstance(item, str) and item in REFERENCE_SHORTHANDS:
            line = REFERENCE_SHORTHANDS[item]
        elif isinstance(item, str) and item in frame.columns \
                and pd.api.types.is_numeric_dtype(frame[item]):
            line = ReferenceLine(item, field=item)
        else:
            raise ValidationError(name, f"allowed: {', '.join(REFERENCE_SHORTHANDS)}, a "
                                  f"number, a numeric column of the frame, or a ReferenceLine"
                                  f" (got {item!r})")
        require(line.field is None or line.field in frame.columns, name,
                f"the frame has no column {line.field!r}")
        lines.append(line)
    return lines


def _check_arguments(frame: pd.DataFrame, x: object, y: object, log_y: object,
                     title: object) -> None:
    """ValidationError naming the argument for anything :func:`plot` cannot draw."""
    require(isinstance(frame, pd.DataFrame), "frame",
            f"expected the DataFrame that dispatchlab.sweep returns (got {type(frame).__name__})")
    missing = [c for c in FRAME_COLUMNS if c not in frame.columns]
    require(not missing, "frame", f"not a dispatchlab.sweep frame: no column {missing[:1]}")
    require(not frame.empty, "frame", "the frame has no rows")
    require(isinstance(x, str) and x in (*AXES, SERVERS), "x",
            f"allowed: {', '.join((*AXES, SERVERS))} (got {x!r})")
    if x == SERVERS:
        sizes = (frame["system.n_servers"].nunique() if "system.n_servers" in frame.columns
                 else 0)
        require(sizes >= 2 and {"axis", "family"} <= set(frame.columns)
                and frame["axis"].nunique() == 1, "x",
                "against servers N the frame needs systems of at least two sizes (a "
                "SystemFamily swept by dispatchlab.sweep)")
    numeric = sorted(c for c in frame.columns if pd.api.types.is_numeric_dtype(frame[c])
                     and not pd.api.types.is_bool_dtype(frame[c]))
    # E[ΣQ]/N and the jobs waiting per server are computed from columns (report.derived)
    derived = [name for name, (_, needs) in DERIVED_Y.items()
               if set(needs) <= set(frame.columns)]
    named = [c for c in Y_LABELS if c in numeric] + derived
    found = isinstance(y, str) and (y in derived or any(
        column in numeric for column in (y, f"diag.{y}", f"messages.{y}")))
    require(found, "y", f"not a numeric column of the frame (got {y!r}); allowed: "
            f"{', '.join(named + [c for c in numeric if c not in named])}")
    if y in DERIVED_Y:
        require(bool(np.isfinite(DERIVED_Y[y][0](frame)).any()), "y",
                f"{y} has no value on this frame's rows (the jobs waiting per server needs "
                "Bernoulli service of one rate μ: docs/statistics.md#jobs-waiting)")
    require(isinstance(log_y, bool), "log_y", f"expected True or False (got {log_y!r})")
    require(isinstance(title, str), "title", f"expected a string (got {title!r})")


def plot(frame, x: str = "load", y: str = "mean_total_queue", *, log_y: bool = False,
         log_x: bool = False, references: Sequence[object] = (), title: str = ""):
    """E[ΣQ] (or any Result column ``y``) against ``x`` per policy, one panel per system,
    the 95 % CI as a band (the report's figure; CIs as in ``report.plots.summarize``);
    ``x="servers"``: against N, a panel per swept value, for a sweep of a ``SystemFamily``.

    ``log_x``/``log_y``: logarithmic axes (``log_x`` ticks at the swept values, as the
    catalog figures: ε = 10⁻¹ … 10⁻⁴). ``references``: theory lines drawn dashed in every
    panel, e.g. ``["zeta/2"]`` (ζ/2, for ``y="epsilon_total_queue"``), ``["lower_bound"]``
    (the finite-ε lower bound on E[ΣQ]), a number, a numeric column, or a
    :class:`~dispatchlab.specs.figure.ReferenceLine` (see :func:`reference_lines`)."""
    _check_arguments(frame, x, y, log_y, title)
    require(isinstance(log_x, bool), "log_x", f"expected True or False (got {log_x!r})")
    lines = reference_lines(references, frame)
    if x == SERVERS:  # a panel per swept value, N on x (the report's figure against N)
        data, _ = against_servers(frame, FigureSpec("notebook", x=x), frame["axis"].iloc[0],
                                  frame["x"].unique())
    else:
        data = frame.copy()
        data["x"] = data[x]
    summary = summarize(data, FigureSpec("notebook", x=x, y=y))
    systems = list(dict.fromkeys(summary["system"]))
    fig, axes = plt.subplots(1, len(systems), figsize=(1.0 + 5.0 * len(systems), 4.2),
                             sharey=True, squeeze=False)
    for ax, system in zip(axes[0], systems, strict=True):
        handles, labels = [], []  # explicit: a label starting with "_" is shown too
        for policy, curve in summary[summary["system"] == system].groupby("policy", sort=False):
            curve = curve.sort_values("x")
            (line,) = ax.plot(curve["x"], curve["y"], marker="o", markersize=4)
            handles.append(line)
            labels.append(plain(policy))
            if np.isfinite(curve["ci_low"]).any():
                ax.fill_between(curve["x"], curve["ci_low"], curve["ci_high"],
                                color=line.get_color(), alpha=0.2, linewidth=0)
            unstable = curve[~curve["stable"]]
            if not unstable.empty:
                (marks,) = ax.plot(unstable["x"], np.zeros(len(unstable)), linestyle="none",
                                   marker="x", color=line.get_color(),
                                   transform=ax.get_xaxis_transform(), clip_on=False)
                handles.append(marks)
                labels.append(plain(f"{policy}: unstable"))
        rows = data[data["system"] == system]
        xs = np.array(sorted(rows["x"].unique()), dtype=float)
        for line in lines:
            if line.value is not None:
                ys = np.full(xs.size, float(line.value))
            else:
                per_x = rows.groupby("x")[line.field].mean()
                ys = np.array([float(per_x.get(value, math.nan)) for value in xs])
            drawable = np.isfinite(ys) & ((ys > 0) if log_y else True)
            if drawable.any():
                (drawn,) = ax.plot(xs[drawable], ys[drawable], linestyle=line.style,
                                   color="0.25", linewidth=1.2)
                handles.append(drawn)
                labels.append(plain(line.label))
        if log_x:
            ax.set_xscale("log")
            ax.set_xticks(xs, [f"{value:g}" for value in xs])
            ax.xaxis.set_minor_formatter(ticker.NullFormatter())
        if log_y:
            ax.set_yscale("log")
        ax.set_xlabel(AXIS_LABELS.get(x, x))
        ax.set_title(plain(system), fontsize=10)
        ax.grid(True, alpha=0.3)
        ax.legend(handles, labels, fontsize=8)
    axes[0][0].set_ylabel(plain(Y_LABELS.get(y, y)))
    if title:
        fig.suptitle(plain(title))
    fig.tight_layout()
    return fig
