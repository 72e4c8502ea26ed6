"""The exact two-server table beside the simulations: it checks the stored gap points
(within their CIs about as often as 95 % intervals should be), and a table received from
someone else is data — malformed rows are skipped, nothing in it runs."""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd

from dispatchlab.experiments.store import Store
from dispatchlab.report.exact_evidence import DEFAULT_EXACT, exact_column, load_exact
from dispatchlab.report.reproductions import DEFAULT_STORE

ROOT = Path(__file__).parent.parent


def test_the_exact_values_check_the_simulated_gap_points() -> None:
    store = Store(ROOT / DEFAULT_STORE, readonly=True)
    try:
        frame = store.frame("jbt-gaps")
    finally:
        store.close()
    frame["exact"] = exact_column(frame, load_exact(ROOT / DEFAULT_EXACT))
    checked = frame.dropna(subset=["exact", "epsilon_excess_ci_low"])
    assert len(checked) >= 30  # both two-server systems, five rules, ε ≥ 0.003
    half = (checked["epsilon_excess_ci_high"] - checked["epsilon_excess_ci_low"]) / 2
    miss = (checked["epsilon_excess"] - checked["exact"]).abs() / half
    assert (miss <= 1).mean() >= 0.85
    assert miss.max() <= 2.5, checked.loc[miss.idxmax(), ["system", "policy_label", "x"]]


def test_a_malformed_table_gives_nothing_and_bad_rows_are_skipped(tmp_path: Path) -> None:
    assert load_exact(tmp_path / "absent.json") == {}
    broken = tmp_path / "broken.json"
    broken.write_text("{not json", encoding="utf-8")
    assert load_exact(broken) == {}
    listed = tmp_path / "list.json"
    listed.write_text("[1, 2]", encoding="utf-8")
    assert load_exact(listed) == {}
    mixed = tmp_path / "mixed.json"
    good = {"system": [0.25, 0.25], "rule": "jbt r=1", "epsilon": 0.01,
            "eps_EX_identity": 0.088}
    mixed.write_text(json.dumps({"rows": [good, {"system": "__import__('os')"},
                                          {**good, "eps_EX_identity": "nan"},
                                          {**good, "epsilon": None}, 7,
                                          # (an OverflowError traceback from the page's
                                          # command, as were the next two)
                                          {**good, "epsilon": 10**400},
                                          {**good, "system": [10**400, 1]},
                                          {**good, "eps_EX_identity": -(10**400)},
                                          {**good, "epsilon": "inf"}]}), encoding="utf-8")
    assert list(load_exact(mixed).values()) == [0.088]
    deep = tmp_path / "deep.json"
    deep.write_text('{"rows": ' + "[" * 100_000 + "]" * 100_000 + "}", encoding="utf-8")
    assert load_exact(deep) == {}


def test_only_the_points_the_table_covers_get_an_exact_value() -> None:
    table = {((0.25, 0.25), "jbt r=1", 0.01): 0.088}
    rows = pd.DataFrame([
        {"policy": "jbt", "params.threshold": "constant", "params.r": 1, "x": 0.01,
         "system.servers": "2x0.25", "system.dispatchers": 1, "system.arrivals": "bernoulli",
         "system.service": "bernoulli"},
        {"policy": "jbt", "params.threshold": "constant", "params.r": 1, "x": 0.01,
         "system.servers": "2x0.25", "system.dispatchers": 1, "system.arrivals": "poisson",
         "system.service": "bernoulli"},
        {"policy": "jsq", "x": 0.01, "system.servers": "2x0.25", "system.dispatchers": 1,
         "system.arrivals": "bernoulli", "system.service": "bernoulli"},
    ])
    values = exact_column(rows, table).tolist()
    assert values[0] == 0.088 and pd.isna(values[1]) and pd.isna(values[2])
