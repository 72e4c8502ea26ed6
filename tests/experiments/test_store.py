"""The SQLite results store: settings, upsert rules, concurrent writers, exports."""

from __future__ import annotations

import multiprocessing
import sqlite3

import pandas as pd
import pytest

from dispatchlab.cli import main
from dispatchlab.core.errors import ValidationError
from dispatchlab.experiments.store import Store
from dispatchlab.specs.experiment import ExperimentSpec
from dispatchlab.specs.run import PolicySpec, SystemSpec


def grid(name: str = "grid") -> ExperimentSpec:
    return ExperimentSpec(name, systems=(SystemSpec("2x0.5"),),
                          policies=(PolicySpec("jsq"), PolicySpec("rand")),
                          loads=(0.3, 0.6, 0.9), replications=4, slots=1000)


def fake_result(point, value: float) -> dict:
    return {"mean_total_queue": value, "ci_low": value - 1, "ci_high": value + 1,
            "stability": "stable", "load": point.value, "epsilon": 1 - point.value,
            "slots_run": point.slots, "diagnostics": {"herd": 0.5}}


def test_store_uses_wal_and_a_busy_timeout(tmp_path):
    with Store(tmp_path / "s.sqlite") as store:
        assert store.query("PRAGMA journal_mode")[0][0] == "wal"
        assert store.query("PRAGMA busy_timeout")[0][0] >= 10_000
        assert store.integrity_ok()


def test_a_done_point_is_never_overwritten_and_a_failed_one_is(tmp_path):
    point = grid().points()[0]
    with Store(tmp_path / "s.sqlite") as store:
        run = store.start_run("grid", "test", 1)
        assert store.record(run, point.to_dict(), error="boom")
        assert store.count("grid", "failed") == 1
        assert store.record(run, point.to_dict(), result=fake_result(point, 5.0))
        assert not store.record(run, point.to_dict(), result=fake_result(point, 7.0))
        rows = store.points("grid", status=None)
        assert len(rows) == 1
        assert rows[0]["mean_total_queue"] == 5.0 and rows[0]["attempts"] == 2
        assert rows[0]["error"] is None and rows[0]["status"] == "done"
        assert store.done_keys("grid") == {point.key}
        assert store.runs("grid")[0]["points_stored"] == 1


def _writer(path: str, start: int, stop: int) -> None:
    points = grid().points()
    with Store(path) as store:
        run = store.start_run("grid", "writer", stop - start)
        for point in points[start:stop]:
            store.record(run, point.to_dict(), result=fake_result(point, float(point.value)))


def test_concurrent_writer_processes_lose_and_duplicate_no_row(tmp_path):
    path = str(tmp_path / "s.sqlite")
    total = len(grid().points())  # 24
    Store(path).close()
    # four processes with overlapping ranges: every point written by two of them
    ranges = [(0, 12), (6, 18), (12, 24), (0, 24)]
    context = multiprocessing.get_context("fork")
    processes = [context.Process(target=_writer, args=(path, a, b)) for a, b in ranges]
    for process in processes:
        process.start()
    for process in processes:
        process.join(60)
        assert process.exitcode == 0
    with Store(path) as store:
        assert store.integrity_ok()
        counts = store.query("SELECT point_key, COUNT(*) AS n FROM points GROUP BY point_key")
        assert len(counts) == total and all(r["n"] == 1 for r in counts)
        assert sum(r["points_stored"] for r in store.runs()) == total


def test_frame_flattens_results_and_filters(tmp_path):
    spec = grid()
    with Store(tmp_path / "s.sqlite") as store:
        run = store.start_run("grid", "test", 2)
        for point in spec.points()[:6]:
            store.record(run, point.to_dict(), result=fake_result(point, 1.0))
        frame = store.frame("grid")
        assert len(frame) == 6 and frame["diag.herd"].eq(0.5).all()
        assert set(store.frame("grid", policy="jsq")["policy_label"]) == {"jsq"}
        assert store.frame("nothing").empty


def test_a_stored_point_is_the_pandas_row_of_its_result(tmp_path):
    """Result.to_row() is the row of a DataFrame, and the store's frame is made of it."""
    from dispatchlab.experiments.runner import run_point
    from dispatchlab.simulation.result import Result

    spec = ExperimentSpec("rows", systems=(SystemSpec("3x0.5", dispatchers=2),),
                          policies=(PolicySpec("pod", {"d": 2}),), loads=(0.7,), slots=2000)
    point = spec.points()[0]
    reply = run_point(point.to_dict())
    result = Result(**{k: v for k, v in reply["result"].items()
                       if k not in ("servers", "dispatchers", "load", "epsilon")})
    row = result.to_row()
    frame = pd.DataFrame([row])
    assert len(frame) == 1 and not any(isinstance(v, list | dict) for v in row.values())
    assert row["mean_total_queue"] == result.mean_total_queue and row["params.d"] == 2
    assert (row["system.n_servers"], row["system.dispatchers"]) == (3, 2)
    assert row["messages.probe"] == result.messages_by_kind["probe"]
    assert "mean_queues" not in row and "total_queue_distribution" not in row
    with Store(tmp_path / "s.sqlite") as store:
        run = store.start_run("rows", "test", 1)
        store.record(run, point.to_dict(), result=reply["result"])
        stored = store.frame("rows").iloc[0]
    for key in ("mean_total_queue", "params.d", "system.servers", "messages.probe",
                "delay_p99", "stability"):
        assert stored[key] == row[key], key


def test_a_file_that_is_not_a_store_is_refused(tmp_path):
    path = tmp_path / "junk.sqlite"
    path.write_bytes(b"this is not a database" * 100)
    with pytest.raises(ValidationError, match="not a dispatchlab store"):
        Store(path)


def test_results_command_lists_and_exports_csv_and_parquet(tmp_path, capsys):
    spec = grid()
    path = tmp_path / "s.sqlite"
    with Store(path) as store:
        store.save_experiment("grid", spec.to_json())
        run = store.start_run("grid", "test", len(spec.points()))
        for point in spec.points():
            store.record(run, point.to_dict(), result=fake_result(point, 2.0))
        store.record(run, grid("other").points()[0].to_dict(), error="bad")
    assert main(["results", "grid", "--store", str(path)]) == 0
    assert "24 stored points" in capsys.readouterr().out
    assert main(["results", "grid", "--store", str(path), "--format", "csv",
                 "--output", str(tmp_path / "out.csv"), "--policy", "rand"]) == 0
    csv = pd.read_csv(tmp_path / "out.csv")
    assert len(csv) == 12 and set(csv["policy_label"]) == {"rand"}
    assert main(["results", "--store", str(path), "--format", "parquet",
                 "--output", str(tmp_path / "out.parquet"), "--status", "all"]) == 0
    parquet = pd.read_parquet(tmp_path / "out.parquet")
    assert len(parquet) == 25 and (parquet["status"] == "failed").sum() == 1
    assert main(["results", "nope", "--store", str(path)]) == 2
    assert main(["results", "--store", str(path), "--format", "xml"]) == 2
    # plain SQL works on the file, as the docs promise
    with sqlite3.connect(path) as db:
        assert db.execute("SELECT COUNT(*) FROM points WHERE status='done'").fetchone()[0] == 24
