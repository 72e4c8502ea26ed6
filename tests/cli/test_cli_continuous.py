"""``dispatchlab run --time continuous`` and ``dispatchlab policies --time continuous``:
one switch selects the model; the other model's options are refused with one line."""

from __future__ import annotations

import json

import pytest

from cli_contract import run_clean

BASE = ["run", "--time", "continuous", "--servers", "4x1", "--load", "0.7", "--jobs", "20000"]


def test_a_continuous_run_prints_json_with_its_statistics(capsys) -> None:
    code, out, _ = run_clean(capsys, [*BASE, "--policy", "p2c", "--sizes", "hyperexp:1,4",
                                      "--discipline", "ps", "--seed", "3", "--json"])
    assert code == 0
    data = json.loads(out)
    assert (data["time"], data["label"], data["policy"]) == ("continuous", "p2c", "jsq-d")
    assert data["params"] == {"d": 2, "replace": False}
    assert data["discipline"] == "ps" and data["sizes"] == "hyperexp:1,4"
    assert data["jobs"] == 20000 and data["warmup"] == 2000 and data["dispatchers"] == 10
    response = data["mean_response"]
    assert response["ci_low"] <= response["mean"] <= response["ci_high"]
    # Little's law: E[L] = λ·E[T]
    assert data["mean_in_system"]["mean"] == pytest.approx(
        data["arrival_rate"] * response["mean"], rel=0.02)
    assert data["stability"] == "stable"
    # the same run from the Python API gives the same numbers
    from dispatchlab.continuous import simulate_continuous

    again = simulate_continuous("4x1", "p2c", load=0.7, jobs=20000, sizes="hyperexp:1,4",
                                discipline="ps", seed=3, dispatchers=10)
    assert again.mean_response.mean == response["mean"]


def test_the_table_names_the_alias_and_the_policy(capsys) -> None:
    code, out, _ = run_clean(capsys, [*BASE, "--policy", "least-request", "--set", "d=3"])
    assert code == 0
    assert "least-request = jsq-d" in out and "d=3" in out and "replace=true" in out
    assert "mean response time" in out and "jobs/s" in out


@pytest.mark.parametrize(("extra", "field"), [
    (["--slots", "100"], "slots"),
    (["--epsilon", "0.1"], "epsilon"),
    (["--service", "geometric"], "service"),
    (["--delay", "off"], "delay"),
    (["--per-server"], "per-server"),
    (["--precision-max-slots", "1000000"], "precision-max-slots"),
    (["--workers", "0"], "workers"),
    (["--sizes", "pareto:2"], "sizes"),
    (["--discipline", "lifo"], "discipline"),
    (["--policy", "led"], "policy"),
    (["--policy", "p2c", "--set", "d=two"], "policy_params.d"),
    (["--policy", "p2c", "--set", "replace=yes"], "policy_params.replace"),
    (["--policy", "sita", "--set", "cutoffs=5,1,2"], "policy_params.cutoffs"),
    (["--arrivals", "bernoulli"], "arrivals"),
    (["--load", "1.2"], "load"),
])
def test_options_of_the_other_model_and_bad_values_are_one_line(capsys, extra, field) -> None:
    code, _, err = run_clean(capsys, [*BASE, *extra])
    assert code == 2 and err.startswith(f"error: {field}:"), err


@pytest.mark.parametrize(("extra", "field"), [
    (["--jobs", "100"], "jobs"), (["--sizes", "exp:1"], "sizes"),
    (["--discipline", "ps"], "discipline"), (["--time", "discrete"], "time")])
def test_the_slotted_run_refuses_the_continuous_options(capsys, extra, field) -> None:
    code, _, err = run_clean(capsys, ["run", "--policy", "jsq", "--slots", "1000", *extra])
    assert code == 2 and err.startswith(f"error: {field}:"), err


def test_policies_lists_the_continuous_rules_with_their_aliases(capsys) -> None:
    code, out, _ = run_clean(capsys, ["policies", "--time", "continuous", "--json"])
    assert code == 0
    records = {record["name"]: record for record in json.loads(out)}
    assert {"random", "wrr", "jsq", "jsq-d", "jiq", "lwl", "sita"} <= set(records)
    assert records["jsq-d"]["aliases"]["least-request"] == {"d": 2, "replace": True}
    assert records["jsq-d"]["aliases"]["p2c"] == {"d": 2}
    code, out, _ = run_clean(capsys, ["policies"])
    assert "dispatchlab policies --time continuous" in out


