"""Pull-based policies: JBT-r memory, JIQ, persistent-idle, JID, SUJSQ/AUJSQ (docs/model.md#jbt,
docs/model.md#baselines)."""

from __future__ import annotations

import math

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from dispatchlab import System, simulate
from dispatchlab.core.errors import ValidationError
from dispatchlab.engine.raw import run_once
from dispatchlab.policies import make_policy
from dispatchlab.policies.pull import ROW_REGISTERED, threshold_for
from dispatchlab.theory.closed_forms import random_routing_constant, random_routing_total_mean
from dispatchlab.theory.heavy_traffic import pooled_limit, random_routing_limit, reference_lines

# -- the memory is {n : Q_n < r}, checked inside the compiled code every slot ---------------------


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    rates=st.lists(st.sampled_from([0.1, 0.3, 0.5, 0.9]), min_size=1, max_size=7),
    load=st.floats(0.2, 0.97),
    r=st.integers(1, 6),
    dispatchers=st.integers(1, 3),
    dispatch=st.sampled_from(["batch", "per_job"]),
    weighted=st.booleans(),
    seed=st.integers(0, 2**32 - 1),
)
def test_jbt_memory_equals_below_threshold_set(rates, load, r, dispatchers, dispatch, weighted,
                                               seed):
    system = System.build(rates, load=load, dispatchers=dispatchers, dispatch=dispatch)
    policy = make_policy("jbt", r=r, weighted=weighted, audit=True)
    result = simulate(system, policy, slots=3000, warmup=0, seed=seed, delay="off")
    # M = 1: memory = {n : Q_n < r} at every slot start; M > 1: {n : Q_n < r} ⊆ memory
    assert result.diagnostics["memory_violation_slots"] == 0
    assert 0 <= result.diagnostics["mean_memory_size"] <= len(rates)


@pytest.mark.parametrize("dispatchers", [1, 2])
def test_stale_ids_only_with_several_dispatchers(dispatchers):
    """One server: the memory holds it iff Q = 0 when M = 1, so E[memory size] = P(Q = 0).
    With M = 2 the other dispatcher's fallback feeds a listed server, which stays listed
    above r: the memory is then larger than P(Q = 0)."""
    system = System.build([0.5], load=0.6, dispatchers=dispatchers)
    result = simulate(system, make_policy("jbt", r=1, audit=True), slots=20_000, warmup=0,
                      seed=2, delay="off")
    assert result.diagnostics["memory_violation_slots"] == 0
    idle = result.total_queue_distribution[0]
    if dispatchers == 1:
        assert result.diagnostics["mean_memory_size"] == pytest.approx(idle, abs=1e-12)
    else:
        assert result.diagnostics["mean_memory_size"] > idle + 0.02


@settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    n=st.integers(1, 8),
    dispatchers=st.integers(1, 4),
    removal=st.sampled_from(["fifo", "uniform"]),
    destination=st.sampled_from(["random", "sq"]),
    load=st.floats(0.3, 0.95),
    seed=st.integers(0, 2**32 - 1),
)
def test_jiq_memory_is_the_idle_set(n, dispatchers, removal, destination, load, seed):
    system = System.build([0.5] * n, load=load, dispatchers=dispatchers, dispatch="per_job")
    d = min(2, dispatchers)
    policy = make_policy("jiq", removal=removal, destination=destination, d=d, audit=True)
    result = simulate(system, policy, slots=3000, warmup=0, seed=seed, delay="off")
    assert result.diagnostics["memory_violation_slots"] == 0


def test_audit_detects_a_corrupted_memory():
    """A server flagged as registered but missing from every list must be caught."""
    system = System.build("4x0.5", load=0.8)
    kernel = make_policy("jbt", r=2, audit=True).kernel(system)
    kernel.int_state[ROW_REGISTERED, 1] = 0  # flagged, never listed: it can never report
    raw = run_once(system, kernel, slots=500, warmup=0, seed=1, bound=10**6, time_every_job=False)
    assert raw.diag[-1] > 0


# -- JBT-r reduces to JIQ (r = 1) and to weighted random routing (r ≥ every queue) ---------------


def _overlap(a, b) -> bool:
    """Means of two independent estimates agree within twice their combined CI half-width."""
    half = math.hypot((a.ci_high - a.ci_low) / 2, (b.ci_high - b.ci_low) / 2)
    return abs(a.mean_total_queue - b.mean_total_queue) <= 2 * half


