"""Discrete laws on 0, 1, … and their convolution, without scipy.stats or scipy.signal.

Every run computes E[q] of the pooled queue (:mod:`dispatchlab.theory.pooled_queue`) from
Poisson and binomial pmfs and their convolutions. scipy.stats and scipy.signal take about
a second of CPU each to import (more than the rest of a warm run's start-up), so these
functions call the same scipy.special kernels that ``scipy.stats.<law>.pmf`` calls and the
same scipy.fft transforms as ``scipy.signal.fftconvolve``: the numbers are bit-identical
(tests/theory/test_pmf.py compares them), only the imports are lighter (scipy.special is loaded
by a run anyway; scipy.fft, about 0.2 s of CPU, only for laws too long to convolve
directly).
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
from scipy import special

#: up to this many products (the two laws' lengths multiplied), the direct convolution:
#: exact, and under a millisecond
DIRECT_CONVOLUTION_PRODUCTS = 1 << 20


def _pmf(values: np.ndarray) -> np.ndarray:
    # scipy.stats clips every pmf to [0, 1]
    return np.clip(values, 0, 1)


def poisson_pmf(k: np.ndarray, mu: float) -> np.ndarray:
    """P(X = k) for X ~ Poisson(μ), ``k`` integers ≥ 0: ``scipy.stats.poisson.pmf``'s
    formula, exp(k·log μ − log k! − μ)."""
    return _pmf(np.exp(special.xlogy(k, mu) - special.gammaln(k + 1) - mu))


def _kernel(name: str, law: str) -> Callable[..., np.ndarray]:
    """scipy.special's private pmf kernel ``name``, which ``scipy.stats.<law>.pmf`` calls;
    should a scipy release (pyproject allows newer ones) rename it, ``scipy.stats``' own
    ``<law>.pmf``: the same numbers, a slower import."""
    kernel = getattr(getattr(special, "_ufuncs", None), name, None)
    if kernel is not None:
        return kernel

    def from_stats(k: np.ndarray, n: int, p: float) -> np.ndarray:
        import scipy.stats

        return getattr(scipy.stats, law).pmf(k, n, p)
    return from_stats


def binom_pmf(k: np.ndarray, n: int, p: float) -> np.ndarray:
    """P(X = k) for X ~ Binomial(n, p), ``k`` in 0 … n: ``scipy.stats.binom.pmf``'s kernel."""
    return _pmf(_kernel("_binom_pmf", "binom")(k, n, p))


def nbinom_pmf(k: np.ndarray, n: int, p: float) -> np.ndarray:
    """P(X = k) for X ~ NegativeBinomial(n, p) (failures before the n-th success), ``k``
    integers ≥ 0: ``scipy.stats.nbinom.pmf``'s kernel."""
    return _pmf(_kernel("_nbinom_pmf", "nbinom")(k, n, p))


def convolve(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """The law of X + Y from the pmfs ``a`` and ``b`` of independent X and Y: directly when
    both are short enough, else through the FFT as ``scipy.signal.fftconvolve`` (the
    rounding's tiny negative values clipped to 0)."""
    if a.size * b.size <= DIRECT_CONVOLUTION_PRODUCTS:
        return np.convolve(a, b)
    from scipy import fft

    size = a.size + b.size - 1
    padded = [fft.next_fast_len(size, True)]
    product = fft.rfftn(a, padded, axes=[0]) * fft.rfftn(b, padded, axes=[0])
    return np.clip(fft.irfftn(product, padded, axes=[0])[:size], 0.0, None)
