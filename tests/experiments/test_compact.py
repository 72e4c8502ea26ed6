"""Compacting a store for committing drops only the named arrays of the stored results."""

from __future__ import annotations

import json

import pytest

from dispatchlab.core.errors import ValidationError
from dispatchlab.experiments.compact import compact_store, dropped_fields, main
from dispatchlab.experiments.store import Store
from dispatchlab.specs.experiment import ExperimentSpec
from dispatchlab.specs.run import PolicySpec, SystemSpec


def _store_with_points(path) -> list[dict]:
    spec = ExperimentSpec("c", systems=(SystemSpec("2x0.5"),), policies=(PolicySpec("jsq"),),
                          loads=(0.5, 0.9), slots=1000)
    results = []
    with Store(path) as store:
        run = store.start_run("c", "test", 2)
        for index, point in enumerate(spec.points()):
            result = {"mean_total_queue": 1.5 + index, "ci_low": 1.0, "ci_high": 2.0 + index,
                      "total_queue_distribution": [0.25, 0.5, 0.25],
                      "mean_queues": [0.7, 0.8], "stability": "stable"}
            store.record(run, point.to_dict(), result=result)
            results.append(result)
    return results


def _stored(path) -> list[dict]:
    with Store(path, readonly=True) as store:
        return [row["result"] for row in store.points("c")]


def test_compaction_empties_the_histograms_and_keeps_everything_else(tmp_path):
    path = tmp_path / "s.sqlite"
    before = _store_with_points(path)
    assert dropped_fields(path) == []
    assert compact_store(path) == 2
    after = _stored(path)
    for old, new in zip(before, after, strict=True):
        assert new["total_queue_distribution"] == []
        assert {k: v for k, v in new.items() if k != "total_queue_distribution"} == {
            k: v for k, v in old.items() if k != "total_queue_distribution"}
    assert dropped_fields(path) == ["total_queue_distribution"]
    assert compact_store(path) == 0 and _stored(path) == after  # idempotent
    with Store(path) as store:
        assert store.integrity_ok() and store.count("c") == 2


def test_compaction_refuses_a_field_it_may_not_drop_and_a_missing_store(tmp_path):
    path = tmp_path / "s.sqlite"
    _store_with_points(path)
    with pytest.raises(ValidationError, match="field: 'mean_total_queue' cannot be dropped"):
        compact_store(path, ("mean_total_queue",))
    assert _stored(path)[0]["total_queue_distribution"] == [0.25, 0.5, 0.25]  # untouched
    with pytest.raises(ValidationError, match="store: no store at"):
        compact_store(tmp_path / "missing.sqlite")
    (tmp_path / "text.sqlite").write_text("not a database")
    assert main([str(tmp_path / "text.sqlite")]) == 2


def test_the_committed_store_is_compact_and_says_so():
    from pathlib import Path

    store = Path(__file__).parents[2] / "results" / "reproductions" / "store.sqlite"
    # ≈ 13 KB a compacted point (its Result, spec and per-server lists): 500 points fit
    with Store(store, readonly=True) as db:
        points = db.query("SELECT COUNT(*) AS n FROM points")[0]["n"]
    assert store.stat().st_size < 16_000 * max(points, 250)
    # run.sh drops the ΣQ histograms and the E[Q_n] vectors (30 MB at N = 10⁴)
    assert dropped_fields(store) == ["mean_queues", "total_queue_distribution"]
    with Store(store, readonly=True) as db:
        row = db.query("SELECT result_json FROM points WHERE result_json IS NOT NULL LIMIT 1")
    result = json.loads(row[0]["result_json"])
    assert result["total_queue_distribution"] == [] and result["mean_queues"] == []
