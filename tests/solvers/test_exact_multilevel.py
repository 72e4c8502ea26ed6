"""The two-server multilevel solver for JIQ / JBT-r (dispatchlab.solvers.multilevel):
agreement with the plain chain at equal truncation, the conservation law and the drift
identity of (ΣQ)², the hand-over from ``dispatchlab.exact``, refusals."""

from __future__ import annotations

import math
import time
import warnings

import numpy as np
import pytest

import dispatchlab
from dispatchlab.core.errors import ValidationError
from dispatchlab.core.ram import LIMIT_VARIABLE
from dispatchlab.model import System
from dispatchlab.policies import make_policy
from dispatchlab.solvers.chain import solve
from dispatchlab.solvers.multilevel import (
    BYTES_PER_STATE,
    axis_drifts,
    rule_tables,
    solve_two_server,
)
from dispatchlab.solvers.two_server_law import dispatch_laws

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


#: (rates, rule, arrivals, dispatch): JIQ's uniform fallback needs equal servers here
BATCH_CASES = [
    ([0.2, 0.8], "jbt", {"r": 3}, "poisson", "batch"),
    ([0.2, 0.8], "jbt", {"r": 3}, "poisson", "per-job"),
    ([0.2, 0.8], "jbt", {"r": 1}, "binomial:3", "per-job"),
    ([0.5, 0.5], "jiq", {}, "poisson", "batch"),
    ([0.5, 0.5], "jiq", {}, "binomial:3", "per-job"),
    pytest.param([0.5, 0.5], "jiq", {}, "poisson", "per-job", marks=pytest.mark.slow),
]


@pytest.mark.parametrize(("rates", "name", "params", "arrivals", "dispatch"), BATCH_CASES)
def test_several_jobs_a_slot_agree_with_the_plain_chain(rates: list, name: str,
                                                        params: dict, arrivals: str,
                                                        dispatch: str) -> None:
    """Poisson and binomial arrivals, in a batch or job by job: the interior kernel and the
    boundary rows are the plain chain's law, state for state (equal K, equal law cut)."""
    system = System.build(rates, epsilon=0.2, arrivals=arrivals, service="bernoulli",
                          dispatch=dispatch)
    policy = make_policy(name, **params)
    chain = solve(system, policy)
    result = solve_two_server(system, policy.exact_memory(system), name=name,
                              truncation=chain.truncation)
    assert result.residual <= 1e-13 and chain.law_tail <= result.law_tail < 1e-13
    assert result.mean_total_queue == pytest.approx(chain.mean_total_queue, rel=1e-9)
    assert result.mean_queues == pytest.approx(chain.mean_queues, rel=1e-9)
    assert result.total_queue_distribution == pytest.approx(
        chain.total_queue_distribution, rel=1e-6, abs=1e-11)


def _drift_identity(system: System, result) -> float:
    """ε·E[ΣQ] by the drift identity of (ΣQ)²: (σ_a² + σ_s² + ε² − E[U_Σ²])/2
    + E[ΣQ(t+1)ΣU(t)] + E[U_Σ L] − K·E[L] − E[L²]/2 (L: the jobs lost at the edge)."""
    mu = np.asarray(system.rates)
    variance = system.arrivals.variance + float(np.sum(mu * (1 - mu)))
    return ((variance + system.epsilon**2 - result.mean_unused_square) / 2 + result.cross_term
            + result.unused_loss - result.truncation * result.loss_rate
            - result.loss_square / 2)


@pytest.mark.parametrize(("name", "params"), CASES)
def test_conservation_and_the_drift_identity(name: str, params: dict) -> None:
    # E[U_Σ] = μ_Σ − λ_Σ + E[L], and the drift identity (_drift_identity)
    epsilon = 0.1
    system = _system([0.3, 0.6], epsilon)
    policy = make_policy(name, **params)
    result = solve_two_server(system, policy.exact_memory(system), name=name)
    assert result.mean_unused == pytest.approx(epsilon + result.loss_rate, rel=1e-10)
    assert epsilon * result.mean_total_queue == pytest.approx(_drift_identity(system, result),
                                                              abs=1e-10)
    assert result.edge_mass <= 1e-9


def test_several_jobs_a_slot_go_to_the_multilevel_solver_early(monkeypatch) -> None:
    """With Poisson arrivals the plain chain's per-job splits are slow (JBT-3, ε = 0.03:
    98,340 states, 119 s): past SEVERAL_JOBS_HANDOVER states the facade hands over even
    within max_states, and says why; Bernoulli arrivals stay on the plain chain. (Shown on
    a chain a tenth the size, with the line moved to match: 0.6 s, where ε = 0.03 and the
    line at 50,000 took 3.8 s.)"""
    from dispatchlab.solvers import chain

    monkeypatch.setattr(chain, "SEVERAL_JOBS_HANDOVER", 5_000)
    poisson = System.build([0.5, 0.5], epsilon=0.1, arrivals="poisson",
                           service="bernoulli", dispatch="per-job")
    result = dispatchlab.exact(poisson, "jbt", policy_params={"r": 3})
    assert "multilevel" in result.method and result.states > chain.SEVERAL_JOBS_HANDOVER
    assert any("has over 5,000 states with several jobs a slot" in note for note in result.notes)
    bernoulli = _system([0.5, 0.5], 0.05)
    assert "multilevel" not in dispatchlab.exact(bernoulli, "jbt", policy_params={"r": 2}).method


