"""The continuous-time engine against what is known exactly: each simulated 95 % interval
(independent replications) must cover the closed form (widened as ``check_in_ci`` says)
and be narrow enough that a wrong engine could not hide in it."""

from __future__ import annotations

import math

import pytest

from dispatchlab.continuous import simulate_continuous
from dispatchlab.continuous.closed_forms import (
    gim1_response,
    jsq_two_servers_response,
    mg1_fifo_response,
    mg1_ps_response,
    mmk_response,
    srpt_exponential_response,
    supermarket_response,
)
from dispatchlab.continuous.laws import parse_arrival_shape, parse_size_law

JOBS = 200_000
REPLICATIONS = 10


def run(servers, policy, **settings):
    return simulate_continuous(servers, policy, jobs=JOBS, replications=REPLICATIONS, seed=11,
                               workers=1, **settings)


@pytest.mark.parametrize("sizes", ["exp:1", "det:1", "erlang:4,1", "hyperexp:1,4"])
def test_mg1_fifo_is_pollaczek_khinchine(sizes, in_ci) -> None:
    result = run([2.0], "random", load=0.7, sizes=sizes)
    law = parse_size_law(sizes)
    expected = mg1_fifo_response(result.arrival_rate, law, speed=2.0)
    estimate = result.mean_response
    in_ci(estimate.mean, estimate.ci_low, estimate.ci_high, expected,
          max_relative_half_width=0.05, label=f"M/G/1 FIFO {sizes}")


@pytest.mark.parametrize("sizes", ["exp:1", "det:1", "hyperexp:1,9", "bpareto:2.5,1,100",
                                   "lognormal:1,3"])
def test_mg1_processor_sharing_is_insensitive(sizes, in_ci) -> None:
    result = run([1.0], "random", load=0.6, sizes=sizes, discipline="ps")
    expected = mg1_ps_response(result.arrival_rate, parse_size_law(sizes))
    estimate = result.mean_response
    in_ci(estimate.mean, estimate.ci_low, estimate.ci_high, expected,
          max_relative_half_width=0.05, label=f"M/G/1 PS {sizes}")


def test_mm1_little_and_the_waiting_probability(in_ci) -> None:
    result = run([1.0], "jsq", load=0.8)
    for estimate, expected, what in (
            (result.mean_response, 5.0, "E[T]"), (result.mean_in_system, 4.0, "E[L]"),
            (result.waiting_probability, 0.8, "P(wait)")):
        in_ci(estimate.mean, estimate.ci_low, estimate.ci_high, expected,
              max_relative_half_width=0.05, label=f"M/M/1 {what}")
    # Little's law holds run by run, not only in the mean
    assert result.mean_in_system.mean == pytest.approx(
        result.arrival_rate * result.mean_response.mean, rel=0.01)


def test_random_routing_is_independent_queues(in_ci) -> None:
    speeds = [0.5, 1.0, 2.5]
    result = run(speeds, "random", load=0.3)
    share = result.arrival_rate / len(speeds)  # each server: M/M/1 at rate λ/N
    expected = sum(1 / (s - share) for s in speeds) / len(speeds)
    estimate = result.mean_response
    in_ci(estimate.mean, estimate.ci_low, estimate.ci_high, expected,
          max_relative_half_width=0.05, label="random routing")


def test_lwl_on_equal_exponential_servers_is_mmk(in_ci) -> None:
    result = run("5x1", "lwl", load=0.85)
    expected = mmk_response(result.arrival_rate, 5)
    estimate = result.mean_response
    in_ci(estimate.mean, estimate.ci_low, estimate.ci_high, expected,
          max_relative_half_width=0.05, label="LWL = M/M/5")


def test_round_robin_makes_erlang_arrivals(in_ci) -> None:
    result = run("4x1", "rr", load=0.8)
    expected = gim1_response(parse_arrival_shape("erlang:4").with_mean(4 / result.arrival_rate))
    estimate = result.mean_response
    in_ci(estimate.mean, estimate.ci_low, estimate.ci_high, expected,
          max_relative_half_width=0.05, label="RR = E4/M/1")


