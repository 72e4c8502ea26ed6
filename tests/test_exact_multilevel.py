"""The two-server multilevel solver for JIQ / JBT-r (dispatchlab.exact.multilevel):
agreement with the plain chain at equal truncation, the conservation law and the drift
identity of (ΣQ)², the hand-over from ``dispatchlab.exact``, refusals."""

from __future__ import annotations

import numpy as np
import pytest

import dispatchlab
from dispatchlab.core.errors import ValidationError
from dispatchlab.exact.chain import solve
from dispatchlab.exact.multilevel import solve_two_server
from dispatchlab.model import System
from dispatchlab.policies import make_policy

CASES = [("jbt", {"r": 1}), ("jbt", {"r": 3}), ("jiq", {}),
         ("jbt", {"threshold": "log", "K": 2.0, "weighted": False})]


def _system(rates: list[float], epsilon: float) -> System:
    return System.build(rates, epsilon=epsilon, arrivals="bernoulli", service="bernoulli")


@pytest.mark.parametrize(("name", "params"), CASES)
@pytest.mark.parametrize("rates", [[0.2, 0.8], [0.5, 0.5]])
def test_multilevel_agrees_with_the_plain_chain(name: str, params: dict, rates: list) -> None:
    system = _system(rates, 0.05)
    policy = make_policy(name, **params)
    chain = solve(system, policy)
    result = solve_two_server(system, policy.exact_memory(system), name=name,
                              truncation=chain.truncation)
    assert result.residual <= 1e-13
    assert result.mean_total_queue == pytest.approx(chain.mean_total_queue, rel=1e-8)
    assert result.mean_queues == pytest.approx(chain.mean_queues, rel=1e-8)
    # the far tail carries the solver's absolute error (~‖πP − π‖₁), not a relative one
    assert result.loss_rate == pytest.approx(chain.loss_rate, rel=1e-3, abs=1e-14)
    assert result.total_queue_distribution == pytest.approx(
        chain.total_queue_distribution, rel=1e-6, abs=1e-11)


@pytest.mark.parametrize(("name", "params"), CASES)
def test_conservation_and_the_drift_identity(name: str, params: dict) -> None:
    # E[U_Σ] = μ_Σ − λ_Σ + E[L]; ε·E[ΣQ] = (σ_a² + σ_s² + ε² − E[U_Σ²])/2
    #   + E[ΣQ(t+1)ΣU(t)] + E[U_Σ L] − (K + ½)E[L]  (L: the jobs lost at the edge)
    epsilon = 0.1
    system = _system([0.3, 0.6], epsilon)
    policy = make_policy(name, **params)
    result = solve_two_server(system, policy.exact_memory(system), name=name)
    assert result.mean_unused == pytest.approx(epsilon + result.loss_rate, rel=1e-10)
    lam, mu = system.arrival_rate, np.asarray(system.rates)
    variance = lam * (1 - lam) + float(np.sum(mu * (1 - mu)))
    identity = ((variance + epsilon**2 - result.mean_unused_square) / 2 + result.cross_term
                + result.unused_loss - (result.truncation + 0.5) * result.loss_rate)
    assert epsilon * result.mean_total_queue == pytest.approx(identity, abs=1e-10)
    assert result.edge_mass <= 1e-9


def test_the_facade_hands_a_large_chain_to_the_multilevel_solver() -> None:
    system = _system([0.5, 0.5], 0.05)
    plain = dispatchlab.exact(system, "jbt", policy_params={"r": 2})
    # the plain chain's K grows past 20,000 states; the multilevel solver fits in them
    # (it is held to an explicit max_states too: 3,000 is refused, issue 47)
    handed = dispatchlab.exact(system, "jbt", policy_params={"r": 2}, max_states=20_000)
    assert "multilevel" in handed.method and "multilevel" not in plain.method
    assert handed.states <= 20_000
    with pytest.raises(ValidationError, match="^max_states: the chain would hold"):
        dispatchlab.exact(system, "jbt", policy_params={"r": 2}, max_states=3_000)
    assert handed.extras["residual"] <= 1e-13
    assert handed.mean_total_queue == pytest.approx(plain.mean_total_queue, rel=1e-7)
    # a rule the multilevel solver does not take is still refused by the plain chain
    with pytest.raises(ValidationError, match="^max_states: the state space would hold"):
        dispatchlab.exact(system, "jsed", max_states=3_000)


def test_refusals_name_the_field() -> None:
    policy = make_policy("jbt", r=2)
    three = System.build([0.3, 0.3, 0.3], epsilon=0.1, arrivals="bernoulli",
                         service="bernoulli")
    with pytest.raises(ValidationError, match="^servers: the multilevel solver is for N = 2"):
        solve_two_server(three, policy.exact_memory(three))
    system = _system([0.5, 0.5], 0.03)
    rule = policy.exact_memory(system)
    with pytest.raises(ValidationError, match="^max_states: the chain would hold"):
        solve_two_server(system, rule, max_states=1_000)
    with pytest.raises(ValidationError, match=r"^residual: the multilevel cycles reached"):
        solve_two_server(system, rule, max_cycles=1, residual=1e-15)
    # JIQ's uniform fallback overloads μ = 0.3 while the fast server is busy, and the fast
    # server's idle periods no longer make up for it below ε ≈ 0.025
    jiq = make_policy("jiq")
    unstable = _system([0.3, 0.6], 0.01)
    with pytest.raises(ValidationError, match="^load: jiq is unstable on this system"):
        solve_two_server(unstable, jiq.exact_memory(unstable), name="jiq")
    poisson = System.build([0.5, 0.5], epsilon=0.1, arrivals="poisson", service="bernoulli")
    with pytest.raises(ValidationError, match="^arrivals: the multilevel solver needs"):
        solve_two_server(poisson, policy.exact_memory(poisson))


@pytest.mark.slow
def test_multilevel_agrees_with_a_long_simulation() -> None:
    system = _system([0.3, 0.6], 0.01)
    exact = solve_two_server(system, make_policy("jbt", r=2).exact_memory(system))
    sim = dispatchlab.simulate(system, "jbt", policy_params={"r": 2}, slots=3_000_000,
                               replications=8, seed=3, workers=1, estimator="plain",
                               track_delay=False)
    assert abs(sim.mean_total_queue - exact.mean_total_queue) <= 1.5 * sim.half_width
