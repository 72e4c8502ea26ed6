"""No interval without evidence (issue 47): a run too short or too quiet to show any spread
reports its mean with no interval and says why, instead of a zero-width one."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest

from dispatchlab import System, simulate
from dispatchlab.cli import main
from dispatchlab.stats.estimators import batch_means


@pytest.mark.parametrize(("load", "slots"), [(0.5, 1), (0.02, 100)])
def test_x_never_seen_is_no_interval_on_several_servers(load: float, slots: int) -> None:
    """E[X] = 0 [0, 0] from one slot made E[ΣQ] = 0.4186 [0.4186, 0.4186]: now no interval."""
    result = simulate(System.build("4x0.5", load=load, dispatchers=2), "jsq", slots=slots,
                      seed=1)
    assert result.mean_excess == 0.0
    assert math.isnan(result.excess_ci_low) and math.isnan(result.excess_ci_high)
    assert math.isnan(result.ci_low) and math.isnan(result.ci_high)
    assert "none observed" in result.ci_method


def test_one_server_has_x_zero_by_proof() -> None:
    result = simulate(System.build("0.5", load=0.3), "jsq", slots=200, seed=1)
    assert (result.excess_ci_low, result.excess_ci_high) == (0.0, 0.0)
    assert "on one server" in result.ci_method


@pytest.mark.parametrize("value", [0.0, 3.0])
def test_a_constant_series_gives_no_interval(value: float) -> None:
    estimate = batch_means(np.full(400, value))
    assert estimate.mean == value and estimate.too_short
    assert "never varied" in estimate.method


def test_the_plain_estimator_of_a_quiet_run_says_why(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["run", "--policy", "jsq", "--servers", "4x0.5", "--dispatchers", "2",
                 "--load", "0.02", "--slots", "100", "--estimator", "plain", "--json"]) == 0
    record = json.loads(capsys.readouterr().out)
    assert record["mean_total_queue"] == 0.0
    assert record["ci_low"] is None and record["ci_high"] is None
    assert "never varied" in record["ci_method"]


def test_an_interval_below_the_least_possible_mean_is_dropped() -> None:
    from dispatchlab.stats.estimators import Estimate, within_support

    crossing = Estimate(682.7, -2177.0, 3543.0, "independent replications (2)", 2)
    dropped = within_support(crossing)
    assert dropped.mean == 682.7 and dropped.too_short
    assert dropped.method.startswith("too few to say: independent replications (2) gave "
                                     "[-2177, 3543], below 0")
    inside = Estimate(5.0, 0.5, 9.5, "batch means", 40)
    assert within_support(inside) is inside
    assert within_support(dropped) is dropped
    assert within_support(inside, least=1.0).too_short


@pytest.mark.parametrize("seed", range(4))
def test_no_reported_interval_reaches_below_zero(seed: int) -> None:
    """Short, noisy replications of a policy near its threshold: whatever the draws, ΣQ's
    and X's intervals are either absent or within [0, ∞)."""
    system = System.build("3x0.2,3x0.6", load=0.9, dispatchers=3)
    for policy in ("wrand", "pod", "jsq"):
        result = simulate(system, policy, slots=3_000, seed=seed, replications=2, workers=1)
        for low in (result.ci_low, result.excess_ci_low, result.plain_ci_low):
            assert math.isnan(low) or low >= 0, (policy, result.ci_method)


def test_a_delay_quantile_needs_ten_jobs_beyond_it() -> None:
    """p99.9 had been printed from 15 tagged jobs: a level u needs 10/(1 − u) timed jobs."""
    short = simulate(System.build("4x0.5", load=0.5, dispatchers=2), "jsq", slots=300, seed=1)
    assert 100 <= short.delay_jobs < 1000
    assert math.isfinite(short.delay_p50) and math.isfinite(short.delay_p90)
    assert math.isnan(short.delay_p99) and math.isnan(short.delay_p999)
    assert math.isnan(short.delay_p999_ci_low) and math.isnan(short.delay_p999_ci_high)
    long = simulate(System.build("4x0.5", load=0.5, dispatchers=2), "jsq", slots=20_000,
                    seed=1)
    assert long.delay_jobs >= 10_000 and math.isfinite(long.delay_p999)