@pytest.mark.parametrize("dispatch", ["per-job", "batch"])
def test_the_drift_identity_with_several_jobs_lost_a_slot(dispatch: str) -> None:
    """With Poisson arrivals a slot can lose several jobs at the edge: the identity's edge
    terms are E[U_Σ L] − K·E[L] − E[L²]/2 ((K + ½)E[L] only while L ≤ 1). A small K makes
    them large (P(ΣQ = K) of a few per cent), and the identity holds all the same."""
    epsilon = 0.1
    system = System.build([0.3, 0.6], epsilon=epsilon, arrivals="poisson",
                          service="bernoulli", dispatch=dispatch)
    result = solve_two_server(system, make_policy("jbt", r=2).exact_memory(system),
                              truncation=12)
    assert result.edge_mass > 0.01 and result.loss_square > 1.2 * result.loss_rate
    assert epsilon * result.mean_total_queue == pytest.approx(_drift_identity(system, result),
                                                              abs=1e-10)
    assert result.mean_unused == pytest.approx(epsilon + result.loss_rate, rel=1e-10)


@pytest.mark.parametrize("epsilon", [1e-4, pytest.param(1e-9, marks=pytest.mark.slow)])
def test_poisson_far_below_what_fits_is_one_line_at_once(epsilon: float, capsys) -> None:
    """ε far below what the chain resolves (ΣQ's scale 1/ε): refused before anything is
    built, in Python and on the command line, with the field and the size it would need."""
    from dispatchlab.cli import main

    system = System.build([0.5, 0.5], epsilon=epsilon, arrivals="poisson",
                          service="bernoulli", dispatch="per-job")
    started = time.perf_counter()
    with pytest.raises(ValidationError, match=r"^max_states: the chain would hold [\d,]+ "
                       r"states"):
        dispatchlab.exact(system, "jbt", policy_params={"r": 3})
    status = main(["check", "exact", "--servers", "0.5,0.5", "--dispatchers", "1",
                   "--arrivals", "poisson", "--dispatch", "per-job", "--epsilon",
                   str(epsilon), "--policy", "jbt", "--set", "r=3"])
    assert time.perf_counter() - started < 10
    captured = capsys.readouterr()
    assert status == 2 and captured.out == "" and captured.err.count("\n") == 1
    assert captured.err.startswith("error: max_states: the chain would hold")


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
    # a rule the multilevel solver does not take is still refused by the plain chain, which
    # names the QBD (JSED on equal servers is JSQ); method="auto" takes it
    with pytest.raises(ValidationError, match="^max_states: the state space would hold.*"
                       "method='qbd' answers it"):
        dispatchlab.exact(system, "jsed", method="chain", max_states=3_000)
    assert "QBD" in dispatchlab.exact(system, "jsed", max_states=3_000).method


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
    geometric = System.build([0.5, 0.5], epsilon=0.1, arrivals="poisson", service="geometric")
    with pytest.raises(ValidationError, match="^service: the multilevel solver needs"):
        solve_two_server(geometric, policy.exact_memory(geometric))
    for tail in (0.5, math.nan, 0.0):
        with pytest.raises(ValidationError, match=r"^law_tail: must be in \(0, 1e-3\)"):
            solve_two_server(system, rule, law_tail=tail)


@pytest.mark.slow
def test_multilevel_agrees_with_a_long_simulation() -> None:
    system = _system([0.3, 0.6], 0.01)
    exact = solve_two_server(system, make_policy("jbt", r=2).exact_memory(system))
    sim = dispatchlab.simulate(system, "jbt", policy_params={"r": 2}, slots=3_000_000,
                               replications=8, seed=3, workers=1, estimator="plain",
                               delay="off")
    assert abs(sim.mean_total_queue - exact.mean_total_queue) <= 1.5 * sim.half_width


@pytest.mark.parametrize("r", [10_000, 100_000_000])
def test_a_threshold_too_large_to_solve_is_refused_at_once(r: int, capsys) -> None:
    """r = 10⁴ was refused only after 43 s (with a RuntimeWarning of inf/inf), r = 10⁸ ran
    in 1.8 GB with no output: the multilevel solver's K ≥ r makes its smallest chain too
    large, refused first (at ε = 0.003 the plain chain hands over to it)."""
    from dispatchlab.cli import main

    system = _system([0.5, 0.5], 0.003)
    started = time.perf_counter()
    with pytest.raises(ValidationError, match=rf"^r: the threshold r = {r:,} needs"):
        dispatchlab.exact(system, "jbt", policy_params={"r": r})
    status = main(["check", "exact", "--servers", "0.5,0.5", "--dispatchers", "1",
                   "--arrivals", "bernoulli", "--epsilon", "0.003", "--policy", "jbt",
                   "--set", f"r={r}"])
    assert time.perf_counter() - started < 5  # (well under a second each, unloaded)
    captured = capsys.readouterr()
    assert status == 2 and captured.out == "" and captured.err.count("\n") == 1
    assert f"r = {r:,}" in captured.err


