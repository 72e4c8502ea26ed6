"""The Python API validates like the CLI (issue 25, item 5): no silent conversion, ever (a
bool is not an int, a str is not a number, a float seed is refused), and every refusal is a
ValidationError naming the argument, for sweep, plot, simulate's policy_params, make_policy
and the policy constructors. Explicit cases first, then hypothesis generators."""

from __future__ import annotations

import os
import warnings
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import dispatchlab as dl
from dispatchlab import ValidationError, policies
from dispatchlab.policies.base import catalog

EXAMPLES = int(os.environ.get("DISPATCHLAB_FUZZ_EXAMPLES", "0"))
API = settings(max_examples=EXAMPLES or 40, deadline=None, derandomize=not EXAMPLES)
SERVERS = "2x0.5"
GOOD: dict[str, Any] = {"load": [0.5], "slots": 300, "workers": 1}


def sweep(systems: Any = SERVERS, chosen: Any = ("jsq",), **changes: Any):  # -> DataFrame
    return dl.sweep(systems, list(chosen) if isinstance(chosen, tuple) else chosen,
                    **{**GOOD, **changes})


SWEEP_CASES: list[tuple[dict[str, Any], str]] = [
    ({"slots": 1500.7}, "slots"), ({"slots": True}, "slots"), ({"slots": "1000"}, "slots"),
    ({"slots": 50}, "slots"), ({"slots": np.float64(300)}, "slots"),
    ({"seed": 1.9}, "seed"), ({"seed": -1}, "seed"), ({"seed": True}, "seed"),
    ({"seed": "7"}, "seed"),
    ({"load": [True]}, "load[0]"), ({"load": ["0.5"]}, "load[0]"), ({"load": 0.5}, "load"),
    ({"load": "0.5"}, "load"), ({"load": []}, "load"), ({"load": [0.5, 0.5]}, "load"),
    ({"load": [float("nan")]}, "load[0]"), ({"load": {0.5: 1}}, "load"),
    ({"load": np.array([[0.5]])}, "load"), ({"load": np.float64(0.5)}, "load"),
    ({"load": None}, "load"), ({"epsilon": [0.1]}, "load"),
    ({"store": 123}, "store"), ({"store": ""}, "store"), ({"store": b"x.sqlite"}, "store"),
    ({"dispatchers": 0}, "dispatchers"), ({"dispatchers": 2.0}, "dispatchers"),
    ({"dispatchers": True}, "dispatchers"),
    ({"replications": 0}, "replications"), ({"replications": 1.0}, "replications"),
    ({"warmup": 300}, "warmup"), ({"warmup": -1}, "warmup"), ({"warmup": 0.1}, "warmup"),
    ({"workers": 0}, "workers"), ({"workers": True}, "workers"), ({"workers": 1.0}, "workers"),
    ({"experiment": "a/b"}, "experiment"), ({"experiment": ""}, "experiment"),
    ({"experiment": 3}, "experiment"),
    ({"allow_unstable": 1}, "allow_unstable"), ({"allow_unstable": "yes"}, "allow_unstable"),
    ({"imbalance": 0}, "imbalance"), ({"track_delay": False}, "track_delay"),
    ({"delay": "some"}, "delay"), ({"warmup_method": "x"}, "warmup_method"),
    ({"estimator": "x"}, "estimator"), ({"start": 1}, "start"),
    ({"load": [1.2]}, "load"),  # unstable without allow_unstable
]


@pytest.mark.parametrize("changes,field", SWEEP_CASES)
def test_sweep_refuses(changes: dict[str, Any], field: str) -> None:
    with pytest.raises(ValidationError) as caught:
        sweep(**changes)
    assert caught.value.field == field, str(caught.value)


