"""JID, "join the ID" (THEORY.md §7.10): a pull policy with one stored server ID.

Each dispatcher stores a single server ID and sends every job to it until a report
replaces it. At the end of each slot every idle server (Q_n(t+1) = 0) reports with
probability α (alpha), 1 message, to one dispatcher: the only one when M = 1, a uniform
one otherwise; when several servers report to the same dispatcher in one slot, it keeps
one of them uniformly (reservoir sampling). Initial ID: uniform. The mechanism is
reconstructed ([D]). Persistent-Idle, which also remembers idle servers, is in
:mod:`dispatchlab.policies.persistent_idle`.

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


@choose_function
def _stored_id_choose(m, jobs, t, Q, mu, ip, fp, ist, fst, rng, msg):
    target = ist[ROW_TARGET, m]
    ist[ROW_SCRATCH, SCRATCH_CALLS] += 1
    if Q[target] > 0:
        ist[ROW_SCRATCH, SCRATCH_BUSY] += 1
    return target


@njit(inline="always", cache=True)
def _receive(n, dispatchers, ist, rng, msg):
    """Server n's report reaches one dispatcher, which keeps one of its slot's reporters."""
    dest = 0 if dispatchers == 1 else randint(rng, dispatchers)
    count = ist[ROW_REPORTS, dest] + 1
    ist[ROW_REPORTS, dest] = count
    if count == 1 or randint(rng, count) == 0:
        ist[ROW_TARGET, dest] = n
    msg[REPORT] += 1


@hook_function
def _stored_id_begin(t, Q, Q_prev, A, A_m, mu, ip, fp, ist, fst, rng, msg, diag, record):
    if ist[ROW_SCRATCH, SCRATCH_READY] == 1:
        return None
    dispatchers = A_m.size
    for m in range(dispatchers):
        ist[ROW_TARGET, m] = randint(rng, Q.size)
    ist[ROW_SCRATCH, SCRATCH_READY] = 1
    return None


@hook_function
def _stored_id_end(t, Q, Q_prev, A, A_m, mu, ip, fp, ist, fst, rng, msg, diag, record):
    dispatchers = A_m.size
    alpha = fp[0]
    reports = msg[REPORT]
    for n in range(Q.size):
        if Q[n] == 0 and uniform(rng) < alpha:
            _receive(n, dispatchers, ist, rng, msg)
    for m in range(dispatchers):
        ist[ROW_REPORTS, m] = 0
    if record:
        diag[D_CALLS] += ist[ROW_SCRATCH, SCRATCH_CALLS]
        diag[D_BUSY] += ist[ROW_SCRATCH, SCRATCH_BUSY]
        diag[D_REPORTS] += msg[REPORT] - reports
    ist[ROW_SCRATCH, SCRATCH_CALLS] = 0
    ist[ROW_SCRATCH, SCRATCH_BUSY] = 0
    return None


@register
class JoinTheId(Policy):
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
