"""The committed evidence under results/ is what its data gives: each table is regenerated
from its JSON and must equal the committed page, and the data meets what it is cited for."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path

RESULTS = Path(__file__).parents[2] / "results"


def _script(path: Path):
    spec = importlib.util.spec_from_file_location(path.parent.name + "_table", path)
    module = importlib.util.module_from_spec(spec)
    assert spec.loader is not None
    spec.loader.exec_module(module)  # our own repository's script, not a received file
    return module


def test_the_coverage_table_is_its_json_and_the_coupled_interval_covers() -> None:
    folder = RESULTS / "coverage"
    data = json.loads((folder / "coverage.json").read_text())
    table = _script(folder / "make_table.py").render(data)
    assert (folder / "coverage.md").read_text(encoding="utf-8") == table
    assert data["runs"] >= 60 and len(data["cases"]) >= 24
    for case in data["cases"]:
        assert case["runs"] == data["runs"] and case["covered"] <= case["runs"]
        if case["estimator"] == "coupled":
            assert case["coverage"] >= 0.93, case["case"]


def test_the_variance_table_is_its_json_and_the_coupled_se_is_smaller() -> None:
    folder = RESULTS / "variance"
    rows = json.loads((folder / "table.json").read_text())
    lines = [line for line in (folder / "table.md").read_text(encoding="utf-8").splitlines()
             if line.startswith("| ") and not line.startswith("| case")]
    assert lines == _script(folder / "make_table.py").table_rows(rows)
    assert {row["epsilon"] for row in rows} >= {0.1, 0.001}
    assert all(row["variance_ratio"] > 1 for row in rows)
