"""End-to-end tests of ``dispatchlab run``, ``policies`` and ``compare`` (tiny slot counts)."""

from __future__ import annotations

import json
import math
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from dispatchlab.cli import main
from dispatchlab.policies import catalog
from dispatchlab.policies.base import policy_entry

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "run-jsq.toml"
SMALL = ["--servers", "4x0.3,2x0.8", "--dispatchers", "2", "--load", "0.8"]
REQUIRED_KEYS = {
    "policy", "params", "servers", "dispatchers", "load", "epsilon", "slots", "warmup", "seed",
    "mean_total_queue", "ci_low", "ci_high", "mean_delay", "delay_p50", "delay_p99",
    "messages_per_arrival", "stability", "lower_bound_total_queue", "slots_per_second",
}


def run_cli(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    code = main(list(args))
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def run_json(capsys: pytest.CaptureFixture[str], *args: str) -> dict:
    code, out, err = run_cli(capsys, *args, "--json")
    assert code == 0, err
    return json.loads(out)  # exactly one JSON document, nothing else on stdout


# -- run ----------------------------------------------------------------------------------------


def test_run_json_has_the_required_keys_and_sane_values(capsys: pytest.CaptureFixture[str]) -> None:
    data = run_json(capsys, "run", "--policy", "pod", "--set", "d=2", *SMALL,
                    "--slots", "6000", "--seed", "3")
    assert REQUIRED_KEYS <= data.keys()
    assert (data["policy"], data["params"], data["label"]) == ("pod", {"d": 2}, "pod")
    assert (data["servers"], data["dispatchers"], data["seed"]) == ("4x0.3,2x0.8", 2, 3)
    assert data["load"] == pytest.approx(0.8)
    assert data["epsilon"] == pytest.approx(0.2 * 2.8)
    assert (data["slots"], data["warmup"]) == (6000, 600)
    assert data["stability"] in ("stable", "undetermined")
    assert data["ci_low"] <= data["mean_total_queue"] <= data["ci_high"]
    # Little's law by construction, and the per-job measurement close to it
    assert data["mean_delay"] == pytest.approx(data["mean_total_queue"] / (0.8 * 2.8))
    assert data["delay_p50"] <= data["delay_p99"]
    assert data["messages_per_arrival"] > 0
    assert data["slots_per_second"] > 0
    assert data["jobs_arrived"] == data["jobs_departed"] + data["jobs_in_system"]


def test_run_options(capsys: pytest.CaptureFixture[str]) -> None:
    data = run_json(capsys, "run", "--policy", "jsq", *SMALL[:4], "--epsilon", "0.5",
                    "--slots", "3000", "--warmup", "100", "--warmup-method", "mser5",
                    "--replications", "2", "--split", "batch", "--dispatch", "per-job",
                    "--arrivals", "binomial:4", "--service", "bernoulli", "--delay", "off")
    assert data["epsilon"] == pytest.approx(0.5)
    assert data["replications"] == 2 and "replications" in data["ci_method"]
    assert (data["system"]["split"], data["system"]["dispatch"]) == ("batch", "per_job")
    assert data["system"]["arrivals"] == "binomial:4"
    assert data["delay_p99"] is None  # no delay tracking


def test_run_dispatcher_weights(capsys: pytest.CaptureFixture[str]) -> None:
    args = ("run", "--policy", "jsq", *SMALL, "--slots", "2000", "--seed", "5")
    plain = run_json(capsys, *args)
    uniform = run_json(capsys, *args, "--dispatcher-weights", "2,2")
    skewed = run_json(capsys, *args, "--dispatcher-weights", "1,9")
    assert uniform["mean_total_queue"] == plain["mean_total_queue"]
    assert skewed["mean_total_queue"] != plain["mean_total_queue"]


def test_run_same_seed_same_result(capsys: pytest.CaptureFixture[str]) -> None:
    args = ("run", "--policy", "jsq", *SMALL, "--slots", "2000", "--seed", "5")
    first, second = run_json(capsys, *args), run_json(capsys, *args)
    assert first["mean_total_queue"] == second["mean_total_queue"]


def test_run_allow_unstable(capsys: pytest.CaptureFixture[str]) -> None:
    data = run_json(capsys, "run", "--policy", "jsq", *SMALL[:4], "--load", "1.3",
                    "--allow-unstable", "--slots", "4000")
    assert data["load"] == pytest.approx(1.3)
    assert data["stability"] == "unstable"
    assert data["mean_total_queue"] is None  # never a mean for an unstable run


def test_run_human_table(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run_cli(capsys, "run", "--policy", "pod", "--set", "d=2", *SMALL,
                           "--slots", "3000")
    assert code == 0
    for words in ("pod (d=2)", "mean ΣQ", "[95% CI]", "Little", "p99.9", "per arrival",
                  "stability", "lower bound", "ζ/2", "slots/s"):
        assert words in out, words


def test_run_spec_file_and_overrides(capsys: pytest.CaptureFixture[str]) -> None:
    data = run_json(capsys, "run", str(EXAMPLE), "--slots", "3000")
    assert (data["policy"], data["servers"], data["dispatchers"]) == ("jsq", "50x0.1,50x0.5", 10)
    assert (data["load"], data["seed"], data["slots"]) == (pytest.approx(0.95), 7, 3000)
    data = run_json(capsys, "run", str(EXAMPLE), "--slots", "3000", "--policy", "pod",
                    "--set", "d=3", "--epsilon", "2", "--seed", "1")
    assert (data["policy"], data["params"], data["seed"]) == ("pod", {"d": 3}, 1)
    assert data["epsilon"] == pytest.approx(2.0)


def test_run_spec_with_trace(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    (tmp_path / "trace.csv").write_text("\n".join(["1", "0", "2", "1"] * 10), encoding="utf-8")
    (tmp_path / "spec.toml").write_text(
        '[system]\nservers = "3x0.5"\narrivals = "trace:trace.csv"\n'
        '[policy]\nname = "pod"\nparams = { d = 2 }\n[run]\nslots = 2000\n', encoding="utf-8")
    data = run_json(capsys, "run", str(tmp_path / "spec.toml"))
    assert data["load"] == pytest.approx(1.0 / 1.5)
    assert data["params"] == {"d": 2}


def test_installed_entry_point_prints_one_json_object() -> None:
    executable = Path(sys.executable).with_name("dispatchlab")
    command = str(executable) if executable.exists() else shutil.which("dispatchlab")
    assert command, "the dispatchlab entry point is not installed"
    done = subprocess.run(
        [command, "run", "--policy", "jsq", *SMALL, "--slots", "2000", "--seed", "7", "--json"],
        capture_output=True, text=True, timeout=300, stdin=subprocess.DEVNULL, check=False)
    assert done.returncode == 0, done.stderr
    data = json.loads(done.stdout)
    assert REQUIRED_KEYS <= data.keys()
    assert data["policy"] == "jsq" and data["slots"] == 2000
    bad = subprocess.run([command, "run", "--policy", "nosuch"], capture_output=True,
                         text=True, timeout=300, stdin=subprocess.DEVNULL, check=False)
    assert bad.returncode == 2
    assert bad.stdout == ""
    assert bad.stderr.strip().splitlines()[-1].startswith("error: policy: unknown policy")
    assert "Traceback" not in bad.stderr


# -- policies -----------------------------------------------------------------------------------


def test_policies_lists_every_registered_policy(capsys: pytest.CaptureFixture[str]) -> None:
    names = [name for name, *_ in catalog()]
    code, out, _ = run_cli(capsys, "policies", "--json")
    assert code == 0
    records = json.loads(out)
    assert [r["name"] for r in records] == names
    pod = next(r for r in records if r["name"] == "pod")
    assert pod["theory"] and pod["summary"]
    assert pod["parameters"][0]["name"] == "d" and pod["parameters"][0]["default"] == 2
    code, out, _ = run_cli(capsys, "policies")
    assert code == 0
    for name in names:
        assert name in out
    assert "d=2; int in [1, ∞)" in out


# -- compare ------------------------------------------------------------------------------------


def test_compare_explicit_policies(capsys: pytest.CaptureFixture[str]) -> None:
    data = run_json(capsys, "compare", "--policy", "jsq", "-p", "pod:d=3", *SMALL,
                    "--slots", "2000", "--seed", "4")
    assert data["system"]["servers"] == "4x0.3,2x0.8" and data["slots"] == 2000
    jsq_defaults = {"ties": "random", "lag": 0, "fill": False}
    assert [(r["label"], r["params"]) for r in data["results"]] == [("jsq", jsq_defaults),
                                                                    ("pod", {"d": 3})]
    assert all(r["seed"] == 4 for r in data["results"])
    code, out, _ = run_cli(capsys, "compare", "-p", "jsq", "-p", "pod:d=3", *SMALL,
                           "--slots", "2000")
    assert code == 0
    for words in ("jsq", "d=3", "mean ΣQ", "p99", "msgs/arrival", "stability"):
        assert words in out, words


def test_compare_default_policies(capsys: pytest.CaptureFixture[str]) -> None:
    data = run_json(capsys, "compare", "--slots", "1000")
    assert data["system"]["servers"] == "50x0.1,50x0.5"
    assert data["system"]["dispatchers"] == 10
    assert data["system"]["load"] == pytest.approx(0.9)
    labels = [r["label"] for r in data["results"]]
    assert labels[:6] == ["wrand", "jsq", "jsed", "pod", "balanced-pod", "rr"]
    assert len(labels) == len(set(labels))
    for result in data["results"]:
        assert result["slots"] == 1000
        assert result["stability"] in ("stable", "unstable", "undetermined")
        if result["mean_total_queue"] is not None:
            assert math.isfinite(result["mean_total_queue"])


def test_compare_skips_defaults_that_cannot_run(capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = run_cli(capsys, "compare", "--servers", "0.9", "--slots", "500", "--json",
                           "-p", "jsq")
    assert code == 0
    code, out, err = run_cli(capsys, "compare", "--servers", "0.9", "--slots", "500", "-p",
                             "pod:d=2")
    assert code == 2 and out == ""
    assert "pod.d" in err


# -- bad input: exit 2, one line `error: FIELD: message`, nothing on stdout ---------------------


def p_hat_policy() -> tuple[str, str]:
    """A registered policy with a probability parameter p̂ ∈ (0, 1], and that parameter."""
    for name, _, _, params in catalog():
        for param in params:
            if (param.kind is float and param.low == 0 and param.low_open and param.high == 1
                    and "p̂" in param.doc):
                return name, param.name
    pytest.skip("no registered policy has a p̂ ∈ (0, 1] parameter yet")


BAD_INPUT = [
    (["run", "--policy", "jsq", "--servers=-0.5,0.5"], "servers", "must be > 0"),
    (["run", "--policy", "jsq", "--servers", "0,0.5"], "servers", "must be > 0"),
    (["run", "--policy", "jsq", "--servers", "2x0.5,abc"], "servers", "cannot read"),
    (["run", "--policy", "jsq", "--load", "1"], "load", "--allow-unstable"),
    (["run", "--policy", "jsq", "--load", "1.5"], "load", "--allow-unstable"),
    (["run", "--policy", "jsq", "--epsilon", "0"], "epsilon", "--allow-unstable"),
    (["run", "--policy", "jsq", "--load=-0.2"], "load", "must be > 0"),
    (["run", "--policy", "jsq", "--load", "0.5", "--epsilon", "1"], "load", "one of --load"),
    (["run", "--policy", "pod", "--set", "d=7", *SMALL], "pod.d", "between 1 and N = 6"),
    (["run", "--policy", "pod", "--set", "d=0"], "pod.d", "≥ 1"),
    (["run", "--policy", "pod", "--set", "d=two"], "pod.d", "expected an integer"),
    (["run", "--policy", "nosuch"], "policy", "unknown policy 'nosuch'"),
    (["run", "--policy", "pod", "--set", "k=2"], "pod.k", "unknown parameter"),
    (["run", "--policy", "pod", "--set", "d"], "set", "KEY=VALUE"),
    (["run"], "policy", "no policy given"),
    (["run", "--policy", "jsq", "--dispatchers", "0"], "dispatchers", "in [1, "),
    (["run", "--policy", "jsq", "--split", "random"], "split", "per_job, batch"),
    (["run", "--policy", "jsq", "--dispatch", "random"], "dispatch", "batch, per_job"),
    (["run", "--policy", "jsq", "--dispatcher-weights", "1,x"], "dispatcher_weights",
     "comma-separated numbers"),
    (["run", "--policy", "jsq", *SMALL, "--dispatcher-weights", "1"], "dispatcher_weights",
     "one weight per dispatcher (2)"),
    (["run", "--policy", "jsq", "--arrivals", "weibull"], "arrivals", "unknown law"),
    (["run", "--policy", "jsq", "--service", "binomial:x"], "service", "binomial:K"),
    (["run", "--policy", "jsq", "--slots", "0"], "slots", "≥ 1"),
    (["run", "--policy", "jsq", "--slots", "100", "--warmup", "100"], "warmup", "[0, slots)"),
    (["run", "--policy", "jsq", "--replications", "0"], "replications", "≥ 1"),
    (["run", "--policy", "jsq", "--warmup-method", "guess"], "warmup_method", "fraction"),
    (["run", "/no/such/spec.toml"], "spec", "does not exist"),
    (["compare", "-p", "nosuch"], "policy", "unknown policy"),
    (["compare", "-p", "pod:d"], "policy", "KEY=VALUE"),
    (["compare", "--load", "1"], "load", "--allow-unstable"),
    (["compare", "--slots", "0"], "slots", "≥ 1"),
]


@pytest.mark.parametrize(("args", "field", "words"), BAD_INPUT,
                         ids=[" ".join(a) for a, *_ in BAD_INPUT])
def test_bad_input_exits_2_with_one_line(capsys: pytest.CaptureFixture[str], args: list[str],
                                         field: str, words: str) -> None:
    code, out, err = run_cli(capsys, *args)
    assert_one_error_line(code, out, err, field, words)


def assert_one_error_line(code: int, out: str, err: str, field: str, words: str) -> None:
    assert code == 2
    assert out == ""
    lines = [line for line in err.splitlines() if line.startswith("error: ")]
    assert len(lines) == 1, err
    assert lines[0].startswith(f"error: {field}: "), lines[0]
    assert words in lines[0], lines[0]
    assert "Traceback" not in err


@pytest.mark.parametrize(("text", "field"), [
    ("[system\nservers = 3", "spec"),
    ("[run]\nslots = \"many\"", "run.slots"),
    ("[system]\nspeed = 3", "system.speed"),
    ("[policy]\nname = \"pod\"\nparams = { d = 0 }", "pod.d"),
])
def test_bad_spec_file_exits_2(capsys: pytest.CaptureFixture[str], tmp_path: Path, text: str,
                               field: str) -> None:
    path = tmp_path / "bad.toml"
    path.write_text(text, encoding="utf-8")
    code, out, err = run_cli(capsys, "run", str(path), "--slots", "1000")
    assert_one_error_line(code, out, err, field, "")


@pytest.mark.parametrize(("content", "words"), [("1\n-2\n3\n", "non-negative integers (found -2)"),
                                                ("1\n0.5\n2\n", "non-integer count"),
                                                ("1\nabc\n", "not numeric")])
def test_bad_trace_exits_2(capsys: pytest.CaptureFixture[str], tmp_path: Path, content: str,
                           words: str) -> None:
    trace = tmp_path / "trace.csv"
    trace.write_text(content, encoding="utf-8")
    code, out, err = run_cli(capsys, "run", "--policy", "jsq", "--servers", "3x0.9",
                             "--arrivals", f"trace:{trace}", "--slots", "1000")
    assert_one_error_line(code, out, err, "arrivals", words)


@pytest.mark.parametrize("value", ["0", "1.5", "-0.1"])
def test_p_hat_outside_unit_interval_exits_2(capsys: pytest.CaptureFixture[str],
                                             value: str) -> None:
    name, param = p_hat_policy()
    code, out, err = run_cli(capsys, "run", "--policy", name, "--set", f"{param}={value}",
                             *SMALL, "--slots", "1000")
    entry = policy_entry(name)
    base_name = getattr(entry, "base", entry).name  # a preset validates as its base policy
    assert_one_error_line(code, out, err, f"{base_name}.{param}", "")
    assert ("> 0" in err) if float(value) <= 0 else ("≤ 1" in err)


@pytest.mark.parametrize("args", [["run", "--no-such-option"], ["run", "--slots", "many"],
                                  ["no-such-command"], ["compare", "--dispatchers", "x"]])
def test_usage_errors_exit_2(capsys: pytest.CaptureFixture[str], args: list[str]) -> None:
    code, out, err = run_cli(capsys, *args)
    assert code == 2
    assert out == ""
    assert "Traceback" not in err and err.strip()


@pytest.mark.parametrize("argv,field", [
    (["experiment", "classic-load-sweep", "--quick", "--out", "/proc/no/such/dir"], "out"),
    (["experiment", "classic-load-sweep", "--quick", "--cluster", "notanaddress"], "cluster"),
    (["experiment", "classic-load-sweep", "--quick", "--workers", "0"], "workers"),
])
def test_sweep_options_fail_before_any_work(argv, field, tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    assert main(argv + ["--no-progress"]) == 2
    captured = capsys.readouterr()
    assert captured.err.strip().splitlines() == [captured.err.strip()]  # one line
    assert captured.err.startswith(f"error: {field}:")
    assert not (tmp_path / "dispatchlab-results.sqlite").exists()  # nothing written
