"""Autocorrelation of a stationary series: the integrated autocorrelation time.

For a stationary series x_1 … x_n with variance γ₀ and autocorrelations ρ_k, the variance
of its mean is ≈ γ₀·τ/n with τ = 1 + 2·Σ_{k≥1} ρ_k, the integrated autocorrelation time
(in steps of the series): n/τ is the number of effectively independent values. τ is
estimated with Sokal's automatic window: the partial sums τ(W) = 1 + 2·Σ_{k≤W} ρ̂_k are cut
at the first W with W ≥ c·τ(W), which keeps the estimator's bias and noise both small
when the series is several τ long ([Sokal] §3: A. Sokal, *Monte Carlo methods in
statistical mechanics*, 1997).
"""

from __future__ import annotations

import numpy as np

WINDOW_FACTOR = 5.0


def autocorrelation(series: np.ndarray) -> np.ndarray:
    """ρ̂_k, k = 0 … n−1 (the biased estimator, via FFT; ρ̂_0 = 1; zeros for a constant series)."""
    x = np.asarray(series, dtype=float)
    n = x.size
    if n == 0:  # a run stopped before its warm-up ended (bound) measures nothing
        return np.zeros(0)
    x = x - x.mean()
    spectrum = np.fft.rfft(x, 2 * n)
    covariance = np.fft.irfft(spectrum * np.conj(spectrum))[:n]
    if covariance[0] <= 0:
        out = np.zeros(n)
        out[0] = 1.0
        return out
    return covariance / covariance[0]


def integrated_autocorrelation_time(series: np.ndarray,
                                    window_factor: float = WINDOW_FACTOR) -> float:
    """τ̂ = 1 + 2·Σ_{k≤W} ρ̂_k with Sokal's window (in steps of ``series``; at least 1).

    When no window W < n satisfies W ≥ c·τ(W) the series is too short to estimate τ, and
    the result is ``inf``.
    """
    rho = autocorrelation(series)
    if rho.size < 2:
        return float("inf")
    partial = 1.0 + 2.0 * np.cumsum(rho[1:])
    windows = np.arange(1, rho.size)
    ok = np.flatnonzero(windows >= window_factor * partial)
    if ok.size == 0:
        return float("inf")
    return float(max(partial[ok[0]], 1.0))
