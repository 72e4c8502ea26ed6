"""Framework Π policies (docs/model.md#pi-components,
docs/model.md#pi-members): agreement with the classical policies,
periodic reads and their messages, the predicted stability threshold in simulation,
custom decision functions."""

from __future__ import annotations

import math

import numpy as np
import pytest
from numba import njit

from conftest import load_example
from dispatchlab import System, ValidationError, simulate
from dispatchlab.compiled.rng import make_rng_state
from dispatchlab.engine.interface import REPORT, Context, Slot, Step
from dispatchlab.policies import make_policy
from dispatchlab.policies.framework import PiPolicy
from dispatchlab.policies.framework.decisions import pod_decision
from dispatchlab.policies.framework.fractions import dispatch_fractions, monte_carlo_fractions
from dispatchlab.policies.framework.kernel import sample_order
from dispatchlab.theory.stability import induced_threshold, rank_fractions_pod

SLOTS = 200_000


def agree(a, b, label: str) -> None:
    """Two estimates of the same mean: within 3 combined CI half-widths."""
    half = math.hypot((a.ci_high - a.ci_low) / 2, (b.ci_high - b.ci_low) / 2)
    assert abs(a.mean_total_queue - b.mean_total_queue) <= 3 * half, (
        f"{label}: {a.mean_total_queue:.4g} [{a.ci_low:.4g}, {a.ci_high:.4g}] vs "
        f"{b.mean_total_queue:.4g} [{b.ci_low:.4g}, {b.ci_high:.4g}]")


@pytest.mark.parametrize(("classic", "params", "pi"), [
    ("rand", {}, "pi-rand"),
    ("jsq", {}, "pi-jsq"),
    ("pod", {"d": 2}, "pi-pod"),
    ("jsed", {"plus_one": False}, "pi-jsed"),
    ("wrand", {}, "pi-wrand"),
])
def test_pi_members_agree_with_classical_policies(classic, params, pi):
    system = System.build("0.5,0.5,0.6,0.6,0.9", load=0.75)
    a = simulate(system, classic, policy_params=params, slots=SLOTS, seed=11)
    b = simulate(system, pi, slots=SLOTS, seed=12)
    assert a.stable and b.stable
    agree(a, b, f"{classic} vs {pi}")
    # per server, within the noise: ΣQ's relative CI half-width bounds that of the server
    # that dominates it (under RAND, server 0 runs at ρ_0 = 0.93 and ΣQ's is ~25 %)
    noise = 3 * max(a.relative_half_width, b.relative_half_width)
    assert np.allclose(a.mean_queues, b.mean_queues, rtol=max(0.25, noise), atol=0.05)


def test_order_oblivious_decisions_send_no_messages_and_order_reads_cost_n():
    system = System.build("0.5,0.5,0.6,0.6", load=0.6)
    assert simulate(system, "pi-rr", slots=20_000, seed=1).messages_per_arrival == 0.0
    jsq = simulate(system, "pi-jsq", slots=20_000, warmup=2_000, seed=1)
    # T = 1: one read of N one-way reports in every measured slot
    reports = jsq.messages_by_kind["report"] * jsq.arrival_rate_measured * 18_000
    assert reports == pytest.approx(4 * 18_000, rel=1e-9)


@pytest.mark.parametrize(("T", "dispatchers"), [(5, 1), (7, 3)])
def test_periodic_policies_read_only_every_T_slots(T, dispatchers):
    system = System.build("0.3,0.5,0.6,0.9", load=0.7, dispatchers=dispatchers)
    slots, warmup = 70_000, 7_000
    result = simulate(system, "periodic-jsq", policy_params={"T": T}, slots=slots,
                      warmup=warmup, seed=3)
    measured = slots - warmup
    reads = measured // T
    reports = result.messages_by_kind["report"] * result.arrival_rate_measured * measured
    assert reports == pytest.approx(4 * dispatchers * reads, rel=1e-9)
    assert result.diagnostics["samples_per_slot"] == pytest.approx(reads / measured)


