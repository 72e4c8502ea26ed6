"""benchmarks/suite_profile.py: py-spy's samples of the suite sorted into kinds of work, and
numba's compiles of the suite by test."""

from __future__ import annotations

import importlib.util
import os
import subprocess
import sys
from pathlib import Path

import pytest

SCRIPT = Path(__file__).resolve().parents[2] / "benchmarks" / "suite_profile.py"


@pytest.fixture(scope="module")
def suite_profile():
    spec = importlib.util.spec_from_file_location("suite_profile", SCRIPT)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


ROOT = 'process 1:".venv/bin/python -m pytest -q"'
WORKER = 'process 2:"python -u -c import sys;exec(eval(sys.stdin.readline()))"'
# a subprocess whose command line holds newlines, as py-spy writes it
CHILD = 'process 3:"python -c \nimport json\nfrom dispatchlab.cli import main\n"'
RAW = "\n".join([
    f"{ROOT};{WORKER};test_a (test_x.py:3);compile_extra (numba/core/compiler.py:7) 6",
    f"{ROOT};{WORKER};test_a (test_x.py:3);run_once (dispatchlab/engine/raw.py:9) 3",
    f"{ROOT};{WORKER};{CHILD};<module> (<string>:2);_find_and_load (<frozen>:1) 1",
    f"{ROOT};{WORKER};{CHILD};get_command (typer/main.py:1162) 2",
    f"{ROOT};{WORKER};_main (_pytest/main.py:387) 8",
]) + "\n"


def test_records_split_at_the_suite_s_root_frame_not_at_newlines(suite_profile) -> None:
    counts = [count for _, count in suite_profile.samples(RAW)]
    assert counts == [6, 3, 1, 2, 8]


def test_a_root_whose_command_line_py_spy_could_not_read_still_splits(suite_profile) -> None:
    raw = RAW.replace(ROOT, 'process 1:""')
    assert [count for _, count in suite_profile.samples(raw)] == [6, 3, 1, 2, 8]


def test_each_sample_goes_to_the_first_kind_that_matches(suite_profile) -> None:
    table = suite_profile.report(RAW)
    assert "20 samples" in table
    assert "| numba: compiling | 30.0% |" in table
    assert "| slotted runs (the compiled loop and its driver) | 15.0% |" in table
    assert "| importing modules | 5.0% |" in table
    assert "| the CLI: building the click command | 10.0% |" in table
    assert f"| {suite_profile.OTHER} | 40.0% |" in table
    assert "45.0%  test_x.py::test_a" in table
    assert suite_profile.report("") == "no samples"


def test_bad_usage_and_a_missing_py_spy_say_so(suite_profile, monkeypatch, capsys) -> None:
    assert suite_profile.main([]) == 2
    monkeypatch.setenv("PATH", "/nonexistent")
    assert suite_profile.record(Path("x.raw"), []) == 2
    assert "py-spy: not found" in capsys.readouterr().err


def test_the_report_sums_repeats_and_what_one_test_alone_compiles(suite_profile) -> None:
    rows = [
        ["compile", "m.loop", "(int64)", "3.0", "t.py::a"],
        ["load", "m.loop", "(int64)", "0", "t.py::b"],  # shared: not a's alone
        ["compile", "m.kernel", "(int64)", "2.0", "t.py::a"],
        ["compile", "m.loop", "(float64)", "1.5", "t.py::c"],  # other types: c's alone
        ["compile", "m.cold", "()", "1.0", "t.py::d"],  # a cache of its own, twice
        ["compile", "m.cold", "()", "0.75", "t.py::d"],
    ]
    text = suite_profile.compiles_report(rows)
    assert "5 compiles of 4 distinct functions, 8.2 s" in text
    assert "compiled more than once: 0.8 s beyond the first" in text
    assert "0.75 s  2×  m.cold" in text
    assert "compiled by a test, loaded by no other: 5.2 s" in text
    lines = text.splitlines()
    alone = lines[lines.index("compiled by a test, loaded by no other: 5.2 s") + 1:]
    assert alone == ["    2.00 s  t.py::a", "    1.75 s  t.py::d", "    1.50 s  t.py::c"]


def test_the_recorder_logs_a_compile_and_then_a_load_with_the_test(suite_profile,
                                                                  tmp_path: Path) -> None:
    (tmp_path / "sitecustomize.py").write_text(suite_profile.RECORDER, encoding="utf-8")
    (tmp_path / "kernel.py").write_text(
        "from numba import njit\n\n\n@njit(cache=True)\ndef twice(x):\n    return 2 * x\n",
        encoding="utf-8")
    out = tmp_path / "compiles.tsv"
    env = dict(os.environ, PYTHONPATH=str(tmp_path), DISPATCHLAB_SUITE_COMPILES=str(out),
               NUMBA_CACHE_DIR=str(tmp_path / "cache"), PYTEST_CURRENT_TEST="t.py::x (call)")
    for _ in range(2):  # the first compiles, the second loads from the cache
        subprocess.run([sys.executable, "-c", "import kernel; assert kernel.twice(3) == 6"],
                       env=env, check=True, cwd=tmp_path, timeout=300)
    rows = suite_profile.read_compiles(out)
    assert [(kind, function, types, test) for kind, function, types, _, test in rows] == [
        ("compile", "kernel.twice", "(int64)", "t.py::x"),
        ("load", "kernel.twice", "(int64)", "t.py::x")]


@pytest.mark.parametrize("command", ["report", "report-compiles"])
def test_a_report_of_a_missing_file_is_one_line(suite_profile, tmp_path: Path, capsys,
                                                command: str) -> None:
    assert suite_profile.main([command, str(tmp_path / "none.tsv")]) == 2
    assert capsys.readouterr().err == (f"error: {command}: no file "
                                       f"{str(tmp_path / 'none.tsv')!r} (record it first)\n")
    assert suite_profile.main(["profile", "x"]) == 2  # an unknown command: the usage
