"""E[q] of the resource-pooled queue, computed (theory/pooled_queue.py): against closed forms
of single queues, against the plain banded solve of the truncated chain, in heavy traffic
down to ε = 10⁻⁵, and where it must refuse or only bound."""

from __future__ import annotations

import math

import numpy as np
import pytest

from dispatchlab.model.system import System
from dispatchlab.theory import pooled_queue as pq
from dispatchlab.theory.bounds import heavy_traffic_limit, lower_bound_total_queue
from dispatchlab.theory.closed_forms import (
    geo_geo_1_mean,
    increment_pmf,
    poisson_bernoulli_mean,
    poisson_unit_service_mean,
    pooled_queue_bounds,
    stationary_distribution,
)
from dispatchlab.theory.closed_forms import pooled_queue_mean as banded_pooled_mean


@pytest.mark.parametrize(("mu", "lam"), [(0.5, 0.3), (0.5, 0.49), (0.9, 0.8999), (0.3, 0.29999)])
def test_single_queues_match_their_closed_forms(mu: float, lam: float) -> None:
    poisson = pq.pooled_queue_mean(System.build(str(mu), load=lam / mu))
    assert poisson.method == "exact"
    assert poisson.value == pytest.approx(poisson_bernoulli_mean(lam, mu), rel=1e-9)
    bernoulli = pq.pooled_queue_mean(System.build(str(mu), load=lam / mu, arrivals="bernoulli"))
    assert bernoulli.value == pytest.approx(geo_geo_1_mean(lam, mu), rel=1e-9)
    assert abs(bernoulli.value - geo_geo_1_mean(lam, mu)) <= bernoulli.error


@pytest.mark.parametrize("lam", [0.5, 0.9, 0.999])
def test_poisson_arrivals_with_unit_service(lam: float) -> None:
    result = pq.pooled_queue_mean(System.build("1", load=lam, service="deterministic"))
    assert result.value == pytest.approx(poisson_unit_service_mean(lam), rel=1e-9)


@pytest.mark.parametrize("servers", ["10x0.5", "5x0.2,5x0.8", "0.2,0.3,0.5,0.6", "50x0.1,50x0.5"])
@pytest.mark.parametrize("load", [0.7, 0.98])
def test_many_servers_match_the_plain_banded_solve(servers: str, load: float) -> None:
    system = System.build(servers, load=load)
    result = pq.pooled_queue_mean(system)
    assert result.method == "exact"
    assert result.value == pytest.approx(banded_pooled_mean(system), rel=1e-8)
    low, high = pooled_queue_bounds(system)
    assert low <= result.value <= high


@pytest.mark.parametrize("service", ["geometric", "poisson", "binomial:3"])
def test_other_service_laws_match_a_direct_solve(service: str) -> None:
    """The laws the banded solve of closed_forms does not build: the same increment law,
    solved on a large truncation without the geometric closure."""
    system = System.build("0.2,0.3,0.5,0.6", load=0.9, service=service)
    result = pq.pooled_queue_mean(system)
    a_pmf, a_low = pq.arrival_pmf(system)
    s_pmf, s_low = pq.service_pmf(system)
    assert a_low == 0
    full_service = np.concatenate([np.zeros(s_low), s_pmf])  # on 0, 1, …
    pmf, offset = increment_pmf(a_pmf, full_service)
    size = 4000
    pi = stationary_distribution(pmf, offset, size)
    assert pi[-1] < 1e-12
    assert result.value == pytest.approx(float(np.dot(np.arange(size), pi)), rel=1e-8)


def test_deterministic_service_of_several_servers() -> None:
    system = System.build("4x1,2x2", load=0.95, service="deterministic")
    result = pq.pooled_queue_mean(system)
    a_pmf, _ = pq.arrival_pmf(system)
    service = np.zeros(9)
    service[8] = 1.0
    pmf, offset = increment_pmf(a_pmf, service)
    pi = stationary_distribution(pmf, offset, 3000)
    assert result.value == pytest.approx(float(np.dot(np.arange(3000), pi)), rel=1e-8)


@pytest.mark.parametrize("epsilon", [1e-3, 1e-4, 1e-5])
def test_heavy_traffic_is_as_cheap_and_tends_to_zeta_half(epsilon: float) -> None:
    """ε·E[q] → ζ/2, and E[q] − ζ^(ε)/(2ε) stays within the unused-service term: the
    identity E[q] = (E[D²] − E[U²])/(2ε) with ε² ≤ E[U²] ≤ N·ε."""
    system = System.build("10x0.5", epsilon=epsilon)
    result = pq.pooled_queue_mean(system)
    assert result.method == "exact" and result.error < 1e-6 * result.value
    second = system.arrivals.variance + float(np.sum(system.service_variances)) + epsilon**2
    assert second / (2 * epsilon) - 10 / 2 <= result.value <= second / (2 * epsilon)
    assert epsilon * result.value == pytest.approx(heavy_traffic_limit(system), rel=10 * epsilon)


