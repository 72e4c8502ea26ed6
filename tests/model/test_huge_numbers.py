"""Huge and tiny numbers are refused before any int64 or float conversion (issue 25, item 2):
one ``error: FIELD:`` line on the command line, a ValidationError naming the field in Python;
never an OverflowError or ZeroDivisionError."""

from __future__ import annotations

import warnings
from typing import Any

import pytest

from cli_contract import run_clean
from dispatchlab import System, ValidationError, make_policy, policies, simulate
from dispatchlab.core.ram import LIMIT_VARIABLE, memory_limit, parse_size
from dispatchlab.policies.pull import MAX_THRESHOLD, threshold_for

TINY = ["run", "--slots", "200", "--servers", "3x0.3", "--dispatchers", "2"]

CLI_CASES = [
    (["--policy", "jbt", "--set", "r=9223372036854775808"], "jbt.r"),
    (["--policy", "jbt", "--set", f"r={MAX_THRESHOLD + 1}"], "jbt.r"),
    (["--policy", "jbt", "--set", "threshold=log", "--set", "K=inf", "--epsilon", "0.1"],
     "jbt.K"),
    (["--policy", "jbt", "--set", "threshold=log", "--set", "K=nan", "--epsilon", "0.1"],
     "jbt.K"),
    (["--policy", "pod", "--set", "d=99999999999999999999999"], "pod.d"),
    (["--policy", "pi-framework", "--set", "T=9223372036854775808"], "pi-framework.T"),
    (["--policy", "jsq", "--servers", "5x1e-300"], "servers"),
    (["--policy", "jsq", "--servers", "2x0.5", "--epsilon", "1e-300"], "epsilon"),
    (["--policy", "jsq", "--servers", "2x0.5", "--epsilon", "-1e-300", "--allow-unstable"],
     "epsilon"),
    (["--policy", "led", "--set", "p=1e-400"], "led.p"),
]


@pytest.mark.parametrize("options,field", CLI_CASES)
def test_command_line_refuses(options: list[str], field: str,
                              capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = run_clean(capsys, [*TINY, *options])
    assert code == 2
    assert err.startswith(f"error: {field}: "), err


def test_a_huge_poly_exponent_gives_the_capped_threshold(
        capsys: pytest.CaptureFixture[str]) -> None:
    assert threshold_for("poly", 0.1, a=1e300) == MAX_THRESHOLD
    assert threshold_for("log", 0.1, K=1e308) == MAX_THRESHOLD
    assert threshold_for("poly", 0.5, a=1.0) == 2  # the ordinary case is unchanged
    code, _, _ = run_clean(capsys, [*TINY, "--policy", "jbt", "--set", "threshold=poly",
                                    "--set", "a=1e300", "--epsilon", "0.1"])
    assert code == 0


API_CASES: list[tuple[Any, str]] = [
    (lambda: policies.PeriodicJSQ(T=2**63), "T"),
    (lambda: policies.JoinBelowThreshold(r=1e300), "jbt.r"),
    (lambda: policies.JoinBelowThreshold(r=2**63), "jbt.r"),
    (lambda: policies.JoinBelowThreshold(threshold="poly", a=float("inf")), "jbt.a"),
    (lambda: make_policy("pod", d=-(2**63) - 1), "pod.d"),
    (lambda: System.build("5x1e-300", load=0.5), "servers"),
    (lambda: System.build([0.5, 1e-13], load=0.5), "servers"),
    (lambda: System.build("2x0.5", epsilon=1e-300), "epsilon"),
]


@pytest.mark.parametrize("make,field", API_CASES)
def test_python_refuses(make: Any, field: str) -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        with pytest.raises(ValidationError) as caught:
            make()
    assert field in caught.value.field, str(caught.value)


def test_the_least_rate_still_runs() -> None:
    system = System.build("5x1e-12", load=0.5)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert simulate(system, "jsq", slots=200).slots == 200


@pytest.mark.parametrize("text", ["inf", "-5", "nan", "1e400", "0", "abc", "1e-3", "", "G"])
def test_memory_limit_refuses_what_is_not_a_size(text: str,
                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(LIMIT_VARIABLE, text)
    if not text:  # unset: the machine's own limit
        assert memory_limit() > 0
        return
    with pytest.raises(ValidationError) as caught:
        memory_limit()
    assert caught.value.field == LIMIT_VARIABLE


def test_memory_limit_sizes() -> None:
    assert parse_size("8G", "x") == 8 * 2**30
    assert parse_size("512 MB", "x") == 512 * 2**20
    assert parse_size("1000", "x") == 1000


def test_memory_limit_inf_is_one_line_on_the_command_line(
        capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(LIMIT_VARIABLE, "inf")
    code, _, err = run_clean(capsys, [*TINY, "--policy", "led"])
    assert code == 2 and err.startswith(f"error: {LIMIT_VARIABLE}: "), err


@pytest.mark.parametrize("scale", ["inf", "nan", "-1", "0"])
def test_experiment_scale_must_be_finite(scale: str, capsys: pytest.CaptureFixture[str],
                                         tmp_path: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    code, _, err = run_clean(capsys, ["experiment", "classic-load-sweep", "--scale", scale,
                                      "--store", str(tmp_path / "s.sqlite")])
    assert code == 2 and err.startswith("error: scale: "), err
    assert not (tmp_path / "s.sqlite").exists()


@pytest.mark.parametrize("bound", [2**63, 2**62 + 1, 0, True, 2.0])
def test_simulate_bound_fits_int64(bound: Any) -> None:
    with pytest.raises(ValidationError) as caught:
        simulate(System.build("2x0.5", load=0.5), "jsq", slots=300, bound=bound)
    assert caught.value.field == "bound"
