"""theory.pmf and theory.roots without scipy.stats, scipy.signal, scipy.optimize or
scipy.special (a warm run's start-up; benchmarks/README.md): the pmfs against exact decimal
arithmetic and against scipy.stats, brentq bit for bit against scipy's."""

from __future__ import annotations

import math
from decimal import Decimal, localcontext

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
    deviance,
    nbinom_pmf,
    poisson_pmf,
    stirling_error,
)
from dispatchlab.theory.roots import brentq

RTOL = 4 * np.finfo(float).eps
#: the pmfs' relative error, where the mass is (Loader's method: ~10⁻¹⁴, up to ~10⁻¹² for
#: means of 10⁴ and more, from bd0's x·log(x/m) far from the mean)
PMF_RTOL = 2e-12


def _exact(function, *args) -> float:  # noqa: ANN001 - a decimal formula and its inputs
    with localcontext() as context:
        context.prec = 80
        return float(function(*(Decimal(repr(a)) if isinstance(a, float) else a
                                for a in args)))


def _poisson(k: int, mu: Decimal) -> Decimal:
    return (-mu).exp() * mu**k / math.factorial(k)


def _binomial(k: int, n: int, p: Decimal) -> Decimal:
    return math.comb(n, k) * p**k * (1 - p) ** (n - k)


def _negative_binomial(k: int, n: int, p: Decimal) -> Decimal:
    return math.comb(n + k - 1, k) * p**n * (1 - p) ** k


def _where_the_mass_is(mean: float, sd: float, top: int | None = None) -> np.ndarray:
    """Forty values over mean ± 12 sd (within 0 … top), and the ends."""
    high = mean + 12 * sd + 3 if top is None else min(top, mean + 12 * sd + 3)
    points = np.linspace(max(0.0, mean - 12 * sd - 3), high, 40)
    return np.unique(np.concatenate([[0], points.astype(np.int64), [int(high)]]))


def _assert_close(ours: np.ndarray, exact: np.ndarray, rtol: float = PMF_RTOL) -> None:
    shown = exact > 1e-300  # below it both are 0 or subnormal
    np.testing.assert_allclose(ours[shown], exact[shown], rtol=rtol, atol=0)
    assert np.all(ours[~shown] < 1e-290)


@pytest.mark.parametrize("mu", [1e-9, 0.3, 0.95, 28.5, 599.9, 1e4])
def test_poisson_pmf_is_exact(mu: float) -> None:
    k = _where_the_mass_is(mu, math.sqrt(mu))
    _assert_close(poisson_pmf(k, mu), np.array([_exact(_poisson, int(x), mu) for x in k]))


@pytest.mark.parametrize(("n", "p"), [(1, 0.3), (2, 1e-6), (20, 0.3), (50, 0.1), (51, 0.999),
                                      (1000, 0.5), (1000, 1e-6), (100_000, 0.1),
                                      (100_000, 0.999)])
def test_binomial_pmf_is_exact(n: int, p: float) -> None:
    k = _where_the_mass_is(n * p, math.sqrt(n * p * (1 - p)), top=n)
    exact = np.array([_exact(_binomial, int(x), n, p) for x in k])
    _assert_close(binom_pmf(k, np.int64(n), np.float64(p)), exact)  # as np.unique gives them


@pytest.mark.parametrize(("n", "p"), [(1, 0.1), (3, 0.01), (10, 0.5), (1000, 0.5),
                                      (100_000, 0.999)])
def test_negative_binomial_pmf_is_exact(n: int, p: float) -> None:
    k = np.arange(0, 400, 7)
    exact = np.array([_exact(_negative_binomial, int(x), n, p) for x in k])
    _assert_close(nbinom_pmf(k, n, p), exact)


def test_the_degenerate_laws() -> None:
    k = np.arange(5)
    assert poisson_pmf(k, 0.0).tolist() == [1, 0, 0, 0, 0]
    assert binom_pmf(k, 4, 0.0).tolist() == [1, 0, 0, 0, 0]
    assert binom_pmf(k, 4, 1.0).tolist() == [0, 0, 0, 0, 1]
    assert binom_pmf(np.arange(3), 0, 0.4).tolist() == [1, 0, 0]
    assert nbinom_pmf(k, 3, 1.0).tolist() == [1, 0, 0, 0, 0]
    assert poisson_pmf(np.arange(0), 2.0).size == 0
    # μ so small that bd0(k, μ) overflows: e^(−μ)·μᵏ/k!, a subnormal at k = 1
    assert poisson_pmf(np.array([0, 1, 2]), 1e-310).tolist() == [1.0, 1e-310, 0.0]


