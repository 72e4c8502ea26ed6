"""Discrete laws on 0, 1, … and their convolution, in numpy alone.

Every run computes E[q] of the pooled queue (:mod:`dispatchlab.theory.pooled_queue`) from
Poisson, binomial and negative-binomial pmfs and their convolutions. Importing
scipy.special (or scipy.stats) for them would cost more than the rest of a warm classical
run's start (scipy's array-API layer alone imports numpy.f2py and numpy.testing), so the
pmfs are computed here by Loader's saddle-point method (C. Loader, "Fast and accurate
computation of binomial probabilities", 2000; the method of R's ``dbinom`` and
``dpois``): for Poisson(μ), P(X = k) = e^(−δ(k) − bd0(k, μ))/√(2πk), and for
Binomial(n, p), e^(δ(n) − δ(k) − δ(n−k) − bd0(k, np) − bd0(n−k, nq))·√(n/(2πk(n−k))),
with δ the error of Stirling's formula and bd0(x, m) = x·log(x/m) + m − x summed without
cancellation. Each probability
is accurate to about 10⁻¹⁴ relative, with no loss for large means (the formula
exp(k·log μ − log k! − μ) loses about k·log μ·10⁻¹⁶: 10⁻¹¹ at μ = 10⁴); tests compare
them with exact decimal arithmetic and with scipy.stats.
"""

from __future__ import annotations

import math
from decimal import Context, Decimal, localcontext

import numpy as np

#: up to this many products (the two laws' lengths multiplied), the direct convolution:
#: exact, and under a millisecond
DIRECT_CONVOLUTION_PRODUCTS = 1 << 20

_LOG_TWO_PI = math.log(2 * math.pi)
_PI = Decimal("3.14159265358979323846264338327950288419716939937510")
#: δ(n) up to here from a table (exact to double precision), above by Stirling's series
_TABLE_TOP = 15


def _stirling_error_table() -> np.ndarray:
    """δ(n) = log n! − (n + ½)·log n + n − ½·log 2π for n = 0 … 15 (δ(0) = 0, unused),
    in 50-digit decimal arithmetic, rounded once to double."""
    table = [0.0]
    with localcontext(Context(prec=50)):
        half_log_two_pi = (2 * _PI).ln() / 2
        for n in range(1, _TABLE_TOP + 1):
            exact = (Decimal(math.factorial(n)).ln() - (n + Decimal("0.5")) * Decimal(n).ln()
                     + n - half_log_two_pi)
            table.append(float(exact))
    return np.array(table)


_STIRLING_ERROR = _stirling_error_table()
# the coefficients of Stirling's series: δ(n) ≈ 1/(12n) − 1/(360n³) + 1/(1260n⁵) − …
_S0, _S1, _S2, _S3, _S4 = 1 / 12, 1 / 360, 1 / 1260, 1 / 1680, 1 / 1188


def stirling_error(n: np.ndarray) -> np.ndarray:
    """δ(n) = log n! − log(√(2πn)·(n/e)ⁿ) for integers n ≥ 0 (δ(0) = 0): the table up to
    15, then Stirling's series with as many terms as n needs (Loader's cut points)."""
    n = np.asarray(n, dtype=float)
    small = n <= _TABLE_TOP
    table = _STIRLING_ERROR[np.where(small, n, 0).astype(np.int64)]
    big = np.where(small, _TABLE_TOP + 1, n)
    square = big * big
    series = np.where(
        big > 500, (_S0 - _S1 / square) / big,
        np.where(big > 80, (_S0 - (_S1 - _S2 / square) / square) / big,
                 np.where(big > 35, (_S0 - (_S1 - (_S2 - _S3 / square) / square) / square) / big,
                          (_S0 - (_S1 - (_S2 - (_S3 - _S4 / square) / square) / square)
                           / square) / big)))
    return np.where(small, table, series)


def deviance(x: np.ndarray, mean: np.ndarray) -> np.ndarray:
    """bd0(x, m) = x·log(x/m) + m − x ≥ 0 for x ≥ 0, m > 0, without its cancellation: near
    x = m, the series (x − m)·v + 2x·Σ_{j ≥ 1} v^(2j+1)/(2j + 1), v = (x − m)/(x + m)."""
    x, mean = np.broadcast_arrays(np.asarray(x, dtype=float), np.asarray(mean, dtype=float))
    near = np.abs(x - mean) < 0.1 * (x + mean)
    with np.errstate(divide="ignore", invalid="ignore"):
        v = np.where(near, (x - mean) / (x + mean), 0.0)
        total = (x - mean) * v
        term = 2 * x * v
        square = v * v
        # |v| < 0.1: each term is below 1/100 of the one before, 9 reach 10⁻¹⁸ of the sum
        for j in range(1, 10):
            term = term * square
            total = total + term / (2 * j + 1)
        far = x * np.log(x / mean) + mean - x
    return np.where(near, total, np.where(x == 0, mean, far))


