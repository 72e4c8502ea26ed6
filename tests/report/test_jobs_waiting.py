"""The jobs waiting per server, E[Σ_n (Q_n + A_n − 1)⁺]/N, read from E[ΣQ] by rate balance
(report.many_server_claims.jobs_waiting_per_server, docs/statistics.md#jobs-waiting): the
identity on the exact single-server chain, the lab's estimate covering the exact value
of independent queues, and the 1/√N reading on curves whose exponent is known."""

from __future__ import annotations

import math
from dataclasses import replace

import numpy as np
import pandas as pd
import pytest
from scipy.stats import poisson

from dispatchlab import System, ValidationError, simulate
from dispatchlab.report.derived import jobs_waiting_per_server
from dispatchlab.report.many_server_claims import scales_like_root
from dispatchlab.specs.experiment import ExperimentSpec
from dispatchlab.specs.figure import FigureSpec
from dispatchlab.specs.run import PolicySpec, SystemSpec


def exact_single_queue(lam: float, mu: float, top: int = 600) -> tuple[float, float]:
    """(E[Q], E[(Q + A − 1)⁺]) of one slotted queue with Poisson(λ) arrivals and
    Bernoulli(μ) service (Q(t+1) = Q + A − S where Q + A > 0), by its stationary law on
    0 … ``top`` (the tail beyond holds less than 1e-12 here)."""
    arrivals = poisson.pmf(np.arange(top + 1), lam)
    chain = np.zeros((top + 1, top + 1))
    for q in range(top + 1):
        for a, p in enumerate(arrivals[:top + 1 - q]):
            y = q + a
            if y == 0:
                chain[q, 0] += p
            else:
                chain[q, y - 1] += p * mu
                chain[q, min(y, top)] += p * (1 - mu)
    chain /= chain.sum(axis=1, keepdims=True)  # (the arrivals cut at the top)
    system = np.vstack([(chain.T - np.eye(top + 1))[:-1], np.ones(top + 1)])
    right = np.zeros(top + 1)
    right[-1] = 1.0
    pi = np.linalg.solve(system, right)
    states = np.arange(top + 1)
    waiting = sum(pi[q] * (arrivals * np.maximum(q + states - 1, 0)).sum()
                  for q in range(top + 1))
    return float(pi @ states), float(waiting)


@pytest.mark.parametrize("lam, mu", [(0.05, 0.1), (0.24, 0.3), (0.63, 0.7), (0.095, 0.1)])
def test_the_rate_balance_identity_holds_on_the_exact_chain(lam, mu) -> None:
    """E[(Q + A − 1)⁺] = E[Q] − ρ(1 − μ), ρ = λ/μ, on the exact stationary law (it holds
    for every policy: only E[#busy] = λ_Σ/μ enters)."""
    mean, waiting = exact_single_queue(lam, mu)
    assert waiting == pytest.approx(mean - lam / mu * (1 - mu), abs=1e-9)
    assert waiting > 0


def row(servers: str, mean_total_queue: float, load: float, service: str = "bernoulli"):
    return {"system.servers": servers, "mean_total_queue": mean_total_queue,
            "system.load": load, "system.service": service}


def test_the_lab_s_estimate_covers_the_exact_value_of_independent_queues() -> None:
    """Random routing job by job: four independent queues with Poisson(0.24) arrivals and
    μ = 0.3; the lab's E[ΣQ] turned into jobs waiting per server, with its interval
    shifted the same way, holds the exact value."""
    system = System.build("4x0.3", load=0.8, dispatch="per_job")
    result = simulate(system, "rand", slots=400_000, seed=11)
    _, exact = exact_single_queue(0.24, 0.3)
    frame = pd.DataFrame([row("4x0.3", value, 0.8) for value in
                          (result.mean_total_queue, result.ci_low, result.ci_high)])
    estimate, low, high = jobs_waiting_per_server(frame)
    assert low <= exact <= high and abs(estimate - exact) < 0.1 * exact


def test_the_identity_is_not_applied_where_it_does_not_hold() -> None:
    frame = pd.DataFrame([row("2x0.1,2x0.5", 3.0, 0.9), row("4x0.3", 3.0, 0.9, "binomial"),
                          row("garbage", 3.0, 0.9), row("4x0.3", 3.0, 0.9)])
    values = jobs_waiting_per_server(frame)
    assert np.isnan(values[:3]).all() and values[3] == pytest.approx(0.75 - 0.9 * 0.7)


def curves(pace: dict[str, float], mu: float = 0.1, load: float = 0.9,
           spread: float = 0.01) -> pd.DataFrame:
    """Two replications per (policy, N = 10², 10³, 10⁴) whose jobs waiting per server are
    2·N^k (± ``spread``, relative)."""
    rows = []
    for label, k in pace.items():
        for n in (100, 1_000, 10_000):
            waiting = 2 * n ** k
            for offset in (1 - spread, 1 + spread):
                mean = (waiting * offset + load * (1 - mu)) * n
                rows.append({"policy_label": label, "system.n_servers": n, "x": 1.0,
                             "stability": "stable", **row(f"{n}x{mu}", mean, load)})
    return pd.DataFrame(rows)


def test_the_exponent_reads_one_over_root_n() -> None:
    data = curves({"JIQ": -0.5, "fast": -1.0, "JSQ": 0.2})
    every = data["x"] == 1.0
    verdict = scales_like_root(data, ["JIQ"], every, "β = 1")
    assert verdict.status == "held" and "as 1/√N" in verdict.numbers
    assert "√N·w = 2" in verdict.numbers
    assert scales_like_root(data, ["fast"], every, "").status == "trend"
    assert scales_like_root(data, ["JSQ"], every, "").status == "not held"
    assert scales_like_root(data, ["JIQ", "JSQ"], every, "").status == "held in part"
    k = float(verdict.numbers.split("k = ")[1].split(" ")[0])
    assert math.isclose(k, -0.5, abs_tol=1e-9)


def test_a_curve_the_identity_cannot_read_is_not_judged() -> None:
    data = curves({"JIQ": -0.5})
    data["system.service"] = "geometric"
    assert scales_like_root(data, ["JIQ"], data["x"] == 1.0, "").status == "undecided"


@pytest.mark.parametrize("servers, service", [("2x0.1,2x0.5", "bernoulli"), ("4x0.3", "geometric")])
def test_a_sweep_cannot_ask_for_it_where_rate_balance_does_not_give_it(servers, service) -> None:
    spec = ExperimentSpec(
        "w", systems=(SystemSpec(servers, service=service),), policies=(PolicySpec("jsq"),),
        loads=(0.5,), slots=1_000,
        figures=(FigureSpec("w", y="jobs_waiting_per_server"),))
    with pytest.raises(ValidationError, match=r"figures\[0\]\.y: jobs_waiting_per_server "
                       "needs Bernoulli service of one rate"):
        spec.validate()
    replace(spec, systems=(SystemSpec("4x0.3"),)).validate()


def test_intervals_too_wide_to_see_a_fall_decide_nothing() -> None:
    """A curve that falls like 1/√N but whose replications spread ±60 %: the exponent's
    range holds −1/2 and 0 alike, so the reading is undecided, not held (a range that
    merely holds −1/2 is no evidence of the pace)."""
    data = curves({"JIQ": -0.5}, spread=0.6)
    verdict = scales_like_root(data, ["JIQ"], data["x"] == 1.0, "")
    assert verdict.status == "undecided" and "cannot tell whether it falls" in verdict.numbers
    flat = curves({"JSQ": 0.0})
    assert scales_like_root(flat, ["JSQ"], flat["x"] == 1.0, "").status == "undecided"