def test_destinations_change_only_at_cycle_starts():
    """Drive the compiled hooks by hand: Q changes every slot, the choice only at t = kT."""
    system = System.build("0.5,0.5,0.5,0.5", load=0.5)
    T = 4
    kernel = make_policy("periodic-jsq", T=T).kernel(system)
    memory = kernel.memory()
    ctx = Context(make_rng_state(0), np.zeros(4, np.int64))
    diag = np.zeros(max(1, kernel.n_diagnostics))
    zeros = np.zeros(4, np.int64)
    chosen = []
    for t in range(3 * T):
        Q = np.full(4, 10, np.int64)
        Q[t % 4] = 0  # a different shortest queue in every slot
        slot = Slot(t, Q, system.mu)
        kernel.begin_slot(slot, Step(Q, zeros, np.ones(1, np.int64), diag, True), memory, ctx)
        chosen.append(kernel.choose(0, 1, slot, memory, ctx))
    assert chosen == [0] * T + [0] * T + [0] * T  # the shortest at t = 0, 4, 8 is server 0
    assert ctx.msg[REPORT] == 4 * 3


def test_ties_are_broken_uniformly():
    """All queues equal: the Π JSQ order is a uniform permutation, so every server is chosen
    about equally often."""
    system = System.build("0.5,0.5,0.5,0.5", load=0.5)
    kernel = make_policy("pi-jsq").kernel(system)
    memory = kernel.memory()
    ctx = Context(make_rng_state(5), np.zeros(4, np.int64))
    Q = np.zeros(4, np.int64)
    step = Step(Q, Q, np.ones(1, np.int64), np.zeros(kernel.n_diagnostics), False)
    counts = np.zeros(4)
    for t in range(4000):
        slot = Slot(t, Q, system.mu)
        kernel.begin_slot(slot, step, memory, ctx)
        counts[kernel.choose(0, 1, slot, memory, ctx)] += 1
    assert np.all(np.abs(counts / 4000 - 0.25) < 0.035)


def test_monte_carlo_fractions_of_pod_match_the_exact_ones():
    mu = np.array([0.2, 0.4, 0.6, 0.8, 1.0])
    policy = make_policy("pi-pod", d=3)
    estimate = monte_carlo_fractions(policy, mu, np.array([4, 2, 0, 1, 3]), cycles=40_000)
    assert np.allclose(estimate, rank_fractions_pod(5, 3), atol=0.01)


# N = 4 heterogeneous system: predicted threshold λ̄ of each policy, then simulation 10 %
# below (stable) and 10 % above (unstable, the run hits the lowered bound).
STABILITY_MU = "0.1,0.1,0.5,1.0"
STABILITY_CASES = [
    ("pi-rand", {}, 0.4),
    ("pod", {"d": 2}, 1.2),
    ("pi-pod", {"d": 2}, 1.2),
    ("kslq", {"d": 2}, 1.4),
    ("periodic-pod", {"d": 2, "T": 4}, 1.2),
]


@pytest.mark.parametrize(("name", "params", "expected"), STABILITY_CASES)
def test_threshold_separates_stable_from_unstable_runs(name, params, expected):
    base = System.build(STABILITY_MU, load=0.5)
    policy = make_policy(name, **params)
    region = induced_threshold(dispatch_fractions(policy, base.mu), base.mu)
    assert region.threshold_rate == pytest.approx(expected)
    below = simulate(base.with_rate(0.9 * expected), policy, slots=SLOTS, seed=21, bound=4_000)
    above = simulate(base.with_rate(1.1 * expected), policy, slots=SLOTS, seed=22, bound=4_000)
    assert below.stability == "stable", below.stability_evidence
    assert above.stability == "unstable", above.stability_evidence


def test_bad_parameters_are_refused():
    system = System.build("0.5,0.5,0.5", load=0.5)
    with pytest.raises(ValidationError, match="decision"):
        make_policy("pi-framework", decision="nope")
    with pytest.raises(ValidationError, match="gamma"):
        simulate(system, "pi-framework", policy_params={"gamma": "1,2"}, slots=100)
    with pytest.raises(ValidationError, match="gamma"):
        simulate(system, "pi-framework", policy_params={"gamma": "1,-2,3"}, slots=100)
    with pytest.raises(ValidationError, match="own cycle"):
        simulate(system, "pi-rr", policy_params={"T": 5}, slots=100)
    with pytest.raises(ValidationError, match="d"):
        simulate(system, "pi-pod", policy_params={"d": 4}, slots=100)
    with pytest.raises(ValidationError, match="d"):
        simulate(system, "kslq", policy_params={"d": 3}, slots=100)


