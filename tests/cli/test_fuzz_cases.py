"""The inputs of issue 10 (tests/cli/fuzz_cases.txt) and the API's, each with its clean
behaviour: exit 0 with the expected text, or exit 2 with exactly one ``error: FIELD:``
line, nothing on stdout, no traceback and no warning."""

from __future__ import annotations

import shlex
import warnings
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from cli_contract import run_clean
from dispatchlab import System, ValidationError, make_policy, simulate
from dispatchlab.experiments.store import Store

CASES = Path(__file__).with_name("fuzz_cases.txt")


def read_cases() -> list[Any]:
    cases = []
    for number, line in enumerate(CASES.read_text(encoding="utf-8").splitlines(), start=1):
        if not line.strip() or line.lstrip().startswith("#"):
            continue
        parts = [p.strip() for p in line.split(" | ")]
        marks = [pytest.mark.slow] if parts[0] == "slow" else []
        exit_code, text, argv = parts[-3:]
        cases.append(pytest.param(int(exit_code), text, argv, marks=marks,
                                  id=f"line{number}:{argv[:60]}"))
    return cases


@pytest.fixture(scope="module")
def scratch(tmp_path_factory: pytest.TempPathFactory) -> Path:
    tmp = tmp_path_factory.mktemp("cases")
    (tmp / "huge_trace.csv").write_text(f"1\n{2**62}\n0\n")
    (tmp / "dir").mkdir()
    with Store(tmp / "store.sqlite") as db:
        db.save_experiment("e", "{}")
    (tmp / "huge_sweep.toml").write_text(
        'name = "huge"\nloads = [0.5]\nslots = 20_000_000_000_000\n'
        '[[systems]]\nservers = "20x0.5"\ndispatchers = 4\n'
        '[[policies]]\nname = "jsq"\n', encoding="utf-8")
    (tmp / "huge_rule.toml").write_text(
        'name = "rule"\nepsilons = [0.001]\n'
        'slots = { coefficient = 2e7, power = 2, per = "epsilon", '
        'maximum = 100_000_000_000_000 }\n'
        '[[systems]]\nservers = "20x0.5"\n[[policies]]\nname = "jsq"\n', encoding="utf-8")
    (tmp / "many_replications.toml").write_text(
        'name = "reps"\nloads = [0.5]\nslots = 1000\nreplications = 100_000_000\n'
        '[[systems]]\nservers = "2x0.5"\n[[policies]]\nname = "jsq"\n', encoding="utf-8")
    return tmp


@pytest.mark.parametrize("exit_code,text,argv", read_cases())
def test_issue_input(exit_code: int, text: str, argv: str, scratch: Path,
                     capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(scratch)
    code, out, err = run_clean(capsys, shlex.split(argv.replace("{tmp}", str(scratch))))
    assert code == exit_code, err or out
    if code == 2:
        assert err.startswith(f"error: {text}:"), err
    else:
        assert text in " ".join(out.split()), out


# -- the Python API: every wrong type or name is a ValidationError naming the argument ------

SYSTEM_CASES = [
    ({"dispatchers": 2.9}, "dispatchers"),
    ({"dispatchers": True}, "dispatchers"),
    ({"dispatchers": "2"}, "dispatchers"),
    ({"load": "0.9"}, "load"),
    ({"load": None, "epsilon": "0.1"}, "epsilon"),
    ({"load": float("nan")}, "load"),
    ({"unknown_keyword": 1}, "unknown_keyword"),
    ({"allow_overload": True}, "allow_overload"),  # one name everywhere: allow_unstable
    ({"allow_unstable": "yes", "load": 1.2}, "allow_unstable"),
    ({"load": 1.2}, "load"),
    ({"servers": [0.5, True]}, "servers"),
    ({"servers": [[0.5], [0.5, 0.5]]}, "servers"),
    ({"servers": 0.5}, "servers"),
    ({"servers": "2x1e308"}, "servers"),
    ({"servers": [1e308, 1e308]}, "servers"),
    ({"servers": "2x1e17", "service": "poisson"}, "servers"),
    ({"dispatcher_weights": "1,2"}, "dispatcher_weights"),
    ({"dispatchers": 2, "dispatcher_weights": [1e308, 1e308]}, "dispatcher_weights"),
    ({"split": 1}, "split"),
    ({"service": 3}, "service"),
    ({"arrivals": None}, "arrivals"),
]


@pytest.mark.parametrize("changes,field", SYSTEM_CASES)
def test_system_build_refuses(changes: dict[str, Any], field: str) -> None:
    arguments: dict[str, Any] = {"servers": "2x0.5", "load": 0.5, **changes}
    servers = arguments.pop("servers")
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        with pytest.raises(ValidationError) as caught:
            System.build(servers, **arguments)
    assert caught.value.field == field, str(caught.value)


def test_overload_message_fits_every_caller() -> None:
    with pytest.raises(ValidationError) as caught:
        System.build("2x0.5", load=1.2)
    message = str(caught.value)
    assert "allow_unstable" in message and "--allow-unstable" in message
    assert System.build("2x0.5", load=1.2, allow_unstable=True).allow_unstable


def small_system() -> System:
    return System.build("2x0.5", load=0.5)


SIMULATE_CASES = [
    ((None,), {}, "policy"),
    (("pod",), {"policy_params": [("d", 2)]}, "policy_params"),
    (("pod",), {"policy_params": {"d": [1]}}, "pod.d"),
    (("jsq",), {"slots": 2.5}, "slots"),
    (("jsq",), {"slots": True}, "slots"),
    (("jsq",), {"imbalance": "no"}, "imbalance"),
    (("jsq",), {"track_delay": False}, "track_delay"),
    (("jsq",), {"no_such_keyword": 1}, "no_such_keyword"),
    ((3,), {}, "policy"),
]


@pytest.mark.parametrize("args,kwargs,field", SIMULATE_CASES)
def test_simulate_refuses(args: tuple[Any, ...], kwargs: dict[str, Any], field: str) -> None:
    with pytest.raises(ValidationError) as caught:
        simulate(small_system(), *args, **kwargs)
    assert caught.value.field == field, str(caught.value)


def test_simulate_refuses_a_system_that_is_not_one() -> None:
    with pytest.raises(ValidationError, match="system"):
        simulate("2x0.5", "jsq")


def test_make_policy_refuses_a_non_name() -> None:
    for name in (None, 3, ["jsq"]):
        with pytest.raises(ValidationError, match="policy"):
            make_policy(name)


def test_run_jobs_limit_is_checked_before_the_loop() -> None:
    system = System.build(f"4x{2**30}", load=0.5, service="poisson")  # N·μ = 2^32, allowed
    with pytest.raises(ValidationError, match="2\\^60"):
        simulate(system, "jsq", slots=2**31)


def test_rates_are_refused_before_any_numpy_overflow() -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        for servers in ("2x1e308", np.array([1e308, 1e308])):
            with pytest.raises(ValidationError):
                System.build(servers, load=0.5)
