"""A model floor on the standard error of the time-average queue, from the mean queues.

Near saturation a queue n with arrival rate λ_n and service rate μ_n behaves like a
reflected Brownian motion with drift −δ_n = −(μ_n − λ_n) and variance σ_n². Its stationary
law is exponential with mean q_n = σ_n²/(2δ_n), so Var Q_n = q_n², and its integrated
autocorrelation time is τ_n = 2σ_n²/δ_n² = 4·q_n/δ_n slots. The time average of Q_n over
T slots then has variance ≈ Var Q_n·τ_n/T = 4·q_n³/(δ_n·T), whatever the arrival
burstiness (it enters through q_n). For queues that are independent given their rates (a
state-independent routing: RAND, weighted RAND, round robin) the variances add:

    SE_model(ΣQ̄) = sqrt(Σ_n 4·q̄_n³ / (δ_n·T)).

Why a floor: one run of a few tens of τ estimates its own τ̂ with a relative error of
≈ sqrt(2·(2W+1)/n) (W the autocorrelation window, n the blocks), so a run that happened
not to make a large excursion reports both a low mean and a low, narrow batch-means
variance. The model SE uses the run's own q̄_n but not its τ̂. In light traffic it lies
well below the true SE (for M/M/1 by the factor 2ρ²/(1+ρ) in variance), so it only acts
near saturation, where batch means fail (docs/statistics.md has the measurements).
"""

from __future__ import annotations

import math

import numpy as np


def heavy_traffic_standard_error(mean_queues: np.ndarray, mu: np.ndarray,
                                 arrival_rates: np.ndarray, slots: int) -> float:
    """SE_model = sqrt(Σ_n 4·q̄_n³/((μ_n − λ_n)·T)) of the time average of ΣQ over T slots.

    ``mean_queues`` q̄_n (measured), ``mu`` μ_n, ``arrival_rates`` λ_n (per server),
    ``slots`` T. ``nan`` when a server is not strictly underloaded (δ_n ≤ 0), a mean
    queue is not finite, or T < 1: no floor then.
    """
    model = _model(mean_queues, mu, arrival_rates)
    if slots < 1 or model is None:
        return float("nan")
    q, drift = model
    return math.sqrt(float(np.sum(4.0 * q**3 / drift)) / slots)


def heavy_traffic_relaxation(mean_queues: np.ndarray, mu: np.ndarray,
                             arrival_rates: np.ndarray) -> float:
    """max_n τ_n = 4·q̄_n/(μ_n − λ_n): the slowest server's integrated autocorrelation time
    in slots, in the reflected-Brownian model above (``nan`` where the model does not apply:
    a server not strictly underloaded, or a mean queue that is not finite)."""
    model = _model(mean_queues, mu, arrival_rates)
    if model is None:
        return float("nan")
    q, drift = model
    return float(np.max(4.0 * q / drift))


def _model(mean_queues: np.ndarray, mu: np.ndarray, arrival_rates: np.ndarray
           ) -> tuple[np.ndarray, np.ndarray] | None:
    """(max(q̄_n, 0), δ_n = μ_n − λ_n) where the model applies: every mean queue finite and
    every server strictly underloaded; ``None`` otherwise."""
    q = np.asarray(mean_queues, dtype=float)
    drift = np.asarray(mu, dtype=float) - np.asarray(arrival_rates, dtype=float)
    if q.shape != drift.shape or not np.all(np.isfinite(q)) or np.any(drift <= 0):
        return None
    return np.maximum(q, 0.0), drift
