"""Batch dispatch through one adapter call a slot (engine.adapter): through the whole loop,
choose runs once per dispatcher with arrivals, in order m = 0 … M−1, with its A^m(t) jobs,
on the slot-start queues; and a bad server from the k-th dispatcher is reported as it was
with one call per dispatcher."""

from __future__ import annotations

import numpy as np
import pytest

from dispatchlab import System, simulate
from dispatchlab.compiled.rng import make_exogenous_stream
from dispatchlab.core.errors import PolicyError
from dispatchlab.engine.arrivals import _draw_split_poisson, poisson_tables, ptrs_draw
from dispatchlab.engine.interface import Kernel, choose_function, hook_function
from dispatchlab.policies.base import Policy, policy_names, register

SYSTEM = System.build("4x0.5,2x0.2", load=0.9, dispatchers=4)
LOG = 160  # (m, jobs, ΣQ seen) entries a slot, far above what a slot of these systems brings


@choose_function
def _log_call(m, jobs, slot, memory, ctx):
    """Logs (m, jobs, ΣQ seen) into ist[0] (its entry 0 counts the calls of the slot) and
    chooses server (m + t + k) mod N for its k-th call of the slot."""
    row = memory.int_state[0]
    k = row[0]
    if k < LOG:
        row[1 + 3 * k], row[2 + 3 * k], row[3 + 3 * k] = m, jobs, slot.Q.sum()
    row[0] = k + 1
    return (m + slot.t + k) % slot.Q.size


@hook_function(allocates=True)
def _check_log(slot, step, memory, ctx):
    """diag: [slots whose calls differ from the dispatchers with arrivals in order, with
    A^m(t) jobs each (one job a call per job), on ΣQ(t), or whose A(t) differs from the
    servers chosen; calls]."""
    row = memory.int_state[0]
    per_job = memory.int_params[0] == 1
    wrong = row[0] > LOG
    placed = np.zeros(slot.Q.size, np.int64)
    k = 0
    for m in range(step.A_m.size):
        for _ in range(step.A_m[m] if per_job else min(step.A_m[m], 1)):
            jobs = 1 if per_job else step.A_m[m]
            if k >= row[0] or k >= LOG:
                wrong = True
            elif (row[1 + 3 * k] != m or row[2 + 3 * k] != jobs
                  or row[3 + 3 * k] != step.Q_prev.sum()):
                wrong = True
            placed[(m + slot.t + k) % slot.Q.size] += jobs
            k += 1
    wrong |= k != row[0]
    for n in range(slot.Q.size):
        wrong |= placed[n] != step.A[n]
    if step.record:
        step.diag[0] += wrong
        step.diag[1] += row[0]
    row[0] = 0


class _LogCalls(Policy):
    name = "test-log-calls"
    summary = "logs its choose calls and checks them in end_slot (tests only)"
    diagnostics = ("wrong_slots", "calls")

    def kernel(self, system: System) -> Kernel:
        per_job = np.array([system.dispatch == "per_job"], np.int64)
        return Kernel(_log_call, end_slot=_check_log, int_params=per_job,
                      int_state=np.zeros((1, 1 + 3 * LOG), np.int64), n_diagnostics=2)

    def summarize(self, diag: np.ndarray, measured_slots: int,
                  system: System) -> dict[str, float]:
        return {"wrong_slots": float(diag[0]), "calls": float(diag[1])}



@pytest.fixture(autouse=True)
def _registry_left_as_found(monkeypatch: pytest.MonkeyPatch) -> None:
    """The policies these tests register leave with them: a later test that lists every
    registered policy (the docs site's, for one) must not find them."""
    from dispatchlab.policies import base

    policy_names()  # the built-in policies loaded into the registry copied
    monkeypatch.setattr(base, "_REGISTRY", dict(base._REGISTRY))

