"""What every claim of the Reproductions page is judged with: the verdict words, the
tolerance, and the small formatting and summary helpers the rules share
(:mod:`dispatchlab.report.reproductions`, :mod:`dispatchlab.report.limit_claims`)."""

from __future__ import annotations

import math
from dataclasses import dataclass

import pandas as pd

from dispatchlab.report.plots import FigureSpec, summarize
from dispatchlab.specs.experiment import ExperimentSpec

#: |ε·E[ΣQ] / limit − 1| within this counts as reaching a limit at the smallest ε run (for
#: ε·E[X]: at most this fraction of ζ/2)
LIMIT_TOLERANCE = 0.05

VERDICTS = {
    "below resolution": "the estimated limit's CI cannot decide the claim: the runs bound "
                        "|limit| ≤ δ (stated), which neither shows nor refutes a gap smaller "
                        "than δ; a system where the gap is larger decides it",
    "held": "the stored numbers support the claim at the smallest ε whose point has an "
            f"interval, CIs included (a limit counts as reached within {LIMIT_TOLERANCE:.0%} "
            "of it); a deeper point too short for an interval is shown, not judged",
    "trend": "the numbers move the way the claim says, beyond their CIs, but do not reach "
             "it at the smallest ε judged",
    "not held": "the stored numbers contradict the claim at the smallest ε judged",
    "held in part": "the claim holds for some of its policies or loads and is contradicted "
                    "for others: the reading names which (one per policy, by bands of load)",
    "undecided": "the CIs cannot tell (they overlap, a run was too short to say, or the "
                 "numbers are still moving too fast to call)",
    "incomplete": "the experiment is stored but a curve the claim needs is not",
    "not run yet": "the experiment is not in the store: the command runs it",
}


@dataclass(frozen=True)
class Verdict:
    """The verdict on one claim: its status (a key of :data:`VERDICTS`) and the numbers
    behind it."""

    status: str
    numbers: str


def fmt(value: float) -> str:
    """A number in four significant digits, "—" when not finite."""
    return "—" if not math.isfinite(value) else f"{value:.4g}"


def ci_text(row: pd.Series) -> str:
    """A summary row's value with its CI, or "unstable"."""
    if not row["stable"]:
        return "unstable"
    text = fmt(row["y"])
    if math.isfinite(row["ci_low"]) and math.isfinite(row["ci_high"]):
        text += f" [{fmt(row['ci_low'])}, {fmt(row['ci_high'])}]"
    return text


def summary_of(spec: ExperimentSpec, frame: pd.DataFrame, y: str) -> pd.DataFrame:
    """The stored points of ``frame`` summarised for ``y`` along the spec's axis."""
    return summarize(frame, FigureSpec("claim", x=spec.axis, y=y))


def missing_curves(summary: pd.DataFrame, labels: list[str]) -> Verdict | None:
    """An "incomplete" verdict naming the labels with no stored point, else ``None``."""
    absent = [label for label in labels if label not in set(summary["policy"])]
    if absent:
        return Verdict("incomplete", "no stored points for " + ", ".join(absent))
    return None


def combine(statuses: list[str]) -> str:
    """The weakest of several statuses (not held < held in part < undecided < below
    resolution < trend < held)."""
    order = ("not held", "held in part", "undecided", "below resolution", "trend", "held")
    return min(statuses, key=order.index) if statuses else "undecided"


def numeric(row: pd.Series, column: str) -> float:
    """``row[column]`` as a float, NaN when absent or not a number."""
    value = pd.to_numeric(row.get(column, math.nan), errors="coerce")
    return float(value) if value is not None and pd.notna(value) else math.nan
