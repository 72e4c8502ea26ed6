"""The spec model: RunSpec's TOML schema, SystemSpec/PolicySpec's one converter, their error
messages and command-line overrides (no simulation)."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from dispatchlab.core.errors import ValidationError
from dispatchlab.specs.experiment import ExperimentSpec
from dispatchlab.specs.run import DEFAULT_LOAD, PolicySpec, RunSpec, SystemSpec, parse_assignments

FULL_SPEC = """
[system]
servers = "4x0.2,2x0.6"
dispatchers = 3
epsilon = 0.4
arrivals = "binomial:5"
service = "bernoulli"
dispatch = "per-job"                # the old spelling, read as per_job
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
delay = "off"
imbalance = false
"""


def write(tmp_path: Path, text: str, name: str = "spec.toml") -> Path:
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    return path


def test_full_spec_reads_every_field(tmp_path: Path) -> None:
    spec = RunSpec.from_toml(write(tmp_path, FULL_SPEC))
    assert spec.system == SystemSpec("4x0.2,2x0.6", dispatchers=3, arrivals="binomial:5",
                                     dispatch="per_job", split="batch",
                                     dispatcher_weights=(1.0, 2.0, 1.0))
    assert (spec.epsilon, spec.load) == (0.4, None)
    assert spec.policy == PolicySpec("pod", {"d": 3})
    assert (spec.slots, spec.warmup, spec.warmup_method) == (5000, 500, "mser5")
    assert (spec.seed, spec.replications, spec.delay, spec.imbalance) == (11, 2, "off", False)
    system = spec.build_system()
    assert system.n_servers == 6 and system.dispatchers == 3
    assert system.epsilon == pytest.approx(0.4)
    assert (system.split, system.dispatch) == ("batch", "per_job")
    assert tuple(system.weights) == pytest.approx((0.25, 0.5, 0.25))
    assert spec.make_policy().params == {"d": 3}


def test_empty_spec_uses_the_default_system() -> None:
    system = RunSpec.from_mapping({}).build_system()
    assert system.n_servers == 100 and system.dispatchers == 10
    assert system.load == pytest.approx(DEFAULT_LOAD)


def test_servers_as_an_array(tmp_path: Path) -> None:
    spec = RunSpec.from_toml(write(tmp_path, "[system]\nservers = [0.5, 0.25, 1]\nload = 0.5\n"))
    assert spec.build_system().rates == (0.5, 0.25, 1.0)


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
        ("[run]\nimbalance = 1", "run.imbalance", "expected true or false"),
        ("[run]\ntrack_delay = false", "run.track_delay", "renamed: now delay=\"off\""),
        ("[run]\nwarmup_method = \"guess\"", "run.warmup_method", "allowed: fraction, mser5"),
        ("[system]\nload = \"high\"", "system.load", "expected a number"),
        ("[system]\nload = 0.5\nepsilon = 1", "system.load", "one of load, epsilon and beta"),
        ("[system]\ndispatchers = 0", "system.dispatchers", "must be ≥ 1"),
        ("[system]\ndispatch = \"sometimes\"", "system.dispatch", "allowed: batch, per_job"),
        ("[system]\nsplit = \"random\"", "system.split", "allowed: per_job, batch"),
        ("[system]\ndispatcher_weights = [1, \"x\"]", "system.dispatcher_weights[1]",
         "expected a number"),
        ("[system]\nallow_unstable = \"yes\"", "system.allow_unstable", "expected true or false"),
        ("[system]\nservers = 3", "system.servers", "expected a string"),
        ("[system]\nservers = [0.5, \"x\"]", "system.servers", "expected a number"),
        ("system = 3", "system", "expected a table"),
        ("[system]\nlabel = 3", "system.label", "expected a string"),
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
            RunSpec.from_mapping(values).build_system()
        assert info.value.field == field, values


def test_allow_unstable_accepts_overload() -> None:
    spec = RunSpec.from_mapping({"system": {"load": 1.2, "allow_unstable": True}})
    assert spec.build_system().load == pytest.approx(1.2)


def test_overrides_win_and_load_replaces_epsilon(tmp_path: Path) -> None:
    spec = RunSpec.from_toml(write(tmp_path, FULL_SPEC))
    changed = spec.with_overrides(load=0.7, slots=800, params=parse_assignments(["d=2"]),
                                  seed=None)
    assert (changed.load, changed.epsilon) == (0.7, None)
    assert changed.slots == 800 and changed.seed == spec.seed
    assert changed.make_policy().params == {"d": 2}
    back = changed.with_overrides(epsilon=0.1)
    assert (back.load, back.epsilon) == (None, 0.1)
    with pytest.raises(ValidationError, match="one of --load, --epsilon and --beta"):
        spec.with_overrides(load=0.5, epsilon=0.1)


def test_system_overrides_reach_the_system_spec(tmp_path: Path) -> None:
    spec = RunSpec.from_toml(write(tmp_path, FULL_SPEC))
    changed = spec.with_overrides(dispatchers=2, dispatcher_weights=(3.0, 1.0), split="per-job",
                                  policy="jsq")
    assert (changed.system.dispatchers, changed.system.dispatcher_weights) == (2, (3.0, 1.0))
    assert changed.system.split == "per_job"  # the old spelling, normalised
    assert changed.system.servers == spec.system.servers
    assert changed.policy == PolicySpec("jsq", {"d": 3})  # the file's params stay
    assert tuple(changed.build_system().weights) == pytest.approx((0.75, 0.25))
    with pytest.raises(ValidationError, match="unknown setting"):
        spec.with_overrides(label="x")


# -- one spec model for runs and sweeps ----------------------------------------------------------


def test_a_run_and_a_sweep_read_systems_and_policies_with_one_converter() -> None:
    table = {"servers": [0.5, 0.5, 1.0], "dispatchers": 2, "dispatch": "per-job",
             "dispatcher_weights": [1, 3], "allow_unstable": True}
    run = RunSpec.from_mapping({"system": {**table, "load": 0.5},
                                "policy": {"name": "pod", "params": {"d": 2}}})
    sweep = ExperimentSpec.from_dict({"name": "x", "loads": [0.5], "systems": [table],
                                      "policies": [{"name": "pod", "params": {"d": 2}}]})
    assert sweep.systems == (run.system,) and sweep.policies == (run.policy,)
    assert run.system.dispatch == "per_job" and run.system.servers == (0.5, 0.5, 1.0)
    point = sweep.points()[0]
    assert point.build_system() == run.build_system()


@pytest.mark.parametrize(("table", "field", "words"), [
    ({"servers": "2x0.5", "dispatch": "sometimes"}, "systems[0].dispatch", "allowed: batch"),
    ({"servers": "2x0.5", "dispatchers": 0}, "systems[0].dispatchers", "must be ≥ 1"),
    ({"servers": "2x0.5", "loads": [0.5]}, "systems[0].loads", "unknown key"),
    ({"dispatchers": 2}, "systems[0].servers", "each system needs servers"),
    ({"servers": "2x0.5", "dispatcher_weights": 1}, "systems[0].dispatcher_weights",
     "expected an array"),
])
def test_a_bad_sweep_system_names_its_field(table: dict, field: str, words: str) -> None:
    with pytest.raises(ValidationError) as info:
        ExperimentSpec.from_dict({"name": "x", "loads": [0.5], "systems": [table],
                                  "policies": [{"name": "jsq"}]})
    assert info.value.field == field
    assert words in info.value.message


def test_a_bad_sweep_policy_names_its_field() -> None:
    for table, field in [({"params": {"d": 2}}, "policies[0].name"),
                         ({"name": "pod", "param": 1}, "policies[0].param"),
                         ({"name": "pod", "params": 2}, "policies[0].params")]:
        with pytest.raises(ValidationError) as info:
            ExperimentSpec.from_dict({"name": "x", "loads": [0.5], "policies": [table],
                                      "systems": [{"servers": "2x0.5"}]})
        assert info.value.field == field, table


def test_dispatcher_weights_are_sweepable_and_keep_old_point_keys() -> None:
    plain = SystemSpec("2x0.5", dispatchers=2, label="uniform")
    skewed = SystemSpec("2x0.5", dispatchers=2, dispatcher_weights=(3, 1), label="skewed")
    spec = ExperimentSpec("w", systems=(plain, skewed), policies=(PolicySpec("jsq"),),
                          loads=(0.5,))
    first, second = spec.points()
    assert first.key != second.key and first.seed != second.seed
    assert tuple(second.build_system().weights) == pytest.approx((0.75, 0.25))
    assert ExperimentSpec.from_json(spec.to_json()) == spec
    # a field at its default stays out of the identity: points stored before the field
    # existed keep their key and seed
    assert set(plain.identity()) == {"servers", "dispatchers", "arrivals", "service",
                                     "dispatch", "split"}
    assert skewed.identity()["dispatcher_weights"] == [3.0, 1.0]
    assert SystemSpec("2x0.5", dispatcher_weights=(1, 1)).name == "2x0.5, M=1, p=(1,1)"


def test_no_policy_is_a_clear_error() -> None:
    with pytest.raises(ValidationError) as info:
        RunSpec().make_policy()
    assert info.value.field == "policy"


def test_trace_paths_are_relative_to_the_spec(tmp_path: Path) -> None:
    (tmp_path / "counts.csv").write_text("1\n0\n2\n1\n", encoding="utf-8")
    spec = RunSpec.from_toml(write(tmp_path, "[system]\narrivals = \"trace:counts.csv\"\n"
                                   "servers = \"2x0.9\"\n"))
    system = spec.build_system()
    assert system.arrival_rate == pytest.approx(1.0)
    with pytest.raises(ValidationError, match="trace fixes its own rate"):
        spec.with_overrides(load=0.5).build_system()


@pytest.mark.parametrize("content", ["1\n-2\n3\n", "1\n0.5\n2\n"])
def test_bad_trace_counts(tmp_path: Path, content: str) -> None:
    trace = tmp_path / "bad.csv"
    trace.write_text(content, encoding="utf-8")
    spec = RunSpec(SystemSpec("2x0.9", arrivals=f"trace:{trace}"))
    with pytest.raises(ValidationError) as info:
        spec.build_system()
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
    spec = RunSpec(policy=PolicySpec("jsq"), slots=slots, seed=seed)
    assert spec.with_overrides(slots=None, seed=None, load=None, params=None) == spec
