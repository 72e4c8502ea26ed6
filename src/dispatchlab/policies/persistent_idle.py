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

Memory ``ist`` (int64, width ≥ max(N, M, 3)), named by the accessors below:
  rows 0..M−1   :func:`idle_set` — the report slot of each member of I^m
  row  M        :func:`targets`; row M + 1 :func:`set_sizes`; row M + 2 :func:`counters`
  rows M + 3..5 :func:`batch_field` — PI-Split: slot of the batch, its size, jobs placed
  rows M + 6..  :func:`batch_members` — PI-Split: the batch's members, most recent first
"""

from __future__ import annotations

import numpy as np
from numba import njit

from dispatchlab.compiled.rng import randint
from dispatchlab.engine.interface import REPORT, choose_function, hook_function
from dispatchlab.errors import require
from dispatchlab.model.system import System
from dispatchlab.policies.base import Kernel, Policy, register

NOT_MEMBER = -2
IP_DISPATCHERS, IP_SPLIT = range(2)
CALLS, BUSY, READY = range(3)
SPLIT_SLOT, SPLIT_SIZE, SPLIT_PLACED = range(3)
DIAGNOSTICS = ("dispatch_calls", "busy_target_calls", "reports")
D_CALLS, D_BUSY, D_REPORTS = range(3)

# -- the layout, named ------------------------------------------------------------------------


@njit(inline="always", cache=True)
def dispatchers(memory):
    """M."""
    return memory.ip[IP_DISPATCHERS]


@njit(inline="always", cache=True)
def splits(memory):
    """PI-Split (True) or PI."""
    return memory.ip[IP_SPLIT] != 0


@njit(inline="always", cache=True)
def idle_set(memory, m):
    """idle_set(memory, m)[n]: the report slot of n if n ∈ I^m (−1: idle at t = 0), else
    NOT_MEMBER."""
    return memory.ist[m]


@njit(inline="always", cache=True)
def targets(memory):
    """targets[m]: dispatcher m's persistent target."""
    return memory.ist[dispatchers(memory)]


@njit(inline="always", cache=True)
def set_sizes(memory):
    """set_sizes[m] = |I^m|."""
    return memory.ist[dispatchers(memory) + 1]


@njit(inline="always", cache=True)
def counters(memory):
    """[dispatch calls this slot, calls whose target was busy, initialised flag]."""
    return memory.ist[dispatchers(memory) + 2]


@njit(inline="always", cache=True)
def batch_field(memory, field):
    """PI-Split, per dispatcher: SPLIT_SLOT (slot of its batch), SPLIT_SIZE (members in the
    batch) or SPLIT_PLACED (jobs placed)."""
    return memory.ist[dispatchers(memory) + 3 + field]


@njit(inline="always", cache=True)
def batch_members(memory, m):
    """PI-Split: the members of dispatcher m's batch, most recent first."""
    return memory.ist[dispatchers(memory) + 6 + m]


# -- the rules --------------------------------------------------------------------------------


@njit(inline="always", cache=True)
def _most_recent(members, N, rng):
    """The member with the latest report (ties uniform)."""
    best = NOT_MEMBER
    for n in range(N):
        best = max(best, members[n])
    ties = 0
    for n in range(N):
        ties += members[n] == best
    skip = randint(rng, ties) if ties > 1 else 0
    for n in range(N):
        if members[n] == best:
            if skip == 0:
                return n
            skip -= 1
    return -1


@njit(inline="always", cache=True)
def _take(m, n, memory):
    """Remove n from I^m and make it dispatcher m's target."""
    idle_set(memory, m)[n] = NOT_MEMBER
    set_sizes(memory)[m] -= 1
    targets(memory)[m] = n


@njit(inline="always", cache=True)
def _split_target(m, t, N, memory, rng):
    """PI-Split: the server of the dispatcher's next job this slot."""
    members = idle_set(memory, m)
    batch = batch_members(memory, m)
    if batch_field(memory, SPLIT_SLOT)[m] != t:
        # first job of the batch: list I^m's members, most recent first, ties in a uniform
        # order (a shuffle, then a stable insertion sort on the report slot)
        batch_field(memory, SPLIT_SLOT)[m] = t
        batch_field(memory, SPLIT_PLACED)[m] = 0
        size = 0
        for n in range(N):
            if members[n] != NOT_MEMBER:
                batch[size] = n
                size += 1
        for i in range(size - 1, 0, -1):
            j = randint(rng, i + 1)
            batch[i], batch[j] = batch[j], batch[i]
        for i in range(1, size):
            n = batch[i]
            k = i
            while k > 0 and members[batch[k - 1]] < members[n]:
                batch[k] = batch[k - 1]
                k -= 1
            batch[k] = n
        batch_field(memory, SPLIT_SIZE)[m] = size
    size = batch_field(memory, SPLIT_SIZE)[m]
    if size == 0:
        return targets(memory)[m]
    placed = batch_field(memory, SPLIT_PLACED)[m]
    batch_field(memory, SPLIT_PLACED)[m] = placed + 1
    n = batch[placed % size]
    if placed < size:  # the member's first job: it leaves I^m
        _take(m, n, memory)
        if placed > 0:
            targets(memory)[m] = batch[0]  # the target is the most recent member
    return n


@choose_function
def _persistent_idle_choose(m, jobs, slot, memory, ctx):
    N = slot.Q.size
    if splits(memory):
        target = _split_target(m, slot.t, N, memory, ctx.rng)
    else:
        if set_sizes(memory)[m] > 0:
            _take(m, _most_recent(idle_set(memory, m), N, ctx.rng), memory)
        target = targets(memory)[m]
    count = counters(memory)
    count[CALLS] += 1
    if slot.Q[target] > 0:
        count[BUSY] += 1
    return target


@njit(inline="always", cache=True)
def _join(n, report_slot, memory, rng):
    """Server n joins the idle set of one uniform dispatcher (the only one when M = 1)."""
    M = dispatchers(memory)
    dest = 0 if M == 1 else randint(rng, M)
    members = idle_set(memory, dest)
    if members[n] == NOT_MEMBER:
        set_sizes(memory)[dest] += 1
    members[n] = report_slot


@hook_function
def _persistent_idle_begin(slot, step, memory, ctx):
    count = counters(memory)
    if count[READY] == 1:
        return None
    Q = slot.Q
    for m in range(dispatchers(memory)):
        targets(memory)[m] = randint(ctx.rng, Q.size)
    for n in range(Q.size):
        if Q[n] == 0:  # idle from the start: a member without a message
            _join(n, -1, memory, ctx.rng)
    count[READY] = 1
    return None


@hook_function
def _persistent_idle_end(slot, step, memory, ctx):
    Q = slot.Q
    Q_prev = step.Q_prev
    A = step.A
    reports = 0
    for n in range(Q.size):
        if Q[n] == 0 and Q_prev[n] + A[n] > 0:  # n became idle in slot t
            _join(n, slot.t, memory, ctx.rng)
            reports += 1
    ctx.msg[REPORT] += reports
    count = counters(memory)
    if step.record:
        diag = step.diag
        diag[D_CALLS] += count[CALLS]
        diag[D_BUSY] += count[BUSY]
        diag[D_REPORTS] += reports
    count[CALLS] = 0
    count[BUSY] = 0
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
