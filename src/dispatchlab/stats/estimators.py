"""Point estimates with confidence intervals, warm-up detection and delay quantiles."""

from __future__ import annotations

import math
import numbers
from dataclasses import dataclass, replace

import numpy as np

from dispatchlab.compiled.histogram import delay_bin_value
from dispatchlab.core.errors import require
from dispatchlab.stats.autocorrelation import integrated_autocorrelation_time
from dispatchlab.stats.t_and_f_quantiles import f_quantile, student_t_quantile

# The default CI (batch means sized by the integrated autocorrelation time τ̂), chosen by
# measured coverage (docs/statistics.md): batches of BATCH_TAUS·τ̂ blocks, at most
# MAX_TAU_BATCHES of them; a window shorter than MIN_TAU_BATCHES such batches is too short
# to say.
BATCH_TAUS = 5.0
MAX_TAU_BATCHES = 12
MIN_TAU_BATCHES = 2
# With replications, the within-run variance is replaced by the between-run one when their
# ratio is significant at this level (the runs are too short for their own batch means).
WITHIN_BETWEEN_LEVEL = 0.01


@dataclass(frozen=True)
class Estimate:
    """A mean with a two-sided confidence interval and how it was obtained.

    ``standard_error`` is the estimated standard deviation of ``mean`` and ``dof`` the
    degrees of freedom of the Student-t quantile behind the interval;
    ``autocorrelation_time`` is τ̂ in steps of the series (blocks), when estimated.
    """

    mean: float
    ci_low: float
    ci_high: float
    method: str
    samples: int
    lag1_autocorrelation: float = float("nan")
    standard_error: float = float("nan")
    dof: float = float("nan")
    autocorrelation_time: float = float("nan")

    @property
    def half_width(self) -> float:
        """h = (ci_high − ci_low)/2 (``nan`` without an interval)."""
        return (self.ci_high - self.ci_low) / 2

    @property
    def relative_half_width(self) -> float:
        """The relative precision h/|x̄|: ``inf`` for a zero mean with an interval,
        ``nan`` without an interval (a precision target is then never met)."""
        if np.isnan(self.half_width) or np.isnan(self.mean):
            return float("nan")
        return self.half_width / abs(self.mean) if self.mean else float("inf")

    @property
    def too_short(self) -> bool:
        """No interval: the series is too short against its autocorrelation time."""
        return not np.isfinite(self.half_width)

    def shifted(self, mean: float) -> Estimate:
        """The same interval centred on ``mean`` (e.g. the exact time-average of the window)."""
        shift = mean - self.mean
        return replace(self, mean=mean, ci_low=self.ci_low + shift, ci_high=self.ci_high + shift)


def t_quantile(dof: float, confidence: float = 0.95) -> float:
    """The two-sided Student-t quantile t_{dof, (1+confidence)/2} (``nan`` without a
    degree of freedom); ``confidence`` strictly between 0 and 1."""
    require(isinstance(confidence, numbers.Real) and not isinstance(confidence, bool)
            and 0 < confidence < 1, "confidence",
            f"must be a number strictly between 0 and 1 (got {confidence!r})")
    if not dof > 0:
        return math.nan
    return student_t_quantile(float(dof), 0.5 + confidence / 2)


def t_interval(values: np.ndarray, confidence: float = 0.95) -> tuple[float, float, float]:
    """(mean, CI low, CI high) of independent ``values`` by Student's t (one value: no CI)."""
    mean = float(np.mean(values))
    if values.size < 2:
        return mean, float("nan"), float("nan")
    half = float(t_quantile(values.size - 1, confidence)
                 * np.std(values, ddof=1) / np.sqrt(values.size))
    return mean, mean - half, mean + half