def test_jbt_with_threshold_one_is_jiq():
    system = System.build("10x0.5", load=0.9)
    jbt = simulate(system, "jbt", policy_params={"r": 1}, slots=40_000, replications=10, seed=3,
                   delay="off")
    jiq = simulate(system, "jiq", slots=40_000, replications=10, seed=4, delay="off")
    assert _overlap(jbt, jiq), (jbt.mean_total_queue, jiq.mean_total_queue)
    assert jbt.messages_per_arrival == pytest.approx(jiq.messages_per_arrival, rel=0.05)
    assert jbt.diagnostics["empty_memory_fraction"] == pytest.approx(
        jiq.diagnostics["empty_memory_fraction"], abs=0.03)
    # JIQ sits strictly between JSQ and random routing at this load
    assert jiq.mean_total_queue < random_routing_total_mean(system, True) / 3


def test_huge_threshold_is_weighted_random_routing(in_ci):
    system = System.build("5x0.2,5x0.8", load=0.7)
    result = simulate(system, "jbt", policy_params={"r": 10**6}, slots=40_000, replications=10,
                      seed=3, delay="off")
    in_ci(result.mean_total_queue, result.ci_low, result.ci_high,
          random_routing_total_mean(system, True), max_relative_half_width=0.1,
          label="jbt r=1e6 vs weighted RAND")
    assert result.diagnostics["empty_memory_fraction"] == 0
    assert result.messages_per_dispatch == pytest.approx(1.0)  # the target re-reports


def test_threshold_rules():
    assert threshold_for("constant", 0.1, r=4) == 4
    assert threshold_for("log", 0.01, K=2.0) == math.ceil(2 * math.log(100))
    assert threshold_for("poly", 0.01, a=1.5) == 1000
    assert threshold_for("log", 2.0) == 1  # never below 1
    system = System.build("10x0.5", epsilon=0.05)
    policy = make_policy("jbt", threshold="log", K=2)
    assert policy.threshold(system) == math.ceil(2 * math.log(20))
    with pytest.raises(ValidationError, match="jbt.threshold"):
        make_policy("jbt", threshold="sqrt")
    with pytest.raises(ValidationError, match="jbt.K"):
        make_policy("jbt", threshold="log", K=0)
    with pytest.raises(ValidationError, match="jiq.d"):
        simulate(System.build("4x0.5", load=0.5), "jiq",
                 policy_params={"destination": "sq", "d": 2}, slots=100)


# -- messages on hand-checkable trajectories ---------------------------------------------------


SLOTS = 400  # 100 cycles of the trace


@pytest.mark.parametrize("r", [1, 2, 3])
def test_jbt_reports_once_per_crossing(burst_system, r):
    # Both servers start below r and report once (2 messages). Each burst goes to one
    # remembered server (its ID removed); its queue 3 → 2 → 1 → 0 crosses below r exactly
    # once per cycle, so it reports once per cycle; the other server stays registered.
    result = simulate(burst_system(), "jbt", policy_params={"r": r}, slots=SLOTS, warmup=0,
                      seed=5)
    cycles = SLOTS // 4
    assert result.messages_by_kind["report"] * result.jobs_arrived == pytest.approx(2 + cycles)
    assert result.mean_total_queue == pytest.approx((2 + 1 + 0 + 0) / 4)
    assert result.diagnostics["empty_memory_fraction"] == 0


def test_jiq_per_job_reports_and_empty_memory(burst_system):
    # Per job: two jobs take the two idle IDs, the third finds the memory empty. Queues
    # (2 jobs, 1 job) → after service (1, 0): one report now, the other a slot later.
    result = simulate(burst_system("per_job"), "jiq", slots=SLOTS, warmup=0, seed=5)
    cycles = SLOTS // 4
    assert result.messages_by_kind["report"] * result.jobs_arrived == pytest.approx(2 + 2 * cycles)
    assert result.diagnostics["empty_memory_fraction"] == pytest.approx(1 / 3)
    assert result.mean_total_queue == pytest.approx(1 / 4)


