"""The measurement vocabulary changed names (``detail`` → ``imbalance``, ``track_delay =
false`` → ``delay = "off"``) without changing a stored point's key or seed: every point of
the committed store, read in today's names, has the key it was stored under, and the
catalog's grids (written in today's names) are the grids the store holds."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import pytest

from dispatchlab.experiments.catalog import build_experiment
from dispatchlab.specs.experiment import ExperimentSpec, Point, identity_options, stored_options

STORE = Path(__file__).resolve().parents[2] / "results" / "reproductions" / "store.sqlite"


def _rows(query: str) -> list[tuple]:
    with sqlite3.connect(f"file:{STORE}?mode=ro", uri=True) as db:
        return db.execute(query).fetchall()


def test_every_committed_point_keeps_its_key_and_seed() -> None:
    rows = _rows("SELECT point_key, spec_json FROM points")
    assert len(rows) > 1000
    renamed = 0
    for key, text in rows:
        data = json.loads(text)
        point = Point.from_dict(data)
        assert "detail" not in point.options and "track_delay" not in point.options
        renamed += data["options"] != dict(point.options)
        assert (point.key, point.seed) == (key, data["seed"]), data["options"]
    assert renamed >= 1015  # the points stored before the rename, under the old names


@pytest.mark.parametrize("name", ["led-fig1", "pi-stability", "jbt-regimes"])
def test_the_catalog_grids_are_the_stored_grids(name: str) -> None:
    (text,) = _rows(f"SELECT spec_json FROM experiments WHERE name = '{name}'")[0]
    stored = ExperimentSpec.from_json(text)
    built = build_experiment(name, pilots=False)
    assert stored.options == built.options
    keys = {key for (key,) in _rows(f"SELECT point_key FROM points WHERE experiment = '{name}'")}
    assert {point.key for point in built._points()} <= keys


@pytest.mark.parametrize(("old", "new"), [
    ({"detail": False}, {"imbalance": False}),
    ({"track_delay": False}, {"delay": "off"}),
    ({"track_delay": True, "delay": "all"}, {"delay": "all"}),
    ({"bound": 4000, "track_delay": False}, {"bound": 4000, "delay": "off"}),
])
def test_old_names_are_read_in_new_ones_and_hashed_in_old_ones(old: dict, new: dict) -> None:
    assert stored_options(old) == new
    assert identity_options(new) == {k: v for k, v in sorted(old.items())
                                     if (k, v) != ("track_delay", True)}
