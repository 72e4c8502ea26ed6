"""Persistent-Idle as published and PI-Split (docs/model.md#persistent-idle)."""

from __future__ import annotations

import numpy as np
import pytest
from numba import njit

from dispatchlab import System, simulate
from dispatchlab.compiled.rng import make_rng_state, randint
from dispatchlab.core.errors import ValidationError
from dispatchlab.engine.interface import Memory
from dispatchlab.policies.persistent_idle import (
    NOT_MEMBER,
    _join,
    _pop_most_recent,
    _take,
    idle_set,
    set_sizes,
)

HETEROGENEOUS = "5x0.1,5x0.9"


@pytest.mark.parametrize("dispatchers", [1, 3])
@pytest.mark.parametrize(("name", "dispatch"), [("persistent-idle", "batch"),
                                                ("persistent-idle", "per_job"),
                                                ("persistent-idle-split", "per_job")])
def test_stable_on_heterogeneous_servers_at_high_load(name, dispatch, dispatchers):
    # the first reading (one stored ID) grew without bound here: a slow server's report
    # superseded a fast idle one, which was never fed again
    system = System.build(HETEROGENEOUS, load=0.95, dispatchers=dispatchers, dispatch=dispatch)
    result = simulate(system, name, slots=100_000, seed=7, delay="off")
    assert result.stability == "stable", result.stability_evidence
    assert result.mean_total_queue < 100  # 54.6 (M = 1), 60.0 (M = 3) in batch mode
    # no quarter of the run drifts away from the others
    result_long = simulate(system, name, slots=100_000, seed=8, delay="off")
    assert result_long.mean_total_queue == pytest.approx(result.mean_total_queue, rel=0.25)


SLOTS = 400
CYCLES = SLOTS // 4


def test_one_message_per_idle_transition_batch(burst_system):
    # the burst goes to the most recent idle server: 3 → 2 → 1 → 0, one idle transition
    # (one report) per cycle; the other server starts idle (no message) and stays in I
    result = simulate(burst_system(), "persistent-idle", slots=SLOTS, warmup=0, seed=1)
    assert result.messages_by_kind["report"] * result.jobs_arrived == pytest.approx(CYCLES)
    assert result.mean_total_queue == pytest.approx(0.75)


def test_one_message_per_idle_transition_per_job(burst_system):
    # PI per job: job 1 to the most recent member, job 2 to the other, job 3 to the target
    # (the last taken): loads 1 and 2, so two idle transitions per cycle (slots 0 and 1)
    pi = simulate(burst_system("per_job"), "persistent-idle", slots=SLOTS, warmup=0, seed=1)
    assert pi.messages_by_kind["report"] * pi.jobs_arrived == pytest.approx(2 * CYCLES)
    assert pi.mean_total_queue == pytest.approx((1 + 0 + 0 + 0) / 4)
    # PI-Split: 3 jobs over both idle servers as evenly as possible (2 and 1)
    split = simulate(burst_system("per_job"), "persistent-idle-split", slots=SLOTS, warmup=0,
                     seed=1)
    assert split.messages_by_kind["report"] * split.jobs_arrived == pytest.approx(2 * CYCLES)
    assert split.mean_total_queue == pytest.approx(0.25)
    assert split.diagnostics["busy_target_fraction"] == 0


@pytest.mark.parametrize("name", ["persistent-idle", "persistent-idle-split"])
def test_reports_equal_idle_transitions_on_a_random_run(name):
    # with M = 1 every report is an idle transition and vice versa: count the transitions of
    # one server from its own trajectory (one server, Bernoulli service, Poisson arrivals)
    system = System.build([0.7], load=0.8, dispatch="per_job")
    result = simulate(system, name, slots=50_000, warmup=0, seed=3)
    # P(a slot ends an idle period) = P(Q(t+1) = 0) − P(Q(t) = 0, A(t) = 0); the second term
    # is P(Q(t) = 0)·e^{−λ}, and P(Q = 0) is the measured idle fraction
    idle = result.total_queue_distribution[0]
    expected = idle * (1 - np.exp(-system.arrival_rate))
    assert result.diagnostics["reports_per_slot"] == pytest.approx(expected, rel=0.03)


def test_split_needs_per_job_dispatch():
    with pytest.raises(ValidationError, match="persistent-idle-split"):
        simulate(System.build("4x0.5", load=0.5), "persistent-idle-split", slots=10)


# --- the report stack that finds the most recent member in O(1) amortised ---


def _pi_memory(n_servers: int) -> Memory:
    state = np.zeros((4 + 10, max(n_servers, 3)), np.int64)
    state[0, :] = NOT_MEMBER
    return Memory(np.array([1, 0], np.int64), np.zeros(1), state, np.zeros((1, 1)))


@njit(cache=True)
def _random_joins_and_takes(memory, slots, rng):
    """Each slot: a few reports (some re-reports), then a few takes, each checked against
    the definition (a member with the latest report slot); returns the takes checked."""
    members = idle_set(memory, 0)
    N = members.size
    checked = 0
    for t in range(slots):
        for _ in range(randint(rng, 4)):
            _join(0, randint(rng, N), t, memory, rng)
        for _ in range(randint(rng, 3)):
            if set_sizes(memory)[0] == 0:
                break
            latest = members.max()
            n = _pop_most_recent(0, memory)
            if n < 0 or members[n] != latest:
                return -1
            _take(0, n, memory)
            checked += 1
    return checked


def test_report_stack_pops_a_latest_member_and_survives_compaction():
    memory = _pi_memory(8)  # capacity 16 entries: re-reports force compactions
    assert _random_joins_and_takes(memory, 5_000, make_rng_state(4)) > 2_000


@njit(cache=True)
def _first_two_takes(n_servers, repeats, rng):
    firsts = np.zeros(n_servers, np.int64)
    seconds = np.zeros(n_servers, np.int64)
    for _ in range(repeats):
        state = np.zeros((14, n_servers), np.int64)
        state[0, :] = NOT_MEMBER
        memory = Memory(np.array([1, 0], np.int64), np.zeros(1), state, np.zeros((1, 1)))
        _join(0, 0, -1, memory, rng)  # an older report: never first while others are newer
        for n in range(1, n_servers):
            _join(0, n, 5, memory, rng)
        _join(0, 3, 6, memory, rng)  # server 3 reports again: the newest, alone
        first = _pop_most_recent(0, memory)
        _take(0, first, memory)
        firsts[first] += 1
        second = _pop_most_recent(0, memory)
        _take(0, second, memory)
        seconds[second] += 1
    return firsts, seconds


def test_report_stack_breaks_ties_uniformly():
    """Server 3's re-report wins; then the slot-5 reporters (3's stale entry among them)
    tie, and each must come second with probability 1/4."""
    from scipy import stats

    repeats = 40_000
    firsts, seconds = _first_two_takes(6, repeats, make_rng_state(12))
    assert firsts[3] == repeats
    assert seconds[0] == seconds[3] == 0
    tied = seconds[[1, 2, 4, 5]]
    chi2 = float(((tied - repeats / 4) ** 2).sum() / (repeats / 4))
    assert stats.chi2.sf(chi2, df=3) > 1e-4
