"""Point estimates with confidence intervals, warm-up detection and delay quantiles."""

from __future__ import annotations

from dataclasses import dataclass, replace

import numpy as np
from scipy import stats as scipy_stats

from dispatchlab.compiled.histogram import EXACT_DELAY_BINS, LOG_BINS_PER_OCTAVE

MAX_BATCHES = 40
MIN_BATCHES = 10
MAX_LAG1 = 0.2


@dataclass(frozen=True)
class Estimate:
    """A mean with a two-sided confidence interval and how it was obtained."""

    mean: float
    ci_low: float
    ci_high: float
    method: str
    samples: int
    lag1_autocorrelation: float = float("nan")

    @property
    def half_width(self) -> float:
        return (self.ci_high - self.ci_low) / 2

    @property
    def relative_half_width(self) -> float:
        return self.half_width / abs(self.mean) if self.mean else float("inf")


def _t_interval(values: np.ndarray, confidence: float) -> tuple[float, float, float]:
    mean = float(np.mean(values))
    if values.size < 2:
        return mean, float("nan"), float("nan")
    half = float(scipy_stats.t.ppf(0.5 + confidence / 2, values.size - 1)
                 * np.std(values, ddof=1) / np.sqrt(values.size))
    return mean, mean - half, mean + half


def batch_means(block_means: np.ndarray, batches: int | None = None,
                confidence: float = 0.95) -> Estimate:
    """Batch-means CI from equal-length block means of one run (after warm-up).

    Blocks are grouped into equal batches (the oldest remainder blocks are dropped).
    With ``batches`` unset the count adapts: it starts at MAX_BATCHES and halves while
    the batch means' lag-1 autocorrelation exceeds MAX_LAG1 (batches too short to be
    nearly independent, which makes the CI too narrow), down to MIN_BATCHES; a
    correlation still above MAX_LAG1 there is named in ``method``.
    """
    blocks = np.asarray(block_means, dtype=float)
    if batches is not None:
        return _batch_estimate(blocks, batches, confidence)
    count = MAX_BATCHES
    estimate = _batch_estimate(blocks, count, confidence)
    while count > MIN_BATCHES and estimate.lag1_autocorrelation > MAX_LAG1:
        count //= 2
        estimate = _batch_estimate(blocks, count, confidence)
    if estimate.lag1_autocorrelation > MAX_LAG1:
        estimate = replace(estimate, method=estimate.method + (
            f"; lag-1 correlation {estimate.lag1_autocorrelation:.2f}: the CI may be too "
            "narrow, run longer or use replications"))
    return estimate


def _batch_estimate(blocks: np.ndarray, batches: int, confidence: float) -> Estimate:
    batches = max(2, min(batches, blocks.size))
    per_batch = blocks.size // batches
    if per_batch == 0:
        return Estimate(float(blocks.mean()) if blocks.size else float("nan"),
                        float("nan"), float("nan"), "batch means", int(blocks.size))
    used = blocks[blocks.size - per_batch * batches:]
    values = used.reshape(batches, per_batch).mean(axis=1)
    mean, low, high = _t_interval(values, confidence)
    return Estimate(mean, low, high, f"batch means ({batches} batches)", batches,
                    _lag1_autocorrelation(values))


def _lag1_autocorrelation(values: np.ndarray) -> float:
    head, tail = values[:-1], values[1:]
    if values.size < 3 or np.std(head) == 0 or np.std(tail) == 0:
        return float("nan")
    return float(np.corrcoef(head, tail)[0, 1])


def replication_estimate(values: np.ndarray, confidence: float = 0.95) -> Estimate:
    """CI from the means of independent replications (Student t)."""
    values = np.asarray(values, dtype=float)
    mean, low, high = _t_interval(values, confidence)
    return Estimate(mean, low, high, f"independent replications ({values.size})", values.size)


def mser5_truncation(block_means: np.ndarray) -> int:
    """MSER-5 warm-up: the number of leading blocks to drop.

    White's marginal standard error rule on batches of 5 blocks: choose the
    truncation d (searched over the first half) that minimises the variance of the
    remaining mean, s²(d)/(n−d).
    """
    blocks = np.asarray(block_means, dtype=float)
    batches = blocks[: blocks.size // 5 * 5].reshape(-1, 5).mean(axis=1)
    n = batches.size
    if n < 4:
        return 0
    best_d, best = 0, np.inf
    for d in range(n // 2):
        rest = batches[d:]
        value = np.var(rest) / rest.size
        if value < best:
            best_d, best = d, value
    return best_d * 5


def delay_bin_value(index: np.ndarray | int) -> np.ndarray:
    """The delay (in slots) that a histogram bin stands for (its lower edge)."""
    index = np.asarray(index, dtype=float)
    octave = (index - EXACT_DELAY_BINS) / LOG_BINS_PER_OCTAVE
    return np.where(index < EXACT_DELAY_BINS, index, np.floor(EXACT_DELAY_BINS * 2.0 ** octave))


def delay_quantiles(histogram: np.ndarray, levels: tuple[float, ...]) -> list[float]:
    """Quantiles of the per-job delay from the engine's histogram (exact below 1024 slots,
    within 0.6 % above)."""
    histogram = np.asarray(histogram)
    total = histogram.sum()
    if total == 0:
        return [float("nan")] * len(levels)
    cumulative = np.cumsum(histogram)
    out = []
    for level in levels:
        index = int(np.searchsorted(cumulative, level * total, side="left"))
        out.append(float(delay_bin_value(index)))
    return out
