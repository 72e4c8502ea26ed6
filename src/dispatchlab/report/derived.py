"""The y quantities computed from a stored point's columns rather than read from one: the
mean queue per server E[ΣQ]/N and the jobs waiting per server (docs/statistics.md#jobs-waiting),
for figures (``report.plots``, ``dl.plot``) and for the many-server claims. Both are affine
in E[ΣQ], so a run's interval for E[ΣQ] carries to them through the same function."""

from __future__ import annotations

import math
from collections.abc import Callable
from functools import lru_cache

import numpy as np
import pandas as pd

from dispatchlab.core.errors import ValidationError
from dispatchlab.model.service import parse_rates
from dispatchlab.specs.figure import JOBS_WAITING, QUEUE_PER_SERVER


def _numbers(frame: pd.DataFrame, column: str) -> np.ndarray:
    if column not in frame.columns:
        return np.full(len(frame), math.nan)
    return pd.to_numeric(frame[column], errors="coerce").to_numpy(dtype=float)


def queue_per_server(frame: pd.DataFrame) -> np.ndarray:
    """E[ΣQ]/N of each row."""
    return _numbers(frame, "mean_total_queue") / _numbers(frame, "system.n_servers")


@lru_cache(maxsize=1024)
def _one_rate(servers: str) -> tuple[float, float]:
    """(μ, N) of a system whose N servers all have rate μ; NaNs for unequal rates or a text
    that is not a list of rates (a received store's)."""
    try:
        rates = parse_rates(servers)
    except ValidationError:
        return math.nan, math.nan
    return (float(rates[0]), float(rates.size)) if rates.min() == rates.max() else (
        math.nan, math.nan)


def jobs_waiting_per_server(frame: pd.DataFrame) -> np.ndarray:
    """Each row's jobs waiting per server, E[Σ_n (Q_n(t) + A_n(t) − 1)⁺]/N: a slot's jobs
    beyond the one each server works on (the continuous-time Σ(Q_n − 1)⁺ of the
    Halfin–Whitt results), from E[ΣQ] by rate balance: with Bernoulli service of one rate
    μ, E[#busy servers] = λ_Σ/μ = ρN, so it is E[ΣQ]/N − ρ(1 − μ). NaN for a row of
    another service law or unequal rates, where the identity does not give it."""
    if "system.servers" not in frame.columns or "system.service" not in frame.columns:
        return np.full(len(frame), math.nan)
    rates, servers = np.array([_one_rate(str(text)) for text in frame["system.servers"]],
                              dtype=float).reshape(-1, 2).T
    bernoulli = (frame["system.service"] == "bernoulli").to_numpy()
    values = (_numbers(frame, "mean_total_queue") / servers
              - _numbers(frame, "system.load") * (1.0 - rates))
    return np.where(bernoulli, values, math.nan)


#: each derived y, its function and the columns it needs
DERIVED_Y: dict[str, tuple[Callable[[pd.DataFrame], np.ndarray], tuple[str, ...]]] = {
    QUEUE_PER_SERVER: (queue_per_server, ("mean_total_queue", "system.n_servers")),
    JOBS_WAITING: (jobs_waiting_per_server,
                   ("mean_total_queue", "system.servers", "system.service", "system.load")),
}


def derived_interval(row: pd.Series, y: str) -> tuple[float, float]:
    """A single run's interval for a derived ``y``: its E[ΣQ] interval through the same
    (affine, increasing) function."""
    function, _ = DERIVED_Y[y]
    ends = pd.DataFrame([row, row]).reset_index(drop=True)
    ends["mean_total_queue"] = [row.get("ci_low", math.nan), row.get("ci_high", math.nan)]
    low, high = function(ends)
    return float(low), float(high)
