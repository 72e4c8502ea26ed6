"""The waiting probability: the share of measured jobs placed behind another job
(Result.waiting_probability, docs/statistics.md#waiting)."""

from __future__ import annotations

import math

import pytest

import dispatchlab as dl
from dispatchlab.theory.closed_forms import geo_geo_1_ratio


@pytest.mark.parametrize(("lam", "mu"), [(0.3, 0.5), (0.6, 0.8)])
def test_geo_geo_1_waits_with_the_probability_its_queue_is_busy(lam: float, mu: float) -> None:
    """One server, Bernoulli(λ) arrivals: an arrival sees the slot-start queue, whose law
    is the stationary one (Bernoulli arrivals see time averages), so P(wait) =
    P(Q > 0) = r = λ(1 − μ)/(μ(1 − λ)); the 95 % interval over 6 replications covers it."""
    system = dl.System.build(f"1x{mu}", load=lam / mu, arrivals="bernoulli")
    result = dl.simulate(system, "rand", slots=150_000, replications=6, seed=3, workers=1,
                         delay="off")
    exact = geo_geo_1_ratio(lam, mu)
    assert result.waiting_probability_ci_low <= exact <= result.waiting_probability_ci_high
    assert result.waiting_probability_ci_high - result.waiting_probability_ci_low < 0.02


def test_a_batch_waits_behind_its_first_job() -> None:
    """One server fed binomial:4 batches at a light load: nearly every slot starts empty,
    so of a batch of A jobs A − 1 wait; P(wait) ≈ E[A − 1; A ≥ 1]/E[A]."""
    system = dl.System.build("1x0.9", load=0.05, arrivals="binomial:4")
    result = dl.simulate(system, "rand", slots=200_000, seed=1, delay="off")
    p = system.arrival_rate / 4
    first = 1 - (1 - p) ** 4  # P(A ≥ 1): one job of such a batch finds the server empty
    assert result.waiting_probability == pytest.approx(1 - first / (4 * p), abs=0.03)


def test_one_run_has_no_interval_and_an_unstable_run_no_probability() -> None:
    one = dl.simulate(dl.System.build("4x0.5", load=0.5), "jsq", slots=20_000)
    assert 0 < one.waiting_probability < 1 and math.isnan(one.waiting_probability_ci_low)
    over = dl.System.build("2x0.5", load=1.5, allow_unstable=True)
    unstable = dl.simulate(over, "jsq", slots=50_000, bound=500)
    assert unstable.stability == "unstable" and math.isnan(unstable.waiting_probability)


def test_jsq_waits_less_than_random_routing_as_n_grows() -> None:
    """At ρ = 0.9 with jobs dispatched one by one, JSQ's waiting probability falls as N
    grows (it vanishes in the large-system limit) while random routing's stays ρ-like."""
    waits = {}
    for policy in ("jsq", "rand"):
        for n in (10, 100):
            system = dl.System.build(f"{n}x0.5", load=0.9, dispatch="per_job")
            waits[policy, n] = dl.simulate(system, policy, slots=20_000, seed=2,
                                           delay="off").waiting_probability
    assert waits["jsq", 100] < waits["jsq", 10] < waits["rand", 10]
    assert waits["rand", 100] > 0.5


def test_the_busy_server_share_leaves_out_the_jobs_of_the_same_slot() -> None:
    """One server fed binomial:4 batches: a batch on a server idle at the slot's start
    finds it idle for all its jobs (busy share ≤ waiting share), and on one Bernoulli
    server (one job a slot) the two are the same count."""
    batches = dl.simulate(dl.System.build("1x0.9", load=0.05, arrivals="binomial:4"), "rand",
                          slots=100_000, seed=1, delay="off")
    assert batches.busy_server_probability < 0.5 * batches.waiting_probability
    single = dl.simulate(dl.System.build("1x0.5", load=0.6, arrivals="bernoulli"), "rand",
                         slots=100_000, seed=1, delay="off")
    assert single.busy_server_probability == single.waiting_probability


def test_jsq_meets_the_fluid_s_busy_share_while_its_jobs_still_meet() -> None:
    """JSQ at ρ = 0.9 (per-job dispatch, M = 10): its jobs rarely find their server busy at
    the slot's start (the fluid limit's waiting probability is 0), while a large share
    queue behind jobs of the same slot."""
    system = dl.System.build("500x0.1,500x0.5", load=0.9, dispatchers=10, dispatch="per_job")
    result = dl.simulate(system, "jsq", slots=4_000, seed=3, delay="off")
    fluid = dl.fluid(system, "jsq")
    assert fluid.wait_probability == 0.0
    assert result.busy_server_probability < 0.05 < 0.3 < result.waiting_probability