def _log_factorial(k: np.ndarray) -> np.ndarray:
    """log k! for integers k ≥ 1, through δ (numpy has no log-gamma)."""
    return stirling_error(k) + (k + 0.5) * np.log(k) - k + _LOG_TWO_PI / 2


def poisson_pmf(k: np.ndarray, mu: float) -> np.ndarray:
    """P(X = k) for X ~ Poisson(μ), ``k`` integers ≥ 0:
    e^(−δ(k) − bd0(k, μ))/√(2πk), and e^(−μ) at k = 0."""
    k = np.asarray(k, dtype=float)
    mu = float(mu)
    if mu == 0 or k.size == 0:
        return (k == 0).astype(float)
    positive = np.where(k > 0, k, 1.0)
    with np.errstate(divide="ignore", over="ignore", under="ignore"):
        if mu < positive.max() * np.finfo(float).tiny:  # μ below 10⁻³⁰⁵: bd0 overflows
            values = np.exp(-mu + positive * math.log(mu) - _log_factorial(positive))
        else:
            values = (np.exp(-stirling_error(positive) - deviance(positive, mu))
                      / np.sqrt(2 * math.pi * positive))
    return np.where(k == 0, math.exp(-mu), values)


def _binomial_terms(k: np.ndarray, n: np.ndarray, p: float) -> np.ndarray:
    """P(Binomial(n, p) = k) for integers 0 ≤ k ≤ n (arrays that broadcast), 0 < p < 1."""
    q = 1.0 - p
    k, n = np.broadcast_arrays(np.asarray(k, dtype=float), np.asarray(n, dtype=float))
    inner = (k > 0) & (k < n)
    ki, ni = np.where(inner, k, 1.0), np.where(inner, n, 2.0)
    with np.errstate(under="ignore"):
        log_inner = (stirling_error(ni) - stirling_error(ki) - stirling_error(ni - ki)
                     - deviance(ki, ni * p) - deviance(ni - ki, ni * q)
                     - (_LOG_TWO_PI + np.log(ki) + np.log1p(-ki / ni)) / 2)
        # k = 0: qⁿ, k = n: pⁿ, each by bd0 when its log would cancel (Loader)
        none = (-deviance(n, n * q) - n * p) if p < 0.1 else n * math.log(q)
        every = (-deviance(n, n * p) - n * q) if q < 0.1 else n * math.log(p)
        values = np.exp(np.where(inner, log_inner, np.where(k == 0, none, every)))
    return np.where((k < 0) | (k > n), 0.0, np.where(n == 0, (k == 0).astype(float), values))


def binom_pmf(k: np.ndarray, n: int, p: float) -> np.ndarray:
    """P(X = k) for X ~ Binomial(n, p), ``k`` integers in 0 … n."""
    k = np.asarray(k, dtype=float)
    p = float(p)
    if p == 0:
        return (k == 0).astype(float)
    if p == 1:
        return (k == n).astype(float)
    return _binomial_terms(k, np.asarray(n, dtype=float), p)


def nbinom_pmf(k: np.ndarray, n: int, p: float) -> np.ndarray:
    """P(X = k) for X ~ NegativeBinomial(n, p) (failures before the n-th success, n ≥ 1),
    ``k`` integers ≥ 0: n/(n + k)·P(Binomial(n + k, p) = n)."""
    k = np.asarray(k, dtype=float)
    p = float(p)
    if p == 1:
        return (k == 0).astype(float)
    return n / (n + k) * _binomial_terms(float(n), n + k, p)


def convolve(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """The law of X + Y from the pmfs ``a`` and ``b`` of independent X and Y: directly when
    both are short enough, else through the FFT (numpy's), the rounding's tiny negative
    values clipped to 0."""
    if a.size * b.size <= DIRECT_CONVOLUTION_PRODUCTS:
        return np.convolve(a, b)
    size = a.size + b.size - 1
    padded = 1 << (size - 1).bit_length()
    product = np.fft.rfft(a, padded) * np.fft.rfft(b, padded)
    return np.clip(np.fft.irfft(product, padded)[:size], 0.0, None)
