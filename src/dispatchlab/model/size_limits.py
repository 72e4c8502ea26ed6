"""The size limits of a model, in one place: why every int64 count of a run is safe.

The slot loop counts jobs in int64 (queues Q_n(t), arrivals A_Σ(t), the run's totals of
arrived and departed jobs). A run of T slots moves at most about max(λ_Σ, μ_Σ)·T jobs,
so the rule is

    λ_Σ ≤ MAX_JOBS_PER_SLOT,   N·μ_max ≤ MAX_JOBS_PER_SLOT,   a trace count ≤ MAX_JOBS_PER_SLOT,
    max(λ_Σ, μ_Σ)·T ≤ MAX_JOBS_PER_RUN,

with MAX_JOBS_PER_SLOT = 2^32 (≈ 4.3·10^9 jobs in one slot) and MAX_JOBS_PER_RUN = 2^60,
a factor 4 below the 2^62 at which int64 sums of two such totals could overflow. The
first three are checked when a model is built (:func:`check_rates`,
:func:`check_arrival_rate`), the last when a run is asked for (:func:`check_run_jobs`);
every μ_n is also at least MIN_RATE, so that no square of a rate (ε²) underflows to 0.
Rates are checked *before* any arithmetic on them, so that 1e308 is refused with a
message instead of overflowing to ``inf`` with a numpy warning.
"""

from __future__ import annotations

import math

import numpy as np

from dispatchlab.core.errors import require

MAX_SERVERS = 1_000_000  # N: memory stays in the hundreds of MB
MAX_DISPATCHERS = 100_000  # M
MAX_JOBS_PER_SLOT = 2**32
MAX_JOBS_PER_RUN = 2**60
#: p_m are relative weights: bounded so that their sum is finite
MAX_WEIGHT = 1e12
#: the least service rate μ_n: one job per 10^12 slots. Below it no run can say anything,
#: and squares of the rates (ε², in the pooled queue's relaxation time ζ/ε²) underflow to 0
MIN_RATE = 1e-12


def check_rates(rates: np.ndarray, field: str = "servers") -> None:
    """Every μ_n finite, > 0, and N·μ_max ≤ MAX_JOBS_PER_SLOT (no arithmetic before the check)."""
    require(bool(np.all(np.isfinite(rates))), field, "rates must be finite numbers")
    require(bool(np.all(rates > 0)), field, "every service rate μ_n must be > 0")
    least = float(np.min(rates))
    require(least >= MIN_RATE, field, f"every service rate μ_n must be ≥ {MIN_RATE:g} "
            f"(one job per 10^12 slots; got {least:g})")
    largest = float(np.max(rates))
    require(largest * rates.size <= MAX_JOBS_PER_SLOT, field,
            f"N·μ_max = {rates.size:,}·{largest:g} exceeds {MAX_JOBS_PER_SLOT:,} jobs per slot "
            "(2^32, the limit that keeps every job count of a run within int64)")


def check_arrival_rate(rate: float, field: str = "load") -> None:
    """λ_Σ finite, > 0 and ≤ MAX_JOBS_PER_SLOT."""
    require(isinstance(rate, int | float | np.integer | np.floating)
            and not isinstance(rate, bool), field, f"λ_Σ must be a number (got {rate!r})")
    require(math.isfinite(rate) and rate > 0, field,
            f"the arrival rate λ_Σ must be a finite number > 0 (got {rate:g})")
    require(rate <= MAX_JOBS_PER_SLOT, field,
            f"λ_Σ = {rate:g} exceeds {MAX_JOBS_PER_SLOT:,} jobs per slot (2^32, the limit "
            "that keeps every job count of a run within int64)")


def check_trace_counts(counts: np.ndarray, field: str = "arrivals") -> None:
    """Every per-slot count of a trace ≤ MAX_JOBS_PER_SLOT (checked on floats, before int64)."""
    largest = float(np.max(counts))
    require(largest <= MAX_JOBS_PER_SLOT, field,
            f"a trace count of {largest:g} exceeds {MAX_JOBS_PER_SLOT:,} jobs per slot (2^32, "
            "the limit that keeps every job count of a run within int64)")


def check_weights(weights: np.ndarray, field: str = "dispatcher_weights") -> None:
    """p_m finite, in [0, MAX_WEIGHT] and not all zero."""
    require(bool(np.all(np.isfinite(weights))), field, "weights must be finite numbers")
    require(bool(np.all(weights >= 0)) and bool(np.any(weights > 0)), field,
            "weights must be ≥ 0 and not all zero")
    require(bool(np.all(weights <= MAX_WEIGHT)), field,
            f"weights are relative: keep them ≤ {MAX_WEIGHT:g}")


def run_jobs(arrival_rate: float, mu_sum: float, slots: int) -> float:
    """max(λ_Σ, μ_Σ)·T, about the most jobs a run of T slots moves."""
    return max(arrival_rate, mu_sum) * float(slots)


def check_run_jobs(arrival_rate: float, mu_sum: float, slots: int, field: str = "slots") -> None:
    """max(λ_Σ, μ_Σ)·T ≤ MAX_JOBS_PER_RUN."""
    jobs = run_jobs(arrival_rate, mu_sum, slots)
    require(jobs <= MAX_JOBS_PER_RUN, field,
            f"{slots:,} slots at max(λ_Σ, μ_Σ) = {max(arrival_rate, mu_sum):g} jobs per slot "
            f"move about {jobs:.3g} jobs, above 2^60 ≈ {MAX_JOBS_PER_RUN:.3g}: the int64 job "
            "counts could overflow; use fewer slots or lower rates")