def test_persistent_idle_and_jid_messages(burst_system):
    cycles = SLOTS // 4
    # PI (our corrected reading, docs/model.md#persistent-idle): both servers start idle,
    # members of I without a message; each burst goes to the most recent member, which
    # becomes idle once per cycle (3 → 2 → 1 → 0) and reports; the other server stays in I
    # and is never fed.
    pi = simulate(burst_system(), "persistent-idle", slots=SLOTS, warmup=0, seed=5)
    assert pi.messages_by_kind["report"] * pi.jobs_arrived == pytest.approx(cycles)
    assert pi.diagnostics["busy_target_fraction"] == 0
    assert pi.mean_total_queue == pytest.approx(0.75)
    # JID with α = 1: every idle server reports every slot: 1, 1, 2, 2 per cycle.
    jid = simulate(burst_system(), "jid", policy_params={"alpha": 1.0}, slots=SLOTS, warmup=0,
                   seed=5)
    assert jid.messages_by_kind["report"] * jid.jobs_arrived == pytest.approx(6 * cycles)
    # the burst always goes to the server that has just been idle: queues 2, 1, 0, 0
    assert jid.mean_total_queue == pytest.approx(0.75)


def test_sparse_feedback_messages(burst_system):
    su = simulate(burst_system(), "sujsq", policy_params={"T_u": 2}, slots=SLOTS, warmup=0,
                  seed=5)
    assert su.messages_by_kind["report"] * su.jobs_arrived == pytest.approx(2 * SLOTS / 2)
    au = simulate(burst_system(), "aujsq", policy_params={"T_u": 1}, slots=SLOTS, warmup=0,
                  seed=5)
    assert au.messages_by_kind["report"] * au.jobs_arrived == pytest.approx(2 * SLOTS)
    assert au.diagnostics["estimation_error"] == 0


def test_sujsq_with_period_one_is_jsq():
    system = System.build("5x0.2,5x0.8", load=0.9)
    su = simulate(system, "sujsq", policy_params={"T_u": 1}, slots=50_000, seed=9,
                  delay="off")
    jsq = simulate(system, "jsq", slots=50_000, seed=9, delay="off")
    assert su.mean_total_queue == jsq.mean_total_queue
    assert su.messages_per_dispatch < jsq.messages_per_dispatch
    stale = simulate(system, "sujsq", policy_params={"T_u": 20}, slots=50_000, seed=9,
                     delay="off")
    assert stale.mean_total_queue > jsq.mean_total_queue
    assert stale.diagnostics["estimation_error"] > 0


# -- stability where theory says so ------------------------------------------------------------

HETEROGENEOUS = "5x0.1,5x0.9"  # μ_Σ = 5, uniform RAND stable only below ρ = 0.2


def _run(system, name, **params):
    return simulate(system, name, policy_params=params, slots=200_000, seed=3, delay="off")


def test_jiq_uniform_fallback_is_unstable_at_high_load_on_heterogeneous_servers():
    moderate = System.build(HETEROGENEOUS, load=0.5)
    high = System.build(HETEROGENEOUS, load=0.95)
    assert _run(moderate, "jiq").stability == "stable"
    assert _run(high, "jiq").stability == "unstable"  # [LED] §5, docs/model.md#stability-thresholds
    assert _run(high, "jiq", weighted_fallback=True).stability == "stable"
    assert _run(high, "jbt", r=3).stability == "stable"  # Lemma 1: every r ≥ 1


def test_persistent_idle_stability():
    # the published rule (as corrected in docs/model.md#persistent-idle) is stable on
    # heterogeneous servers well above uniform RAND's threshold ρ = 0.2 (the first, one-ID
    # reading was unstable at ρ = 0.5)
    moderate = System.build(HETEROGENEOUS, load=0.5)
    assert _run(moderate, "persistent-idle").stability == "stable"
    assert _run(moderate, "jid", alpha=0.1).stability == "stable"


# -- heavy-traffic reference lines ---------------------------------------------------------------


def test_reference_lines():
    system = System.build("10x0.5", epsilon=0.1)
    lines = reference_lines(system)
    # Poisson arrivals, Bernoulli service: ζ = μ_Σ + Σ μ(1−μ) = 5 + 2.5
    assert lines["zeta_half"] == pytest.approx(3.75)
    assert pooled_limit(system) == pytest.approx(3.75)
    # docs/model.md#random-routing, batch, M = 1:
    # [N σ² + (N−1) μ_Σ² + Σ ν² μ_Σ/μ]/2 = [50 + 225 + 25]/2
    assert lines["random_routing"] == pytest.approx(150.0)
    assert random_routing_limit(system) == random_routing_constant(system)
    per_job = System.build("10x0.5", epsilon=0.1, dispatch="per_job")
    assert random_routing_limit(per_job) == pytest.approx((5 + 9 * 5 + 25) / 2)
    assert set(lines) == {"zeta_half", "random_routing"}
