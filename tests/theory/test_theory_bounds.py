"""Pure theory: the lower bound (docs/model.md#lower-bound) and the closed forms of
docs/model.md#single-queue and docs/model.md#random-routing (no simulation)."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from dispatchlab import System, ValidationError
from dispatchlab.theory import closed_forms as cf
from dispatchlab.theory.bounds import heavy_traffic_limit, lower_bound_total_queue, zeta

WRAND_SYSTEM = dict(servers="50x0.1,50x0.5", load=0.95, dispatchers=10)


# -- the lower bound (docs/model.md#lower-bound) -----------------------------------------------


def test_zeta_worked_value_poisson_bernoulli():
    """ζ = μ_Σ + Σ μ_n(1−μ_n) for Poisson arrivals and Bernoulli service at ε → 0."""
    mu = np.array([0.2, 0.5, 0.9])
    near = System.build(mu, epsilon=1e-9)
    expected = mu.sum() + np.sum(mu * (1 - mu))
    assert zeta(near.arrivals.variance, near.service_variances) == pytest.approx(expected)
    assert heavy_traffic_limit(near) == pytest.approx(expected / 2)


def test_lower_bound_formula_and_clipping():
    system = System.build([0.3, 0.6], load=0.95)
    eps = system.epsilon
    zeta_eps = system.arrival_rate + 0.3 * 0.7 + 0.6 * 0.4 + eps**2
    assert lower_bound_total_queue(system) == pytest.approx(zeta_eps / (2 * eps) - 1.0)
    light = System.build([0.3, 0.6], load=0.1)
    assert lower_bound_total_queue(light) == 0.0  # clipped
    unbounded = System.build([0.3, 0.6], load=0.9, service="poisson")
    assert math.isnan(lower_bound_total_queue(unbounded))


def test_lower_bound_below_pooled_queue_mean():
    """ES12's finite-ε bound is a bound on the pooled queue, whose exact mean we compute."""
    for servers, load in (([0.3, 0.6], 0.95), ("3x0.2,2x0.8", 0.9), ("50x0.1,50x0.5", 0.95)):
        system = System.build(servers, load=load)
        pooled = cf.pooled_queue_mean(system)
        low, high = cf.pooled_queue_bounds(system)
        assert lower_bound_total_queue(system) <= pooled + 1e-9
        assert low - 1e-9 <= pooled <= high + 1e-9


# -- one queue (docs/model.md#single-queue) ----------------------------------------------------


@given(lam=st.floats(0.01, 0.98), gap=st.floats(0.01, 0.99))
def test_geo_geo_1_forms_agree(lam, gap):
    mu = lam + gap * (1 - lam)
    if mu - lam < 1e-3:
        return
    r = cf.geo_geo_1_ratio(lam, mu)
    size = int(np.log(1e-14) / np.log(r)) + 2 if r > 0 else 2
    pmf = cf.geo_geo_1_distribution(lam, mu, size)
    assert pmf.sum() == pytest.approx(1.0)
    mean_from_pmf = float(np.dot(np.arange(size), pmf))
    assert mean_from_pmf == pytest.approx(cf.geo_geo_1_mean(lam, mu), rel=1e-6, abs=1e-9)
    assert cf.bernoulli_service_mean(lam, lam * (1 - lam), mu) == pytest.approx(
        cf.geo_geo_1_mean(lam, mu), rel=1e-9, abs=1e-12)


@given(lam=st.floats(0.01, 0.9), gap=st.floats(0.02, 0.99))
def test_poisson_bernoulli_is_the_identity_with_poisson_variance(lam, gap):
    mu = lam + gap * (1 - lam)
    assert cf.poisson_bernoulli_mean(lam, mu) == pytest.approx(
        cf.bernoulli_service_mean(lam, lam, mu), rel=1e-9)
    low, high = cf.kingman_bounds(lam, lam, mu, mu * (1 - mu), 1.0)
    assert low - 1e-12 <= cf.poisson_bernoulli_mean(lam, mu) <= high + 1e-12


def test_unit_service_is_bernoulli_with_mu_one():
    for lam in (0.1, 0.5, 0.95):
        assert cf.poisson_unit_service_mean(lam) == pytest.approx(
            cf.bernoulli_service_mean(lam, lam, 1.0))
    assert cf.poisson_unit_service_mean(1.0) == math.inf


def test_stationary_solver_reproduces_known_laws():
    pmf, offset = cf.increment_pmf(np.array([0.7, 0.3]), np.array([0.5, 0.5]))
    pi = cf.stationary_distribution(pmf, offset, 120)
    np.testing.assert_allclose(pi[:30], cf.geo_geo_1_distribution(0.3, 0.5, 31)[:30], atol=1e-12)
    from scipy.stats import poisson
    pmf, offset = cf.increment_pmf(poisson.pmf(np.arange(40), 0.8), np.array([0.0, 1.0]))
    pi = cf.stationary_distribution(pmf, offset, 400)
    assert np.dot(np.arange(400), pi) == pytest.approx(cf.poisson_unit_service_mean(0.8), rel=1e-9)


def test_unstable_queue_is_infinite_not_an_error():
    assert cf.bernoulli_service_mean(0.5, 0.25, 0.5) == math.inf
    assert cf.kingman_bounds(0.6, 0.6, 0.5, 0.25, 1.0) == (math.inf, math.inf)
    with pytest.raises(ValidationError, match="rates"):
        cf.geo_geo_1_distribution(0.6, 0.5, 10)


# -- random routing (docs/model.md#random-routing) ---------------------------------------------


