"""A continuous-time run to a precision target: replications in rounds until E[T]'s 95 %
CI is as narrow as asked or the job budget is spent, the same numbers as a run of that
many replications; the budget is in jobs (slots are the other model's), in the API, the
command line and a spec file."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

import dispatchlab
from cli_contract import run_clean
from dispatchlab import Precision, ValidationError
from dispatchlab.continuous import simulate_continuous

SYSTEM = dict(load=0.8, jobs=5_000, dispatchers=2, seed=4)


@pytest.mark.parametrize("workers", [1, 2])
def test_a_precision_run_is_the_run_of_as_many_replications(workers: int) -> None:
    result = simulate_continuous("4x1", "jsq", **SYSTEM, precision=Precision(rel=0.05),
                                 workers=workers)
    response = result.mean_response
    assert result.stop_reason == "target reached"
    assert response.half_width <= 0.05 * response.mean
    assert result.replications > 2 and result.precision_target == 0.05
    assert result.job_budget == 64 * SYSTEM["jobs"]
    plain = simulate_continuous("4x1", "jsq", **SYSTEM, replications=result.replications,
                                workers=1)
    assert plain.mean_response == response and plain.stop_reason == ""


def test_messages_are_counted_per_job_of_every_replication_run() -> None:
    settings = dict(load=0.8, jobs=4_000, dispatchers=3, seed=2, workers=1,
                    policy_params={"update": "pull", "p": 0.5})
    target = simulate_continuous("8x1", "l-jsq", **settings, precision=Precision(rel=0.03))
    assert target.replications > 2
    plain = simulate_continuous("8x1", "l-jsq", **settings,
                                replications=target.replications)
    assert target.messages_per_job == plain.messages_per_job > 0


def test_a_budget_too_small_for_the_target_is_spent_and_said() -> None:
    result = simulate_continuous("4x1", "jsq", **SYSTEM, workers=1,
                                 precision=Precision(rel=1e-4, max_jobs=3 * 5_000 + 10))
    assert result.replications == 3
    assert result.stop_reason == "job budget spent (15,000 of 15,010 jobs)"
    assert result.mean_response.half_width > 1e-4 * result.mean_response.mean


def test_an_absolute_target_is_met() -> None:
    result = simulate_continuous("2x1", "random", load=0.5, jobs=4_000, workers=1,
                                 precision=Precision(abs=0.05))
    assert result.stop_reason == "target reached"
    assert result.mean_response.half_width <= 0.05


def test_an_unstable_system_stops_at_once() -> None:
    # round robin sends half the jobs (0.6 of work a unit of time) to the 0.2 server
    result = simulate_continuous([0.2, 1.8], "rr", load=0.6, jobs=20_000, bound=2_000,
                                 workers=1, precision=Precision(rel=0.01))
    assert result.stop_reason == "unstable: no mean to estimate"
    assert result.stability == "unstable" and result.replications == 1


@pytest.mark.parametrize(("precision", "field"), [
    (Precision(rel=0.01, max_slots=10**6), "precision.max_slots"),
    (Precision(max_jobs=10**6), "precision"),
    (Precision(rel=-1), "precision.rel"),
    (Precision(rel=float("nan")), "precision.rel"),
    (Precision(abs=0.1, max_jobs=5_000), "precision.max_jobs"),  # one replication's worth
    (Precision(rel=0.1, max_jobs=2.5e6), "precision.max_jobs"),
    (0.01, "precision"),
])
def test_a_wrong_target_is_one_error_naming_its_field(precision, field: str) -> None:
    with pytest.raises(ValidationError) as caught:
        simulate_continuous("2x1", "jsq", load=0.5, jobs=5_000, precision=precision)
    assert caught.value.field == field


def test_a_budget_below_the_replications_asked_is_refused() -> None:
    with pytest.raises(ValidationError, match="does not cover 50 replications of 1,000 jobs"):
        simulate_continuous("2x1", "jsq", load=0.5, jobs=1_000, replications=50,
                            precision=Precision(rel=0.5, max_jobs=10_000))
    system = dispatchlab.System.build("2x0.5", load=0.5)
    with pytest.raises(ValidationError, match="does not cover 50 replications"):
        dispatchlab.simulate(system, "jsq", slots=1_000, replications=50,
                             precision=Precision(rel=0.5, max_slots=10_000))
    # without a budget, the replications asked are afforded
    result = simulate_continuous("2x1", "jsq", load=0.5, jobs=1_000, replications=80,
                                 workers=1, precision=Precision(rel=0.5))
    assert result.replications == 80 and result.job_budget == 80_000


def test_a_paired_comparison_refuses_a_target() -> None:
    from dispatchlab.continuous import compare_continuous

    with pytest.raises(ValidationError) as caught:
        compare_continuous("2x1", "jsq", "random", load=0.5, jobs=5_000,
                           precision=Precision(rel=0.01))
    assert caught.value.field == "precision"


def test_a_job_budget_in_the_slotted_model_is_refused() -> None:
    system = dispatchlab.System.build("2x0.5", load=0.5)
    with pytest.raises(ValidationError) as caught:
        dispatchlab.simulate(system, "jsq", slots=1_000,
                             precision=Precision(rel=0.01, max_jobs=10**6))
    assert caught.value.field == "precision.max_jobs"


BASE = ["run", "--time", "continuous", "--servers", "4x1", "--load", "0.8", "--jobs", "5000",
        "--dispatchers", "2", "--seed", "4", "--workers", "1"]


def test_the_command_line_runs_to_a_target_and_says_why_it_stopped(capsys) -> None:
    code, out, _ = run_clean(capsys, [*BASE, "--precision-rel", "0.05",
                                      "--precision-max-jobs", "500000", "--json"])
    assert code == 0
    data = json.loads(out)
    assert data["precision"] == {"rel": 0.05, "abs": None, "max_jobs": 500_000,
                                 "stop_reason": "target reached"}
    response = data["mean_response"]
    assert response["ci_high"] - response["ci_low"] <= 2 * 0.05 * response["mean"]
    code, out, _ = run_clean(capsys, [*BASE, "--precision-rel", "0.05"])
    words = " ".join(out.replace("│", " ").split())
    assert code == 0 and "% of E[T] (half-width" in words and "target reached" in words


@pytest.mark.parametrize(("arguments", "field"), [
    ([*BASE, "--precision-max-slots", "10000000"], "precision-max-slots"),
    (["run", "--servers", "4x0.5", "--precision-max-jobs", "100000"], "precision-max-jobs"),
    ([*BASE, "--precision-max-jobs", "100000"], "precision"),  # a budget, no target
    ([*BASE, "--precision-rel", "0"], "precision.rel"),
])
def test_the_command_line_refuses_a_budget_of_the_other_model(capsys, arguments,
                                                              field: str) -> None:
    code, _, err = run_clean(capsys, arguments)
    assert code == 2 and err.startswith(f"error: {field}: "), err


@pytest.mark.parametrize(("arguments", "field"), [
    (["run", "--time", "continuous", "--servers", "4x1", "--jobs", "200000000",
      "--precision-rel", "1e-6"], "precision.max_jobs"),
    (["run", "--servers", "4x0.5", "--slots", "500000000", "--precision-rel", "1e-6"],
     "budget"),
    (["compare", "--servers", "4x0.5", "--slots", "500000000", "--precision-rel", "1e-6",
      "-p", "jsq", "-p", "rand"], "budget"),
])
def test_the_work_guard_counts_a_precision_run_s_budget(capsys, arguments, field: str) -> None:
    """One replication of each is within the guard; the 64 a precision run may spend are
    not: refused with the estimate unless --yes."""
    code, _, err = run_clean(capsys, arguments)
    assert code == 2 and err.startswith(f"error: {field}: ") and "--yes" in err, err


def test_a_spec_file_sets_the_target_and_the_job_budget(capsys, tmp_path: Path) -> None:
    spec = tmp_path / "run.toml"
    spec.write_text('[system]\nservers = "4x1"\nload = 0.8\ndispatchers = 2\n'
                    '[run]\ntime = "continuous"\njobs = 5000\nseed = 4\n'
                    '[run.precision]\nrel = 0.02\nmax_jobs = 400000\n')
    code, out, _ = run_clean(capsys, ["run", str(spec), "--workers", "1", "--json"])
    assert code == 0
    assert json.loads(out)["precision"]["max_jobs"] == 400_000
    # the command line's target replaces the file's, its budget stays
    code, out, _ = run_clean(capsys, ["run", str(spec), "--workers", "1", "--json",
                                      "--precision-rel", "0.05"])
    assert json.loads(out)["precision"] == {"rel": 0.05, "abs": None, "max_jobs": 400_000,
                                            "stop_reason": "target reached"}
    spec.write_text(spec.read_text().replace("max_jobs", "max_slots"))
    code, _, err = run_clean(capsys, ["run", str(spec)])
    assert code == 2 and err.startswith("error: run.precision"), err
