"""The servers of the continuous-time engine: a job pool and, per server, the jobs present
served first-come-first-served, by processor sharing or by preemptive
shortest-remaining-processing-time.

Jobs live in one pool (arrays indexed by job, with a free list); each server keeps its jobs
in a singly linked list, in order of arrival, and knows the job that completes next and
when. A server of speed s serves work at rate s:

* **FIFO** (``fifo``): the head of the list is in service since ``mark``; it completes at
  mark + X/s.
* **Processor sharing** (``ps``): the k jobs present each receive s/k. The server keeps a
  virtual time V (the service each job present has received since the server was last
  empty, V̇ = s/k); a job arriving at V = v completes when V reaches v + X, its ``key``. The
  next completion is the smallest key, at now + (key − V)·k/s.
* **Preemptive SRPT** (``srpt``): the job with the least remaining work is served; ``key``
  holds each job's remaining work, that of the job in service as of ``mark``. An arrival
  with less work than the job in service's remainder preempts it (ties: no preemption).

Under FIFO a server's jobs form a list in arrival order; under PS and SRPT a skew heap
(self-adjusting, two links a job) ordered by ``key``, ties to the earlier arrival: the job
that completes next is its root, and a departure merges the root's two subtrees, so both
arrivals and departures cost O(log k) amortised for k present (a walk through the k jobs,
as before, made an overloaded server's departures O(k): minutes for a run that had to
reach its bound). Every discipline is work-conserving, so a server's
unfinished work (what LWL compares) is the same under all three: ``work`` as of
``work_time``, falling at rate s while it is positive.
"""

from __future__ import annotations

import numpy as np
from numba import njit

FIFO, PROCESSOR_SHARING, SRPT = range(3)
DISCIPLINES = {"fifo": FIFO, "ps": PROCESSOR_SHARING, "srpt": SRPT}
NIL = -1

# the server arrays' rows (one float matrix, one integer matrix, each (rows, N))
S_WORK, S_WORK_TIME, S_VIRTUAL, S_MARK, S_NEXT = range(5)
N_SERVER_FLOATS = 5
# S_HEAD: the first job of a FIFO server's list, the root of a PS or SRPT server's heap
S_HEAD, S_TAIL, S_COUNT, S_CURRENT = range(4)
N_SERVER_INTS = 4
# the job pool's rows: J_LINK the next job of a FIFO list, J_LEFT and J_RIGHT a job's
# subtrees in a PS or SRPT heap
J_ARRIVAL, J_SIZE, J_KEY = range(3)
N_JOB_FLOATS = 3
J_LINK, J_INDEX, J_LEFT, J_RIGHT = range(4)
N_JOB_INTS = 4


def new_servers(count: int) -> tuple[np.ndarray, np.ndarray]:
    """The float and integer state of ``count`` empty servers."""
    floats = np.zeros((N_SERVER_FLOATS, count))
    floats[S_NEXT] = np.inf
    ints = np.full((N_SERVER_INTS, count), NIL, dtype=np.int64)
    ints[S_COUNT] = 0
    return floats, ints