def test_collapse_diagnostics_are_recorded_at_sampling_times():
    system = System.build("0.2,0.4,0.6,0.8", load=0.9)
    result = simulate(system, "pi-jsed", slots=100_000, seed=4)
    diag = result.diagnostics
    assert diag["samples_per_slot"] == pytest.approx(1.0)
    assert diag["perp_sq"] >= 0 and diag["sampled_total_queue"] > 0
    shares = [diag[f"sampled_share_{l}"] for l in range(4)]
    assert sum(shares) == pytest.approx(1.0)
    assert shares == sorted(shares)  # JSED keeps faster servers' queues longer


def test_custom_decision_example_runs():
    module = load_example("custom_decision_function")
    out = module.main(slots=50_000)
    assert out["threshold_rate"] == pytest.approx(1.6, rel=1e-6)
    assert out["stable"] == 1.0
    policy = make_policy("pi-framework", decision="two-shortest", T=2)
    assert isinstance(policy, PiPolicy)
    fractions = dispatch_fractions(policy, np.array([0.2, 0.3, 0.5, 0.6]))
    assert np.allclose(fractions.values, [0, 0, 0.5, 0.5], atol=0.01)


def _two_sample_chi2_p(a: np.ndarray, b: np.ndarray) -> float:
    from scipy import stats

    live = (a + b) > 0
    table = np.vstack([a[live], b[live]])
    return float(stats.chi2_contingency(table)[1])


@njit(cache=True)
def _eta_pairs(Q, g, mu, reps, rng):
    """Counts of (first, second) destinations of ``reps`` Po-2 decisions on a fresh rank
    sampling η each (the reference law of the fast path's cycle)."""
    n = Q.size
    perm = np.zeros(n, np.int64)
    keys = np.zeros(n)
    eta = np.zeros(n, np.int64)
    dest = np.zeros(2, np.int64)
    scratch = np.zeros(n, np.int64)
    ip = np.array([2], np.int64)
    counts = np.zeros(n * n, np.int64)
    for _ in range(reps):
        sample_order(Q, g, perm, keys, eta, rng)
        pod_decision(eta, mu, ip, mu, rng, dest, scratch)
        counts[dest[0] * n + dest[1]] += 1
    return counts


@pytest.mark.parametrize("gamma", ["ones", "mu"])
def test_pod_fast_path_draws_the_law_of_ranks_of_eta(gamma: str) -> None:
    """periodic Po-2 (T = 2) without η: the joint law of a cycle's two destinations (ties
    broken consistently within the cycle) equals that of the rank sampling on η."""
    system = System.build("0.2,0.4,0.4,0.8,0.8", load=0.5)
    kernel = make_policy("periodic-pod", T=2, gamma=gamma).kernel(system)
    memory = kernel.memory()
    ctx = Context(make_rng_state(8), np.zeros(4, np.int64))
    Q = np.array([1, 2, 4, 2, 4], np.int64)  # ties in Q and in Q/μ
    n, reps = Q.size, 20_000
    step = Step(Q, Q, np.ones(1, np.int64), np.zeros(kernel.n_diagnostics), False)
    fast = np.zeros(n * n, np.int64)
    for k in range(reps):
        first = kernel.begin_slot(Slot(2 * k, Q, system.mu), step, memory, ctx)
        assert first is None
        a = kernel.choose(0, 1, Slot(2 * k, Q, system.mu), memory, ctx)
        kernel.begin_slot(Slot(2 * k + 1, Q, system.mu), step, memory, ctx)
        b = kernel.choose(0, 1, Slot(2 * k + 1, Q, system.mu), memory, ctx)
        fast[a * n + b] += 1
    g = np.ones(n) if gamma == "ones" else system.mu.copy()
    reference = _eta_pairs(Q, g, system.mu, reps, make_rng_state(9))
    assert _two_sample_chi2_p(fast, reference) > 1e-4


