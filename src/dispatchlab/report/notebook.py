"""``dispatchlab.plot``: the standard figure of a notebook sweep (a ``sweep`` DataFrame).

It sits in the report layer, above :mod:`dispatchlab.experiments.notebook` whose frames it
draws, and reuses the report's summaries (Student-t intervals over replications).
"""

from __future__ import annotations

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd

from dispatchlab.core.errors import require
from dispatchlab.report.labels import plain
from dispatchlab.report.plots import AXIS_LABELS, Y_LABELS, FigureSpec, summarize

#: the columns of a ``dispatchlab.sweep`` frame that the figure reads
FRAME_COLUMNS = ("system", "policy_label", "stability", "load", "epsilon")


def _check_arguments(frame: pd.DataFrame, x: object, y: object, log_y: object,
                     title: object) -> None:
    """ValidationError naming the argument for anything :func:`plot` cannot draw."""
    require(isinstance(frame, pd.DataFrame), "frame",
            f"expected the DataFrame that dispatchlab.sweep returns (got {type(frame).__name__})")
    missing = [c for c in FRAME_COLUMNS if c not in frame.columns]
    require(not missing, "frame", f"not a dispatchlab.sweep frame: no column {missing[:1]}")
    require(not frame.empty, "frame", "the frame has no rows")
    require(isinstance(x, str) and x in ("load", "epsilon"), "x",
            f"allowed: load, epsilon (got {x!r})")
    numeric = sorted(c for c in frame.columns if pd.api.types.is_numeric_dtype(frame[c])
                     and not pd.api.types.is_bool_dtype(frame[c]))
    named = [c for c in Y_LABELS if c in numeric]
    found = isinstance(y, str) and any(
        column in numeric for column in (y, f"diag.{y}", f"messages.{y}"))
    require(found, "y", f"not a numeric column of the frame (got {y!r}); allowed: "
            f"{', '.join(named + [c for c in numeric if c not in named])}")
    require(isinstance(log_y, bool), "log_y", f"expected True or False (got {log_y!r})")
    require(isinstance(title, str), "title", f"expected a string (got {title!r})")


def plot(frame, x: str = "load", y: str = "mean_total_queue", *, log_y: bool = False,
         title: str = ""):
    """E[ΣQ] (or any Result column ``y``) against ``x`` per policy, one panel per system,
    the 95 % CI as a band (the report's figure; CIs as in ``report.plots.summarize``)."""
    _check_arguments(frame, x, y, log_y, title)
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