def new_pool(capacity: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """An empty pool of ``capacity`` jobs: floats, integers and the free list (a stack
    whose first entry counts the free jobs)."""
    free = np.empty(capacity + 1, dtype=np.int64)
    free[0] = capacity
    free[1:] = np.arange(capacity - 1, -1, -1)
    return np.zeros((N_JOB_FLOATS, capacity)), np.zeros((N_JOB_INTS, capacity), np.int64), free


@njit(inline="always", cache=True)
def _update_work(sf, n, now, speed):
    """Bring server n's unfinished work to time ``now``."""
    left = sf[S_WORK, n] - (now - sf[S_WORK_TIME, n]) * speed
    sf[S_WORK, n] = left if left > 0.0 else 0.0
    sf[S_WORK_TIME, n] = now


@njit(inline="always", cache=True)
def _before(jf, ji, a, b):
    """Job a comes before job b in a heap: the smaller key, ties to the earlier arrival."""
    return jf[J_KEY, a] < jf[J_KEY, b] or (jf[J_KEY, a] == jf[J_KEY, b]
                                            and ji[J_INDEX, a] < ji[J_INDEX, b])


@njit(cache=True)
def _merge(jf, ji, first, second):
    """The skew heap of the heaps rooted at ``first`` and ``second`` (NIL: empty), merged
    top-down: along the merge path each node's children are swapped and the rest of the
    merge becomes its left subtree."""
    if first == NIL:
        return second
    if second == NIL:
        return first
    if _before(jf, ji, second, first):
        first, second = second, first
    root = first
    parent = first
    rest = ji[J_RIGHT, parent]
    ji[J_RIGHT, parent] = ji[J_LEFT, parent]
    while rest != NIL and second != NIL:
        if _before(jf, ji, second, rest):
            rest, second = second, rest
        ji[J_LEFT, parent] = rest
        parent = rest
        rest = ji[J_RIGHT, parent]
        ji[J_RIGHT, parent] = ji[J_LEFT, parent]
    ji[J_LEFT, parent] = rest if rest != NIL else second
    return root


@njit(cache=True)
def admit(discipline, sf, si, jf, ji, n, job, now, speed):
    """Job ``job`` (its arrival time and size in the pool) joins server n at ``now``;
    returns its next completion time."""
    size = jf[J_SIZE, job]
    count = si[S_COUNT, n]
    _update_work(sf, n, now, speed)
    sf[S_WORK, n] += size
    si[S_COUNT, n] = count + 1
    if discipline == FIFO:
        ji[J_LINK, job] = NIL
        if count == 0:
            si[S_HEAD, n] = job
        else:
            ji[J_LINK, si[S_TAIL, n]] = job
        si[S_TAIL, n] = job
        if count == 0:
            si[S_CURRENT, n] = job
            sf[S_MARK, n] = now
            sf[S_NEXT, n] = now + size / speed
    elif discipline == PROCESSOR_SHARING:
        if count == 0:
            sf[S_VIRTUAL, n] = 0.0
        else:
            sf[S_VIRTUAL, n] += (now - sf[S_MARK, n]) * speed / count
        sf[S_MARK, n] = now
        jf[J_KEY, job] = sf[S_VIRTUAL, n] + size
        current = _push(si, jf, ji, n, job, count)
        sf[S_NEXT, n] = now + (jf[J_KEY, current] - sf[S_VIRTUAL, n]) * (count + 1) / speed
    else:  # SRPT: the job in service (the root) keeps its place as its remainder falls
        jf[J_KEY, job] = size
        if count > 0:
            jf[J_KEY, si[S_CURRENT, n]] -= (now - sf[S_MARK, n]) * speed
        current = _push(si, jf, ji, n, job, count)  # a smaller job preempts (ties do not)
        sf[S_MARK, n] = now
        sf[S_NEXT, n] = now + jf[J_KEY, current] / speed
    return sf[S_NEXT, n]


@njit(inline="always", cache=True)
def _push(si, jf, ji, n, job, count):
    """``job`` into server n's heap (``count`` jobs before it); the new root, in service."""
    ji[J_LEFT, job] = NIL
    ji[J_RIGHT, job] = NIL
    root = _merge(jf, ji, si[S_HEAD, n] if count > 0 else NIL, job)
    si[S_HEAD, n] = root
    si[S_CURRENT, n] = root
    return root


@njit(cache=True)
def complete(discipline, sf, si, jf, ji, n, now, speed):
    """Server n completes its current job at ``now``: the job, unlinked (its pool entry is
    still to be freed by the caller); the server's next completion is set."""
    job = si[S_CURRENT, n]
    _update_work(sf, n, now, speed)
    if discipline == FIFO:  # the head of the list
        following = ji[J_LINK, job]
        si[S_HEAD, n] = following
        if following == NIL:
            si[S_TAIL, n] = NIL
    else:  # the root of the heap
        si[S_HEAD, n] = _merge(jf, ji, ji[J_LEFT, job], ji[J_RIGHT, job])
    count = si[S_COUNT, n] - 1
    si[S_COUNT, n] = count
    if count == 0:
        si[S_CURRENT, n] = NIL
        sf[S_WORK, n] = 0.0  # (what rounding left)
        sf[S_NEXT, n] = np.inf
        return job
    if discipline == FIFO:
        current = si[S_HEAD, n]
        si[S_CURRENT, n] = current
        sf[S_MARK, n] = now
        sf[S_NEXT, n] = now + jf[J_SIZE, current] / speed
    elif discipline == PROCESSOR_SHARING:
        sf[S_VIRTUAL, n] = jf[J_KEY, job]  # exactly where the completed job's key was
        sf[S_MARK, n] = now
        current = si[S_HEAD, n]
        si[S_CURRENT, n] = current
        sf[S_NEXT, n] = now + (jf[J_KEY, current] - sf[S_VIRTUAL, n]) * count / speed
    else:  # SRPT: the others' remaining work is as it was when they were preempted
        current = si[S_HEAD, n]
        si[S_CURRENT, n] = current
        sf[S_MARK, n] = now
        sf[S_NEXT, n] = now + jf[J_KEY, current] / speed
    return job
