"""JSQ on occasionally refreshed estimates: SUJSQ and AUJSQ ([HSJSQ]; docs/model.md#sujsq).

Each dispatcher keeps estimates Q̃^m of the queue lengths, sends each dispatch (the
slot's batch, or one job in per-job mode) to argmin_n Q̃^m_n (ties uniform) and adds
the jobs sent to that estimate; estimates are never decremented between updates.
The estimates start at Q(0) (known at set-up, no message).

* SUJSQ (synchronous updates): at the end of every T_u-th slot (t + 1 a multiple of
  T_u) every server reports Q_n(t+1) to every dispatcher: N·M messages per update.
* AUJSQ (asynchronous updates): at the end of each slot every server independently
  reports with probability 1/T_u, to every dispatcher: M messages per report.

With M > 1 a report reaches every dispatcher (the papers have M = 1); each dispatcher
reached counts as one message. SUJSQ with T_u = 1 is JSQ, draw for draw.

How the estimates are kept: every dispatcher's estimate of n is the last report R_n plus
the jobs it has sent to n since (Q̃^m_n = R_n when it has sent none), so a report is
written once, to R_n, not to M rows. Dispatcher m remembers the servers it has sent to
since their last report (its touched list of entries: the server, m's estimate of it, the
slot of m's last send there); an entry is valid while that slot ≥ the slot from which R_n
holds. A dispatcher's state is thus its short list, read in order, never an N-wide row
read at a random server (with M rows of N out of cache, that read was a cache miss per
choice). The minimum of Q̃^m comes from one shared min tree over R
(:mod:`dispatchlab.policies.led.min_tree`). A touched estimate exceeds R_n, so while some
minimiser of R is untouched, the minimisers of Q̃^m are the untouched minimisers of R: r
uniform on their number, and the r-th of them in index order is the minimiser of R at
position r + (the touched ones before it), found by walks down the tree to that fixed
point (usually one or two walks, no write). With many dispatchers (M ≥
LIST_MIN_DISPATCHERS) the minimisers of R are also listed in index order when the tree is
rebuilt (SUJSQ's updates), and the r-th of them is read off the list instead of a walk down
the tree: R does not change between synchronous updates, and the walks were about a third
of a choice's cost at M = 100, N = 10⁴ (AUJSQ's reports change R every slot: it walks).
When every minimiser of R is touched, m's entries are overlaid on R and the tree, the walk
picks, and R is restored. Either way the draw is that of
:func:`~dispatchlab.compiled.argmin.argmin_random_ties` on Q̃^m, so runs are bit-identical
to a scan of explicit estimates. When the touched list is long (per-job
dispatch with few dispatchers) or N is tiny, the choice scans Q̃^m instead (same draw).

Memory (``int_state``, int64, width W = max(N, M, 3)):
  row 0  R, the last reports (R_n = Q_n(0) at the start)      :func:`reports`
  row 1  the slot from which R_n holds                        :func:`report_slots`
  row 2  [slots left to the next synchronous update, initialised flag, number of listed
         minimisers of R (−1: no valid list)]                 :func:`control`
  row 3  the length of each dispatcher's touched list         :func:`touched_lengths`
  row 4  scratch (saved reports during an overlay; Q̃^m for a scan)
  row 5  the shared min tree of R (N ≥ 64, see min_tree.uses_tree)  :func:`report_tree`
  row 6  the minimisers of R in index order (with the tree, M ≥ LIST_MIN_DISPATCHERS)
                                                              :func:`minimisers`
  rows 7 + m, 7 + M + m, 7 + 2M + m  dispatcher m's touched list: its entries' servers,
         estimates and slots of the last send, side by side  :func:`touched`, …
"""

from __future__ import annotations

import numpy as np
from numba import njit

from dispatchlab.compiled.argmin import argmin_random_ties
from dispatchlab.compiled.prefetch import prefetch
from dispatchlab.compiled.rng import randint, uniform
from dispatchlab.core.ram import require_memory
from dispatchlab.engine.interface import REPORT, choose_function, hook_function
from dispatchlab.model.system import System
from dispatchlab.policies.base import Kernel, Param, Policy, register
from dispatchlab.policies.led.min_tree import (
    BLOCK,
    mark_dirty,
    new_tree_rows,
    rebuild,
    refresh,
    tree_depth,
    tree_min,
    tree_pick,
    tree_select,
    tree_ties,
    update_block,
    uses_tree,
)

IP_PERIOD, IP_SYNCHRONOUS, IP_TREE, IP_DISPATCHERS = range(4)
COUNTDOWN, READY, LISTED = range(3)
DIAGNOSTICS = ("estimation_error",)
FIXED_ROWS = 7
#: the fewest dispatchers for which the minimisers of R are listed at each rebuild: the
#: list costs a pass over the N reports per synchronous update, a walk down the tree per
#: choice saved pays for it only with several choices per slot
LIST_MIN_DISPATCHERS = 8
NO_LIST = -1


