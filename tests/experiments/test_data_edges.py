"""Received and exported data (issue 38): CSV cells a spreadsheet would run as formulas are
neutralised, and a store of a schema version this code does not know is never written.

Found by a hostile user: ``dispatchlab results --format csv`` wrote a stored label
``=HYPERLINK("http://evil","x")`` unchanged, and a store whose ``meta`` said schema version
99 (or ``abc``) was read and written without a word.
"""

from __future__ import annotations

import csv
import io
import math
import sqlite3
from pathlib import Path

import pandas as pd
import pytest

from dispatchlab.cli import main
from dispatchlab.core.errors import ValidationError
from dispatchlab.core.spreadsheet import neutral_cell, neutralised, to_csv
from dispatchlab.experiments.store import SCHEMA_VERSION, Store
from dispatchlab.specs.experiment import ExperimentSpec
from dispatchlab.specs.run import PolicySpec, SystemSpec

EVIL = '=HYPERLINK("http://evil","x")'


def _spec() -> ExperimentSpec:
    return ExperimentSpec("grid", systems=(SystemSpec("2x0.5"),), policies=(PolicySpec("jsq"),),
                          loads=(0.5,), replications=2, slots=1000)


def _store(path: Path, *, error: str | None = None) -> Path:
    """A store of two points of ``grid``: one done, one failed with ``error``."""
    spec = _spec()
    first, second = spec.points()
    with Store(path) as store:
        store.save_experiment("grid", spec.to_json())
        run = store.start_run("grid", "test", 2)
        store.record(run, first.to_dict(), result={
            "mean_total_queue": -0.25, "ci_low": -1.0, "ci_high": 0.5, "stability": "stable",
            "load": 0.5, "epsilon": 0.5, "slots_run": 1000})
        store.record(run, second.to_dict(), error=error or "boom")
    return path


@pytest.mark.parametrize("text", [EVIL, "+cmd|' /C calc'!A0", "-2+3", "@SUM(A1:A2)",
                                  "\tx", "\r=1", "=1", "-", "+", "@"])
def test_text_a_spreadsheet_would_evaluate_gets_an_apostrophe(text: str) -> None:
    assert neutral_cell(text) == "'" + text


@pytest.mark.parametrize("value", ["jsq", "pod:d=2", "a=b", " =x", "'=x", "", "-3", "+1.5e-2",
                                   "-0.25", ".5", -3, -0.25, 1.0, math.nan, None, True])
def test_numbers_and_plain_text_are_kept(value: object) -> None:
    kept = neutral_cell(value)
    assert kept is value or (isinstance(value, float) and math.isnan(kept))


def test_a_frame_keeps_its_numeric_columns_and_names() -> None:
    frame = pd.DataFrame({"x": [-1.5, 2.0], "n": [-3, 4], "label": [EVIL, "jsq"],
                          "=name": ["@a", None]})
    out = neutralised(frame)
    assert list(out.columns) == ["x", "n", "label", "'=name"]
    assert out["x"].tolist() == [-1.5, 2.0] and out["n"].tolist() == [-3, 4]
    assert out["label"].tolist() == ["'" + EVIL, "jsq"]
    assert out["'=name"].tolist()[0] == "'@a" and pd.isna(out["'=name"].tolist()[1])
    assert frame["label"].tolist()[0] == EVIL  # the caller's frame is not changed
    rows = list(csv.reader(io.StringIO(to_csv(frame) or "")))
    assert rows[1] == ["-1.5", "-3", "'" + EVIL, "'@a"]


