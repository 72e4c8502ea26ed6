"""Persistent-Idle as published, and PI-Split (THEORY.md §7.9, corrected reading).

"The dispatcher always sends to the server that has last been idle" (Atar et al.): a
server that reported idle and has been sent nothing since is *still* idle, so it outranks
the current target. Hence each dispatcher m keeps

* I^m, the servers that reported idle to it and that it has sent nothing since, each with
  the slot of its report;
* a target, where it sends when I^m is empty ("persistently").

A server reports (1 message, kind ``report``) in the slot it becomes idle, Q_n(t+1) = 0 and
Q_n(t) + A_n(t) > 0, to one uniformly chosen dispatcher (the only one when M = 1). Servers
empty at t = 0 are in I without a message (each in one uniform dispatcher's set); every
initial target is uniform.

* ``persistent-idle``: a dispatcher with arrivals takes the most recently reported member of
  I^m (ties uniform), removes it, makes it the target and sends there; if I^m is empty it
  sends to the target. In per-job dispatch each job is an arrival of its own.
* ``persistent-idle-split`` (PI-Split): a dispatcher's batch is split as evenly as possible
  over the members of I^m, the most recent first (job j of the slot goes to the
  (j mod |I^m|)-th most recent member), each member that receives a job is removed; the
  target becomes the most recent of them; with I^m empty the batch goes to the target.
  Members left without a job (|I^m| > batch) stay in I^m: they were sent nothing. The loop
  gives ``choose`` one target per call, so PI-Split runs in per-job dispatch, where the
  dispatcher's calls of one slot are its batch (``dispatch = per_job`` is required).

Memory ``ist`` (int64, width ≥ max(N, M, 3)):
  rows 0..M−1   report slot of each member of I^m (−1: empty at t = 0), NOT_MEMBER otherwise
  row  M        target of each dispatcher
  row  M + 1    |I^m|
  row  M + 2    counters: dispatch calls, calls whose target was busy, initialised
  rows M + 3..5 PI-Split per dispatcher: slot of its batch, members in the batch, jobs placed
  rows M + 6..  PI-Split: the batch's members of dispatcher m, most recent first (M rows)
"""

from __future__ import annotations

import numpy as np
from numba import njit

from dispatchlab.engine.interface import REPORT, choose_function, hook_function
from dispatchlab.engine.rng import randint
from dispatchlab.errors import require
from dispatchlab.model.system import System
from dispatchlab.policies.base import Kernel, Policy, register

NOT_MEMBER = -2
IP_DISPATCHERS, IP_SPLIT = range(2)
CALLS, BUSY, READY = range(3)
SPLIT_SLOT, SPLIT_SIZE, SPLIT_PLACED = range(3)
DIAGNOSTICS = ("dispatch_calls", "busy_target_calls", "reports")
D_CALLS, D_BUSY, D_REPORTS = range(3)


@njit(inline="always", cache=True)
def _most_recent(m, N, ist, rng):
    """The member of I^m with the latest report (ties uniform)."""
    best = NOT_MEMBER
    for n in range(N):
        best = max(best, ist[m, n])
    ties = 0
    for n in range(N):
        ties += ist[m, n] == best
    skip = randint(rng, ties) if ties > 1 else 0
    for n in range(N):
        if ist[m, n] == best:
            if skip == 0:
                return n
            skip -= 1
    return -1


@njit(inline="always", cache=True)
def _take(m, n, M, ist):
    """Remove n from I^m and make it dispatcher m's target."""
    ist[m, n] = NOT_MEMBER
    ist[M + 1, m] -= 1
    ist[M, m] = n


@njit(inline="always", cache=True)
def _split_target(m, t, M, N, ist, rng):
    """PI-Split: the server of the dispatcher's next job this slot."""
    if ist[M + 3 + SPLIT_SLOT, m] != t:
        # first job of the batch: list I^m's members, most recent first, ties in a uniform
        # order (a shuffle, then a stable insertion sort on the report slot)
        ist[M + 3 + SPLIT_SLOT, m] = t
        ist[M + 3 + SPLIT_PLACED, m] = 0
        row = M + 6 + m
        size = 0
        for n in range(N):
            if ist[m, n] != NOT_MEMBER:
                ist[row, size] = n
                size += 1
        for i in range(size - 1, 0, -1):
            j = randint(rng, i + 1)
            ist[row, i], ist[row, j] = ist[row, j], ist[row, i]
        for i in range(1, size):
            n = ist[row, i]
            k = i
            while k > 0 and ist[m, ist[row, k - 1]] < ist[m, n]:
                ist[row, k] = ist[row, k - 1]
                k -= 1
            ist[row, k] = n
        ist[M + 3 + SPLIT_SIZE, m] = size
    size = ist[M + 3 + SPLIT_SIZE, m]
    if size == 0:
        return ist[M, m]
    placed = ist[M + 3 + SPLIT_PLACED, m]
    ist[M + 3 + SPLIT_PLACED, m] = placed + 1
    n = ist[M + 6 + m, placed % size]
    if placed < size:  # the member's first job: it leaves I^m
        _take(m, n, M, ist)
        if placed > 0:
            ist[M, m] = ist[M + 6 + m, 0]  # the target is the most recent member
    return n


