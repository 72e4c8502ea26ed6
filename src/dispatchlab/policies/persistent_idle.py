"""Persistent-Idle as published, and PI-Split ([PI]; docs/model.md#persistent-idle).

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

The most recent member is found in O(1) amortised, not by a scan of N per call: each
dispatcher keeps a stack of its reports, (report slot, server), pushed in slot order, so
the latest reports are on top. A report enters at a uniform position among the entries of
its own slot (a uniform order within each slot, which the top of the stack then draws
from); an entry whose server has since been taken or has reported again is stale and is
dropped when it reaches the top, or when a full stack is compacted (capacity 2W: after
compaction at most N ≤ W entries remain). PI-Split lists I^m once per batch (O(N) per
dispatcher with arrivals, per-job dispatch only) and keeps no stack.

Memory ``int_state`` (int64, width W = max(N, M, 3)), named by the accessors below:
  rows 0..M−1   :func:`idle_set` — the report slot of each member of I^m
  row  M        :func:`targets`; row M + 1 :func:`set_sizes`; row M + 2 :func:`counters`
  rows M + 3..5 :func:`batch_field` — PI-Split: slot of the batch, its size, jobs placed
  rows M + 6..  :func:`batch_members` — PI-Split: the batch's members, most recent first
  rows 2M + 6, 2M + 7 :func:`stack_sizes`, :func:`group_starts` — per dispatcher, entries
                on its report stack, and where the entries of the top entry's slot begin
  rows 2M + 8 + 2m, 2M + 9 + 2m  :func:`report_stack` — dispatcher m's stack (2W entries,
                entry (slot + 2)·W + server)
  rows 4M + 8, 4M + 9  :func:`pending_joins` — the slot's idle transitions and the
                dispatchers their reports go to (the end-of-slot hook's work rows)

A slot's reports are handled in three passes: the servers that became idle, then (M > 1)
the dispatchers their reports go to, drawn one after another, with the cache lines of
those dispatchers' sets prefetched, then the joins in server order (with M rows of N out of
cache, a join that drew its dispatcher and read its set at once waited for a miss each).
"""

from __future__ import annotations

import numpy as np
from numba import njit

from dispatchlab.compiled.prefetch import prefetch
from dispatchlab.compiled.rng import randint
from dispatchlab.core.errors import require
from dispatchlab.engine.interface import REPORT, choose_function, hook_function
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
    return memory.int_params[IP_DISPATCHERS]


@njit(inline="always", cache=True)
def splits(memory):
    """PI-Split (True) or PI."""
    return memory.int_params[IP_SPLIT] != 0


@njit(inline="always", cache=True)
def idle_set(memory, m):
    """idle_set(memory, m)[n]: the report slot of n if n ∈ I^m (−1: idle at t = 0), else
    NOT_MEMBER."""
    return memory.int_state[m]


@njit(inline="always", cache=True)
def targets(memory):
    """targets[m]: dispatcher m's persistent target."""
    return memory.int_state[dispatchers(memory)]


@njit(inline="always", cache=True)
def set_sizes(memory):
    """set_sizes[m] = |I^m|."""
    return memory.int_state[dispatchers(memory) + 1]


@njit(inline="always", cache=True)
def counters(memory):
    """[dispatch calls this slot, calls whose target was busy, initialised flag]."""
    return memory.int_state[dispatchers(memory) + 2]


@njit(inline="always", cache=True)
def batch_field(memory, field):
    """PI-Split, per dispatcher: SPLIT_SLOT (slot of its batch), SPLIT_SIZE (members in the
    batch) or SPLIT_PLACED (jobs placed)."""
    return memory.int_state[dispatchers(memory) + 3 + field]


@njit(inline="always", cache=True)
def batch_members(memory, m):
    """PI-Split: the members of dispatcher m's batch, most recent first."""
    return memory.int_state[dispatchers(memory) + 6 + m]


@njit(inline="always", cache=True)
def stack_sizes(memory):
    """stack_sizes[m]: entries on dispatcher m's report stack (stale ones included)."""
    return memory.int_state[2 * dispatchers(memory) + 6]


@njit(inline="always", cache=True)
def group_starts(memory):
    """group_starts[m]: the first stack position of the top entry's report slot."""
    return memory.int_state[2 * dispatchers(memory) + 7]


@njit(inline="always", cache=True)
def report_stack(memory, m):
    """Dispatcher m's report stack (2W entries, bottom first): (slot + 2)·W + server."""
    row = 2 * dispatchers(memory) + 8 + 2 * m
    return memory.int_state[row:row + 2].reshape(2 * memory.int_state.shape[1])


@njit(inline="always", cache=True)
def pending_joins(memory, which):
    """which = 0: the servers that became idle this slot; 1: their reports' dispatchers."""
    return memory.int_state[4 * dispatchers(memory) + 8 + which]


# -- the rules --------------------------------------------------------------------------------