def batch_means(block_means: np.ndarray, batches: int | None = None,
                confidence: float = 0.95) -> Estimate:
    """Batch-means CI from equal-length block means of one run (after warm-up).

    Default (``batches`` unset): the batch length comes from the series' own integrated
    autocorrelation time τ̂ (:func:`integrated_autocorrelation_time`, in blocks): batches of
    ⌈BATCH_TAUS·τ̂⌉ blocks, so that batch means are nearly independent, and at most
    MAX_TAU_BATCHES of them (longer batches beyond that: fewer, longer batches are less
    correlated, at the cost of a wider t quantile); Student t on (batches − 1) degrees of
    freedom. A window shorter than MIN_TAU_BATCHES such batches gives no interval
    (``nan`` bounds, "too short to say" in ``method``): run longer, or use replications;
    so does a series whose block means never vary (no spread to size an interval by).

    With ``batches`` given: that many equal batches (the oldest remainder blocks dropped).
    """
    blocks = np.asarray(block_means, dtype=float)
    if batches is not None:
        return _batch_estimate(blocks, batches, confidence)
    mean = float(blocks.mean()) if blocks.size else float("nan")
    if blocks.size and np.all(blocks == blocks[0]):  # a zero-width interval from no evidence
        nan = float("nan")
        return Estimate(mean, nan, nan, f"too short to say: the {blocks.size} block means "
                        "never varied (a constant run shows no spread to size an interval "
                        "by): run longer or use replications", int(blocks.size))
    tau = integrated_autocorrelation_time(blocks)
    needed = MIN_TAU_BATCHES * BATCH_TAUS * tau
    if not blocks.size >= needed:
        nan = float("nan")
        return Estimate(mean, nan, nan,
                        f"too short to say: {blocks.size} blocks < {MIN_TAU_BATCHES}×"
                        f"{BATCH_TAUS:g}·τ̂ = {needed:.4g} (τ̂ = {tau:.3g} blocks, the "
                        "integrated autocorrelation time): run longer or use replications",
                        int(blocks.size), autocorrelation_time=tau)
    length = max(math.ceil(BATCH_TAUS * tau), math.ceil(blocks.size / MAX_TAU_BATCHES))
    batches = blocks.size // length
    estimate = _batch_estimate(blocks, batches, confidence)
    return replace(estimate, autocorrelation_time=tau,  # batches of n // batches ≥ length
                   method=estimate.method[:-1] + f" of {blocks.size // batches} blocks, "
                   f"τ̂ = {tau:.3g})")


def with_standard_error_floor(estimate: Estimate, floor: float, why: str,
                              confidence: float = 0.95) -> Estimate:
    """``estimate`` with its standard error raised to ``floor`` when that is larger (same
    Student-t degrees of freedom); unchanged without an interval or with a ``nan`` floor.

    The default CI floors the batch-means SE by the heavy-traffic model SE of
    :mod:`dispatchlab.stats.standard_error_floor`; ``why`` names the floor in ``method``.
    """
    if estimate.too_short or not math.isfinite(floor) or not floor > estimate.standard_error:
        return estimate
    half = t_quantile(estimate.dof, confidence) * floor
    return replace(estimate, ci_low=estimate.mean - half, ci_high=estimate.mean + half,
                   standard_error=floor,
                   method=f"{estimate.method}; SE raised to the {why} {floor:.4g}")


def _batch_estimate(blocks: np.ndarray, batches: int, confidence: float) -> Estimate:
    batches = max(2, min(batches, blocks.size))
    per_batch = blocks.size // batches
    if per_batch == 0:
        return Estimate(float(blocks.mean()) if blocks.size else float("nan"),
                        float("nan"), float("nan"), "batch means", int(blocks.size))
    used = blocks[blocks.size - per_batch * batches:]
    values = used.reshape(batches, per_batch).mean(axis=1)
    mean, low, high = t_interval(values, confidence)
    return Estimate(mean, low, high, f"batch means ({batches} batches)", batches,
                    _lag1_autocorrelation(values),
                    standard_error=float(np.std(values, ddof=1) / np.sqrt(batches)),
                    dof=float(batches - 1))