def test_results_csv_neutralises_a_stored_formula(tmp_path: Path,
                                                  capsys: pytest.CaptureFixture[str]) -> None:
    path = _store(tmp_path / "s.sqlite", error=EVIL)
    out = tmp_path / "out.csv"
    assert main(["results", "--store", str(path), "--status", "all", "--format", "csv",
                 "--output", str(out)]) == 0
    rows = list(csv.DictReader(out.open(encoding="utf-8")))
    assert [r["error"] for r in rows if r["status"] == "failed"] == ["'" + EVIL]
    done = next(r for r in rows if r["status"] == "done")
    assert done["mean_total_queue"] == "-0.25" and done["ci_low"] == "-1.0"  # numbers stay
    capsys.readouterr()
    assert main(["results", "--store", str(path), "--status", "all", "--format", "csv"]) == 0
    printed = capsys.readouterr().out
    assert "'" + EVIL.replace('"', '""') in printed and "\n" + EVIL not in printed
    assert f",{EVIL}" not in printed


def _set_schema(path: Path, value: object) -> None:
    with sqlite3.connect(path) as db:
        db.execute("UPDATE meta SET value = ? WHERE key = 'schema_version'", (value,))


def _digest(path: Path) -> bytes:
    with sqlite3.connect(path) as db:
        return "\n".join(db.iterdump()).encode()


@pytest.mark.parametrize("version", ["99", "2", "0", "abc", "1.0", " 1", ""])
def test_a_store_of_an_unknown_schema_is_refused_for_writing(tmp_path: Path,
                                                             version: str) -> None:
    path = _store(tmp_path / "s.sqlite")
    _set_schema(path, version)
    before = _digest(path)
    with pytest.raises(ValidationError, match=r"^store: .*schema version .* refused for "
                                              r"writing") as caught:
        Store(path)
    assert "\n" not in str(caught.value)
    assert _digest(path) == before  # nothing written, not even the schema's new columns


@pytest.mark.parametrize("version", ["99", "2"])
def test_a_newer_integer_schema_is_read_with_a_note(tmp_path: Path, version: str,
                                                    capsys: pytest.CaptureFixture[str]) -> None:
    path = _store(tmp_path / "s.sqlite")
    _set_schema(path, version)
    with Store(path, readonly=True) as store:
        assert store.schema_version == version and store.count("grid") == 1
        assert store.schema_note is not None and version in store.schema_note
    assert main(["results", "--store", str(path), "--format", "csv"]) == 0
    captured = capsys.readouterr()
    assert "-0.25" in captured.out
    assert f"schema version {version}" in captured.err and "read only" in captured.err


@pytest.mark.parametrize("version", ["abc", "1.0", ""])
def test_a_schema_version_that_is_not_a_number_is_refused_for_reading(
        tmp_path: Path, version: str, capsys: pytest.CaptureFixture[str]) -> None:
    path = _store(tmp_path / "s.sqlite")
    _set_schema(path, version)
    with pytest.raises(ValidationError, match="is not a number"):
        Store(path, readonly=True)
    assert main(["results", "--store", str(path)]) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: store: ") and err.count("\n") == 1


@pytest.mark.parametrize("command", ["sweep", "experiment"])
def test_the_cli_refuses_to_write_an_unknown_schema_with_one_line(
        tmp_path: Path, command: str, capsys: pytest.CaptureFixture[str]) -> None:
    path = _store(tmp_path / "s.sqlite")
    _set_schema(path, "99")
    spec = tmp_path / "grid.toml"
    spec.write_text('name = "grid"\nloads = [0.5]\nslots = 1000\n[[systems]]\n'
                    'servers = "2x0.5"\n[[policies]]\nname = "jsq"\n', encoding="utf-8")
    argv = ([command, str(spec)] if command == "sweep"
            else [command, "classic-load-sweep", "--quick"])
    argv += ["--store", str(path), "--out", str(tmp_path / "out"), "--workers", "1",
             "--no-progress"]
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: store: ") and "refused for writing" in err
    assert err.count("\n") == 1


def test_a_known_schema_still_opens_and_a_new_store_records_it(tmp_path: Path) -> None:
    path = _store(tmp_path / "s.sqlite")
    with Store(path) as store:
        assert store.query("SELECT value FROM meta")[0][0] == str(SCHEMA_VERSION)
        assert store.schema_note is None
    with Store(path, readonly=True) as store:
        assert store.schema_note is None