@njit(inline="always", cache=True)
def dispatchers(memory):
    """M."""
    return memory.int_params[IP_DISPATCHERS]


@njit(inline="always", cache=True)
def reports(memory):
    """R, the last reported queue lengths (every dispatcher's estimate of an untouched n)."""
    return memory.int_state[0]


@njit(inline="always", cache=True)
def report_slots(memory):
    """report_slots[n]: the slot from which R_n holds (a report at the end of t: t + 1)."""
    return memory.int_state[1]


@njit(inline="always", cache=True)
def control(memory):
    """[slots left to the next synchronous update, initialised flag, listed minimisers]."""
    return memory.int_state[2]


@njit(inline="always", cache=True)
def touched_lengths(memory):
    """touched_lengths[m]: entries on dispatcher m's touched list (stale ones included)."""
    return memory.int_state[3]


@njit(inline="always", cache=True)
def scratch(memory):
    """A work row."""
    return memory.int_state[4]


@njit(inline="always", cache=True)
def report_tree(memory):
    """The shared min tree of R (only when :func:`has_tree`)."""
    return memory.int_state[5]


@njit(inline="always", cache=True)
def minimisers(memory):
    """The minimisers of R in index order (the first ``control(memory)[LISTED]``)."""
    return memory.int_state[6]


@njit(inline="always", cache=True)
def listed_minimisers(memory):
    """How many minimisers of R :func:`minimisers` lists, NO_LIST when the list does not
    hold (no tree, few dispatchers, or R changed since the last rebuild)."""
    return memory.int_state[2, LISTED]


@njit(inline="always", cache=True)
def rebuild_reports(memory):
    """Rebuild the tree after R changed everywhere, and with M ≥ LIST_MIN_DISPATCHERS list
    the minimisers of R (branch-free: every server is written, the count moves on a hit)."""
    R = reports(memory)
    tree = report_tree(memory)
    rebuild(R, tree)
    if dispatchers(memory) < LIST_MIN_DISPATCHERS:
        return
    best = tree_min(tree)
    out = minimisers(memory)
    count = 0
    for n in range(R.size):
        out[count] = n
        count += np.int64(R[n] == best)
    memory.int_state[2, LISTED] = count


@njit(inline="always", cache=True)
def touched(memory, m, dispatchers):
    """Dispatcher m's touched list: servers it has sent to since their last report."""
    return memory.int_state[FIXED_ROWS + m]


@njit(inline="always", cache=True)
def touched_estimates(memory, m, dispatchers):
    """touched_estimates[i]: dispatcher m's estimate of server touched[i]."""
    return memory.int_state[FIXED_ROWS + dispatchers + m]


@njit(inline="always", cache=True)
def touched_slots(memory, m, dispatchers):
    """touched_slots[i]: the slot of m's last send to touched[i]; the entry is valid while
    it is ≥ report_slots[touched[i]]."""
    return memory.int_state[FIXED_ROWS + 2 * dispatchers + m]


@njit(inline="always", cache=True)
def update_period(memory):
    """T_u, the update period in slots."""
    return memory.int_params[IP_PERIOD]


@njit(inline="always", cache=True)
def is_synchronous(memory):
    """SUJSQ (True) or AUJSQ (False)."""
    return memory.int_params[IP_SYNCHRONOUS] == 1


@njit(inline="always", cache=True)
def has_tree(memory):
    """Whether the shared min tree of R fits in a row."""
    return memory.int_params[IP_TREE] == 1


@njit(inline="always", cache=True)
def report_probability(memory):
    """AUJSQ: 1/T_u, the probability that a server reports in a slot."""
    return memory.float_params[0]


@njit(inline="always", cache=True)
def _prune(m, dispatchers, memory):
    """Drop the entries of m's touched list that a report has since replaced; returns the
    number left (every one valid). SUJSQ's lists are emptied at each update and no report
    comes between: every entry is valid, and the report slots of the list's servers
    (random reads, M lists a slot) are not read."""
    if is_synchronous(memory):
        return touched_lengths(memory)[m]
    listed = touched(memory, m, dispatchers)
    own = touched_estimates(memory, m, dispatchers)
    sent = touched_slots(memory, m, dispatchers)
    since = report_slots(memory)
    kept = 0
    for i in range(touched_lengths(memory)[m]):
        n = listed[i]
        if sent[i] >= since[n]:
            listed[kept] = n
            own[kept] = own[i]
            sent[kept] = sent[i]
            kept += 1
    touched_lengths(memory)[m] = kept
    return kept


