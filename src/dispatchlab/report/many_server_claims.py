"""The rules that judge the many-server claims of the Reproductions page: what happens to
the waiting probability as N grows (docs/model.md#many-servers,
docs/statistics.md#waiting).

The literature's statements are about continuous time, where jobs arrive one at a time.
In the slotted model a slot's jobs arrive together and M dispatchers place them from the
slot's start, so jobs meet at servers that were idle at its start; each reading says what
the slotted points show and how far they bound the limit (a finite N cannot reach a limit
of 0: a falling curve is a trend, its last value a bound).
"""

from __future__ import annotations

import math
from collections.abc import Callable

import numpy as np
import pandas as pd

from dispatchlab.report.derived import jobs_waiting_per_server
from dispatchlab.report.verdicts import Verdict, combine, fmt
from dispatchlab.stats.estimators import t_interval

WAITING = "waiting_probability"
#: the share of jobs whose server was busy at the start of their slot (the fluid's)
BUSY = "busy_server_probability"


#: one size of a curve: (N, mean, CI low, CI high, stable)
Size = tuple[int, float, float, float, bool]
Curve = list[Size]


def waiting_by_size(frame: pd.DataFrame, label: str, selector: pd.Series,
                    column: str | Callable[[pd.DataFrame], np.ndarray] = WAITING) -> Curve:
    """(N, mean, CI low, CI high, stable) of ``label``'s ``column`` (the waiting
    probability; or a function of the rows, e.g. :func:`jobs_waiting_per_server`) at each
    N among the rows ``selector`` picks: the mean over the replications and its 95 % t
    interval; a size where a replication was unstable is kept as unstable."""
    rows = frame[selector & (frame["policy_label"] == label)]
    out = []
    for n, group in rows.groupby("system.n_servers"):
        values = (column(group) if callable(column)
                  else pd.to_numeric(group[column], errors="coerce").to_numpy(float))
        stable = bool((group["stability"] != "unstable").all()) and bool(
            values.size and (values == values).all())
        if not stable:
            out.append((int(n), math.nan, math.nan, math.nan, False))
            continue
        out.append((int(n), *t_interval(values), True))
    return sorted(out)


def _curve_text(label: str, curve: Curve) -> str:
    cells = [f"N = {n:,}: " + (f"{fmt(mean)} [{fmt(low)}, {fmt(high)}]" if stable
                               else "unstable") for n, mean, low, high, stable in curve]
    return f"{label} P(wait) " + ", ".join(cells)


def _falls(curve: Curve) -> bool:
    """Each stable size's interval lies above the next one's (beyond the CIs)."""
    stable = [point for point in curve if point[4]]
    return len(stable) >= 2 and all(a[2] > b[3] for a, b in zip(stable, stable[1:],
                                                                   strict=False))


def waiting_vanishes(frame: pd.DataFrame, vanishing: list[str], persisting: list[str],
                     selector: pd.Series, scope: str) -> Verdict:
    """The waiting probability of ``vanishing`` falls towards 0 as N grows while that of
    ``persisting`` does not. A falling curve is a trend (N = 10⁴ bounds the limit from
    above, it cannot reach 0); one that does not fall beyond its CIs contradicts the
    claim for that policy at these N; a policy unstable at every N is named, not judged."""
    readings, statuses = [], []
    for label in vanishing:
        curve = waiting_by_size(frame, label, selector)
        stable = [point for point in curve if point[4]]
        if len(stable) < 2:
            readings.append(_curve_text(label, curve) + " (too few stable sizes to judge)")
            continue
        falls = _falls(curve)
        statuses.append("trend" if falls else "not held")
        readings.append(_curve_text(label, curve) + (
            f": falls with N, the limit ≤ {fmt(stable[-1][3])}" if falls
            else ": does not fall with N beyond its CIs" + _busy_text(frame, label, selector)))
    for label in persisting:
        curve = waiting_by_size(frame, label, selector)
        stable = [point for point in curve if point[4]]
        if not stable:
            readings.append(_curve_text(label, curve) + " (unstable on these servers: its "
                            "stability threshold lies below these loads; not judged)")
            continue
        stays = stable[-1][2] > 0.1
        statuses.append("held" if stays else "not held")
        readings.append(_curve_text(label, curve) + (": stays away from 0" if stays
                                                     else ": approaches 0"))
    if not statuses:
        return Verdict("undecided", f"{scope}: " + "; ".join(readings))
    return Verdict(_policies_status(statuses), f"{scope}: " + "; ".join(readings))


def _busy_text(frame: pd.DataFrame, label: str, selector: pd.Series) -> str:
    """The share of jobs that found their server busy at the slot's start, beside a
    waiting probability that does not fall (the jobs that meet within a slot make the
    difference)."""
    if BUSY not in frame.columns:
        return ""
    stable = [point for point in waiting_by_size(frame, label, selector, BUSY) if point[4]]
    if not stable:
        return ""
    n, mean, low, high, _ = stable[-1]
    return (f" (the share whose server was busy at the slot's start, the fluid's waiting "
            f"probability: {fmt(mean)} [{fmt(low)}, {fmt(high)}] at N = {n:,}; the rest "
            "queue behind jobs of their own slot)")


