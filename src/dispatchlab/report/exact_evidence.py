"""Exact answers beside the simulations: the committed two-server table of JIQ/JBT-r
(``results/exact/jbt_two_server.json``, solved by :mod:`dispatchlab.solvers.multilevel`)
matched to the stored points it covers, so that the Reproductions page shows each such
point's ε·E[X] without sampling noise next to its estimate; and the exact E[ΣQ] of weighted
random routing (``results/exact/random_routing.json``: independent single-server chains),
which decides a comparison where its short simulation cannot.

Each table is data: read as JSON, every field checked for its type; a row that does not
have the expected shape is skipped, never executed or trusted.
"""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pandas as pd

from dispatchlab.model.service import parse_rates

#: the committed table (relative to the repository root, where the page is built)
DEFAULT_EXACT = "results/exact/jbt_two_server.json"

Key = tuple[tuple[float, ...], str, float]


def _key(servers: tuple[float, ...], rule: str, epsilon: float) -> Key:
    return tuple(round(s, 9) for s in servers), rule, round(epsilon, 12)


def table_rows(path: Path) -> list:
    """The ``rows`` list of a committed JSON table, as data (each row still to be checked
    by its reader); empty when the file is absent or not such a table."""
    if not path.is_file():
        return []
    try:
        rows = json.loads(path.read_text(encoding="utf-8")).get("rows", [])
    except (ValueError, AttributeError, RecursionError):  # (a nesting deeper than the stack)
        return []
    return rows if isinstance(rows, list) else []


def load_exact(path: Path) -> dict[Key, float]:
    """(servers, rule, ε) → exact ε·E[X] (by the drift identity, the table's
    ``eps_EX_identity``) of every well-formed row; empty when the file is absent."""
    table: dict[Key, float] = {}
    for row in table_rows(path):
        try:
            servers = tuple(float(s) for s in row["system"])
            rule, epsilon = str(row["rule"]), float(row["epsilon"])
            value = float(row["eps_EX_identity"])
        except (KeyError, TypeError, ValueError, OverflowError):  # (an integer past 1e308)
            continue
        if all(map(math.isfinite, (*servers, epsilon, value))):
            table[_key(servers, rule, epsilon)] = value
    return table


def rule_label(row: pd.Series) -> str | None:
    """The table's name of a stored point's rule ("jbt r=3", "jbt r=⌈1·log 1/ε⌉"), or
    ``None`` for a policy the table does not cover."""
    if row.get("policy") != "jbt":
        return None
    threshold = row.get("params.threshold")
    if threshold == "log":
        return f"jbt r=⌈{float(row['params.K']):g}·log 1/ε⌉"
    if threshold in ("constant", None) or (isinstance(threshold, float)
                                          and math.isnan(threshold)):
        return f"jbt r={int(row['params.r'])}"
    return None


def exact_column(frame: pd.DataFrame, table: dict[Key, float]) -> pd.Series:
    """Each point's exact ε·E[X] where the table has its system (two servers, one
    dispatcher, Bernoulli arrivals and service), rule and ε; NaN elsewhere."""
    def lookup(row: pd.Series) -> float:
        if not table or row.get("system.dispatchers") != 1 \
                or row.get("system.arrivals") != "bernoulli" \
                or row.get("system.service") != "bernoulli":
            return math.nan
        rule = rule_label(row)
        if rule is None:
            return math.nan
        servers = tuple(float(s) for s in np.asarray(parse_rates(row["system.servers"])))
        return table.get(_key(servers, rule, float(row["x"])), math.nan)

    if frame.empty or "system.servers" not in frame:
        return pd.Series(math.nan, index=frame.index)
    return frame.apply(lookup, axis=1)


#: the committed exact E[ΣQ] of weighted random routing (results/exact/random_routing.py)
DEFAULT_RANDOM_ROUTING = "results/exact/random_routing.json"

SystemKey = tuple[str, str, str, str]


def load_random_routing(path: Path) -> dict[SystemKey, dict[float, float]]:
    """(servers, arrivals, service, dispatch) → {load: exact E[ΣQ] of weighted random
    routing} of every well-formed row; empty when the file is absent."""
    table: dict[SystemKey, dict[float, float]] = {}
    for row in table_rows(path):
        try:
            key = tuple(str(row[field]) for field in ("servers", "arrivals", "service",
                                                      "dispatch"))
            load, value = float(row["load"]), float(row["mean_total_queue"])
        except (KeyError, TypeError, ValueError, OverflowError):
            continue
        if row.get("policy") == "wrand" and math.isfinite(load) and math.isfinite(value) \
                and value >= 0:
            table.setdefault(key, {})[round(load, 12)] = value  # type: ignore[index]
    return table