@njit(inline="always", cache=True)
def _entry(n, listed, length):
    """The position of server n on a (pruned) touched list, −1 when it is not there."""
    for i in range(length):
        if listed[i] == n:
            return i
    return -1


@njit(inline="always", cache=True)
def _overlay_is_cheaper(listed, N, tree):
    """An overlay costs about 2·(BLOCK + depth) per touched server, a scan about N."""
    return 2 * listed * (BLOCK + tree_depth(tree)) < N


@njit(inline="always", cache=True)
def _select(R, tree, skip, listed_count, listed):
    """The (skip + 1)-th minimiser of R in index order: off the list when it holds
    (``listed_count`` ≠ NO_LIST), else by a walk down the tree."""
    if listed_count != NO_LIST:
        return listed[skip]
    return tree_select(R, tree, skip, False)


@njit(inline="always", cache=True)
def _untouched_minimiser(R, tree, listed, length, work, rng, listed_count, listed_min):
    """argmin of Q̃^m when some server that holds min R was not sent to (−1 otherwise), with
    the scan's draw: Q̃^m = R off the touched list and > R on it, so the minimisers of Q̃^m
    are the c − t untouched minimisers of R (c of R's, t of them touched); r uniform on
    c − t picks the r-th of them in index order, read off the list of R's minimisers
    (``listed_min``, when ``listed_count`` ≠ NO_LIST) or the tree."""
    best = tree_min(tree)
    touched_minimisers = 0
    for i in range(length):
        n = listed[i]
        if R[n] == best:  # insertion into work[:touched_minimisers], ascending
            k = touched_minimisers
            while k > 0 and work[k - 1] > n:
                work[k] = work[k - 1]
                k -= 1
            work[k] = n
            touched_minimisers += 1
    ties = tree_ties(tree) - touched_minimisers
    if ties <= 0:
        return -1
    untouched = randint(rng, ties) if ties > 1 else 0
    # the (untouched + 1)-th minimiser of R off the touched list: the minimiser at position
    # untouched + (the touched ones up to it), found by walks to a fixed point (usually one
    # or two walks, where a rank query per touched minimiser took up to |touched|)
    counted = 0
    while True:
        target = _select(R, tree, untouched + counted, listed_count, listed_min)
        below = counted
        while below < touched_minimisers and work[below] <= target:
            below += 1
        if below == counted:
            return target
        counted = below