@njit(inline="always", cache=True)
def _entry_slot(entry, width):
    return entry // width - 2


@njit(inline="always", cache=True)
def _compact(m, memory):
    """Drop the stale entries of dispatcher m's stack (order kept); returns the new size."""
    width = memory.int_state.shape[1]
    stack = report_stack(memory, m)
    members = idle_set(memory, m)
    size = 0
    for k in range(stack_sizes(memory)[m]):
        entry = stack[k]
        if members[entry % width] == _entry_slot(entry, width):
            stack[size] = entry
            size += 1
    start = size
    while start > 0 and (_entry_slot(stack[start - 1], width)
                         == _entry_slot(stack[size - 1], width)):
        start -= 1
    stack_sizes(memory)[m] = size
    group_starts(memory)[m] = start
    return size


@njit(inline="always", cache=True)
def _push_report(m, n, report_slot, memory, rng):
    """Put (report_slot, n) on dispatcher m's stack at a uniform position among the entries
    of the same slot (reports arrive in slot order, so these are the top ones)."""
    width = memory.int_state.shape[1]
    stack = report_stack(memory, m)
    size = stack_sizes(memory)[m]
    if size == stack.size:
        size = _compact(m, memory)
    if size == 0 or _entry_slot(stack[size - 1], width) != report_slot:
        group_starts(memory)[m] = size
    start = group_starts(memory)[m]
    k = start + (randint(rng, size - start + 1) if size > start else 0)
    stack[size] = stack[k]
    stack[k] = (report_slot + 2) * width + n
    stack_sizes(memory)[m] = size + 1


@njit(inline="always", cache=True)
def _pop_most_recent(m, memory):
    """The member of I^m with the latest report, ties uniform (I^m must not be empty): the
    top entry that is not stale."""
    width = memory.int_state.shape[1]
    stack = report_stack(memory, m)
    members = idle_set(memory, m)
    size = stack_sizes(memory)[m]
    while size > 0:
        size -= 1
        entry = stack[size]
        n = entry % width
        if members[n] == _entry_slot(entry, width):
            stack_sizes(memory)[m] = size
            return n
    stack_sizes(memory)[m] = 0
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
            _take(m, _pop_most_recent(m, memory), memory)
        target = targets(memory)[m]
    count = counters(memory)
    count[CALLS] += 1
    if slot.Q[target] > 0:
        count[BUSY] += 1
    return target


@njit(inline="always", cache=True)
def _report_destination(memory, rng):
    """The dispatcher an idle report goes to: uniform (the only one when M = 1)."""
    M = dispatchers(memory)
    return 0 if M == 1 else randint(rng, M)


@njit(inline="always", cache=True)
def _join(dest, n, report_slot, memory, rng):
    """Server n joins dispatcher dest's idle set."""
    members = idle_set(memory, dest)
    if members[n] == NOT_MEMBER:
        set_sizes(memory)[dest] += 1
    members[n] = report_slot  # an earlier entry of n on the stack is stale from now on
    if not splits(memory):  # PI-Split lists I^m per batch and keeps no stack
        _push_report(dest, n, report_slot, memory, rng)


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
            _join(_report_destination(memory, ctx.rng), n, -1, memory, ctx.rng)
    count[READY] = 1
    return None


@hook_function
def _persistent_idle_end(slot, step, memory, ctx):
    Q = slot.Q
    Q_prev = step.Q_prev
    A = step.A
    servers = pending_joins(memory, 0)
    destinations = pending_joins(memory, 1)
    reports = 0
    for n in range(Q.size):
        if Q[n] == 0 and Q_prev[n] + A[n] > 0:  # n became idle in slot t
            servers[reports] = n
            reports += 1
    width = memory.int_state.shape[1]
    for k in range(reports):
        dest = _report_destination(memory, ctx.rng)
        destinations[k] = dest
        prefetch(memory.int_state, dest * width + servers[k])  # idle_set(memory, dest)[n]
    for k in range(reports):
        _join(destinations[k], servers[k], slot.t, memory, ctx.rng)
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
    """Persistent-Idle (PI), registered as ``persistent-idle``: a dispatcher sends to the most
    recently reported idle server it has sent nothing since, else to its target.

    Stable for every λ_Σ < μ_Σ ([PI]; docs/model.md#persistent-idle); a server reports
    (1 message) in the slot it becomes idle."""

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
        state = np.zeros((4 * m + 10, max(n, m, 3)), np.int64)
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
    """PI-Split, registered as ``persistent-idle-split``: PI with a dispatcher's batch split
    as evenly as possible over the idle servers it knows; per-job dispatch only.

    The batch-arrival variant of [PI] (docs/model.md#persistent-idle)."""

    name = "persistent-idle-split"
    summary = ("PI-Split: as PI, but a dispatcher's batch is split as evenly as possible over "
               "all the idle servers it knows (per-job dispatch).")
    split = True