def matches(frame: pd.DataFrame, label: str, other: str, selector: pd.Series,
            scope: str) -> Verdict:
    """``label`` matches ``other`` as N grows: their waiting probabilities' gap shrinks to
    within the CIs at the largest N (held), shrinks (trend), or does not (not held)."""
    ours, theirs = (waiting_by_size(frame, name, selector) for name in (label, other))
    pairs = [(a, b) for a, b in zip(ours, theirs, strict=False) if a[4] and b[4]]
    text = f"{scope}: " + "; ".join([_curve_text(label, ours), _curve_text(other, theirs)])
    if len(pairs) < 2:
        return Verdict("undecided", text)
    gaps = [abs(a[1] - b[1]) for a, b in pairs]
    last_a, last_b = pairs[-1]
    overlap = last_a[2] <= last_b[3] and last_b[2] <= last_a[3]
    status = "held" if overlap else "trend" if gaps[-1] < gaps[0] else "not held"
    return Verdict(status, text + f"; the gap {fmt(gaps[0])} at N = {pairs[0][0][0]:,}, "
                   f"{fmt(gaps[-1])} at N = {last_a[0]:,}")


def _exponent(a: Size, b: Size) -> tuple[float, float, float]:
    """The local exponent k of w(N) ∝ N^k between two sizes, and its range from the two
    intervals (−inf where the later interval reaches 0, +inf where the earlier does)."""
    span = math.log(b[0] / a[0])

    def slope(top: float, bottom: float) -> float:
        if top <= 0:
            return -math.inf
        return math.log(top / bottom) / span if bottom > 0 else math.inf

    return slope(b[1], a[1]), slope(b[2], a[3]), slope(b[3], a[2])


def scales_like_root(frame: pd.DataFrame, labels: list[str], selector: pd.Series,
                     scope: str) -> Verdict:
    """The jobs waiting per server w(N) (:func:`jobs_waiting_per_server`) of each of
    ``labels`` vanish like 1/√N. Read on the exponent k of w ∝ N^k between the two largest
    N, with its range from their intervals: held where w falls beyond the intervals (the
    whole range below 0) and the range holds −1/2; a trend where it falls at another pace
    (a finite N sees the approach to c/√N, from above or below: √N·w is shown); not held
    where it does not fall (the whole range at or above 0); undecided where the range
    holds 0 and falls too, the intervals too wide to tell."""
    readings, statuses = [], []
    for label in labels:
        curve = waiting_by_size(frame, label, selector, jobs_waiting_per_server)
        stable = [point for point in curve if point[4]]
        text = f"{label} jobs waiting per server " + ", ".join(
            f"N = {n:,}: " + (f"{fmt(mean)} [{fmt(low)}, {fmt(high)}] (√N·w = "
                              f"{fmt(math.sqrt(n) * mean)})" if ok else "unstable")
            for n, mean, low, high, ok in curve)
        if len(stable) < 2:
            readings.append(text + " (too few stable sizes to judge)")
            continue
        k, low, high = _exponent(stable[-2], stable[-1])
        pace = (f": w ∝ N^k with k = {fmt(k)} [{fmt(low)}, {fmt(high)}] from "
                f"N = {stable[-2][0]:,} to {stable[-1][0]:,}")
        if low <= -0.5 <= high < 0:
            statuses.append("held")
            readings.append(text + pace + ", as 1/√N")
        elif high < 0:
            statuses.append("trend")
            readings.append(text + pace + ": falls, at another pace than 1/√N at these N")
        elif low >= 0:
            statuses.append("not held")
            readings.append(text + pace + ": does not fall with N")
        else:
            readings.append(text + pace + ": the intervals cannot tell whether it falls "
                            "(run longer)")
    if not statuses:
        return Verdict("undecided", f"{scope}: " + "; ".join(readings))
    return Verdict(_policies_status(statuses), f"{scope}: " + "; ".join(readings))


def _policies_status(statuses: list[str]) -> str:
    """One claim over several policies: held where each is, a trend where each is at
    least that, held in part where some contradict it and others do not, else not held."""
    if set(statuses) <= {"held", "trend"}:
        return "trend" if "trend" in statuses else "held"
    return "held in part" if {"held", "trend"} & set(statuses) else "not held"


def per_value(frame: pd.DataFrame, judge, values: list[float], name: str) -> Verdict:
    """``judge(selector, scope)`` at each x in ``values`` (a load or a β), combined: the
    weakest status (:func:`~dispatchlab.report.verdicts.combine`), every reading."""
    verdicts = [judge(frame["x"].round(9) == round(value, 9), f"{name} = {value:g}")
                for value in values]
    return Verdict(combine([v.status for v in verdicts]),
                   " — ".join(v.numbers for v in verdicts))
