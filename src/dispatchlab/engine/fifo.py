"""The servers' FIFOs of a run that times every job (``delay="all"``).

The FIFO of each server is a linked list of (arrival slot, job count) batches in one shared
pool of nodes, so memory follows the number of pending batches (at most ΣQ), not N × the
longest queue. A node is two int64: the arrival slot, and ``link`` = (next node << 32) |
jobs left (next = −1: the end of the list). Node n < N holds the batch at the head of server
n's FIFO in place (jobs left 0: the FIFO is empty, and then next = −1), so that a departure
reads its arrival slot at a known address instead of at the end of a chain of two loads; the
batches behind it follow its ``next``. ``tails[n]`` is the last node of server n's list (n
itself when the head is all there is). Free nodes form a stack linked the same way, with its
head and size in ``pool_free``. A server gains at most one batch per slot, so a segment
stops when fewer than N nodes are free and the pool grows (doubles) outside the hot loop;
node indices stay valid across growth.
"""

from __future__ import annotations

import numpy as np
from numba import njit

from dispatchlab.engine.layout import SUM_DELAY, delay_bin

COUNT_MASK = np.int64(0xFFFFFFFF)
NIL_LINK = np.int64(-1) << np.int64(32)  # next = −1, count 0
FREE_HEAD, FREE_COUNT = 0, 1


def _link_free(pool: np.ndarray, first: int, stop: int) -> None:
    """Link free nodes first … stop − 1 each to the next, (k + 1) << 32, a million at a
    time (at N = 10⁶ the pool grows to millions of nodes: no temporary of their size)."""
    for start in range(first, stop, 1 << 20):
        end = min(stop, start + (1 << 20))
        links = pool[start:end, 1]
        links[:] = np.arange(start + 1, end + 1, dtype=np.int64)
        links <<= 32


def new_pool(N: int, capacity: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """A pool of ``capacity`` ≥ N nodes: N empty FIFOs (tails at their head nodes), the rest
    free. Returns (pool, tails, pool_free). (NumPy, not compiled: it runs once a run.)"""
    pool = np.zeros((capacity, 2), np.int64)
    pool[:N, 1] = NIL_LINK
    _link_free(pool, N, capacity)
    pool[capacity - 1, 1] = NIL_LINK
    tails = np.arange(N, dtype=np.int64)
    pool_free = np.array([N if capacity > N else -1, capacity - N], np.int64)
    return pool, tails, pool_free


def grow_pool(pool: np.ndarray, pool_free: np.ndarray) -> np.ndarray:
    """The FIFO pool at twice its capacity (after a chunk stopped with CARRY_FIFO_FULL; node
    indices stay valid); the new nodes go on top of the free stack, ``pool_free`` is
    updated in place."""
    capacity = pool.shape[0]
    grown = np.zeros((2 * capacity, 2), np.int64)
    grown[:capacity] = pool
    _link_free(grown, capacity, 2 * capacity)
    grown[2 * capacity - 1, 1] = pool_free[FREE_HEAD] << np.int64(32)
    pool_free[FREE_HEAD] = capacity
    pool_free[FREE_COUNT] += capacity
    return grown


@njit(inline="always", cache=True)
def _fifo_append(n, slot, jobs, pool, tails, pool_free):
    """Append a batch of ``jobs`` jobs arrived in ``slot`` to server n's FIFO."""
    if pool[n, 1] & COUNT_MASK == 0:  # empty: the batch becomes the head, in place
        pool[n, 0] = slot
        pool[n, 1] = NIL_LINK | jobs
        return
    node = pool_free[FREE_HEAD]
    pool_free[FREE_HEAD] = pool[node, 1] >> np.int64(32)
    pool_free[FREE_COUNT] -= 1
    pool[node, 0] = slot
    pool[node, 1] = NIL_LINK | jobs
    tail = tails[n]
    pool[tail, 1] = (pool[tail, 1] & COUNT_MASK) | (node << np.int64(32))
    tails[n] = node


@njit(inline="always", cache=True)
def _fifo_pop(n, pool, tails, pool_free):
    """Server n's head batch is done: the next batch moves into the head node (its own node
    is freed), or the FIFO is left empty."""
    h = pool[n, 1] >> np.int64(32)
    if h < 0:
        pool[n, 1] = NIL_LINK
        return
    pool[n, 0] = pool[h, 0]
    pool[n, 1] = pool[h, 1]
    if tails[n] == h:
        tails[n] = n
    pool[h, 1] = pool_free[FREE_HEAD] << np.int64(32)
    pool_free[FREE_HEAD] = h
    pool_free[FREE_COUNT] += 1


@njit(inline="always", cache=True)
def _fifo_update(n, arrived_now, served, t, warmup, pool, tails, pool_free, delay_hist,
                 moments):
    """Append this slot's arrivals to server n's FIFO, then time its ``served`` departures."""
    if arrived_now > 0:
        _fifo_append(n, t, arrived_now, pool, tails, pool_free)
    while served > 0:
        link = pool[n, 1]
        count = link & COUNT_MASK
        if count == 0:  # more served than queued (a policy wrote Q): check_invariants says so
            break
        take = min(served, count)
        arrived = pool[n, 0]
        if arrived >= warmup:
            delay = t - arrived
            delay_hist[delay_bin(delay)] += take
            moments[SUM_DELAY] += delay * take
        served -= take
        if take == count:
            _fifo_pop(n, pool, tails, pool_free)
        else:
            pool[n, 1] = link - take
