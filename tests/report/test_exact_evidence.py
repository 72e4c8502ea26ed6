"""The exact two-server table beside the simulations: it checks the stored gap points
(within their CIs about as often as 95 % intervals should be), and a table received from
someone else is data — malformed rows are skipped, nothing in it runs."""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
import pytest

from dispatchlab.experiments.store import Store
from dispatchlab.report.exact_evidence import DEFAULT_EXACT, exact_column, load_exact
from dispatchlab.report.reproductions import DEFAULT_STORE

ROOT = Path(__file__).parents[2]


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


def test_the_exact_random_routing_table_checks_the_simulated_curve() -> None:
    """Weighted random routing on scd-loads' system is independent single-server chains: the
    committed exact E[ΣQ] lies in the simulated curve's interval wherever that interval
    is resolved (ρ ≤ 0.95), and stands for it at ρ = 0.99, where two 40,000-slot runs gave
    an interval below 0."""
    import math

    from dispatchlab.report.exact_evidence import DEFAULT_RANDOM_ROUTING, load_random_routing
    from dispatchlab.report.plots import FigureSpec, summarize

    exact = load_random_routing(ROOT / DEFAULT_RANDOM_ROUTING)[
        ("50x1,50x5", "poisson", "geometric", "per_job")]
    assert exact[0.99] == pytest.approx(50 * 148.0048 + 50 * 344.0247, rel=1e-6)
    store = Store(ROOT / DEFAULT_STORE, readonly=True)
    try:
        frame = store.frame("scd-loads")
    finally:
        store.close()
    summary = summarize(frame, FigureSpec("q", x="load", y="mean_total_queue"))
    curve = summary[summary["policy"] == "weighted random"].set_index("x")
    for load in (0.5, 0.7, 0.9, 0.95):
        low, high = curve.loc[load, "ci_low"], curve.loc[load, "ci_high"]
        assert low <= exact[load] <= high, (load, exact[load], low, high)
    assert not math.isfinite(curve.loc[0.99, "ci_low"]) or curve.loc[0.99, "ci_low"] < 0


def test_a_malformed_random_routing_table_gives_nothing_and_bad_rows_are_skipped(
        tmp_path: Path) -> None:
    from dispatchlab.report.exact_evidence import load_random_routing

    assert load_random_routing(tmp_path / "absent.json") == {}
    good = {"servers": "2x0.5", "arrivals": "poisson", "service": "geometric",
            "dispatch": "per_job", "load": 0.9, "policy": "wrand", "mean_total_queue": 12.5}
    table = tmp_path / "t.json"
    table.write_text(json.dumps({"rows": [
        good, 7, {**good, "load": "nan"}, {**good, "mean_total_queue": -1},
        {**good, "mean_total_queue": 10**400}, {**good, "policy": "jsq", "load": 0.5},
        {k: v for k, v in good.items() if k != "service"}]}), encoding="utf-8")
    assert load_random_routing(table) == {("2x0.5", "poisson", "geometric", "per_job"):
                                          {0.9: 12.5}}
    table.write_text('{"rows": ' + "[" * 100_000 + "]" * 100_000 + "}", encoding="utf-8")
    assert load_random_routing(table) == {}
