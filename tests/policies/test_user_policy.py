"""A policy family of one's own (``examples/pod_memory.py``) end to end, and ``--import``
on ``run``, ``compare``, ``sweep`` and ``experiment``: the module is imported because the
command line asked for it, never because a spec names a policy (issue 24, part 2).

Each command runs in a process of its own, so that the example's policies are never
registered in the test process."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
EXAMPLE = ROOT / "examples" / "pod_memory.py"


def dispatchlab(*args: str, cwd: Path = ROOT) -> subprocess.CompletedProcess[str]:
    code = "import sys; from dispatchlab.cli import main; sys.exit(main(sys.argv[1:]))"
    return subprocess.run([sys.executable, "-c", code, *args], cwd=cwd, text=True,
                          capture_output=True, timeout=600,
                          env={**os.environ, "COLUMNS": "200"})


def test_the_example_conforms_runs_and_pairs() -> None:
    code = ("import sys; sys.path.insert(0, 'examples'); import pod_memory; "
            "print(pod_memory.main(slots=30_000))")
    done = subprocess.run([sys.executable, "-c", code], cwd=ROOT, text=True,
                          capture_output=True, timeout=600)
    assert done.returncode == 0, done.stderr
    assert "PowerOfDWithMemory: conforms" in done.stdout
    numbers = eval(done.stdout.strip().splitlines()[-1])  # the dict main returns
    assert numbers["passed"] == 1.0 and numbers["mean_total_queue"] > 0


def test_run_imports_a_file_and_uses_its_preset() -> None:
    done = dispatchlab("run", "--import", str(EXAMPLE), "--policy", "sq11", "--servers",
                       "10x0.5", "--load", "0.9", "--slots", "20000", "--json")
    assert done.returncode == 0, done.stderr
    record = json.loads(done.stdout)
    assert record["label"] == "sq11" and record["policy"] == "pod-memory"
    assert record["params"] == {"d": 1, "k": 1} and record["stability"] == "stable"
    assert record["diagnostics"]["memory_choices_per_slot"] > 0


def test_run_imports_a_dotted_module_from_the_current_directory() -> None:
    done = dispatchlab("run", "--import", "pod_memory", "--policy", "pod-memory", "--set",
                       "d=2", "--set", "k=2", "--slots", "20000", "--servers", "10x0.5",
                       "--json", cwd=ROOT / "examples")
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["params"] == {"d": 2, "k": 2}


def test_compare_paired_with_an_imported_policy() -> None:
    done = dispatchlab("compare", "--import", str(EXAMPLE), "--paired", "-p", "pod:d=2",
                       "-p", "sq11", "--servers", "20x0.5", "--dispatchers", "1", "--load",
                       "0.95", "--slots", "100000", "--workers", "2", "--json")
    assert done.returncode == 0, done.stderr
    record = json.loads(done.stdout)
    (pair,) = record["paired"]
    assert (pair["label"], pair["baseline"]) == ("sq11", "pod")
    assert pair["common_random_numbers"] is True
    assert pair["ci_low"] <= pair["difference"] <= pair["ci_high"]
    means = [r["mean_total_queue"] for r in record["results"]]
    assert pair["difference"] == pytest.approx(means[1] - means[0], rel=0.05)
    assert 0 < pair["remaining_variance"] < 1


def test_sweep_workers_import_the_module(tmp_path: Path) -> None:
    """Spawned sweep workers import the --import modules before their first point."""
    spec = tmp_path / "memory.toml"
    spec.write_text('name = "memory-sweep"\nseed = 3\nreplications = 1\nloads = [0.5, 0.8]\n'
                    'slots = 5000\n\n[[systems]]\nservers = "6x0.5"\n\n'
                    '[[policies]]\nname = "sq11"\n\n[[policies]]\nname = "pod-memory"\n'
                    'params = { d = 2, k = 1 }\n', encoding="utf-8")
    args = ("sweep", str(spec), "--store", str(tmp_path / "s.sqlite"), "--out",
            str(tmp_path / "out"), "--workers", "2", "--no-progress")
    refused = dispatchlab(*args)
    assert refused.returncode == 2 and "unknown policy 'sq11'" in refused.stderr
    assert refused.stderr.count("\n") == 1  # a spec names a policy: nothing is imported
    done = dispatchlab(*args, "--import", str(EXAMPLE))
    assert done.returncode == 0, done.stderr
    assert "4 computed" in done.stderr and "0 failed" in done.stderr


def test_a_module_that_does_not_import_is_one_line(tmp_path: Path, capsys,
                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    from dispatchlab.cli import main

    monkeypatch.chdir(ROOT)
    broken = tmp_path / "broken_policy.py"
    broken.write_text("import numpy\nraise RuntimeError('half\\nwritten')\n", encoding="utf-8")
    needs = tmp_path / "needs_more.py"
    needs.write_text("import no_such_dependency_here\n", encoding="utf-8")
    leaves = tmp_path / "script_policy.py"
    leaves.write_text("import sys\nsys.exit(3)\n", encoding="utf-8")
    cases = [
        (["run", "--import", "no_such_module_anywhere"],
         "error: import: no_such_module_anywhere: no such module"),
        (["compare", "--import", str(tmp_path / "missing.py")],
         f"error: import: {tmp_path / 'missing.py'}: no such file"),
        (["sweep", "examples/sweep.toml", "--import", str(broken), "--dry-run"],
         f"error: import: {broken}: RuntimeError: half written"),
        (["experiment", "--list", "--import", str(needs)],
         f"error: import: {needs}: it needs 'no_such_dependency_here', not found"),
        (["run", "--import", "not a module"], "error: import: 'not a module' is not a module"),
        # it exited 3 with no word before
        (["run", "--import", str(leaves)],
         f"error: import: {leaves}: the module called sys.exit(3) while being imported"),
    ]
    for args, expected in cases:  # in this process: refused before any import succeeds
        assert main(args) == 2, args
        err = capsys.readouterr().err
        assert err.startswith(expected) and err.count("\n") == 1, err
    assert not {"broken_policy", "needs_more", "script_policy"} & set(sys.modules)