def _lag1_autocorrelation(values: np.ndarray) -> float:
    head, tail = values[:-1], values[1:]
    if values.size < 3 or np.std(head) == 0 or np.std(tail) == 0:
        return float("nan")
    return float(np.corrcoef(head, tail)[0, 1])


def replication_estimate(values: np.ndarray, confidence: float = 0.95) -> Estimate:
    """CI from the means of independent replications (Student t on R − 1 df)."""
    values = np.asarray(values, dtype=float)
    mean, low, high = t_interval(values, confidence)
    se = float(np.std(values, ddof=1) / np.sqrt(values.size)) if values.size > 1 else math.nan
    return Estimate(mean, low, high, f"independent replications ({values.size})", values.size,
                    standard_error=se, dof=float(values.size - 1))


def within_support(estimate: Estimate, least: float = 0.0) -> Estimate:
    """``estimate`` of a mean that cannot be below ``least`` (a queue length, X ≥ 0): an
    interval reaching below it rests on too few or too unequal batches to say anything
    (a t-interval [−2,177, 3,543] for Po-2's E[ΣQ] near its threshold) and is dropped,
    the method saying so; the mean stays."""
    if estimate.too_short or not estimate.ci_low < least:
        return estimate
    nan = float("nan")
    return replace(estimate, ci_low=nan, ci_high=nan, method=(
        f"too few to say: {estimate.method} gave [{estimate.ci_low:.4g}, "
        f"{estimate.ci_high:.4g}], below {least:g}, the least the mean can be"))


def pooled_estimate(runs: list[Estimate], confidence: float = 0.95) -> Estimate:
    """CI of the grand mean of R equally long independent runs, from within- and
    between-run variance together.

    Each run r has mean x_r and, from its batch means, a variance estimate v_r of x_r on
    d_r degrees of freedom. The within-run estimate of Var(x_r) is v_w = mean(v_r) on
    Σ d_r df, the between-run one v_b = s²(x_1 … x_R) on R − 1 df; both estimate the same
    variance when the runs are long enough, so they are pooled,
    v = (Σd_r·v_w + (R−1)·v_b)/(Σd_r + R − 1), and the CI is x̄ ± t_{Σd_r+R−1}·sqrt(v/R).
    Few replications thus no longer pinch the interval (R = 2 had one df). When v_b/v_w
    exceeds its F quantile at WITHIN_BETWEEN_LEVEL, or a run has no within-run interval,
    the within-run variance is not trusted and the CI is the replications' own.
    """
    means = np.array([run.mean for run in runs], dtype=float)
    count = means.size
    between = replication_estimate(means, confidence)
    if count < 2:
        return runs[0] if runs else between
    within_ok = all(np.isfinite(run.standard_error) and np.isfinite(run.dof) and run.dof >= 1
                    for run in runs)
    if not within_ok:
        return replace(between, method=between.method + "; runs too short for their own "
                       "batch means")
    v_within = float(np.mean([run.standard_error**2 for run in runs]))
    d_within = float(sum(run.dof for run in runs))
    v_between = float(np.var(means, ddof=1))
    d_between = float(count - 1)
    if v_within <= 0 or v_between / v_within > f_quantile(
            d_between, d_within, 1 - WITHIN_BETWEEN_LEVEL):
        return replace(between, method=between.method + "; between-run variance exceeds "
                       "the within-run one: runs too short for their own batch means")
    dof = d_within + d_between
    se = math.sqrt((d_within * v_within + d_between * v_between) / dof / count)
    mean = float(means.mean())
    half = t_quantile(dof, confidence) * se
    return Estimate(mean, mean - half, mean + half,
                    f"{count} replications, within- and between-run variance pooled "
                    f"({dof:.0f} df)", count, standard_error=se, dof=dof)


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
