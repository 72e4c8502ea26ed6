"""Simulation against the closed forms of docs/model.md#closed-forms (and refsim's reference
values).

Each comparison asserts that the exact value lies in the CI reported by ``simulate``
(widened by ``conftest.CI_WIDEN``) *and* that the CI is narrow enough to have power.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import stats as scipy_stats

from dispatchlab import System, simulate
from dispatchlab.theory import closed_forms as cf
from dispatchlab.theory.bounds import lower_bound_total_queue

REPLICATIONS = 10
BENCH = dict(servers="50x0.1,50x0.5", load=0.95, dispatchers=10)


def t_interval(values: list[float]) -> tuple[float, float, float]:
    """Mean and 95 % Student-t CI of independent replication values."""
    x = np.asarray(values, dtype=float)
    half = scipy_stats.t.ppf(0.975, x.size - 1) * x.std(ddof=1) / math.sqrt(x.size)
    return float(x.mean()), float(x.mean() - half), float(x.mean() + half)


# -- one queue (docs/model.md#single-queue) ----------------------------------------------------


@pytest.mark.parametrize("lam,mu,width", [(0.3, 0.5, 0.05), (0.45, 0.5, 0.1)])
def test_geo_geo_1_mean(in_ci, lam, mu, width):
    system = System.build([mu], rate=lam, arrivals="bernoulli")
    result = simulate(system, "rand", slots=100_000, replications=REPLICATIONS, seed=11)
    in_ci(result.mean_total_queue, result.ci_low, result.ci_high, cf.geo_geo_1_mean(lam, mu),
          max_relative_half_width=width, label=f"Geo/Geo/1 λ={lam} μ={mu}")


def test_geo_geo_1_distribution():
    """P(q = k) = (1−r)r^k: each of the first 8 bins within 4.5 standard errors of the mean
    over 20 independent runs (|t₁₉| > 4.5 has probability 2.4·10⁻⁴ per bin), the standard
    errors being below 0.01, so a distribution off by 0.05 anywhere fails. (The runs are
    autocorrelated, so a chi-square test on the pooled counts would not be valid.)"""
    lam, mu, bins, runs = 0.3, 0.5, 8, 20
    system = System.build([mu], rate=lam, arrivals="bernoulli")
    rows = []
    for seed in range(runs):
        dist = simulate(system, "rand", slots=30_000, seed=seed).total_queue_distribution
        rows.append((list(dist) + [0.0] * bins)[:bins])
    observed = np.array(rows)
    expected = cf.geo_geo_1_distribution(lam, mu, 100)[:bins]
    se = observed.std(axis=0, ddof=1) / math.sqrt(runs)
    assert np.all(se < 0.01), se
    deviation = np.abs(observed.mean(axis=0) - expected)
    assert np.all(deviation <= 4.5 * se + 1e-4), (observed.mean(axis=0), expected, se)


SINGLE_QUEUES = [
    # (arrivals, λ, service, μ, exact mean)
    ("poisson", 0.4, "bernoulli", 0.6, cf.poisson_bernoulli_mean(0.4, 0.6)),
    ("poisson", 0.8, "deterministic", 1.0, cf.poisson_unit_service_mean(0.8)),
    ("binomial:3", 0.7, "bernoulli", 0.85, cf.bernoulli_service_mean(0.7, 0.7 * (1 - 0.7 / 3),
                                                                    0.85)),
]


@pytest.mark.parametrize("arrivals,lam,service,mu,expected", SINGLE_QUEUES)
def test_single_queue_mean(in_ci, arrivals, lam, service, mu, expected):
    system = System.build([mu], rate=lam, arrivals=arrivals, service=service)
    result = simulate(system, "rand", slots=100_000, replications=REPLICATIONS, seed=5)
    in_ci(result.mean_total_queue, result.ci_low, result.ci_high, expected,
          max_relative_half_width=0.05, label=f"{arrivals}/{service} λ={lam} μ={mu}")


def service_pmf(law: str, mu: float, size: int = 80) -> np.ndarray:
    """P(S = k), k < size, for the engine's service laws (truncated where negligible)."""
    k = np.arange(size)
    if law.startswith("binomial"):
        trials = int(law.split(":")[1])
        return scipy_stats.binom.pmf(np.arange(trials + 1), trials, mu / trials)
    if law == "poisson":
        return scipy_stats.poisson.pmf(k, mu)
    assert law == "geometric"
    q = mu / (1 + mu)
    return (1 - q) * q**k


