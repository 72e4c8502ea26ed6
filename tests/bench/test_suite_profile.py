"""benchmarks/suite_profile.py: py-spy's samples of the suite sorted into kinds of work."""

from __future__ import annotations

import importlib.util
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