@njit(inline="always", cache=True)
def _overlaid_minimiser(R, tree, own, listed, length, work, rng):
    """argmin of Q̃^m when every minimiser of R was sent to: R ← Q̃^m on the touched
    servers (saved in ``work``) and on the tree, the walk, then R and the tree restored."""
    for i in range(length):
        n = listed[i]
        work[i] = R[n]
        R[n] = own[i]
    for i in range(length):
        update_block(R, tree, listed[i] // BLOCK)
    target = tree_pick(R, tree, rng, False)
    for i in range(length):
        R[listed[i]] = work[i]
    for i in range(length):
        update_block(R, tree, listed[i] // BLOCK)
    return target


@njit(inline="always", cache=True)
def _prefetch_next_list(m, dispatchers, memory):
    """Prefetch the heads of dispatcher m + 1's touched list (its servers, estimates and
    slots: three rows, three lines), which the engine asks next in a batch slot."""
    if m + 1 >= dispatchers:
        return
    width = memory.int_state.shape[1]
    for row in (FIXED_ROWS + m + 1, FIXED_ROWS + dispatchers + m + 1,
                FIXED_ROWS + 2 * dispatchers + m + 1):
        prefetch(memory.int_state, row * width)


@choose_function
def _estimate_choose(m, jobs, slot, memory, ctx):
    N = slot.Q.size
    M = dispatchers(memory)
    _prefetch_next_list(m, M, memory)
    own = touched_estimates(memory, m, M)
    sent = touched_slots(memory, m, M)
    R = reports(memory)
    listed = touched(memory, m, M)
    length = _prune(m, M, memory)
    work = scratch(memory)
    target = -1
    if has_tree(memory) and _overlay_is_cheaper(length, N, report_tree(memory)):
        tree = report_tree(memory)
        refresh(R, tree)  # AUJSQ's reports since the last choice
        target = _untouched_minimiser(R, tree, listed, length, work, ctx.rng,
                                      listed_minimisers(memory), minimisers(memory))
        if target < 0:
            target = _overlaid_minimiser(R, tree, own, listed, length, work, ctx.rng)
    else:
        for n in range(N):
            work[n] = R[n]
        for i in range(length):
            work[listed[i]] = own[i]
        target = argmin_random_ties(work[:N], ctx.rng)
    i = _entry(target, listed, length)
    if i < 0:  # a new entry of the touched list
        i = length
        listed[i] = target
        own[i] = R[target]
        touched_lengths(memory)[m] = length + 1
    own[i] += jobs
    sent[i] = slot.t
    return target


@hook_function
def _estimate_begin(slot, step, memory, ctx):
    state = control(memory)
    if state[READY] == 0:  # Q̃^m(0) = Q(0), known at set-up
        Q = slot.Q
        R = reports(memory)
        for n in range(Q.size):
            R[n] = Q[n]
        if has_tree(memory):
            rebuild_reports(memory)
        state[COUNTDOWN] = update_period(memory)
        state[READY] = 1
    return None


@hook_function
def _estimate_end(slot, step, memory, ctx):
    Q = slot.Q
    M = dispatchers(memory)
    N = Q.size
    msg = ctx.msg
    R = reports(memory)
    since = report_slots(memory)
    tracked = has_tree(memory)
    if is_synchronous(memory):
        state = control(memory)
        state[COUNTDOWN] -= 1
        if state[COUNTDOWN] == 0:
            for n in range(N):
                R[n] = Q[n]
                since[n] = slot.t + 1
            if tracked:
                rebuild_reports(memory)
            for m in range(M):  # every entry is stale now
                touched_lengths(memory)[m] = 0
            msg[REPORT] += N * M
            state[COUNTDOWN] = update_period(memory)
    else:
        probability = report_probability(memory)
        for n in range(N):
            if uniform(ctx.rng) < probability:  # n's report reaches every dispatcher
                R[n] = Q[n]
                since[n] = slot.t + 1
                if tracked:
                    mark_dirty(report_tree(memory), n)
                    control(memory)[LISTED] = NO_LIST
                msg[REPORT] += M
    if step.record:
        # E|Q_n − Q̃^m_n| over dispatchers and servers, as for LED: M·Σ|R_n − Q_n| corrected
        # on the touched servers (in integers: the same sum as over the M·N pairs)
        error = 0
        for n in range(N):
            error += abs(R[n] - Q[n])
        error *= M
        for m in range(M):
            length = _prune(m, M, memory)
            listed = touched(memory, m, M)
            own = touched_estimates(memory, m, M)
            for i in range(length):
                n = listed[i]
                error += abs(own[i] - Q[n]) - abs(R[n] - Q[n])
        step.diag[0] += error / (M * N)
    return None


class _EstimateJsq(Policy):
    diagnostics = DIAGNOSTICS
    synchronous = 1
    parameters = (Param("T_u", int, 10, "T_u, update period in slots (AUJSQ: mean interval "
                        "between a server's reports)", low=1),)

    def kernel(self, system: System) -> Kernel:
        n, m = system.n_servers, system.dispatchers
        period = self.params["T_u"]
        width = max(n, m, 3)
        rows = FIXED_ROWS + 3 * m
        # the kernel's int64 state and the copy each run makes of it (Kernel.memory)
        require_memory("dispatchers", 2 * 8 * rows * width,
                       f"the estimates of M = {m} dispatchers × N = {n} servers")
        state = np.zeros((rows, width), np.int64)
        state[2, LISTED] = NO_LIST
        tree = uses_tree(n, width)
        if tree:
            state[5] = new_tree_rows(n, 1, width)[0]
        return Kernel(_estimate_choose, _estimate_begin, _estimate_end,
                      int_params=np.array([period, self.synchronous, int(tree), m], np.int64),
                      float_params=np.array([1.0 / period]),
                      int_state=state, n_diagnostics=len(DIAGNOSTICS))


@register
class SynchronousUpdateJsq(_EstimateJsq):
    """SUJSQ, registered as ``sujsq``: JSQ on estimates incremented at dispatch, all N
    refreshed every T_u slots ([HSJSQ]; docs/model.md#sujsq)."""

    name = "sujsq"
    summary = ("SUJSQ: JSQ on estimates incremented on dispatch and refreshed by all N servers "
               "every T_u slots (N messages per update and dispatcher).")
    theory = ("Hyper-scalable JSQ [HSJSQ]: near-JSQ delay at a message rate ~N/T_u; T_u = 1 "
              "is JSQ.")
    synchronous = 1


@register
class AsynchronousUpdateJsq(_EstimateJsq):
    """AUJSQ, registered as ``aujsq``: JSQ on estimates incremented at dispatch; each server
    reports its queue with probability 1/T_u per slot ([HSJSQ]; docs/model.md#sujsq)."""

    name = "aujsq"
    summary = ("AUJSQ: JSQ on estimates incremented on dispatch; each server reports its queue "
               "with probability 1/T_u per slot (1 message per report and dispatcher).")
    theory = ("Hyper-scalable JSQ [HSJSQ] with asynchronous (geometric) update intervals; "
              "message rate N/T_u per slot.")
    synchronous = 0