@pytest.mark.parametrize("service", ["binomial:2", "poisson", "geometric"])
def test_single_queue_against_stationary_law(in_ci, service):
    """Service not in {0, 1} has no closed form (E[ū²] unknown): compare the simulated
    mean with the numerically exact stationary law of q' = max(q + a − s, 0), which must
    also lie inside the Kingman bounds."""
    lam, mu = 1.2, 1.5
    system = System.build([mu], rate=lam, service=service)
    pmf, offset = cf.increment_pmf(scipy_stats.poisson.pmf(np.arange(40), lam),
                                   service_pmf(service, mu))
    pi = cf.stationary_distribution(pmf, offset, 800)
    assert pi[-1] < 1e-12
    exact = float(np.dot(np.arange(800), pi))
    low, high = cf.kingman_bounds(lam, lam, mu, float(system.service_variances[0]),
                                  float(system.service.max_service(system.mu)[0]))
    assert low < exact < high
    result = simulate(system, "rand", slots=100_000, replications=REPLICATIONS, seed=9)
    in_ci(result.mean_total_queue, result.ci_low, result.ci_high, exact,
          max_relative_half_width=0.05, label=f"Poisson/{service}")


# -- random routing (docs/model.md#random-routing) ---------------------------------------------

# (servers, policy, dispatch, M, split, load): three heterogeneous rate sets, both dispatch
# modes, one and several dispatchers, both splits of A_Σ among dispatchers.
ROUTING_CASES = [
    ([0.2, 0.5, 0.9], "wrand", "batch", 1, "per_job", 0.8),
    ([0.2, 0.5, 0.9], "rand", "per_job", 1, "per_job", 0.25),
    ("3x0.3,2x0.7", "wrand", "per_job", 2, "per_job", 0.85),
    ("3x0.3,2x0.7", "rand", "batch", 3, "per_job", 0.55),
    ([0.1, 0.4, 0.4, 0.8, 0.95], "wrand", "batch", 3, "per_job", 0.8),
    ([0.1, 0.4, 0.4, 0.8, 0.95], "wrand", "batch", 2, "batch", 0.8),
    ([0.1, 0.4, 0.4, 0.8, 0.95], "rand", "per_job", 1, "per_job", 0.12),
]


@pytest.mark.parametrize("servers,policy,dispatch,dispatchers,split,load", ROUTING_CASES)
def test_random_routing_exact_mean(in_ci, servers, policy, dispatch, dispatchers, split, load):
    system = System.build(servers, load=load, dispatch=dispatch, dispatchers=dispatchers,
                          split=split)
    expected = cf.random_routing_total_mean(system, weighted=policy == "wrand")
    result = simulate(system, policy, slots=50_000, replications=REPLICATIONS, seed=21)
    in_ci(result.mean_total_queue, result.ci_low, result.ci_high, expected,
          max_relative_half_width=0.12, label=f"{policy} {servers} {dispatch} M={dispatchers}")


@pytest.mark.slow
@pytest.mark.parametrize("servers,policy,dispatch,dispatchers,split,load", ROUTING_CASES)
def test_random_routing_exact_mean_long(in_ci, servers, policy, dispatch, dispatchers, split,
                                        load):
    system = System.build(servers, load=load, dispatch=dispatch, dispatchers=dispatchers,
                          split=split)
    weighted = policy == "wrand"
    result = simulate(system, policy, slots=1_000_000, replications=REPLICATIONS, seed=22)
    in_ci(result.mean_total_queue, result.ci_low, result.ci_high,
          cf.random_routing_total_mean(system, weighted), max_relative_half_width=0.02,
          label=f"{policy} {servers} {dispatch} M={dispatchers}")
    # per server: the CI is not reported, so a relative tolerance 4× the total's
    exact = cf.random_routing_queue_means(system, weighted)
    np.testing.assert_allclose(result.mean_queues, exact, rtol=0.08, atol=0.01)


def test_wrand_workload_short(in_ci):
    """The `wrand` benchmark: exact 4281.2 (bench/README.md) in a short run."""
    system = System.build(**BENCH)
    result = simulate(system, "wrand", slots=200_000, replications=5, seed=1)
    in_ci(result.mean_total_queue, result.ci_low, result.ci_high, 4281.175,
          max_relative_half_width=0.08, label="wrand workload (short)")