@pytest.mark.parametrize(("servers", "dispatchers", "dispatch"), [
    ("4x0.5,2x0.2", 4, "batch"), ("4x0.5,2x0.2", 4, "per_job"),
    # λ_Σ = 45 at one or two dispatchers: a dispatcher's jobs take several adapter calls
    # (layout.TARGET_BUFFER at a time) per job, and many dispatchers share servers in batch
    ("100x0.5", 1, "per_job"), ("100x0.5", 2, "per_job"), ("100x0.5", 40, "batch"),
])
def test_choose_runs_once_per_dispatcher_in_order_on_q_of_t(servers: str, dispatchers: int,
                                                            dispatch: str) -> None:
    if _LogCalls.name not in policy_names():
        register(_LogCalls)
    system = System.build(servers, load=0.9, dispatchers=dispatchers, dispatch=dispatch)
    result = simulate(system, _LogCalls(), slots=3000, seed=3, warmup=0)
    assert result.diagnostics["wrong_slots"] == 0
    # batch: a call per dispatcher with arrivals (fewer than the jobs); per job: one a job
    calls = result.diagnostics["calls"]
    assert calls > 1000
    assert (calls < result.jobs_arrived) if dispatch == "batch" else (
        calls == result.jobs_arrived)


# -- a bad server from one dispatcher -----------------------------------------------------------


@choose_function
def _bad_from_dispatcher_2(m, jobs, slot, memory, ctx):
    return slot.Q.size if (m == 2 and slot.t >= 40) else m


class _BadFrom2(Policy):
    name = "test-bad-from-dispatcher-2"
    summary = "dispatcher 2 chooses server N from slot 40 on (tests only)"

    def kernel(self, system: System) -> Kernel:
        return Kernel(_bad_from_dispatcher_2)


def _first_slot(system: System, seed: int, dispatcher: int, after: int, jobs: int) -> int:
    """The first slot ≥ ``after`` with A^dispatcher(t) ≥ ``jobs`` in ``system``'s run with
    ``seed``: split-Poisson arrivals from the exogenous stream alone, drawn here slot by
    slot."""
    offsets, table = poisson_tables(system.arrival_rate * system.weights)
    stream, A_m = make_exogenous_stream(seed), np.zeros(system.dispatchers, np.int64)
    for t in range(100_000):
        _draw_split_poisson(offsets, table, A_m, stream, ptrs_draw)
        if t >= after and A_m[dispatcher] >= jobs:
            return t
    raise AssertionError("no such slot")


@pytest.mark.parametrize("dispatch", ["batch", "per_job"])
def test_a_bad_server_from_a_later_dispatcher_names_it_and_its_slot(dispatch: str) -> None:
    if _BadFrom2.name not in policy_names():
        register(_BadFrom2)
    system = System.build("4x0.5,2x0.2", load=0.9, dispatchers=4, dispatch=dispatch)
    with pytest.raises(PolicyError) as caught:
        simulate(system, _BadFrom2(), slots=5000, seed=11)
    slot = _first_slot(SYSTEM, 11, 2, 40, 1)
    assert str(caught.value).endswith(
        f"choose returned server 6, not in 0 … N − 1 = 5 (dispatcher 2, slot {slot})")


@hook_function
def _restart_count(slot, step, memory, ctx):
    memory.int_state[0, 0] = 0


@choose_function
def _bad_at_job_41(m, jobs, slot, memory, ctx):
    """Server N for the 41st job dispatcher 1 places in a slot (per job, one dispatcher)."""
    count = memory.int_state[0, 0] + 1
    memory.int_state[0, 0] = count
    return slot.Q.size if (m == 1 and count == 41) else 0


class _BadAtJob41(Policy):
    name = "test-bad-at-job-41"
    summary = "dispatcher 1's 41st job of a slot goes to server N (tests only)"

    def kernel(self, system: System) -> Kernel:
        return Kernel(_bad_at_job_41, begin_slot=_restart_count)


def test_a_bad_server_for_a_job_past_the_first_adapter_call() -> None:
    """Per job, a dispatcher's jobs take an adapter call per layout.TARGET_BUFFER of them: the
    41st job's bad server (in the second call) is reported for its dispatcher and slot."""
    if _BadAtJob41.name not in policy_names():
        register(_BadAtJob41)
    # dispatcher 0 never has arrivals (weight 0), dispatcher 1 all: λ = 45 a slot
    system = System.build("100x0.5", load=0.9, dispatchers=2, dispatch="per_job",
                          dispatcher_weights=[0.0, 1.0])
    with pytest.raises(PolicyError) as caught:
        simulate(system, _BadAtJob41(), slots=5000, seed=2)
    slot = _first_slot(system, 2, 1, 0, 41)
    assert str(caught.value).endswith(
        f"choose returned server 100, not in 0 … N − 1 = 99 (dispatcher 1, slot {slot})")
