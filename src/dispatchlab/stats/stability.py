"""The stability verdict of a run: stable, unstable or undetermined, with its evidence."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True)
class StabilityVerdict:
    verdict: str  # "stable" | "unstable" | "undetermined"
    evidence: str
    slope_per_slot: float = float("nan")
    slope_t: float = float("nan")


def stability_verdict(block_means: np.ndarray, block_length: int, *, hit_bound: bool,
                      bound: int, slots_run: int, overloaded: bool) -> StabilityVerdict:
    """Judge stability from the trend of ΣQ over the measured blocks.

    Unstable: ΣQ passed ``bound``; λ_Σ ≥ μ_Σ (``overloaded``: null recurrent at best,
    §1.7); or ΣQ grows steadily (regression slope t > 4 over 8 batches, each quarter
    above the one before, and growth over the window at least half of the final level).
    Stable: no significant trend (t < 2) or growth below 20 % of the level. Anything in
    between is undetermined.
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
    evidence = (f"ΣQ quarter means {', '.join(f'{q:.4g}' for q in quarters)}; trend "
                f"{slope:.3g}/slot (t = {t_stat:.2g}), growth {growth:.4g} over the window")
    rising = bool(np.all(np.diff(quarters) > 0))
    if t_stat > 4 and rising and growth > 0.5 * level:
        return StabilityVerdict("unstable", evidence, float(slope), t_stat)
    if t_stat < 2 or growth < 0.2 * level:
        return StabilityVerdict("stable", evidence, float(slope), t_stat)
    return StabilityVerdict("undetermined", evidence, float(slope), t_stat)
