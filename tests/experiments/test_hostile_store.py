"""A results store someone sent you, edited by hand (issue 25, found attacking it).

SQLite keeps any value in any column: text in a REAL column (``x``, a metric, a run's
start), a result that is not JSON or not an object, a table missing a column. Each was a
traceback (ValueError, JSONDecodeError, AttributeError, KeyError) in ``report`` or
``results``; now every cell is checked against the column type of dispatchlab's own schema
when it is read, and each is one ``error: store:`` line naming the row and the column. A
run's start that no calendar has (1e300) renders as —. Also: a bad
``DISPATCHLAB_MEMORY_LIMIT`` is refused by every command, not only by the policies whose
memory it guards.
"""

from __future__ import annotations

import shutil
import sqlite3
from pathlib import Path

import pytest

import dispatchlab as dl
from cli_contract import run_clean


@pytest.fixture(scope="module")
def received(tmp_path_factory: pytest.TempPathFactory) -> Path:
    store = tmp_path_factory.mktemp("received") / "clean.sqlite"
    dl.sweep("3x0.3", ["jsq", dl.policies.PowerOfD(d=2)], load=[0.5, 0.7], slots=2_000,
             workers=1, store=store, experiment="got")
    return store


def _edited(received: Path, tmp_path: Path, sql: str) -> Path:
    copy = tmp_path / "edited.sqlite"
    shutil.copy(received, copy)
    with sqlite3.connect(copy) as db:
        db.execute(sql)
    return copy


EDITS = [
    ("UPDATE points SET x = 'abc'", "points row 1: column x holds 'abc', not int/float"),
    ("UPDATE points SET replication = 'z'", "column replication holds 'z', not int"),
    ("UPDATE points SET mean_total_queue = 'lots'", "column mean_total_queue holds 'lots'"),
    ("UPDATE points SET result_json = '{'", "points row 1: its result is not JSON"),
    ("UPDATE points SET result_json = '[1]'", "its result is [1], not a JSON object"),
    ("ALTER TABLE points DROP COLUMN worker", "table points has no column 'worker'"),
    # values the model cannot have produced (issue 47: ε = −5 was the smallest ε of a limit)
    ("UPDATE points SET epsilon = -5", "points row 1: its ε = -5 contradicts its load ρ = 0.5"),
    ("UPDATE points SET epsilon = 9e999", "points row 1: its ε = inf is not finite"),
    ("UPDATE points SET load = -1", "points row 1: its load ρ = -1.0 is not a number > 0"),
    ("UPDATE points SET load = 1.5, epsilon = -0.45, stability = 'stable'",
     "points row 1: it is marked stable at ρ ≥ 1"),
]


@pytest.mark.parametrize(("sql", "said"), EDITS, ids=[sql for sql, _ in EDITS])
@pytest.mark.parametrize("command", ["report", "results"])
def test_a_hand_edited_cell_is_one_error_line(received: Path, tmp_path: Path, sql: str,
                                              said: str, command: str,
                                              capsys: pytest.CaptureFixture[str]) -> None:
    store = _edited(received, tmp_path, sql)
    argv = [command, "got", "--store", str(store)]
    if command == "report":
        argv += ["--out", str(tmp_path / "rep")]
    code, _, err = run_clean(capsys, argv)
    assert code == 2, err
    assert err.startswith("error: store: ") and said in err, err
    assert not (tmp_path / "rep").exists()


def test_a_run_started_in_no_calendar_renders(received: Path, tmp_path: Path,
                                             capsys: pytest.CaptureFixture[str]) -> None:
    store = _edited(received, tmp_path, "UPDATE runs SET started = 1e300")
    code, _, err = run_clean(capsys, ["report", "got", "--store", str(store),
                                      "--out", str(tmp_path / "rep")])
    assert code == 0, err
    page = (tmp_path / "rep" / "index.html").read_text(encoding="utf-8")
    assert "<h2>Runs</h2><table><tr><th>started</th>" in page and "<tr><td>—</td>" in page


def test_a_run_start_that_is_text_is_one_error_line(received: Path, tmp_path: Path,
                                                    capsys: pytest.CaptureFixture[str]) -> None:
    store = _edited(received, tmp_path, "UPDATE runs SET started = 'yesterday'")
    code, _, err = run_clean(capsys, ["report", "got", "--store", str(store),
                                      "--out", str(tmp_path / "rep")])
    assert code == 2 and "column started holds 'yesterday', not int/float" in err, err


@pytest.mark.parametrize("value", ["nan", "0x10", "lots", "inf", "-5"])
def test_a_bad_memory_limit_is_refused_by_every_run(value: str, monkeypatch: pytest.MonkeyPatch,
                                                    capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setenv("DISPATCHLAB_MEMORY_LIMIT", value)
    code, _, err = run_clean(capsys, ["run", "--policy", "jsq", "--slots", "100"])
    assert code == 2 and err.startswith("error: DISPATCHLAB_MEMORY_LIMIT: "), err


@pytest.mark.parametrize(("variable", "value"), [
    ("NUMBA_NUM_THREADS", "0"), ("NUMBA_NUM_THREADS", "abc"), ("NUMBA_OPT", "9")])
def test_a_bad_numba_variable_is_one_line(variable: str, value: str,
                                          monkeypatch: pytest.MonkeyPatch,
                                          capsys: pytest.CaptureFixture[str]) -> None:
    """NUMBA_NUM_THREADS=0 was a ValueError traceback in the middle of a run (exit 1); =abc
    and NUMBA_OPT=9 printed numba's traceback as a warning and ran on."""
    monkeypatch.setenv(variable, value)
    code, _, err = run_clean(capsys, ["run", "--policy", "jsq", "--slots", "100"])
    assert code == 2 and err.startswith(f"error: {variable}: "), err


def test_an_ascii_terminal_gets_the_table_not_a_traceback(tmp_path: Path) -> None:
    """PYTHONIOENCODING=ascii (an ASCII terminal): ρ, Σ and — were a UnicodeEncodeError."""
    import os
    import subprocess
    import sys

    done = subprocess.run(
        [str(Path(sys.executable).with_name("dispatchlab")), "run", "--policy", "jsq",
         "--servers", "3x0.5", "--slots", "1000"], cwd=tmp_path, capture_output=True,
        timeout=300, env={**os.environ, "PYTHONIOENCODING": "ascii"})
    assert done.returncode == 0, done.stderr.decode(errors="replace")
    assert b"Traceback" not in done.stderr and b"mean ?Q [95% CI]" in done.stdout
