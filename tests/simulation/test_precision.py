"""Precision targets: replications until the 95 % CI of E[ΣQ] is as narrow as asked."""

from __future__ import annotations

import json

import pytest

from dispatchlab import System
from dispatchlab.cli import main
from dispatchlab.core.errors import ValidationError
from dispatchlab.simulation.run import simulate
from dispatchlab.theory.closed_forms import geo_geo_1_mean


def test_geo_geo_1_reaches_two_percent_with_the_truth_inside() -> None:
    system = System.build("0.5", load=0.8, arrivals="bernoulli")
    exact = geo_geo_1_mean(0.4, 0.5)
    result = simulate(system, "rand", slots=200_000, precision=0.02, seed=3,
                      track_delay=False)
    assert result.stop_reason == "target reached"
    assert result.relative_half_width <= 0.02
    assert result.precision_target == 0.02 and result.replications >= 2
    assert result.ci_low <= exact <= result.ci_high


def test_wrand_bench_reaches_two_percent_from_the_cli(capsys: pytest.CaptureFixture) -> None:
    status = main(["run", "--policy", "wrand", "--servers", "50x0.1,50x0.5", "--dispatchers",
                   "10", "--load", "0.95", "--precision", "0.02", "--no-delay", "--seed", "4",
                   "--workers", "1", "--json"])
    assert status == 0
    data = json.loads(capsys.readouterr().out)
    assert data["stop_reason"] == "target reached"
    assert data["relative_half_width"] <= 0.02
    assert data["ci_low"] <= 4281.175 <= data["ci_high"]
    assert data["slots_run"] == data["replications"] * 1_000_000


def test_absolute_target_and_budget() -> None:
    """(The plain estimator: on one server X = 0 and the coupled CI is exact at once.)"""
    system = System.build("0.5", load=0.8, arrivals="bernoulli")
    result = simulate(system, "rand", slots=20_000, precision_abs=1e-4, max_slots=60_000,
                      track_delay=False, estimator="plain")
    assert result.stop_reason.startswith("slot budget spent")
    assert result.slots_run == 60_000 and result.replications == 3
    assert result.half_width > 1e-4 and result.slot_budget == 60_000


def test_precision_run_is_the_replications_of_a_fixed_run() -> None:
    system = System.build("0.5", load=0.8, arrivals="bernoulli")
    target = simulate(system, "rand", slots=20_000, precision=0.05, track_delay=False)
    fixed = simulate(system, "rand", slots=20_000, replications=target.replications,
                     track_delay=False)
    assert (target.mean_total_queue, target.ci_low) == (fixed.mean_total_queue, fixed.ci_low)


@pytest.mark.parametrize("kwargs", [{"precision": 0}, {"precision": -1.0},
                                    {"precision_abs": float("nan")},
                                    {"precision": 0.1, "max_slots": 10},
                                    {"max_slots": 100_000}])
def test_bad_targets(kwargs: dict) -> None:
    with pytest.raises(ValidationError):
        simulate(System.build("0.5", load=0.5), "rand", slots=1000, **kwargs)