@pytest.mark.parametrize("systems,chosen,field", [
    ([], ("jsq",), "systems"), (123, ("jsq",), "systems"), ({"a": SERVERS}, ("jsq",), "systems"),
    ([SERVERS, SERVERS], ("jsq",), "systems"), (SERVERS, [], "policies"),
    (SERVERS, {}, "policies"), (SERVERS, 3, "policies"), (SERVERS, ("jsq", "jsq"), "policies"),
    (SERVERS, {"": "jsq"}, "policies"), (SERVERS, {3: "jsq"}, "policies"),
    (SERVERS, ("nope",), "policy"), (SERVERS, (None,), "policies"),
])
def test_sweep_refuses_systems_and_policies(systems: Any, chosen: Any, field: str) -> None:
    with pytest.raises(ValidationError) as caught:
        sweep(systems, chosen)
    assert caught.value.field == field, str(caught.value)


def test_sweep_dispatchers_must_not_contradict_a_system() -> None:
    system = dl.System.build(SERVERS, load=0.5, dispatchers=2)
    with pytest.raises(ValidationError, match="dispatchers"):
        sweep(system, dispatchers=3)
    assert sweep(system, dispatchers=2)["system"].iloc[0].endswith("M=2")


def test_sweep_store_that_is_a_folder(tmp_path: Path) -> None:
    with pytest.raises(ValidationError) as caught:
        sweep(store=tmp_path)
    assert caught.value.field == "store"


def test_sweep_allow_unstable_and_numpy_values() -> None:
    frame = sweep(load=np.array([0.5, 1.2]), slots=np.int64(300), seed=np.int64(3),
                  allow_unstable=True)
    assert list(frame["x"]) == [0.5, 1.2]
    assert frame["stability"].iloc[1] == "unstable"


def test_sweep_refusal_runs_nothing_and_writes_nothing(tmp_path: Path) -> None:
    store = tmp_path / "s.sqlite"
    with pytest.raises(ValidationError):
        sweep(store=store, load=[0.5, 1.5])  # the second load is refused before any point
    assert not store.exists()


@pytest.fixture(scope="module")
def frame() -> pd.DataFrame:
    return sweep(load=[0.5, 0.6])


@pytest.mark.parametrize("arguments,field", [
    ({"frame": None}, "frame"), ({"frame": [1, 2]}, "frame"), ({"frame": pd.DataFrame()}, "frame"),
    ({"y": "bogus"}, "y"), ({"y": "policy"}, "y"), ({"y": 3}, "y"), ({"x": "slots"}, "x"),
    ({"x": None}, "x"), ({"log_y": 1}, "log_y"), ({"title": None}, "title"),
])
def test_plot_refuses(arguments: dict[str, Any], field: str, frame: pd.DataFrame) -> None:
    given = {"frame": frame, **arguments}
    with pytest.raises(ValidationError) as caught:
        dl.plot(given.pop("frame"), **given)
    assert caught.value.field == field, str(caught.value)


def test_plot_names_the_allowed_columns(frame: pd.DataFrame) -> None:
    with pytest.raises(ValidationError, match="allowed: mean_total_queue, mean_delay"):
        dl.plot(frame, y="bogus")
    dl.plot(frame, y="mean_delay", log_y=True, title="t")
    dl.plot(frame[frame["x"] == 0.5], x="epsilon")


POLICY_CASES: list[tuple[Any, str]] = [
    (lambda: policies.PowerOfD(d="2"), "pod.d"),
    (lambda: policies.PowerOfD(d=2.0), "pod.d"),
    (lambda: policies.PowerOfD(d=True), "pod.d"),
    (lambda: policies.LED(p="0.1"), "led.p"),
    (lambda: policies.LED(p=True), "led.p"),
    (lambda: policies.LED(increment=1), "led.increment"),
    (lambda: policies.LED(increment="true"), "led.increment"),
    (lambda: policies.LED(update=1), "led.update"),
    (lambda: dl.make_policy("pod", d="2"), "pod.d"),
    (lambda: dl.simulate(dl.System.build(SERVERS, load=0.5), "pod",
                         policy_params={"d": "2"}, slots=300), "pod.d"),
    (lambda: dl.simulate(dl.System.build(SERVERS, load=0.5), "jsq", slots=300, seed=1.9),
     "seed"),
]


