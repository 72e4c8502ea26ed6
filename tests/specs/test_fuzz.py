"""Fuzz: random command lines (every subcommand, valid and invalid options mixed), TOML
specs and API calls must end cleanly: exit 0, or exit 2 with exactly one ``error:`` line
and nothing on stdout; never a traceback or a warning. In-process and on tiny systems, so
the whole file runs in well under a minute."""

from __future__ import annotations

import os
import tomllib
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from cli_contract import run_clean
from dispatchlab import System, ValidationError, simulate
from dispatchlab.cli.experiment import sweep_work
from dispatchlab.simulation.work_guard import WORK_LIMIT
from dispatchlab.specs.experiment import ExperimentSpec

#: DISPATCHLAB_FUZZ_EXAMPLES=N: a longer, randomised hunt (the default suite is derandomised)
EXAMPLES = int(os.environ.get("DISPATCHLAB_FUZZ_EXAMPLES", "0"))
FUZZ = settings(max_examples=EXAMPLES or 40, deadline=None, derandomize=not EXAMPLES,
                suppress_health_check=[HealthCheck.function_scoped_fixture,
                                       HealthCheck.too_slow])
API = settings(max_examples=EXAMPLES or 40, deadline=None, derandomize=not EXAMPLES)

NUMBERS = ["0", "1", "2", "-1", "0.5", "0.9", "1.5", "1e308", "-1e308", "nan", "inf", "1e-9",
           "abc", "", "2.9", "10000000000000000000000"]
SERVERS = ["2x0.5", "3x0.2,3x0.6", "0.3,0.4", "2x1e308", "2x1e17", "0x1", "2x-1", "x", ",",
           "2x0.5,,1", "1e-300", "3000000x0.1", "2xnan", "2x1.5"]
LAWS = ["poisson", "bernoulli", "binomial:3", "binomial:x", "binomial:0", "deterministic",
        "geometric", "trace:", "trace:/dev/null", "trace:/nonexistent", "nope", ""]
POLICIES = ["jsq", "pod", "rr", "wrand", "jbt", "nope", "", "JSQ"]
SETS = ["d=2", "d=0", "d=x", "d=2", "r=1", "x", "=", "d=", "p=0.5", "p=1e-20", "nope=1"]
SLOTS = ["1", "50", "300", "0", "-5", "many", "1000000000000"]
SMALL = ["2", "3", "0", "-1", "x", "100000000"]
# values a drawn run may take for real: nothing here may start a long run or a worker pool
WORKERS = ["0", "-1", "1", "x", "nan"]
MAX_SLOTS = ["0", "-5", "x", "400", "1000", "1e3", "10000000000000000000000"]
PRECISION = ["0.5", "0.05", "0", "-1", "nan", "inf", "x", "1e308"]
WEIGHTS = ["1,1", "1,2,3", "x", "-1,2", "nan,1", "0,0", "1", ""]

