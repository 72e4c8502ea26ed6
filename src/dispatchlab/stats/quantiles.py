"""Confidence intervals of delay quantiles from a tagged sample (docs/statistics.md#tagged-delays).

The tagged jobs of a run are an independent thinning of its measured jobs: each is tagged
with probability p, whatever its delay. For a level u (the paper's quantile level, 0.99
for p99) and the n tagged delays in order X_(1) ≤ … ≤ X_(n), the count B of tagged delays
at or below the run's exact quantile x_u is Binomial(n, ≥ u) given n, so the
order-statistic interval [X_(l), X_(h)] with l = ⌊nu − z·σ⌋, h = ⌈nu + z·σ⌉ + 1,
σ = √(n·u·(1 − u)) (the normal approximation of B's quantiles), covers x_u with about
95 % for z = 1.96 — conservatively when delays tie (they are whole slots) and when the
sample is a large share of the jobs (a thinning is without replacement). It is the
interval of the quantile that ``delay="all"`` reports on the same run, not of the
stationary quantile: the run's own sampling error (its length against the queue's
relaxation time) is the same in both modes and not in it.
"""

from __future__ import annotations

import math

import numpy as np

from dispatchlab.compiled.histogram import delay_bin_value

#: z of a two-sided 95 % interval
Z_95 = 1.959963984540054


def order_statistic(cumulative: np.ndarray, rank: int) -> float:
    """X_(rank), 1 ≤ rank ≤ n, of the sample whose histogram has these running sums."""
    return float(delay_bin_value(int(np.searchsorted(cumulative, rank, side="left"))))


def quantile_intervals(histogram: np.ndarray, levels: tuple[float, ...],
                       z: float = Z_95) -> list[tuple[float, float]]:
    """The order-statistic interval (low, high) of each quantile level u of the delays in
    ``histogram`` (the engine's layout, compiled.histogram); an end the sample cannot
    give (h > n, or l < 1) is nan, and both are nan for an empty sample."""
    histogram = np.asarray(histogram)
    n = int(histogram.sum())
    if n == 0:
        return [(math.nan, math.nan)] * len(levels)
    cumulative = np.cumsum(histogram)
    out = []
    for u in levels:
        sigma = math.sqrt(n * u * (1.0 - u))
        low = math.floor(n * u - z * sigma)
        high = math.ceil(n * u + z * sigma) + 1
        out.append((order_statistic(cumulative, low) if low >= 1 else math.nan,
                    order_statistic(cumulative, high) if high <= n else math.nan))
    return out
