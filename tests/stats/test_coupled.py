"""The coupled estimator E[ΣQ] = E[q] + E[X] (docs/statistics.md#coupled) in ``simulate``:
both estimators in every result, which one is the headline and why, X ≥ 0, the exact
single-server case, traces, and short runs that must still say "too short to say"."""

from __future__ import annotations

import math

import pytest

from dispatchlab import System, ValidationError, simulate
from dispatchlab.theory.closed_forms import poisson_bernoulli_mean


def test_both_estimators_are_reported_and_the_headline_is_the_coupled_one() -> None:
    system = System.build("10x0.5", epsilon=0.05)
    result = simulate(system, "jsq", slots=300_000, seed=3, delay="off")
    assert result.estimator == "coupled" and result.estimator_note == ""
    assert result.pooled_queue_method == "exact"
    assert result.mean_total_queue == result.coupled_mean_total_queue
    assert (result.ci_low, result.ci_high) == (result.coupled_ci_low, result.coupled_ci_high)
    assert result.mean_total_queue == pytest.approx(result.pooled_queue_exact
                                                    + result.mean_excess)
    assert result.epsilon_excess == pytest.approx(system.epsilon * result.mean_excess)
    assert result.mean_excess >= 0 and result.excess_ci_low <= result.mean_excess
    assert result.ci_method.startswith("coupled: E[q] exact + X by batch means")
    plain = simulate(system, "jsq", slots=300_000, seed=3, delay="off",
                     estimator="plain")
    assert plain.estimator == "plain" and plain.mean_total_queue == result.plain_mean_total_queue
    assert (plain.ci_low, plain.ci_high) == (result.plain_ci_low, result.plain_ci_high)
    assert plain.coupled_mean_total_queue == result.coupled_mean_total_queue
    # the point of it: far narrower on the same draws
    assert result.half_width < plain.half_width / 5


def test_one_server_has_no_excess_and_the_exact_mean() -> None:
    system = System.build("0.5", load=0.9)
    result = simulate(system, "rand", slots=50_000, seed=1, delay="off")
    assert result.mean_excess == 0 and result.excess_ci_high == 0
    exact = poisson_bernoulli_mean(system.arrival_rate, 0.5)
    assert result.mean_total_queue == pytest.approx(exact, rel=1e-9)
    assert result.ci_low <= exact <= result.ci_high


def test_a_trace_falls_back_to_the_plain_estimator(tmp_path) -> None:
    trace = tmp_path / "arrivals.csv"
    trace.write_text("\n".join(["1", "0", "2", "0"] * 50))
    result = simulate(System.build("0.5,0.5", arrivals=f"trace:{trace}"), "jsq",
                      slots=20_000, seed=1, delay="off")
    assert result.estimator == "plain" and "trace" in result.estimator_note
    assert result.mean_total_queue == result.plain_mean_total_queue
    assert math.isnan(result.coupled_mean_total_queue) and result.mean_excess >= 0


def test_a_run_far_shorter_than_x_relaxes_has_no_interval() -> None:
    """JBT-r with a threshold that never binds near ε = 0.001: X grows like 1/ε and relaxes
    over ~1/ε² slots; 20 000 slots cannot say."""
    system = System.build("10x0.5", epsilon=0.001)
    result = simulate(system, "jbt", policy_params={"r": 1000}, slots=20_000, seed=2,
                      delay="off")
    assert result.estimator == "coupled"
    assert math.isnan(result.ci_low) and "too short to say" in result.ci_method
    assert result.stability != "stable"


def test_replications_pool_the_excess() -> None:
    system = System.build("5x0.2,5x0.8", epsilon=0.1)
    result = simulate(system, "jsq", slots=100_000, replications=3, seed=5, delay="off")
    assert result.estimator == "coupled" and "pooled" in result.ci_method
    assert result.ci_low < result.mean_total_queue < result.ci_high


@pytest.mark.parametrize("bad", ["bogus", "", 1, None])
def test_the_estimator_is_validated(bad: object) -> None:
    with pytest.raises(ValidationError, match="estimator"):
        simulate(System.build("0.5,0.5", load=0.5), "jsq", slots=100, estimator=bad)


def test_a_stationary_start_draws_q0_from_the_pooled_law() -> None:
    """ΣQ(0) over 400 seeds: its mean is E[q] within 3 standard errors (q is close to
    exponential, so its SD is about its mean)."""
    import numpy as np

    from dispatchlab.simulation.plan import plan_run

    system = System.build("10x0.5", epsilon=0.01)
    totals = []
    for seed in range(400):
        task = plan_run(system, "jsq", slots=100, seed=seed, start="stationary").task
        queues = task.initial_queues(task.seed_sequence(None))
        assert queues.max() - queues.min() <= 1  # spread in proportion to equal μ_n
        totals.append(int(queues.sum()))
    exact = simulate(system, "jsq", slots=100).pooled_queue_exact
    assert abs(np.mean(totals) - exact) < 3 * exact / np.sqrt(len(totals))


def test_a_stationary_start_makes_the_pooled_queue_stationary_from_slot_zero() -> None:
    """Over 20 short runs at ε = 0.01 (4 % of the pooled queue's relaxation time ζ/ε²), the
    time average of q is near E[q] from a stationary start, and far below it from an empty
    one."""
    system = System.build("10x0.5", epsilon=0.01)
    means = {}
    for start in ("stationary", "empty"):
        runs = [simulate(system, "jsq", slots=3_000, warmup=0, seed=seed, delay="off",
                         imbalance=False, start=start) for seed in range(20)]
        assert all(run.jobs_arrived + run.jobs_at_start == run.jobs_departed
                   + run.jobs_in_system for run in runs)
        means[start] = sum(run.mean_pooled_queue for run in runs) / len(runs)
    exact = runs[0].pooled_queue_exact
    assert 0.5 * exact < means["stationary"] < 2 * exact
    assert means["empty"] < 0.3 * exact
    started = simulate(system, "jsq", slots=100, seed=4, start="stationary")
    assert started.jobs_at_start > 0 and started.start == "stationary"


def test_a_stationary_start_is_reproducible_and_leaves_the_loop_s_streams_alone() -> None:
    system = System.build("5x0.2,5x0.8", epsilon=0.05)
    a = simulate(system, "jsq", slots=5_000, seed=8, start="stationary", replications=2)
    b = simulate(system, "jsq", slots=5_000, seed=8, start="stationary", replications=2)
    assert a.to_dict() | {"seconds": 0, "slots_per_second": 0} == \
        b.to_dict() | {"seconds": 0, "slots_per_second": 0}


def test_a_stationary_start_needs_the_pooled_law(tmp_path) -> None:
    trace = tmp_path / "arrivals.csv"
    trace.write_text("1\n0\n")
    with pytest.raises(ValidationError, match="start.*trace"):
        simulate(System.build("0.5,0.5", arrivals=f"trace:{trace}"), "jsq", slots=100,
                 start="stationary")
    with pytest.raises(ValidationError, match="start"):
        simulate(System.build("0.5,0.5", load=0.5), "jsq", slots=100, start="full")