@pytest.mark.parametrize("make,field", POLICY_CASES)
def test_policies_refuse_what_is_not_their_type(make: Any, field: str) -> None:
    with pytest.raises(ValidationError) as caught:
        make()
    assert caught.value.field == field, str(caught.value)


def test_the_command_line_still_parses_its_text(capsys: pytest.CaptureFixture[str]) -> None:
    from cli_contract import run_clean

    code, out, _ = run_clean(capsys, ["run", "--policy", "led", "--set", "p=0.5", "--set",
                                      "increment=true", "--set", "d=1", "--slots", "300",
                                      "--servers", "2x0.5", "--dispatchers", "2", "--json"])
    assert code == 0 and '"stability"' in out


# -- generators -------------------------------------------------------------------------------

ANY = st.one_of(st.none(), st.booleans(), st.integers(-3, 2**64), st.floats(allow_nan=True),
                st.text(max_size=4), st.binary(max_size=2), st.complex_numbers(max_magnitude=2),
                st.lists(st.floats(0, 2), max_size=3), st.sampled_from(
                    ["2", "0.5", "true", "jsq", "1e3", "inf", "/", "2x0.5"]),
                st.sampled_from([np.int64(3), np.float64(0.5), np.bool_(True),
                                 np.array([0.5]), np.array([[0.5]])]))
SWEEP_KEYS = ["load", "epsilon", "replications", "slots", "warmup", "seed", "workers", "store",
              "experiment", "dispatchers", "allow_unstable", "warmup_method", "delay", "imbalance",
              "estimator", "start", "bogus"]


def _quiet(call: Any) -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        try:
            call()
        except ValidationError as error:
            assert "\n" not in str(error)


@API
@given(systems=st.one_of(ANY, st.just(SERVERS)),
       changes=st.dictionaries(st.sampled_from(SWEEP_KEYS), ANY, max_size=3))
def test_any_sweep_raises_only_validation_errors(systems: Any, changes: dict[str, Any]) -> None:
    arguments = {**GOOD, "slots": 200, **changes}
    if "epsilon" in changes:
        arguments.pop("load", None)
    if "store" in arguments and isinstance(arguments["store"], str | bytes):
        arguments["store"] = None  # a real path would be a file in the working directory
    if "bogus" in arguments:  # named, with the allowed keywords (issue 38), not a TypeError
        with pytest.raises(ValidationError, match="^bogus: unknown keyword of sweep"):
            dl.sweep(systems, ["jsq"], **arguments)
        return
    arguments["workers"] = 1  # never start a pool from a generated case
    _quiet(lambda: dl.sweep(systems, ["jsq"], **arguments))


@API
@given(x=ANY, y=st.one_of(ANY, st.sampled_from(["mean_total_queue", "ci_low", "system"])),
       log_y=ANY, title=ANY)
def test_any_plot_raises_only_validation_errors(x: Any, y: Any, log_y: Any, title: Any,
                                                frame: pd.DataFrame) -> None:
    import matplotlib.pyplot as plt

    _quiet(lambda: dl.plot(frame, x=x, y=y, log_y=log_y, title=title))
    plt.close("all")


def _parameters() -> list[tuple[str, str]]:
    return [(name, p.name) for name, _, _, params in catalog() for p in params]


@API
@given(entry=st.sampled_from(_parameters()), value=ANY)
def test_any_policy_parameter_raises_only_validation_errors(entry: tuple[str, str],
                                                            value: Any) -> None:
    name, parameter = entry
    try:
        policy = dl.make_policy(name, **{parameter: value})
    except ValidationError:
        return
    # accepted: the value had the declared type already (nothing was converted)
    kind = next(p.kind for n, _, _, ps in catalog() if n == name for p in ps
                if p.name == parameter)
    given_kind = type(value.item() if isinstance(value, np.generic) else value)
    assert given_kind is kind or (kind is float and given_kind is int), (value, kind)
    assert policy.params[parameter] == value or parameter == "decision"
