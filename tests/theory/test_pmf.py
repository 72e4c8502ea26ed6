"""theory.pmf and theory.roots give scipy's own numbers, bit for bit, without importing
scipy.stats, scipy.signal or scipy.optimize (a warm run's start-up; benchmarks/README.md)."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import optimize, stats
from scipy.signal import fftconvolve

from dispatchlab import System
from dispatchlab.theory import pooled_queue
from dispatchlab.theory.pmf import (
    DIRECT_CONVOLUTION_PRODUCTS,
    binom_pmf,
    convolve,
    nbinom_pmf,
    poisson_pmf,
)
from dispatchlab.theory.roots import brentq

RTOL = 4 * np.finfo(float).eps


@pytest.mark.parametrize("mu", [0.0, 1e-9, 0.3, 0.95, 28.5, 599.9, 1e4])
def test_poisson_pmf_is_scipy_s(mu: float) -> None:
    k = np.arange(int(mu + 14 * math.sqrt(mu) + 45) + 1)
    assert np.array_equal(poisson_pmf(k, mu), stats.poisson.pmf(k, mu))


@pytest.mark.parametrize("n", [1, 2, 50, 51, 1000, 100_000])
@pytest.mark.parametrize("p", [0.0, 1e-6, 0.1, 0.5, 0.999, 1.0])
def test_binomial_pmfs_are_scipy_s(n: int, p: float) -> None:
    k = np.arange(n + 1)
    count, rate = np.int64(n), np.float64(p)  # as np.unique gives them
    assert np.array_equal(binom_pmf(k, count, rate), stats.binom.pmf(k, count, rate))
    k, success = np.arange(400), max(p, 0.01)
    assert np.array_equal(nbinom_pmf(k, n, success), stats.nbinom.pmf(k, n, success))


def test_a_scipy_without_the_private_kernels_falls_back_to_scipy_stats(monkeypatch) -> None:
    import types

    from dispatchlab.theory import pmf

    # scipy.stats itself calls the kernels: hide them from theory.pmf alone
    monkeypatch.setattr(pmf, "special", types.SimpleNamespace())
    k = np.arange(31)
    assert np.array_equal(binom_pmf(k, 30, 0.3), stats.binom.pmf(k, 30, 0.3))
    assert np.array_equal(nbinom_pmf(k, 3, 0.4), stats.nbinom.pmf(k, 3, 0.4))


@settings(max_examples=150, deadline=None)
@given(st.integers(1, 3000), st.integers(1, 3000), st.integers(0, 2**32 - 1))
def test_convolve_is_fftconvolve(size_a: int, size_b: int, seed: int) -> None:
    rng = np.random.default_rng(seed)
    a, b = rng.random(size_a), rng.random(size_b)
    expected = (np.convolve(a, b) if size_a * size_b <= DIRECT_CONVOLUTION_PRODUCTS
                else np.clip(fftconvolve(a, b), 0.0, None))
    assert np.array_equal(convolve(a, b), expected)


def test_convolve_is_the_law_of_the_sum() -> None:
    # Binomial(600, p) * Binomial(2000, p) = Binomial(2600, p), by the FFT path
    p = 0.3
    assert 601 * 2001 > DIRECT_CONVOLUTION_PRODUCTS
    total = convolve(binom_pmf(np.arange(601), 600, p), binom_pmf(np.arange(2001), 2000, p))
    assert total.min() >= 0
    np.testing.assert_allclose(total, binom_pmf(np.arange(2601), 2600, p), atol=1e-15)


FUNCTIONS = {
    "cubic": lambda x: x**3 - 2 * x - 5,
    "cos": lambda x: math.cos(x) - x,
    "exp": lambda x: math.exp(x) - 10,
    "flat fifth power": lambda x: (x - 1.0) ** 5,
    "atan": lambda x: math.atan(x - 0.3),
    "steep tanh": lambda x: math.tanh(50 * (x - 0.123)),
}


@pytest.mark.parametrize("name", FUNCTIONS)
@pytest.mark.parametrize(("a", "b"), [(-3.0, 4.0), (0.0, 3.0), (-10.0, 10.5)])
@pytest.mark.parametrize(("xtol", "rtol"), [(1e-300, RTOL), (2e-12, RTOL), (1e-6, 1e-3)])
def test_brentq_is_scipy_s(name: str, a: float, b: float, xtol: float, rtol: float) -> None:
    f = FUNCTIONS[name]
    try:
        expected: float | type[Exception] = optimize.brentq(f, a, b, xtol=xtol, rtol=rtol,
                                                             maxiter=100)
    except (ValueError, RuntimeError) as error:  # same sign, or no convergence
        expected = type(error)
    if isinstance(expected, float):
        assert brentq(f, a, b, xtol=xtol, rtol=rtol, maxiter=100) == expected
    else:
        with pytest.raises(expected):
            brentq(f, a, b, xtol=xtol, rtol=rtol, maxiter=100)


def test_brentq_ends_and_errors() -> None:
    assert brentq(lambda x: x - 1, 1.0, 3.0, xtol=1e-12, rtol=RTOL, maxiter=10) == 1.0
    assert brentq(lambda x: x - 3, 1.0, 3.0, xtol=1e-12, rtol=RTOL, maxiter=10) == 3.0
    with pytest.raises(ValueError, match="different signs"):
        brentq(lambda x: x * x + 1, -1.0, 1.0, xtol=1e-12, rtol=RTOL, maxiter=10)
    with pytest.raises(RuntimeError, match="no convergence in 2"):
        brentq(math.atan, -1.0, 1e6, xtol=1e-300, rtol=RTOL, maxiter=2)


@pytest.mark.parametrize("servers", ["50x0.1,50x0.5", "100x0.3", "4x0.3,4x0.6", "0.5"])
@pytest.mark.parametrize("load", [0.3, 0.95, 0.999])
@pytest.mark.parametrize("service", ["bernoulli", "poisson", "geometric"])
def test_the_pooled_queue_s_tail_exponent_is_scipy_s(servers: str, load: float,
                                                     service: str) -> None:
    system = System.build(servers, load=load, service=service)
    arrivals, law = pooled_queue.arrival_pmf(system), pooled_queue.service_pmf(system)
    assert arrivals is not None and not isinstance(law, str)
    increments = convolve(arrivals[0], law[0][::-1])
    increments /= increments.sum()
    low = arrivals[1] - (law[1] + law[0].size - 1)
    values = np.arange(low, low + increments.size, dtype=float)
    epsilon = system.epsilon

    def excess(theta: float) -> float:  # (E[e^(θD)] − 1)/θ with the model's drift −ε
        terms = np.expm1(np.minimum(theta * values, 700.0)) - theta * values
        return -epsilon + float(np.dot(increments, terms)) / theta

    theta = pooled_queue._tail_exponent(increments, low, epsilon)
    assert excess(theta * (1 - 1e-9)) <= 0 <= excess(theta * (1 + 1e-9))
    guess = 2 * epsilon / float(np.dot(increments, values**2))
    high = guess
    while excess(high) < 0:
        high *= 2
    assert theta == pytest.approx(optimize.brentq(excess, guess * 1e-3, high, xtol=1e-300,
                                                  rtol=RTOL, maxiter=500), rel=1e-12)
