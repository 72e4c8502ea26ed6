"""The stability verdict of a run: stable, unstable or undetermined, with its evidence."""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True)
class StabilityVerdict:
    """The stability verdict of a run (docs/model.md#stability-verdict): ``stable``,
    ``unstable`` or ``undetermined``, its evidence, and the fitted trend of ΣQ per slot
    with its t statistic (NaN when no trend was fitted)."""

    verdict: str  # "stable" | "unstable" | "undetermined"
    evidence: str
    slope_per_slot: float = float("nan")
    slope_t: float = float("nan")


#: growth "slows down" when the last quarter's increment is below this share of the first
RELAXING_RATIO = 0.5


def stability_verdict(block_means: np.ndarray, block_length: int, *, hit_bound: bool,
                      bound: int, slots_run: int, overloaded: bool,
                      relaxation_slots: float = 0.0, quantity: str = "ΣQ",
                      unit: str = "slot") -> StabilityVerdict:
    """Judge stability from the trend of ΣQ over the measured blocks.

    Unstable: ΣQ passed ``bound``; λ_Σ ≥ μ_Σ (``overloaded``: null recurrent at best,
    docs/model.md#optimality); or ΣQ grows steadily (regression slope t > 4 over 8
    batches, each quarter above the one before, and growth over the window at least half
    of the final level), unless the run is shorter than its relaxation time
    (:func:`still_relaxing`): then undetermined, "run longer". Stable: no significant
    trend (t < 2) or growth below 20 % of the level. Anything in between is undetermined.

    ``quantity`` and ``unit`` name the series and its step in the evidence (the
    continuous-time engine judges the number in system L, in steps of one arrival).
    """
    if hit_bound:
        return StabilityVerdict("unstable", f"ΣQ passed the bound {bound} in slot {slots_run - 1}")
    if overloaded:
        return StabilityVerdict("unstable", "λ_Σ ≥ μ_Σ: no policy can be stable")
    y = np.asarray(block_means, dtype=float)
    if y.size < 16:
        return StabilityVerdict("undetermined", f"too few blocks ({y.size}) to judge a trend")
    batches = y[y.size % 8:].reshape(8, -1).mean(axis=1)
    x = (np.arange(8) + 0.5) * (y.size // 8) * block_length
    slope, intercept = np.polyfit(x, batches, 1)
    residual = batches - (slope * x + intercept)
    se = np.sqrt(residual.var(ddof=2) / np.sum((x - x.mean()) ** 2))
    t_stat = float(slope / se) if se > 0 else (np.inf if slope > 0 else 0.0)
    quarters = y[y.size % 4:].reshape(4, -1).mean(axis=1)
    level = max(float(quarters[-1]), 1.0)
    growth = float(slope) * y.size * block_length
    evidence = (f"{quantity} quarter means {', '.join(f'{q:.4g}' for q in quarters)}; trend "
                f"{slope:.3g}/{unit} (t = {t_stat:.2g}), growth {growth:.4g} over the window")
    rising = bool(np.all(np.diff(quarters) > 0))
    if t_stat > 4 and rising and growth > 0.5 * level:
        window = y.size * block_length
        relaxing = still_relaxing(quarters, window, relaxation_slots, quantity, unit)
        if relaxing:
            return StabilityVerdict("undetermined", f"{evidence}; but {relaxing}",
                                    float(slope), t_stat)
        return StabilityVerdict("unstable", evidence, float(slope), t_stat)
    if t_stat < 2 or growth < 0.2 * level:
        return StabilityVerdict("stable", evidence, float(slope), t_stat)
    return StabilityVerdict("undetermined", f"{evidence}: a trend, but neither clear growth "
                            "nor a flat level — run longer", float(slope), t_stat)


def still_relaxing(quarters: np.ndarray, window: int, relaxation_slots: float,
                   quantity: str = "ΣQ", unit: str = "slot") -> str:
    """Why a rising ΣQ may be a stable system still filling up ("" when it is not).

    A trend alone cannot tell "unstable" from "stable but not yet at its level": a run
    shorter than its relaxation time rises either way. Two signs of the second: the
    measured window is shorter than ``relaxation_slots`` (a known relaxation time, e.g.
    that of the pooled queue), or the growth slows down — the last quarter's increment is
    below RELAXING_RATIO × the first, as when ΣQ approaches a level L like
    L − c·e^(−t/τ); τ is estimated from that deceleration. (An unstable system grows
    linearly, and a null-recurrent one like √t, whose increments fall only to 0.65×.)"""
    if window < relaxation_slots:
        return (f"the {window}-{unit} window is shorter than the relaxation time "
                f"{relaxation_slots:.3g} {unit}s: undetermined — run longer")
    increments = np.diff(quarters)
    first, last = float(increments[0]), float(increments[-1])
    if first > 0 and 0 < last < RELAXING_RATIO * first:
        ratio = math.sqrt(last / first)  # per quarter, from two quarters apart
        tau = window / 4 / math.log(1 / ratio)
        return (f"the growth slows down (quarter increments "
                f"{', '.join(f'{d:.4g}' for d in increments)}): {quantity} is still relaxing "
                f"toward its level (time constant ≈ {tau:.3g} {unit}s, longer than a tenth of the "
                f"window): undetermined — run longer")
    return ""


def below_lower_bound(ci_high: float, lower_bound: float, mean: float = math.nan) -> str:
    """The warning when the measured ΣQ cannot be a steady state ("" otherwise): its CI
    lies entirely below the proven lower bound on E[ΣQ] (docs/model.md#lower-bound) — or
    its ``mean`` does, when the run was too short for a CI — so the run is far shorter than
    the time the system needs to fill up."""
    if not math.isfinite(lower_bound):
        return ""
    if math.isfinite(ci_high):
        below = ci_high < lower_bound
        measured = f"mean ΣQ (CI up to {ci_high:.4g})"
    else:
        below = math.isfinite(mean) and mean < lower_bound
        measured = f"mean ΣQ {mean:.4g} (no CI)"
    if below:
        return (f"{measured} lies below the lower bound {lower_bound:.4g} on E[ΣQ]: the run "
                "is far too short to reach steady state; run longer")
    return ""