def test_a_trace_replays_from_the_command_line(capsys, tmp_path) -> None:
    trace = tmp_path / "jobs.csv"
    trace.write_text("".join(f"{0.5 * k},{1 + k % 3}\n" for k in range(400)))
    code, out, _ = run_clean(capsys, ["run", "--time", "continuous", "--servers", "4x1",
                                      "--arrivals", f"trace:{trace}", "--json"])
    assert code == 0
    data = json.loads(out)
    assert data["jobs"] == 399 and data["sizes"] == "trace"
    # λ = 399 jobs over 199.5 time units; mean size 799/400 on Σs = 4
    assert data["arrival_rate"] == pytest.approx(2.0) and data["load"] == pytest.approx(0.99875)
    code, _, err = run_clean(capsys, ["run", "--time", "continuous", "--arrivals",
                                      f"trace:{trace}", "--sizes", "exp:1"])
    assert code == 2 and err.startswith("error: sizes:"), err


SPEC = """
[system]
servers = "4x1"
load = 0.7
sizes = "hyperexp:1,4"
discipline = "ps"

[policy]
name = "l-jsq"
params = {update = "push", p = 0.5}

[run]
time = "continuous"
jobs = 20000
seed = 3
"""


def test_a_continuous_spec_runs_and_the_command_line_overrides_it(capsys, tmp_path) -> None:
    spec = tmp_path / "run.toml"
    spec.write_text(SPEC)
    code, out, _ = run_clean(capsys, ["run", str(spec), "--json"])
    assert code == 0
    data = json.loads(out)
    assert (data["time"], data["policy"], data["discipline"], data["jobs"]) == (
        "continuous", "l-jsq", "ps", 20000)
    assert data["params"]["update"] == "push" and data["params"]["p"] == 0.5
    code, out, _ = run_clean(capsys, ["run", str(spec), "--json", "--set", "p=0.25",
                                      "--load", "0.5", "--jobs", "10000"])
    data = json.loads(out)
    assert data["params"]["p"] == 0.25 and data["load"] == pytest.approx(0.5)
    assert data["jobs"] == 10000 and data["params"]["update"] == "push"


def test_a_spec_s_trace_is_found_beside_it(capsys, tmp_path) -> None:
    (tmp_path / "jobs.csv").write_text("".join(f"{0.5 * k},1\n" for k in range(300)))
    spec = tmp_path / "replay.toml"
    spec.write_text('[system]\nservers = "2x1"\narrivals = "trace:jobs.csv"\n'
                    '[run]\ntime = "continuous"\n')
    code, out, _ = run_clean(capsys, ["run", str(spec), "--json"])
    assert code == 0 and json.loads(out)["jobs"] == 299


@pytest.mark.parametrize(("text", "field"), [
    ('[run]\ntime = "continuous"\njobs = "many"\n', "run.jobs"),
    ('[run]\ntime = "continuous"\nslots = 10\n', "run.slots"),
    ('[system]\nservice = "geometric"\n[run]\ntime = "continuous"\n', "system.service"),
    ('[run]\ntime = "discrete"\n', "run.time"),
    ('[policy]\nname = 3\n[run]\ntime = "continuous"\n', "policy.name"),
    ('[system]\nservers = [1, "x"]\n[run]\ntime = "continuous"\n', "system.servers[1]"),
])
def test_a_bad_continuous_spec_is_one_line(capsys, tmp_path, text, field) -> None:
    spec = tmp_path / "bad.toml"
    spec.write_text(text)
    code, _, err = run_clean(capsys, ["run", str(spec)])
    assert code == 2 and err.startswith(f"error: {field}:"), err


def test_a_slotted_spec_may_say_so(capsys, tmp_path) -> None:
    spec = tmp_path / "slotted.toml"
    spec.write_text('[policy]\nname = "jsq"\n[run]\ntime = "slotted"\nslots = 2000\n')
    code, out, _ = run_clean(capsys, ["run", str(spec), "--json", "--delay", "off"])
    assert code == 0 and json.loads(out)["slots"] == 2000


def test_the_work_guard_asks_for_yes(capsys) -> None:
    code, _, err = run_clean(capsys, ["run", "--time", "continuous", "--jobs", str(10**12)])
    assert code == 2 and err.startswith("error: jobs: this continuous-time run is ")
    assert "check jobs and replications, or pass --yes" in err