def test_a_trace_or_an_overload_has_no_pooled_mean(tmp_path) -> None:
    trace = tmp_path / "a.csv"
    trace.write_text("1\n0\n0\n1\n")
    result = pq.pooled_queue_mean(System.build("0.5,0.5", arrivals=f"trace:{trace}"))
    assert not result.available and "trace" in result.method
    overloaded = pq.pooled_queue_mean(System.build("0.5,0.5", load=1.0, allow_unstable=True))
    assert not overloaded.available and "ε" in overloaded.method


def test_a_law_too_wide_to_solve_is_bounded_around_the_exact_value(monkeypatch) -> None:
    system = System.build("50x0.1,50x0.5", load=0.98)
    exact = pq.pooled_queue_mean(system)
    monkeypatch.setattr(pq, "MAX_EXACT_WIDTH", 10)
    bounded = pq.pooled_queue_mean(system)
    assert bounded.method.startswith("bounded") and "values" in bounded.method
    assert abs(bounded.value - exact.value) <= bounded.error
    assert bounded.error == pytest.approx((100 - system.epsilon) / 4)


def test_unbounded_service_too_wide_is_unavailable(monkeypatch) -> None:
    monkeypatch.setattr(pq, "MAX_EXACT_WIDTH", 10)
    result = pq.pooled_queue_mean(System.build("0.2,0.3,0.5,0.6", load=0.9, service="poisson"))
    assert not result.available and "unbounded" in result.method
    assert math.isnan(result.error)


def test_a_pooled_queue_that_never_grows_has_mean_zero() -> None:
    """One job a slot against at least one unit of service in every slot: q stays at 0."""
    system = System.build("1,2", rate=1.0, arrivals="deterministic", service="binomial:2")
    result = pq.pooled_queue_mean(system)
    assert (result.method, result.value, result.error) == ("exact", 0.0, 0.0)


@pytest.mark.parametrize("servers", ["0.3,0.5,0.7", "4x0.6"])
def test_deterministic_arrivals_have_an_exact_pooled_mean(servers: str) -> None:
    """Arrivals bounded below (λ every slot): the root search must not overflow e^(θD)."""
    system = System.build(servers, rate=1.0, arrivals="deterministic")
    result = pq.pooled_queue_mean(system)
    assert result.method == "exact" and result.value > 0
    a_pmf, a_low = pq.arrival_pmf(system)
    s_pmf, s_low = pq.service_pmf(system)
    pmf, offset = increment_pmf(np.concatenate([np.zeros(a_low), a_pmf]),
                                np.concatenate([np.zeros(s_low), s_pmf]))
    pi = stationary_distribution(pmf, offset, 2000)
    assert result.value == pytest.approx(float(np.dot(np.arange(2000), pi)), rel=1e-8)


@pytest.mark.parametrize("epsilon", [1e-8, 1e-10, 1e-12, 1e-14])
def test_heavy_traffic_to_the_last_digits(epsilon: float) -> None:
    """ε → 0 without cancellation (issue 47): the drift enters the tail exponent as the
    model's −ε, not as the mean of the increment law (whose rounding, over ε, made E[q]
    10⁻⁶ off at ε = 10⁻¹⁰ and 1 % off at 10⁻¹⁴ while reporting an error of 10⁻¹⁰)."""
    poisson = System.build("0.5", epsilon=epsilon)
    result = pq.pooled_queue_mean(poisson)
    assert result.value == pytest.approx(poisson_bernoulli_mean(poisson.arrival_rate, 0.5),
                                         rel=1e-12)
    bernoulli = System.build("0.3", epsilon=epsilon, arrivals="bernoulli")
    assert pq.pooled_queue_mean(bernoulli).value == pytest.approx(
        geo_geo_1_mean(bernoulli.arrival_rate, 0.3), rel=1e-12)
    many = System.build("4x0.5,3x0.25", epsilon=epsilon)
    value = pq.pooled_queue_mean(many).value
    # E[q] = (E[D²] − E[U²])/(2ε) lies above the every-policy bound ζ/(2ε) − B (to rounding)
    assert value >= lower_bound_total_queue(many) * (1 - 1e-14)
    assert value <= heavy_traffic_limit(many) / epsilon * (1 + 1e-6)


@pytest.mark.parametrize(("servers", "load", "service"),
                         [("10x0.5", 0.9, "bernoulli"), ("4x0.3,2x0.8", 0.999, "bernoulli"),
                          ("0.5", 0.99999, "geometric"), ("20x0.5", 0.95, "poisson")])
def test_the_dense_and_the_banded_solve_agree(monkeypatch, servers: str, load: float,
                                              service: str) -> None:
    """Small chains are solved by numpy's dense LU (no scipy.linalg at a warm run's start),
    large ones by scipy's banded LU: both LU with partial pivoting, the same E[q] and law."""
    system = System.build(servers, load=load, service=service)
    dense = pq.pooled_queue_mean(system)
    monkeypatch.setattr(pq, "DENSE_SOLVE_STATES", 0)
    banded = pq.pooled_queue_mean(system)
    assert dense.method == banded.method == "exact"
    assert dense.value == pytest.approx(banded.value, rel=1e-12)
    assert dense.law is not None and banded.law is not None
    np.testing.assert_allclose(dense.law, banded.law, rtol=1e-10, atol=1e-18)