def test_routed_variance_endpoints():
    p = np.array([0.1, 0.3, 0.6])
    lam, var = 2.0, 3.5
    batch_one = cf.routed_arrival_variance(p, lam, var, "batch", 1.0)
    np.testing.assert_allclose(batch_one, p * (var + lam**2) - p**2 * lam**2)
    per_job = cf.routed_arrival_variance(p, lam, var, "per_job")
    np.testing.assert_allclose(per_job, p * (1 - p) * lam + p**2 * var)
    np.testing.assert_allclose(cf.routed_arrival_variance(p, lam, var, "batch", 0.0), per_job)
    with pytest.raises(ValidationError, match="dispatch"):
        cf.routed_arrival_variance(p, lam, var, "sometimes")


@settings(max_examples=15, deadline=None)
@given(m=st.integers(1, 4), p=st.floats(0.05, 0.95), lam=st.floats(0.2, 4.0),
       seed=st.integers(0, 2**31))
def test_routed_variance_monte_carlo(m, p, lam, seed):
    """Binomial total split multinomially over M dispatchers, each batch to server n
    w.p. p: the sample variance of A_n matches the formula with W = Σ w_m² = 1/M."""
    rng = np.random.default_rng(seed)
    trials, samples = 8, 200_000
    lam = min(lam, trials - 0.1)
    total = rng.binomial(trials, lam / trials, samples)
    shares = rng.multinomial(total, [1 / m] * m) if m > 1 else total[:, None]
    chosen = rng.random((samples, m)) < p
    a_n = (shares * chosen).sum(axis=1)
    expected = float(cf.routed_arrival_variance(p, lam, lam * (1 - lam / trials), "batch",
                                                1.0 / m))
    fourth = np.mean((a_n - a_n.mean()) ** 4)
    se = math.sqrt(max(fourth - a_n.var() ** 2, 1e-12) / samples)
    assert abs(a_n.var() - expected) < 5 * se + 1e-9


def test_wrand_benchmark_exact_value():
    """bench/README.md: weighted random on `wrand` has the exact answer 4281.2."""
    system = System.build(**WRAND_SYSTEM)
    assert cf.dispatcher_concentration(system) == pytest.approx(0.1)
    assert cf.random_routing_total_mean(system, weighted=True) == pytest.approx(4281.175, abs=1e-6)
    # the two textbook forms bracket it: one dispatcher (W = 1) and per-job routing (W = 0)
    single = System.build("50x0.1,50x0.5", load=0.95, dispatchers=1)
    per_job = System.build("50x0.1,50x0.5", load=0.95, dispatchers=10, dispatch="per_job")
    assert (cf.random_routing_total_mean(per_job, True) < 4281.175
            < cf.random_routing_total_mean(single, True))
    whole_batch = System.build(**WRAND_SYSTEM, split="batch")
    assert cf.random_routing_total_mean(whole_batch, True) == pytest.approx(
        cf.random_routing_total_mean(single, True))


@pytest.mark.parametrize("servers", ["2x0.3,1x0.8", "50x0.1,50x0.5", "0.2,0.5,0.9,0.95"])
@pytest.mark.parametrize("dispatch,dispatchers", [("batch", 1), ("batch", 4), ("per_job", 3)])
def test_random_routing_constant_is_the_limit(servers, dispatch, dispatchers):
    """ε·E[ΣQ] of weighted RAND tends to the closed-form constant, which exceeds ζ/2."""
    def scaled(eps: float) -> float:
        system = System.build(servers, epsilon=eps, dispatch=dispatch, dispatchers=dispatchers)
        return eps * cf.random_routing_total_mean(system, weighted=True)

    limit = cf.random_routing_constant(System.build(servers, epsilon=1e-3, dispatch=dispatch,
                                                    dispatchers=dispatchers))
    assert scaled(1e-6) == pytest.approx(limit, rel=1e-4)
    assert abs(scaled(1e-4) - limit) < abs(scaled(1e-1) - limit) + 1e-9
    assert limit > heavy_traffic_limit(System.build(servers, epsilon=1e-6))


def test_random_routing_constant_textbook_forms():
    mu = np.array([0.2, 0.3, 0.5])
    nu = mu * (1 - mu)
    n, mu_sum, var = 3, 1.0, 1.0
    extra = float(np.sum(nu * mu_sum / mu))
    assert cf.random_routing_constant_raw(mu, var, nu, "batch", 1.0) == pytest.approx(
        (n * var + (n - 1) * mu_sum**2 + extra) / 2)
    assert cf.random_routing_constant_raw(mu, var, nu, "per_job") == pytest.approx(
        (var + (n - 1) * mu_sum + extra) / 2)


def test_uniform_rand_stability_threshold():
    assert cf.uniform_rand_critical_load(np.array([0.1] * 50 + [0.5] * 50)) == pytest.approx(
        1 / 3)
    assert not cf.uniform_rand_is_stable(System.build("50x0.1,50x0.5", load=0.9))
    assert cf.uniform_rand_is_stable(System.build("50x0.1,50x0.5", load=0.3))
    assert cf.random_routing_total_mean(System.build("50x0.1,50x0.5", load=0.9), False) == (
        math.inf)


def test_exact_means_need_unit_service():
    with pytest.raises(ValidationError, match="service"):
        cf.random_routing_queue_means(System.build([0.5, 1.5], load=0.5, service="poisson"), True)
    unit = System.build([1, 1], load=0.5, service="deterministic")
    # deterministic unit service: Var S = 0, the same identity holds
    assert cf.random_routing_total_mean(unit, True) == pytest.approx(
        2 * cf.bernoulli_service_mean(0.5, float(cf.routed_arrival_variance(
            0.5, 1.0, 1.0, "batch", 1.0)), 1.0))
