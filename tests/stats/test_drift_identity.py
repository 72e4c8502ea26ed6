"""The drift identity ε·E[X] = E[ΣQ(t+1)·ΣU(t)] − (E[U_Σ²] − E[ū²])/2 (docs/statistics.md#drift):
on every stored heavy-traffic point that recorded its terms, and on fresh runs."""

from __future__ import annotations

import math
from pathlib import Path

import pandas as pd
import pytest

import dispatchlab as dl
from dispatchlab.experiments.store import Store
from dispatchlab.report.reproductions import DEFAULT_STORE

ROOT = Path(__file__).parents[2]
#: the experiments whose points are coupled runs from a stationary start
REGIMES = ("jbt-regimes", "led-regimes", "pi-regimes", "jbt-gaps", "jbt-regimes-long")


def _predicted(row: pd.Series) -> float:
    """ε·E[X] as the identity gives it from the run's Eq. (7) term and O(ε) terms."""
    return row["idle_while_busy"] - (row["mean_unused_square"]
                                     - row["mean_pooled_unused_square"]) / 2


def _half(row: pd.Series, low: str, high: str) -> float:
    return (row[high] - row[low]) / 2


def _deviation(row: pd.Series) -> float:
    """Measured minus predicted ε·E[X], in units of the sum of the two CIs' half-widths
    (the time averages obey the identity up to their sampling error)."""
    slack = (_half(row, "epsilon_excess_ci_low", "epsilon_excess_ci_high")
             + _half(row, "idle_while_busy_ci_low", "idle_while_busy_ci_high"))
    return (row["epsilon_excess"] - _predicted(row)) / slack


@pytest.fixture(scope="module")
def stored() -> pd.DataFrame:
    store = Store(ROOT / DEFAULT_STORE, readonly=True)
    try:
        names = [name for name in REGIMES if name in set(store.experiment_names())]
        return pd.concat([store.frame(name) for name in names], ignore_index=True)
    finally:
        store.close()


def test_the_identity_holds_on_every_stored_point_with_its_terms(stored) -> None:
    columns = ["epsilon_excess", "epsilon_excess_ci_low", "epsilon_excess_ci_high",
               "idle_while_busy", "idle_while_busy_ci_low", "idle_while_busy_ci_high",
               "mean_unused_square", "mean_pooled_unused_square"]
    measured = stored.dropna(subset=[c for c in columns if c in stored])
    assert len(measured) >= 80, "the regimes and gap points record the identity's terms"
    deviation = measured.apply(_deviation, axis=1).abs()
    # each side's 95 % CI: nearly all within the summed half-widths, none far outside
    far = measured[deviation > 2]
    assert far.empty, far[["experiment", "system", "policy_label", "x"]].to_string()
    assert (deviation <= 1).mean() >= 0.95


def test_the_o_epsilon_terms_lie_between_eps_squared_and_s_max_eps(stored) -> None:
    rows = stored.dropna(subset=["mean_unused_square", "mean_pooled_unused_square"])
    rows = rows[rows["stability"] != "unstable"]  # an overflowing queue idles the others
    assert len(rows) >= 80
    for _, row in rows.iterrows():  # Bernoulli service: u ≤ s ≤ N, and E[u] = ε
        eps, servers = row["epsilon"], row["system.n_servers"]
        for value in (row["mean_unused_square"], row["mean_pooled_unused_square"]):
            assert 0.5 * eps**2 <= value <= servers * eps * 1.05, row["policy_label"]


@pytest.mark.parametrize("servers, policy, arrivals", [
    ([0.2, 0.8], "jsq", "bernoulli"), ([0.25, 0.25], "jiq", "bernoulli"),
    ([0.5] * 4, "jbt", "poisson"), ([0.1, 0.4, 0.5], "pod", "binomial:3"),
])
def test_a_fresh_run_obeys_the_identity(servers, policy, arrivals) -> None:
    system = dl.System.build(servers, epsilon=0.05, arrivals=arrivals)
    result = dl.simulate(system, policy, slots=400_000, seed=11, start="stationary",
                         delay="off")
    row = pd.Series(result.to_dict())
    assert math.isfinite(row["idle_while_busy_ci_low"])
    assert abs(_deviation(row)) <= 2
    # E[u] = E[ū] = ε: the unused service is what the arrivals leave of the capacity
    assert row["mean_unused_square"] >= 0.5 * 0.05**2


def test_one_server_has_no_idle_while_busy_term_exactly() -> None:
    system = dl.System.build([0.7], epsilon=0.05, arrivals="bernoulli")
    result = dl.simulate(system, "jsq", slots=100_000, seed=2, start="stationary",
                         delay="off")
    assert result.idle_while_busy == 0.0
    assert (result.idle_while_busy_ci_low, result.idle_while_busy_ci_high) == (0.0, 0.0)
    assert result.mean_unused_square == result.mean_pooled_unused_square