def _collapse_reference(Q: np.ndarray, gamma: np.ndarray) -> tuple[float, float]:
    """‖P_⊥‖² (P = Q/√γ) and ‖O_⊥‖² (O = Q/γ), both off the direction c = √γ
    (docs/model.md#pi-heavy-traffic)."""
    c = np.sqrt(gamma)

    def perp(x: np.ndarray) -> float:
        return float(np.sum((x - (x @ c) / (c @ c) * c) ** 2))

    return perp(Q / c), perp(Q / gamma)


@pytest.mark.parametrize("gamma", ["ones", "mu", "0.5,1,2,4,8"])
@pytest.mark.parametrize("scale", [1, 2_000_000_000])  # the second: beyond the integer path
def test_collapse_measures_match_their_definition(gamma: str, scale: int) -> None:
    """The vectorised (γ = 1: integer) passes give ‖P_⊥‖², ‖O_⊥‖², ΣQ and the per-server
    sums of the definitions, also when N·ΣQ² would overflow 64 bits (the float fallback)."""
    system = System.build("0.2,0.4,0.4,0.8,0.8", load=0.5)
    policy = make_policy("pi-framework", decision="pod", gamma=gamma, T=1)
    kernel = policy.kernel(system)
    memory = kernel.memory()
    ctx = Context(make_rng_state(3), np.zeros(4, np.int64))
    diag = np.zeros(kernel.n_diagnostics)
    g = np.asarray([float(x) for x in gamma.split(",")]) if "," in gamma else (
        np.ones(5) if gamma == "ones" else system.mu.copy())
    reads = [np.array([3, 0, 7, 7, 1], np.int64) * scale, np.array([0, 0, 0, 0, 0], np.int64),
             np.array([1, 2, 2, 4, 4], np.int64) * scale]
    for t, Q in enumerate(reads):
        step = Step(Q, Q, np.ones(1, np.int64), diag, True)
        kernel.begin_slot(Slot(t, Q, system.mu), step, memory, ctx)
    expected = [_collapse_reference(Q.astype(float), g) for Q in reads]
    summary = policy.summarize(diag, len(reads), system)
    assert diag[0] == len(reads)
    assert summary["perp_sq"] == pytest.approx(np.mean([e[0] for e in expected]), rel=1e-12)
    assert summary["perp_sq_literal"] == pytest.approx(np.mean([e[1] for e in expected]),
                                                       rel=1e-12)
    assert summary["sampled_total_queue"] == pytest.approx(np.mean([Q.sum() for Q in reads]))
    assert np.allclose(diag[5:], np.sum(reads, axis=0))


def test_minimiser_passes_find_exactly_the_ties_of_the_scaled_lengths() -> None:
    """The fast minimisers (integer for γ = 1, the quotients' bit patterns otherwise) list
    exactly the servers where Q_l/γ_l (as computed in floating point) is smallest."""
    from dispatchlab.policies.framework.kernel import minimisers, scaled_minimisers

    rng = np.random.default_rng(5)
    mu = np.tile([0.2, 0.6, 0.1, 0.5, 0.3], 40)
    for trial in range(200):
        Q = rng.integers(0, 1 + trial % 7, mu.size).astype(np.int64)
        if trial % 3 == 0:  # exact scaled ties: Q_l ∝ μ_l
            Q = (np.round(mu * 10) * (1 + trial % 4)).astype(np.int64)
        ties = np.zeros(mu.size, np.int64)
        keys = np.zeros(mu.size)
        count = scaled_minimisers(Q, mu, keys, ties)
        scaled = Q / mu
        assert list(ties[:count]) == list(np.flatnonzero(scaled == scaled.min()))
        count = minimisers(Q, ties)
        assert list(ties[:count]) == list(np.flatnonzero(Q == Q.min()))


def test_shortest_fractions_are_a_unit_vector_without_an_n_by_n_matrix() -> None:
    """a = e_N for pi-jsq at N = 10⁵ (an N × N identity would need 80 GB)."""
    fractions = dispatch_fractions(make_policy("pi-jsq"), np.full(100_000, 0.5))
    assert fractions.values.shape == (100_000,)
    assert fractions.values[-1] == 1.0 and fractions.values.sum() == 1.0