SYSTEM_OPTIONS: dict[str, list[str]] = {
    "--servers": SERVERS, "--dispatchers": SMALL, "--load": NUMBERS, "--epsilon": NUMBERS,
    "--arrivals": LAWS, "--service": LAWS, "--dispatch": ["batch", "per-job", "x"],
    "--split": ["batch", "per-job", "x"],
}
COMMANDS: dict[tuple[str, ...], dict[str, list[str]]] = {
    ("run",): {**SYSTEM_OPTIONS, "--policy": POLICIES, "--set": SETS, "--slots": SLOTS,
               "--warmup": SLOTS, "--replications": SMALL, "--seed": SMALL,
               "--warmup-method": ["fraction", "mser5", "x"], "--workers": WORKERS,
               "--precision-rel": PRECISION, "--precision-abs": PRECISION,
               "--precision-max-slots": MAX_SLOTS, "--dispatcher-weights": WEIGHTS,
               "--yes": [], "--delay": ["off", "all", "x"], "--no-imbalance": [],
               "--allow-unstable": []},
    ("compare",): {**SYSTEM_OPTIONS, "-p": POLICIES + ["pod:d=2", "pod:d=2,d=3", "pod:x"],
                   "--slots": SLOTS, "--replications": SMALL, "--workers": WORKERS,
                   "--precision-rel": PRECISION, "--precision-max-slots": MAX_SLOTS,
                   "--yes": []},
    ("bench",): {"--slots": ["0", "-1", "x", "300", "1e9", "10000000000000000000000"],
                 "--seed": SMALL, "--workload": ["jsq", "pod2", "x", ""],
                 "--repeat": ["0", "-1", "1", "x", "nan"], "--refsim": ["/nonexistent", "{tmp}"],
                 "--family": ["jsq", "x", ""], "--json": []},
    ("check", "bound"): SYSTEM_OPTIONS,
    ("check", "stability"): {"--policy": ["pi-pod", "pi-jsq", "pi-framework", "jsq", "x"],
                             "--set": SETS, "--servers": SERVERS, "--load": NUMBERS},
    ("check", "tilt"): {"--strategy": ["jsq", "jba", "pod", "x", "os:path"],
                        "--servers": SERVERS, "--p": NUMBERS, "--d": SMALL,
                        "--dispatchers": SMALL, "--samples": ["10", "0", "x"],
                        "--update": ["push", "pull", "x"]},
    ("policies",): {"--json": []},
    ("results",): {"--status": ["done", "all", "x"], "--format": ["csv", "json", "x"],
                   "-o": ["/nonexistent/x.csv", "/dev/null/x", "{tmp}/out.csv"],
                   "--policy": POLICIES},
    ("report",): {"--out": ["/proc/x", "{tmp}/report"]},
    ("sweep",): {"--slots": SLOTS, "--workers": SMALL, "--cluster": ["x", "tcp://x:1"]},
    ("experiment",): {"--slots": SLOTS, "--scale": NUMBERS, "--workers": SMALL},
}
#: commands run for real only with these (tiny) values, so that a valid draw stays fast
TINY = {("run",): ["--slots", "200", "--servers", "3x0.3", "--dispatchers", "2"],
        ("compare",): ["--slots", "200", "--servers", "3x0.3", "--dispatchers", "2",
                       "-p", "jsq"],
        ("check", "tilt"): ["--samples", "10", "--servers", "3x0.5"],
        ("bench",): ["--slots", "300", "--no-refsim", "--workload", "jsq"]}
# positional arguments of the commands that take one
POSITIONAL = {("results",): ["e", "nope"], ("report",): ["e", "nope"],
              ("sweep",): ["/dev/null", "{tmp}", "{tmp}/missing.toml", "{tmp}/bad.toml"],
              ("experiment",): ["nope", "--list"]}


@st.composite
def command_lines(draw: st.DrawFn) -> list[str]:
    command = draw(st.sampled_from(sorted(COMMANDS)))
    argv = list(command) + list(TINY.get(command, []))
    if command in POSITIONAL:
        argv.append(draw(st.sampled_from(POSITIONAL[command])))
    options = COMMANDS[command]
    for name in draw(st.lists(st.sampled_from(sorted(options) + ["--bogus"]), max_size=4)):
        values = options.get(name, NUMBERS)
        argv.append(name)
        if values:
            argv.append(draw(st.sampled_from(values)))
    if draw(st.booleans()) and command in (("run",), ("compare",), ("check", "bound")):
        argv.append("--json")
    return argv


@pytest.fixture(scope="module")
def scratch(tmp_path_factory: pytest.TempPathFactory) -> Path:
    from dispatchlab.experiments.store import Store

    tmp = tmp_path_factory.mktemp("fuzz")
    with Store(tmp / "dispatchlab-results.sqlite") as db:
        db.save_experiment("e", "{}")
    (tmp / "bad.toml").write_text("name = 3\n", encoding="utf-8")
    return tmp


