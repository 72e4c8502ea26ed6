"""Precision targets: replications until the 95 % CI of E[ΣQ] is as narrow as asked."""

from __future__ import annotations

import json

import pytest

from dispatchlab import Precision, System
from dispatchlab.cli import main
from dispatchlab.core.errors import ValidationError
from dispatchlab.simulation.run import simulate
from dispatchlab.theory.closed_forms import geo_geo_1_mean


def test_geo_geo_1_reaches_two_percent_with_the_truth_inside() -> None:
    system = System.build("0.5", load=0.8, arrivals="bernoulli")
    exact = geo_geo_1_mean(0.4, 0.5)
    result = simulate(system, "rand", slots=200_000, precision=Precision(rel=0.02), seed=3,
                      delay="off")
    assert result.stop_reason == "target reached"
    assert result.relative_half_width <= 0.02
    assert result.precision_target == 0.02 and result.replications >= 2
    assert result.ci_low <= exact <= result.ci_high


def test_wrand_bench_reaches_two_percent_from_the_cli(capsys: pytest.CaptureFixture) -> None:
    status = main(["run", "--policy", "wrand", "--servers", "50x0.1,50x0.5", "--dispatchers",
                   "10", "--load", "0.95", "--precision-rel", "0.02", "--delay", "off",
                   "--seed", "4",
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
    result = simulate(system, "rand", slots=20_000,
                      precision=Precision(abs=1e-4, max_slots=60_000),
                      delay="off", estimator="plain")
    assert result.stop_reason.startswith("slot budget spent")
    assert result.slots_run == 60_000 and result.replications == 3
    assert result.half_width > 1e-4 and result.slot_budget == 60_000


def test_precision_run_is_the_replications_of_a_fixed_run() -> None:
    system = System.build("0.5", load=0.8, arrivals="bernoulli")
    target = simulate(system, "rand", slots=20_000, precision=Precision(rel=0.05),
                      delay="off")
    fixed = simulate(system, "rand", slots=20_000, replications=target.replications,
                     delay="off")
    assert (target.mean_total_queue, target.ci_low) == (fixed.mean_total_queue, fixed.ci_low)


@pytest.mark.parametrize(("kwargs", "field"), [
    ({"precision": Precision(rel=0)}, "precision.rel"),
    ({"precision": Precision(rel=-1.0)}, "precision.rel"),
    ({"precision": Precision(rel=1e-300)}, "precision.rel"),
    ({"precision": Precision(abs=float("nan"))}, "precision.abs"),
    ({"precision": Precision(rel=True)}, "precision.rel"),
    ({"precision": Precision()}, "precision"),
    ({"precision": Precision(rel=0.1, max_slots=10)}, "precision.max_slots"),
    ({"precision": Precision(rel=0.1, max_slots=1500)}, "precision.max_slots"),
    ({"precision": 0.01}, "precision"),
    ({"precision_abs": 0.5}, "precision_abs"),
    ({"max_slots": 100_000}, "max_slots"),
])
def test_bad_targets(kwargs: dict, field: str) -> None:
    with pytest.raises(ValidationError) as error:
        simulate(System.build("0.5", load=0.5), "rand", slots=1000, **kwargs)
    assert error.value.field == field


@pytest.mark.parametrize(("option", "words"), [
    (["--precision", "0.01"], "precision: renamed: now --precision-rel"),
    (["--max-slots", "9000"], "max-slots: renamed: now --precision-max-slots"),
    (["--no-delay"], "no-delay: renamed: now --delay off"),
    (["--precision-rel", "0"], "precision.rel: must be a number > 0"),
    (["--precision-max-slots", "5000"], "precision: give a target"),
])
def test_the_cli_names_each_target_option_once(capsys: pytest.CaptureFixture, option,
                                                words) -> None:
    status = main(["run", "--policy", "rand", "--servers", "2x0.5", "--slots", "1000",
                   *option])
    captured = capsys.readouterr()
    lines = captured.err.strip().splitlines()
    assert status == 2 and len(lines) == 1 and lines[0].startswith(f"error: {words}"), lines