@choose_function
def _persistent_idle_choose(m, jobs, t, Q, mu, ip, fp, ist, fst, rng, msg):
    M = ip[IP_DISPATCHERS]
    N = Q.size
    if ip[IP_SPLIT] != 0:
        target = _split_target(m, t, M, N, ist, rng)
    else:
        if ist[M + 1, m] > 0:
            _take(m, _most_recent(m, N, ist, rng), M, ist)
        target = ist[M, m]
    ist[M + 2, CALLS] += 1
    if Q[target] > 0:
        ist[M + 2, BUSY] += 1
    return target


@njit(inline="always", cache=True)
def _join(n, slot, M, ist, rng):
    """Server n joins the idle set of one uniform dispatcher (the only one when M = 1)."""
    dest = 0 if M == 1 else randint(rng, M)
    if ist[dest, n] == NOT_MEMBER:
        ist[M + 1, dest] += 1
    ist[dest, n] = slot


@hook_function
def _persistent_idle_begin(t, Q, Q_prev, A, A_m, mu, ip, fp, ist, fst, rng, msg, diag, record):
    M = ip[IP_DISPATCHERS]
    if ist[M + 2, READY] == 1:
        return None
    for m in range(M):
        ist[M, m] = randint(rng, Q.size)
    for n in range(Q.size):
        if Q[n] == 0:  # idle from the start: a member without a message
            _join(n, -1, M, ist, rng)
    ist[M + 2, READY] = 1
    return None


@hook_function
def _persistent_idle_end(t, Q, Q_prev, A, A_m, mu, ip, fp, ist, fst, rng, msg, diag, record):
    M = ip[IP_DISPATCHERS]
    reports = 0
    for n in range(Q.size):
        if Q[n] == 0 and Q_prev[n] + A[n] > 0:  # n became idle in slot t
            _join(n, t, M, ist, rng)
            reports += 1
    msg[REPORT] += reports
    if record:
        diag[D_CALLS] += ist[M + 2, CALLS]
        diag[D_BUSY] += ist[M + 2, BUSY]
        diag[D_REPORTS] += reports
    ist[M + 2, CALLS] = 0
    ist[M + 2, BUSY] = 0
    return None


@register
class PersistentIdle(Policy):
    name = "persistent-idle"
    summary = ("PI: servers report when they become idle (1 message); a dispatcher sends to the "
               "most recently reported idle server it has not fed since, else to its target.")
    theory = ("[PI] (Atar et al.; batch arrivals: arXiv 2103.12140): stable for every λ_Σ < μ_Σ "
              "with heterogeneous servers and batch arrivals, at ≤ 1 message per idle period.")
    diagnostics = DIAGNOSTICS
    split = False

    def check_system(self, system: System) -> None:
        if self.split:
            require(system.dispatch == "per_job", f"{self.name}.dispatch",
                    "PI-Split sends one dispatcher's batch to several servers: it needs "
                    "per-job dispatch (dispatch = per_job), whose calls of a slot are the batch")

    def kernel(self, system: System) -> Kernel:
        self.check_system(system)
        n, m = system.n_servers, system.dispatchers
        state = np.zeros((2 * m + 6, max(n, m, 3)), np.int64)
        state[:m, :] = NOT_MEMBER
        state[m + 3 + SPLIT_SLOT, :] = -1
        return Kernel(_persistent_idle_choose, _persistent_idle_begin, _persistent_idle_end,
                      int_params=np.array([m, int(self.split)], np.int64),
                      int_state=state, n_diagnostics=len(DIAGNOSTICS))

    def summarize(self, diag: np.ndarray, measured_slots: int, system: System) -> dict[str, float]:
        calls = diag[D_CALLS]
        return {
            "busy_target_fraction": float(diag[D_BUSY] / calls) if calls else float("nan"),
            "reports_per_slot": float(diag[D_REPORTS] / max(measured_slots, 1)),
        }


@register
class PersistentIdleSplit(PersistentIdle):
    name = "persistent-idle-split"
    summary = ("PI-Split: as PI, but a dispatcher's batch is split as evenly as possible over "
               "all the idle servers it knows (per-job dispatch).")
    split = True