@pytest.mark.parametrize("mu", [0.0, 1e-9, 0.3, 0.95, 28.5, 599.9, 1e4])
def test_poisson_pmf_is_scipy_s_to_its_own_rounding(mu: float) -> None:
    """scipy.stats' exp(k·log μ − log k! − μ) loses ~k·log μ·10⁻¹⁶ (3·10⁻¹¹ at μ = 10⁴)."""
    k = np.arange(int(mu + 14 * math.sqrt(mu) + 45) + 1)
    _assert_close(poisson_pmf(k, mu), stats.poisson.pmf(k, mu), rtol=PMF_RTOL + 1e-14 * mu)


@pytest.mark.parametrize("n", [1, 2, 50, 51, 1000, 100_000])
@pytest.mark.parametrize("p", [0.0, 1e-6, 0.1, 0.5, 0.999, 1.0])
def test_binomial_pmfs_are_scipy_s(n: int, p: float) -> None:
    k = np.arange(n + 1)
    _assert_close(binom_pmf(k, np.int64(n), np.float64(p)), stats.binom.pmf(k, n, p),
                  rtol=1e-11)
    k, success = np.arange(400), max(p, 0.01)
    _assert_close(nbinom_pmf(k, n, success), stats.nbinom.pmf(k, n, success), rtol=1e-11)


@settings(max_examples=200, deadline=None)
@given(st.integers(1, 5000), st.floats(1e-4, 1 - 1e-4))
def test_a_binomial_law_sums_to_one_with_mean_np(n: int, p: float) -> None:
    law = binom_pmf(np.arange(n + 1), n, p)
    assert law.min() >= 0
    assert math.fsum(law) == pytest.approx(1.0, abs=1e-12)
    assert math.fsum(law * np.arange(n + 1)) == pytest.approx(n * p, rel=1e-11, abs=1e-13)


def test_stirling_s_error_is_exact() -> None:
    """δ(n) = log n! − (n + ½)·log n + n − ½·log 2π, the table and each series' range, to
    an absolute 2·10⁻¹⁶: δ enters the pmfs as an exponent, so that is their relative error
    (the series' relative error reaches 10⁻¹³ of δ at its cut points)."""
    n = np.array([1, 2, 7, 15, 16, 30, 35, 36, 80, 81, 500, 501, 10**4, 10**7])

    def delta(m: int) -> Decimal:
        pi = Decimal("3.14159265358979323846264338327950288419716939937510")
        return (Decimal(math.factorial(m)).ln() - (m + Decimal("0.5")) * Decimal(m).ln() + m
                - (2 * pi).ln() / 2) if m <= 5000 else _stirling_series(Decimal(m))

    exact = np.array([_exact(delta, int(m)) for m in n])
    np.testing.assert_allclose(stirling_error(n), exact, rtol=0, atol=2e-16)
    assert stirling_error(np.array([0]))[0] == 0.0


def _stirling_series(m: Decimal) -> Decimal:
    """Stirling's series to the terms that matter at m > 5000 (the next is below 10⁻⁴⁰)."""
    return 1 / (12 * m) - 1 / (360 * m**3) + 1 / (1260 * m**5) - 1 / (1680 * m**7)


@settings(max_examples=300, deadline=None)
@given(st.integers(0, 10**6), st.floats(1e-3, 1e6))
def test_the_deviance_is_nonnegative_and_exact(x: int, mean: float) -> None:
    """bd0(x, m) = x·log(x/m) + m − x: the series near x = m and the formula far from it."""
    def bd0(x: int, m: Decimal) -> Decimal:
        return (x * (Decimal(x) / m).ln() if x else Decimal(0)) + m - x

    ours = float(deviance(np.array([x]), np.array([mean]))[0])
    exact = _exact(bd0, x, mean)
    assert ours >= 0
    # far from the mean x·log(x/m) and m − x cancel to ~10⁻¹⁶·(x + m) of absolute error
    assert ours == pytest.approx(exact, rel=1e-13, abs=4e-16 * (x + mean))


@settings(max_examples=150, deadline=None)
@given(st.integers(1, 3000), st.integers(1, 3000), st.integers(0, 2**32 - 1))
def test_convolve_is_fftconvolve(size_a: int, size_b: int, seed: int) -> None:
    rng = np.random.default_rng(seed)
    a, b = rng.random(size_a), rng.random(size_b)
    if size_a * size_b <= DIRECT_CONVOLUTION_PRODUCTS:
        assert np.array_equal(convolve(a, b), np.convolve(a, b))
    else:  # numpy's FFT against scipy's: rounding of 10⁻¹⁶ of the largest term
        expected = np.clip(fftconvolve(a, b), 0.0, None)
        np.testing.assert_allclose(convolve(a, b), expected, rtol=0,
                                   atol=1e-13 * expected.max())


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
