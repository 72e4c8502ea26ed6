"""benchmarks/suite_compiles.py: numba's compiles and cache loads of the suite, by test."""

from __future__ import annotations

import importlib.util
import os
import subprocess
import sys
from pathlib import Path

import pytest

SCRIPT = Path(__file__).resolve().parents[2] / "benchmarks" / "suite_compiles.py"


@pytest.fixture(scope="module")
def suite_compiles():
    spec = importlib.util.spec_from_file_location("suite_compiles", SCRIPT)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_report_sums_repeats_and_what_one_test_alone_compiles(suite_compiles) -> None:
    rows = [
        ["compile", "m.loop", "(int64)", "3.0", "t.py::a"],
        ["load", "m.loop", "(int64)", "0", "t.py::b"],  # shared: not a's alone
        ["compile", "m.kernel", "(int64)", "2.0", "t.py::a"],
        ["compile", "m.loop", "(float64)", "1.5", "t.py::c"],  # other types: c's alone
        ["compile", "m.cold", "()", "1.0", "t.py::d"],  # a cache of its own, twice
        ["compile", "m.cold", "()", "0.75", "t.py::d"],
    ]
    text = suite_compiles.report(rows)
    assert "5 compiles of 4 distinct functions, 8.2 s" in text
    assert "compiled more than once: 0.8 s beyond the first" in text
    assert "0.75 s  2×  m.cold" in text
    assert "compiled for one test alone: 5.2 s" in text
    lines = text.splitlines()
    alone = lines[lines.index("compiled for one test alone: 5.2 s") + 1:]
    assert alone == ["    2.00 s  t.py::a", "    1.75 s  t.py::d", "    1.50 s  t.py::c"]


def test_the_recorder_logs_a_compile_and_then_a_load_with_the_test(suite_compiles,
                                                                   tmp_path: Path) -> None:
    (tmp_path / "sitecustomize.py").write_text(suite_compiles.RECORDER, encoding="utf-8")
    (tmp_path / "kernel.py").write_text(
        "from numba import njit\n\n\n@njit(cache=True)\ndef twice(x):\n    return 2 * x\n",
        encoding="utf-8")
    out = tmp_path / "compiles.tsv"
    env = dict(os.environ, PYTHONPATH=str(tmp_path), DISPATCHLAB_SUITE_COMPILES=str(out),
               NUMBA_CACHE_DIR=str(tmp_path / "cache"), PYTEST_CURRENT_TEST="t.py::x (call)")
    for _ in range(2):  # the first compiles, the second loads from the cache
        subprocess.run([sys.executable, "-c", "import kernel; assert kernel.twice(3) == 6"],
                       env=env, check=True, cwd=tmp_path, timeout=300)
    rows = [line.split("\t") for line in out.read_text(encoding="utf-8").splitlines()]
    assert [(kind, function, types, test) for kind, function, types, _, test in rows] == [
        ("compile", "kernel.twice", "(int64)", "t.py::x"),
        ("load", "kernel.twice", "(int64)", "t.py::x")]