@FUZZ
@given(argv=command_lines())
def test_any_command_line_ends_cleanly(argv: list[str], scratch: Path,
                                       capsys: pytest.CaptureFixture[str],
                                       monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(scratch)
    argv = [a.replace("{tmp}", str(scratch)) for a in argv]
    if "experiment" in argv or "sweep" in argv:  # never start a real sweep: invalid ones only
        argv = argv + ["--workers", "0"]
    run_clean(capsys, argv)


# -- TOML run specs ---------------------------------------------------------------------------

SCALARS = st.one_of(st.integers(-3, 3), st.sampled_from([0.5, 0.9, 1.5, 1e308, -1.0, 2**62]),
                    st.booleans(), st.sampled_from(["2x0.5", "x", "", "poisson", "pod", "jsq"]),
                    st.lists(st.sampled_from([0.5, 0.2, True, "a"]), max_size=3))
SPEC_KEYS = {
    "system": ["servers", "dispatchers", "load", "epsilon", "arrivals", "service", "dispatch",
               "split", "dispatcher_weights", "allow_unstable", "bogus"],
    "policy": ["name", "params", "bogus"],
    "run": ["slots", "warmup", "warmup_method", "seed", "replications", "delay", "imbalance",
            "bogus"],
}


def _toml_value(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, str):
        return '"' + value + '"'
    if isinstance(value, list):
        return "[" + ", ".join(_toml_value(v) for v in value) + "]"
    if isinstance(value, float) and value != value:
        return "nan"
    return repr(value)


@st.composite
def run_specs(draw: st.DrawFn) -> str:
    lines = []
    for table, keys in SPEC_KEYS.items():
        lines.append(f"[{table}]")
        if table == "run":
            lines.append("slots = 200")
        if table == "policy":
            lines.append(f'name = "{draw(st.sampled_from(["jsq", "pod", "x"]))}"')
        for key in draw(st.lists(st.sampled_from(keys), max_size=3, unique=True)):
            if key in ("slots", "name"):
                continue
            value = (draw(st.dictionaries(st.sampled_from(["d", "x"]), SCALARS, max_size=2))
                     if key == "params" else draw(SCALARS))
            if isinstance(value, dict):
                lines.append(f"{key} = {{ " + ", ".join(
                    f"{k} = {_toml_value(v)}" for k, v in value.items()) + " }")
            else:
                lines.append(f"{key} = {_toml_value(value)}")
    return "\n".join(lines) + "\n"


@FUZZ
@given(text=run_specs())
def test_any_run_spec_ends_cleanly(text: str, tmp_path_factory: pytest.TempPathFactory,
                                   capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path_factory.mktemp("spec") / "spec.toml"
    path.write_text(text, encoding="utf-8")
    tomllib.loads(text)  # the generator writes valid TOML; the values are what is fuzzed
    run_clean(capsys, ["run", str(path), "--servers", "3x0.3", "--dispatchers", "2"])


SWEEP_KEYS = ["name", "loads", "epsilons", "slots", "replications", "seed", "warmup"]


@API
@given(values=st.dictionaries(st.sampled_from(SWEEP_KEYS), SCALARS, max_size=5))
def test_any_sweep_spec_validates_cleanly(values: dict[str, Any]) -> None:
    data: dict[str, Any] = {"name": "f", "loads": [0.5], "slots": 100,
                            "systems": [{"servers": "2x0.5"}], "policies": [{"name": "jsq"}],
                            **values}
    try:
        spec = ExperimentSpec.from_dict(data)
        spec.validate()
        work = sweep_work(spec)  # what the CLI checks before listing any point
        if work <= WORK_LIMIT:
            spec.points()
    except ValidationError:
        pass


# -- the Python API ---------------------------------------------------------------------------

ANY = st.one_of(st.none(), st.booleans(), st.integers(-2, 5), st.floats(allow_nan=True),
                st.text(max_size=4), st.lists(st.floats(0, 2), max_size=3),
                st.sampled_from(["2x0.5", "poisson", "per-job", "batch", "jsq"]))
BUILD_KEYS = ["load", "epsilon", "rate", "arrivals", "service", "dispatchers",
              "dispatcher_weights", "split", "dispatch", "allow_unstable", "bogus"]


@API
@given(servers=ANY, changes=st.dictionaries(st.sampled_from(BUILD_KEYS), ANY, max_size=4))
def test_system_build_raises_only_validation_errors(servers: Any,
                                                   changes: dict[str, Any]) -> None:
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("error")
        try:
            System.build(servers, **changes)
        except ValidationError:
            pass


@API
@given(policy=st.one_of(st.none(), st.sampled_from(["jsq", "pod", "x", 3])),
       params=st.one_of(st.none(), st.dictionaries(st.sampled_from(["d", "x"]), ANY,
                                                   max_size=2), st.lists(ANY, max_size=2)),
       slots=st.one_of(st.integers(-2, 300), st.floats(0, 300), st.none()))
def test_simulate_raises_only_validation_errors(policy: Any, params: Any, slots: Any) -> None:
    system = System.build("3x0.3", load=0.5)
    try:
        simulate(system, policy, policy_params=params, slots=slots)
    except ValidationError:
        pass