def test_srpt_is_schrage_miller(in_ci) -> None:
    result = run([1.0], "random", load=0.8, discipline="srpt")
    expected = srpt_exponential_response(result.arrival_rate)
    estimate = result.mean_response
    in_ci(estimate.mean, estimate.ci_low, estimate.ci_high, expected,
          max_relative_half_width=0.05, label="M/M/1 SRPT")
    # and SRPT beats FIFO on the same jobs
    assert estimate.ci_high < mg1_fifo_response(result.arrival_rate, parse_size_law("exp:1"))


@pytest.mark.slow
def test_jsq_d_at_large_n_is_the_supermarket_model() -> None:
    result = simulate_continuous("2000x1", "jsq-d", load=0.9, jobs=4_000_000, seed=5)
    expected = supermarket_response(0.9, 2)
    # N = 2000 lies above the limit by O(1/N): within 1 %
    assert result.mean_response.mean == pytest.approx(expected, rel=0.01)


def test_an_overloaded_server_is_judged_unstable() -> None:
    # random routing overloads the slow server (λ/3 = 0.53 > 0.5) though ρ = 0.4 overall
    result = simulate_continuous([0.5, 1.0, 2.5], "random", load=0.4, jobs=200_000, seed=1)
    assert result.stability == "unstable", result.stability_evidence
    assert "L quarter means" in result.stability_evidence
    # and the pool's bound stops a run at once, with the same verdict
    bounded = simulate_continuous([0.5, 1.0, 2.5], "random", load=0.4, jobs=200_000, bound=500)
    assert bounded.stability == "unstable" and "bound = 500" in bounded.stability_evidence
    assert bounded.mean_response.mean != bounded.mean_response.mean  # NaN: not reported
    stable = simulate_continuous([0.5, 1.0, 2.5], "wrandom", load=0.4, jobs=200_000, seed=1)
    assert stable.stability == "stable", stable.stability_evidence


@pytest.mark.parametrize("speeds", [(1.0, 1.0), (0.5, 1.5)])
def test_jsq_on_two_servers_is_the_solved_chain(speeds, in_ci) -> None:
    result = run(list(speeds), "jsq", load=0.8)
    expected = jsq_two_servers_response(result.arrival_rate, speeds)
    estimate = result.mean_response
    in_ci(estimate.mean, estimate.ci_low, estimate.ci_high, expected,
          max_relative_half_width=0.05, label=f"JSQ on speeds {speeds}")


@pytest.mark.parametrize("replications", [1, 10])
def test_response_quantiles_of_mm1_fifo_are_exponential(replications) -> None:
    # an M/M/1 FIFO response time is exponential with rate μ − λ
    result = simulate_continuous([1.0], "random", load=0.7, jobs=2_000_000 // replications,
                                 replications=replications, seed=23,
                                 workers=1)
    bin_half_width = 10 ** (1 / 200) - 1  # the histogram's resolution, ±1.2 %
    for level, estimate in result.response_quantiles.items():
        expected = -math.log(1 - level) / (1 - result.arrival_rate)
        half = estimate.half_width
        assert 0 < half <= 0.05 * expected, (level, estimate)
        slack = 2 * half + bin_half_width * expected
        assert abs(estimate.mean - expected) <= slack, (level, expected, estimate)


@pytest.mark.parametrize("arrivals", ["det", "erlang:3", "hyperexp:4"])
def test_renewal_arrivals_make_gim1(arrivals, in_ci) -> None:
    result = run([1.0], "random", load=0.7, arrivals=arrivals)
    expected = gim1_response(parse_arrival_shape(arrivals).with_mean(1 / result.arrival_rate))
    estimate = result.mean_response
    in_ci(estimate.mean, estimate.ci_low, estimate.ci_high, expected,
          max_relative_half_width=0.05, label=f"GI/M/1, interarrivals {arrivals}")
