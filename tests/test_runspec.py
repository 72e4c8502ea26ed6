"""RunSpec: the TOML schema, its error messages and command-line overrides (no simulation)."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from dispatchlab.errors import ValidationError
from dispatchlab.runspec import DEFAULT_LOAD, RunSpec, parse_assignments

FULL_SPEC = """
[system]
servers = "4x0.2,2x0.6"
dispatchers = 3
epsilon = 0.4
arrivals = "binomial:5"
service = "bernoulli"
dispatch = "per-job"
split = "batch"
dispatcher_weights = [1, 2, 1]

[policy]
name = "pod"
[policy.params]
d = 3

[run]
slots = 5000
warmup = 500
warmup_method = "mser5"
seed = 11
replications = 2
track_delay = false
"""


def write(tmp_path: Path, text: str, name: str = "spec.toml") -> Path:
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    return path


def test_full_spec_reads_every_field(tmp_path: Path) -> None:
    spec = RunSpec.from_toml(write(tmp_path, FULL_SPEC))
    assert spec.servers == "4x0.2,2x0.6"
    assert (spec.dispatchers, spec.epsilon, spec.load) == (3, 0.4, None)
    assert (spec.arrivals, spec.dispatch, spec.split) == ("binomial:5", "per-job", "batch")
    assert spec.dispatcher_weights == (1.0, 2.0, 1.0)
    assert (spec.policy, spec.params) == ("pod", {"d": 3})
    assert (spec.slots, spec.warmup, spec.warmup_method) == (5000, 500, "mser5")
    assert (spec.seed, spec.replications, spec.track_delay) == (11, 2, False)
    system = spec.system()
    assert system.n_servers == 6 and system.dispatchers == 3
    assert system.epsilon == pytest.approx(0.4)
    assert (system.split, system.dispatch) == ("batch", "per_job")
    assert spec.make_policy().params == {"d": 3}


def test_empty_spec_uses_the_default_system() -> None:
    system = RunSpec.from_mapping({}).system()
    assert system.n_servers == 100 and system.dispatchers == 10
    assert system.load == pytest.approx(DEFAULT_LOAD)


def test_servers_as_an_array(tmp_path: Path) -> None:
    spec = RunSpec.from_toml(write(tmp_path, "[system]\nservers = [0.5, 0.25, 1]\nload = 0.5\n"))
    assert spec.system().rates == (0.5, 0.25, 1.0)


@pytest.mark.parametrize(
    ("text", "field", "words"),
    [
        ("[system\nservers = 1", "spec", "not valid TOML"),
        ("[system]\nservers = \"1x0.5\"\nservers = 2", "spec", "not valid TOML"),
        ("[sytem]\nload = 0.5", "sytem", "unknown key"),
        ("[system]\nloads = 0.5", "system.loads", "unknown key"),
        ("[policy]\nname = \"jsq\"\nparam = 1", "policy.param", "unknown key"),
        ("[run]\nslots = \"many\"", "run.slots", "expected an integer"),
        ("[run]\nslots = 1.5", "run.slots", "expected an integer"),
        ("[run]\nslots = 0", "run.slots", "must be ≥ 1"),
        ("[run]\nseed = true", "run.seed", "expected an integer"),
        ("[run]\ntrack_delay = 1", "run.track_delay", "expected true or false"),
        ("[run]\nwarmup_method = \"guess\"", "run.warmup_method", "allowed: fraction, mser5"),
        ("[system]\nload = \"high\"", "system.load", "expected a number"),
        ("[system]\nload = 0.5\nepsilon = 1", "system.load", "only one of load and epsilon"),
        ("[system]\ndispatchers = 0", "system.dispatchers", "must be ≥ 1"),
        ("[system]\ndispatch = \"sometimes\"", "system.dispatch", "allowed: batch, per-job"),
        ("[system]\nservers = 3", "system.servers", "expected a string"),
        ("[system]\nservers = [0.5, \"x\"]", "system.servers", "expected a number"),
        ("system = 3", "system", "must be a table"),
        ("[policy]\nname = 3", "policy.name", "expected a non-empty string"),
        ("[policy]\nname = \"pod\"\nparams = 2", "policy.params", "expected a table"),
    ],
)
def test_bad_spec_names_the_field(tmp_path: Path, text: str, field: str, words: str) -> None:
    with pytest.raises(ValidationError) as info:
        RunSpec.from_toml(write(tmp_path, text))
    assert info.value.field == field
    assert words in info.value.message


def test_missing_and_binary_files(tmp_path: Path) -> None:
    with pytest.raises(ValidationError, match="does not exist"):
        RunSpec.from_toml(tmp_path / "absent.toml")
    binary = tmp_path / "binary.toml"
    binary.write_bytes(b"\xff\xfe\x00")
    with pytest.raises(ValidationError, match="spec"):
        RunSpec.from_toml(binary)


def test_values_are_checked_when_the_system_is_built() -> None:
    for values, field in [
        ({"system": {"servers": "2x0.5,1x-0.1"}}, "servers"),
        ({"system": {"load": 1.0}}, "load"),
        ({"system": {"epsilon": -0.5}}, "epsilon"),
        ({"system": {"arrivals": "weibull"}}, "arrivals"),
        ({"system": {"service": "exponential"}}, "service"),
    ]:
        with pytest.raises(ValidationError) as info:
            RunSpec.from_mapping(values).system()
        assert info.value.field == field, values


def test_allow_unstable_accepts_overload() -> None:
    spec = RunSpec.from_mapping({"system": {"load": 1.2, "allow_unstable": True}})
    assert spec.system().load == pytest.approx(1.2)


def test_overrides_win_and_load_replaces_epsilon(tmp_path: Path) -> None:
    spec = RunSpec.from_toml(write(tmp_path, FULL_SPEC))
    changed = spec.with_overrides(load=0.7, slots=800, params={"d": "2"}, seed=None)
    assert (changed.load, changed.epsilon) == (0.7, None)
    assert changed.slots == 800 and changed.seed == spec.seed
    assert changed.make_policy().params == {"d": 2}
    back = changed.with_overrides(epsilon=0.1)
    assert (back.load, back.epsilon) == (None, 0.1)
    with pytest.raises(ValidationError, match="only one of --load and --epsilon"):
        spec.with_overrides(load=0.5, epsilon=0.1)


def test_no_policy_is_a_clear_error() -> None:
    with pytest.raises(ValidationError) as info:
        RunSpec().make_policy()
    assert info.value.field == "policy"


def test_trace_paths_are_relative_to_the_spec(tmp_path: Path) -> None:
    (tmp_path / "counts.csv").write_text("1\n0\n2\n1\n", encoding="utf-8")
    spec = RunSpec.from_toml(write(tmp_path, "[system]\narrivals = \"trace:counts.csv\"\n"
                                   "servers = \"2x0.9\"\n"))
    system = spec.system()
    assert system.arrival_rate == pytest.approx(1.0)
    with pytest.raises(ValidationError, match="trace fixes its own rate"):
        spec.with_overrides(load=0.5).system()


@pytest.mark.parametrize("content", ["1\n-2\n3\n", "1\n0.5\n2\n"])
def test_bad_trace_counts(tmp_path: Path, content: str) -> None:
    trace = tmp_path / "bad.csv"
    trace.write_text(content, encoding="utf-8")
    spec = RunSpec(servers="2x0.9", arrivals=f"trace:{trace}")
    with pytest.raises(ValidationError) as info:
        spec.system()
    assert info.value.field == "arrivals"
    assert "non-negative integers" in info.value.message


keys = st.from_regex(r"[a-z_][a-z0-9_]{0,8}", fullmatch=True)
values = st.from_regex(r"[A-Za-z0-9.+-][A-Za-z0-9.+=-]{0,8}", fullmatch=True)


@given(st.dictionaries(keys, values, max_size=5))
def test_assignments_round_trip(params: dict[str, str]) -> None:
    assert parse_assignments([f"{k}={v}" for k, v in params.items()]) == params


@pytest.mark.parametrize("item", ["d", "=2", "d=", "  =  "])
def test_bad_assignments(item: str) -> None:
    with pytest.raises(ValidationError, match="KEY=VALUE"):
        parse_assignments([item])


@given(st.integers(1, 10**9), st.integers(0, 2**31))
def test_none_overrides_change_nothing(slots: int, seed: int) -> None:
    spec = RunSpec(policy="jsq", slots=slots, seed=seed)
    assert spec.with_overrides(slots=None, seed=None, load=None, params=None) == spec