def test_axis_drifts_of_a_large_threshold_are_finite() -> None:
    """The induced drift along an axis in logs: the product of r ratios above 1 had
    overflowed to inf/inf (nan) for r = 10⁴."""
    system = _system([0.5, 0.5], 0.05)
    rule = make_policy("jbt", r=10_000).exact_memory(system)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        d_p, d_t, d_a, _, _ = rule_tables(rule)
        pa = np.array([1 - system.arrival_rate, system.arrival_rate])
        drifts = axis_drifts(system, dispatch_laws(1, False, d_p, d_t, d_a), pa, 10_000)
    assert all(np.isfinite(interior) and not np.isnan(induced)
               for interior, induced in drifts)


def test_the_memory_guard_comes_before_the_chain(monkeypatch) -> None:
    system = _system([0.5, 0.5], 0.05)
    rule = make_policy("jbt", r=2).exact_memory(system)
    monkeypatch.setenv(LIMIT_VARIABLE, "100K")
    with pytest.raises(ValidationError, match="^max_states: the multilevel chain of"):
        solve_two_server(system, rule)
    monkeypatch.delenv(LIMIT_VARIABLE)
    assert solve_two_server(system, rule).states > 100 * 1024 // BYTES_PER_STATE


def test_check_exact_hands_over_without_max_states(monkeypatch, capsys) -> None:
    """`check exact` passed its default --max-states (400,000) on, which capped the
    multilevel solver as well: ε = 0.003 (1,228,528 states) was refused. Without the
    option each solver keeps its own default (the plain chain's, made small here)."""
    import json

    from dispatchlab.cli import main
    from dispatchlab.solvers import chain

    monkeypatch.setattr(chain, "MAX_STATES", 3_000)
    base = ["check", "exact", "--servers", "0.5,0.5", "--dispatchers", "1", "--arrivals",
            "bernoulli", "--epsilon", "0.05", "--policy", "jbt", "--set", "r=2"]
    assert main([*base, "--json"]) == 0
    result = json.loads(capsys.readouterr().out)
    assert "multilevel" in result["method"] and result["states"] > 3_000
    assert main([*base, "--max-states", "3000"]) == 2
    assert capsys.readouterr().err.startswith("error: max_states: the chain would hold")


@pytest.mark.parametrize("every", [False, pytest.param(True, marks=pytest.mark.slow)],
                         ids=["sample", "every"])
@pytest.mark.parametrize(("arrivals", "stem", "law"), [
    ("poisson", "poisson", "Poisson arrivals dispatched job by job"),
    ("binomial:2", "binomial_2", "Binomial (at most 2 jobs a slot) arrivals dispatched job by job"),
])
def test_the_committed_batch_tables_are_what_the_solver_gives(arrivals: str, stem: str,
                                                              law: str, every: bool) -> None:
    """results/exact/jbt_two_server_{poisson,binomial_2}.json: every row satisfies the drift
    identity with its edge terms and the residual target, the markdown table shows every
    row, and ε = 0.1 rows (the cheap ones) are recomputed: in the default suite one for
    each policy, on the systems in turn (4 of 12, 0.4 s each with Poisson arrivals); in
    the slow suite every one."""
    import json
    from pathlib import Path

    folder = Path(__file__).resolve().parents[2] / "results" / "exact"
    table = json.loads((folder / f"jbt_two_server_{stem}.json").read_text(encoding="utf-8"))
    text = (folder / f"jbt_two_server_{stem}.md").read_text(encoding="utf-8")
    assert law in text
    rows = table["rows"]
    assert {x["epsilon"] for x in rows} >= {0.1, 0.03, 0.01, 0.003, 0.001}
    cheap = [x for x in rows if x["epsilon"] == 0.1]
    if not every:  # each policy once, on the systems in turn
        policies = list(dict.fromkeys(repr((x["policy"], x["params"])) for x in cheap))
        systems = list(dict.fromkeys(repr(x["system"]) for x in cheap))
        cheap = [x for x in cheap if systems.index(repr(x["system"]))
                 == policies.index(repr((x["policy"], x["params"]))) % len(systems)]
        assert len(cheap) == len(policies) == 4
    for x in rows:
        assert x["arrivals"] == arrivals and x["residual"] <= 1e-13
        assert abs(x["drift_identity_gap_with_loss"]) <= 1e-9
        assert f"| {x['eps_EQ_minus_zeta_half']:.6f} | {x['eps_EX']:.6f} |" in text
        if x in cheap:
            system = System.build(x["system"], epsilon=0.1, arrivals=arrivals,
                                  service="bernoulli", dispatch="per-job")
            policy = make_policy(x["policy"], **x["params"])
            again = solve_two_server(system, policy.exact_memory(system),
                                     tolerance=x["tolerance"])
            assert again.mean_total_queue == pytest.approx(x["mean_total_queue"], rel=1e-9)
