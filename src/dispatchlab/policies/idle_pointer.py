"""One-ID pull policies: Persistent-Idle (PI, THEORY.md §7.9) and JID (§7.10).

Each dispatcher stores a single server ID and sends every job to it until a report
replaces it. Reports (1 message each) go to one dispatcher: the only one when
M = 1, a uniform one otherwise (§7.9 [D]); when several servers report to the same
dispatcher in one slot, it keeps one of them uniformly (reservoir sampling).

* PI: a server reports when it **becomes idle**: Q_n(t+1) = 0 and Q_n(t) + A_n(t) > 0.
  At t = 0 every empty server counts as having just become idle (so a server that
  starts empty and is never fed has reported once). Initial target: uniform.
* JID: at the end of each slot every idle server (Q_n(t+1) = 0) reports with
  probability α (alpha). Initial ID: uniform. The mechanism is reconstructed ([D]).

Memory (``ist``): row 0 the stored ID per dispatcher; row 1 the number of reports
each dispatcher received this slot; row 2 counters (dispatch calls, calls whose
target was busy, initialised).
"""

from __future__ import annotations

import numpy as np
from numba import njit

from dispatchlab.engine.interface import REPORT, choose_function, hook_function
from dispatchlab.engine.rng import randint, uniform
from dispatchlab.model.system import System
from dispatchlab.policies.base import Kernel, Param, Policy, register

ROW_TARGET, ROW_REPORTS, ROW_SCRATCH = range(3)
SCRATCH_CALLS, SCRATCH_BUSY, SCRATCH_READY = range(3)
DIAGNOSTICS = ("dispatch_calls", "busy_target_calls", "reports")
D_CALLS, D_BUSY, D_REPORTS = range(3)


@njit(inline="always", cache=True)
def stored_ids(memory):
    """stored_ids[m]: the server dispatcher m sends every job to."""
    return memory.ist[ROW_TARGET]


@njit(inline="always", cache=True)
def reports_this_slot(memory):
    """reports_this_slot[m]: reports dispatcher m received in the current slot."""
    return memory.ist[ROW_REPORTS]


@njit(inline="always", cache=True)
def slot_counters(memory):
    """[dispatch calls this slot, calls whose target was busy, initialised flag]."""
    return memory.ist[ROW_SCRATCH]


@njit(inline="always", cache=True)
def is_persistent_idle(memory):
    """ip[0]: 1 for PI (report on becoming idle), 0 for JID (idle, with probability α)."""
    return memory.ip[0] == 1


@njit(inline="always", cache=True)
def report_probability(memory):
    """fp[0]: α of JID."""
    return memory.fp[0]


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
    if is_persistent_idle(memory):  # PI: an empty server at t = 0 has just become idle
        for n in range(Q.size):
            if Q[n] == 0:
                _receive(n, dispatchers, memory, ctx)
        reports = reports_this_slot(memory)
        for m in range(dispatchers):
            reports[m] = 0
    counters[SCRATCH_READY] = 1
    return None


@hook_function
def _stored_id_end(slot, step, memory, ctx):
    Q = slot.Q
    Q_prev = step.Q_prev
    A = step.A
    dispatchers = step.A_m.size
    persistent_idle = is_persistent_idle(memory)
    alpha = report_probability(memory)
    msg = ctx.msg
    reports = msg[REPORT]
    for n in range(Q.size):
        if Q[n] != 0:
            continue
        if persistent_idle:
            if Q_prev[n] + A[n] > 0:
                _receive(n, dispatchers, memory, ctx)
        elif uniform(ctx.rng) < alpha:
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


class _StoredIdPolicy(Policy):
    diagnostics = DIAGNOSTICS
    persistent_idle = 1

    def _alpha(self) -> float:
        return 0.0

    def kernel(self, system: System) -> Kernel:
        width = max(system.dispatchers, 3)
        return Kernel(_stored_id_choose, _stored_id_begin, _stored_id_end,
                      int_params=np.array([self.persistent_idle], np.int64),
                      float_params=np.array([self._alpha()]),
                      int_state=np.zeros((3, width), np.int64), n_diagnostics=len(DIAGNOSTICS))

    def summarize(self, diag: np.ndarray, measured_slots: int, system: System) -> dict[str, float]:
        calls = diag[D_CALLS]
        return {
            "busy_target_fraction": float(diag[D_BUSY] / calls) if calls else float("nan"),
            "reports_per_slot": float(diag[D_REPORTS] / max(measured_slots, 1)),
        }


@register
class PersistentIdle(_StoredIdPolicy):
    name = "persistent-idle"
    summary = ("PI: servers report when they become idle (1 message); each dispatcher sends "
               "every job to the last server that reported to it.")
    theory = ("[PI] proves the full stability region in its model; in this literal §7.9 reading "
              "an idle server superseded by a later report is never fed again, so it is stable "
              "when λ_Σ < μ_min and stuck (unstable) once λ_Σ exceeds the target's μ_n.")
    persistent_idle = 1


@register
class JoinTheId(_StoredIdPolicy):
    name = "jid"
    summary = ("JID: each dispatcher stores one ID and sends all jobs to it; every idle server "
               "reports with probability α per slot and replaces it (1 message per report).")
    theory = ("Always stable with one stored ID (log₂N bits) and an arbitrarily small message "
              "rate ([GTZ]); the slot-level mechanism here is reconstructed.")
    persistent_idle = 0
    parameters = (Param("alpha", float, 0.1, "α, probability that an idle server reports in a "
                        "slot", low=0.0, high=1.0, low_open=True),)

    def _alpha(self) -> float:
        return float(self.params["alpha"])
