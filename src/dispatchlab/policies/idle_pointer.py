"""JID, "join the ID" ([GTZ]; docs/model.md#jid): a pull policy with one stored server ID.

Each dispatcher stores a single server ID and sends every job to it until a report
replaces it. At the end of each slot every idle server (Q_n(t+1) = 0) reports with
probability α (alpha), 1 message, to one dispatcher: the only one when M = 1, a uniform
one otherwise; when several servers report to the same dispatcher in one slot, it keeps
one of them uniformly (reservoir sampling). Initial ID: uniform. The mechanism is
reconstructed ([D]). Persistent-Idle, which remembers every idle server it has not fed
since, is in :mod:`dispatchlab.policies.persistent_idle`.

Memory (``int_state``): row 0 the stored ID per dispatcher; row 1 the number of reports
each dispatcher received this slot; row 2 counters (dispatch calls, calls whose
target was busy, initialised).
"""

from __future__ import annotations

import numpy as np
from numba import njit

from dispatchlab.compiled.rng import randint, uniform
from dispatchlab.engine.interface import REPORT, choose_function, hook_function
from dispatchlab.model.system import System
from dispatchlab.policies.base import Kernel, Param, Policy, register

ROW_TARGET, ROW_REPORTS, ROW_SCRATCH = range(3)
SCRATCH_CALLS, SCRATCH_BUSY, SCRATCH_READY = range(3)
DIAGNOSTICS = ("dispatch_calls", "busy_target_calls", "reports")
D_CALLS, D_BUSY, D_REPORTS = range(3)


@njit(inline="always", cache=True)
def stored_ids(memory):
    """stored_ids[m]: the server dispatcher m sends every job to."""
    return memory.int_state[ROW_TARGET]


@njit(inline="always", cache=True)
def reports_this_slot(memory):
    """reports_this_slot[m]: reports dispatcher m received in the current slot."""
    return memory.int_state[ROW_REPORTS]


@njit(inline="always", cache=True)
def slot_counters(memory):
    """[dispatch calls this slot, calls whose target was busy, initialised flag]."""
    return memory.int_state[ROW_SCRATCH]


@njit(inline="always", cache=True)
def report_probability(memory):
    """fp[0]: α of JID."""
    return memory.float_params[0]


@choose_function
def _stored_id_choose(m, jobs, slot, memory, ctx):
    target = stored_ids(memory)[m]
    counters = slot_counters(memory)
    counters[SCRATCH_CALLS] += 1
    if slot.Q[target] > 0:
        counters[SCRATCH_BUSY] += 1
    return target


@njit(inline="always", cache=True)
def _receive(n, dispatchers, memory, ctx):
    """Server n's report reaches one dispatcher, which keeps one of its slot's reporters."""
    rng = ctx.rng
    dest = 0 if dispatchers == 1 else randint(rng, dispatchers)
    reports = reports_this_slot(memory)
    count = reports[dest] + 1
    reports[dest] = count
    if count == 1 or randint(rng, count) == 0:
        stored_ids(memory)[dest] = n
    ctx.msg[REPORT] += 1


@hook_function
def _stored_id_begin(slot, step, memory, ctx):
    counters = slot_counters(memory)
    if counters[SCRATCH_READY] == 1:
        return None
    Q = slot.Q
    dispatchers = step.A_m.size
    targets = stored_ids(memory)
    for m in range(dispatchers):
        targets[m] = randint(ctx.rng, Q.size)
    counters[SCRATCH_READY] = 1
    return None


@hook_function
def _stored_id_end(slot, step, memory, ctx):
    Q = slot.Q
    dispatchers = step.A_m.size
    alpha = report_probability(memory)
    msg = ctx.msg
    reports = msg[REPORT]
    for n in range(Q.size):
        if Q[n] == 0 and uniform(ctx.rng) < alpha:
            _receive(n, dispatchers, memory, ctx)
    received = reports_this_slot(memory)
    for m in range(dispatchers):
        received[m] = 0
    counters = slot_counters(memory)
    if step.record:
        diag = step.diag
        diag[D_CALLS] += counters[SCRATCH_CALLS]
        diag[D_BUSY] += counters[SCRATCH_BUSY]
        diag[D_REPORTS] += msg[REPORT] - reports
    counters[SCRATCH_CALLS] = 0
    counters[SCRATCH_BUSY] = 0
    return None


@register
class JoinTheId(Policy):
    """JID, registered as ``jid``: each dispatcher stores one server ID and sends all its jobs
    there; every idle server reports with probability α per slot and replaces it.

    Always stable with one stored ID ([GTZ]; docs/model.md#jid); 1 message per report."""

    name = "jid"
    summary = ("JID: each dispatcher stores one ID and sends all jobs to it; every idle server "
               "reports with probability α per slot and replaces it (1 message per report).")
    theory = ("Always stable with one stored ID (log₂N bits) and an arbitrarily small message "
              "rate ([GTZ]); the slot-level mechanism here is reconstructed.")
    parameters = (Param("alpha", float, 0.1, "α, probability that an idle server reports in a "
                        "slot", low=0.0, high=1.0, low_open=True),)
    diagnostics = DIAGNOSTICS

    def kernel(self, system: System) -> Kernel:
        width = max(system.dispatchers, 3)
        return Kernel(_stored_id_choose, _stored_id_begin, _stored_id_end,
                      float_params=np.array([float(self.params["alpha"])]),
                      int_state=np.zeros((3, width), np.int64), n_diagnostics=len(DIAGNOSTICS))

    def summarize(self, diag: np.ndarray, measured_slots: int, system: System) -> dict[str, float]:
        calls = diag[D_CALLS]
        return {
            "busy_target_fraction": float(diag[D_BUSY] / calls) if calls else float("nan"),
            "reports_per_slot": float(diag[D_REPORTS] / max(measured_slots, 1)),
        }