@pytest.mark.slow
def test_wrand_workload_exact(in_ci):
    system = System.build(**BENCH)
    expected = cf.random_routing_total_mean(system, weighted=True)
    assert expected == pytest.approx(4281.175)
    result = simulate(system, "wrand", slots=2_000_000, replications=REPLICATIONS, seed=2)
    in_ci(result.mean_total_queue, result.ci_low, result.ci_high, expected,
          max_relative_half_width=0.015, label="wrand workload")


@pytest.mark.slow
def test_jsq_workload_against_refsim(in_ci):
    """refsim.c: `jsq` 360.97 ± 0.14 (6 seeds × 4·10^6 slots) and 66.11 messages per arrival."""
    system = System.build(**BENCH)
    result = simulate(system, "jsq", slots=1_000_000, replications=REPLICATIONS, seed=3)
    in_ci(result.mean_total_queue, result.ci_low, result.ci_high, 360.97,
          max_relative_half_width=0.005, label="jsq workload")
    assert result.messages_per_arrival == pytest.approx(66.11, rel=0.005)


# -- the pooled queue and the lower bound (docs/model.md#lower-bound) --------------------------


@pytest.mark.parametrize("servers,load,policy", [
    ([0.3, 0.5, 0.9], 0.9, "jsq"),
    ("3x0.2,2x0.8", 0.95, "wrand"),
    ("50x0.1,50x0.5", 0.95, "wrand"),
])
def test_pooled_queue_mean(in_ci, servers, load, policy):
    """E[q] of the pooled queue (A_Σ served by the Poisson-binomial S_Σ), measured on the
    engine's draws, against its exact stationary mean; both inside the Kingman bounds."""
    system = System.build(servers, load=load)
    exact = cf.pooled_queue_mean(system)
    low, high = cf.pooled_queue_bounds(system)
    assert low <= exact <= high
    slots = 60_000 if system.n_servers < 10 else 20_000
    values = [simulate(system, policy, slots=slots, seed=s, delay="off",
                       imbalance=False).mean_pooled_queue for s in range(REPLICATIONS)]
    in_ci(*t_interval(values), exact, max_relative_half_width=0.12, label=f"pooled {servers}")


LOWER_BOUND_SYSTEM = dict(servers=[0.3, 0.5, 0.7, 0.9], load=0.95)


@pytest.mark.parametrize("policy,params", [
    ("jsq", {}), ("pod", {"d": 2}), ("jsed", {}), ("wrand", {}), ("balanced-pod", {}),
    # exact rational weights 3:5:7:9 (a rounded cycle would overload μ = 0.5 at this load)
    ("rr", {"weighted": True}),
])
def test_lower_bounds_hold(policy, params):
    """ζ^(ε)/(2ε) − B ≤ E[q] ≤ E[ΣQ] for every policy (docs/model.md#lower-bound), on a
    system where the finite-ε bound is far from 0."""
    system = System.build(**LOWER_BOUND_SYSTEM)
    bound = lower_bound_total_queue(system)
    pooled = cf.pooled_queue_mean(system)
    assert 5 < bound < pooled
    result = simulate(system, policy, policy_params=params, slots=100_000, seed=4)
    assert result.stability != "unstable", result.stability_evidence
    assert result.invariant_violations == 0
    assert result.ci_high >= pooled
    assert result.plain_mean_total_queue >= result.mean_pooled_queue
    assert result.mean_excess >= 0


# -- Little's law (docs/model.md#delay) --------------------------------------------------------


@pytest.mark.parametrize("policy,dispatch", [("wrand", "batch"), ("jsq", "per_job"),
                                             ("pod", "batch")])
def test_little_law(policy, dispatch):
    system = System.build("3x0.3,2x0.7", load=0.85, dispatchers=2, dispatch=dispatch)
    result = simulate(system, policy, slots=100_000, seed=8)
    assert result.stability != "unstable", result.stability_evidence
    assert result.little_law_gap < 0.01, (result.mean_delay_measured, result.mean_delay)
    assert result.arrival_rate_measured == pytest.approx(system.arrival_rate, rel=0.01)
