"""A two-level minimum of one dispatcher's estimates, for L-JSQ and LSQ with pull updates
(docs/model.md#led-strategies, docs/model.md#led-updates).

L-JSQ picks σ_t(1), the smallest local estimate Q̃^m_n with uniform ties. Each dispatcher
keeps, for blocks of B ≈ √N consecutive estimates (a power of two, at least 32), the
block's smallest estimate and how many servers reach it. A write to Q̃^m_n updates its
block's pair in O(1) from the old and new value (:func:`block_write`); only when the
block's last minimiser rises is the pair marked DIRTY and recomputed at the next choice.
A choice streams the ⌈N/B⌉ pairs (refreshing the dirty ones), draws r uniform on the tie
count and finds the r-th minimiser in index order by a pass over the pairs and one scan
of one block — exactly the draw of :func:`dispatchlab.compiled.argmin.argmin_random_ties`,
so runs are bit-identical to the scan.

Why not the segment tree of :mod:`.min_tree` for pull: pull updates write p̂·N estimates
per slot into random dispatchers' rows (p̂·N/M per row and choice); with the tree each
write dirtied a block whose refresh walked up to ~log2(N/16) levels, out of cache at
M = 100. Here a write touches one pair, a block's pair changes only when its minimum does,
and a choice is a short sequential read (prefetched). With push updates (a few writes per
row and choice) the tree's walk is cheaper than streaming ⌈N/B⌉ pairs and a block of B:
push and LSQ-with-push keep the tree, as does the shared tree of SUJSQ/AUJSQ (which
selects the minimiser at a given position, a walk down the tree).

One index row per dispatcher (width 2 + 2K, K = ⌈N/B⌉ blocks):

    [0]             log2 B
    [1]             K
    [2 + 2k]        min of block k
    [3 + 2k]        its tie count, or DIRTY (−1) when the pair must be recomputed
"""

from __future__ import annotations

import math

import numpy as np
from numba import njit

from dispatchlab.compiled.rng import randint

EMPTY = np.iinfo(np.int64).max
DIRTY = -1
#: the smallest block; below 2·MIN_BLOCK_SHIFT bits of N the blocks are this size
MIN_BLOCK_SHIFT = 5
#: below this many servers a scan of the N estimates (same draw) is as fast
BLOCKS_MIN_SERVERS = 64


def block_shift(n_servers: int) -> int:
    """log2 B: B the power of two nearest √N, at least 2^MIN_BLOCK_SHIFT."""
    return max(MIN_BLOCK_SHIFT, round(math.log2(max(n_servers, 1)) / 2))


def blocks_width(n_servers: int) -> int:
    """Entries a dispatcher's index row needs."""
    shift = block_shift(n_servers)
    return 2 + 2 * -(-n_servers >> shift)


def uses_blocks(n_servers: int, width: int) -> bool:
    """Whether a dispatcher keeps a block index: N ≥ BLOCKS_MIN_SERVERS and a row fits in
    ``width`` entries."""
    return n_servers >= BLOCKS_MIN_SERVERS and blocks_width(n_servers) <= width


def new_block_rows(n_servers: int, dispatchers: int, width: int) -> np.ndarray:
    """The M index rows for all-zero estimates Q̃^m(0) = 0."""
    shift = block_shift(n_servers)
    size = 1 << shift
    blocks = -(-n_servers // size)
    row = np.zeros(width, np.int64)
    row[0] = shift
    row[1] = blocks
    row[2: 2 + 2 * blocks: 2] = 0
    row[3: 3 + 2 * blocks: 2] = np.minimum(size, n_servers - size * np.arange(blocks))
    return np.tile(row, (dispatchers, 1))


@njit(inline="always", cache=True)
def block_write(values, index, n, value):
    """Q̃^m_n ← value (``values`` = Q̃^m), keeping block n's (min, count) pair exact, or
    DIRTY when its only minimiser rose.

    Branch-free (selects, not branches): at M = 1 a pull update writes ~p̂·N random
    estimates per slot, and the branchy version mispredicted on most of them."""
    entry = 2 + 2 * (n >> index[0])
    best = index[entry]
    count = index[entry + 1]
    old = values[n]
    values[n] = value
    # not lower: +1 when the new value joins the minimum, −1 when the old one leaves it
    new_count = 1 if value < best else count + np.int64(value == best) - np.int64(old == best)
    new_count -= np.int64(new_count == 0)  # the last minimiser rose: DIRTY (−1)
    index[entry + 1] = DIRTY if count == DIRTY else new_count
    index[entry] = min(best, value)  # (stale while DIRTY: the refresh recomputes it)


@njit(inline="always", cache=True)
def _refresh_block(values, index, k):
    """Recompute block k's pair from ``values``."""
    shift = index[0]
    start = k << shift
    stop = min(start + (1 << shift), values.size)
    best = values[start]
    for n in range(start + 1, stop):
        best = min(best, values[n])
    count = 0
    for n in range(start, stop):
        count += values[n] == best
    index[2 + 2 * k] = best
    index[3 + 2 * k] = count


@njit(inline="always", cache=True)
def block_argmin(values, index, rng):
    """The smallest estimate's server, ties uniform (the r-th minimiser in index order)."""
    blocks = index[1]
    best = EMPTY
    ties = 0
    for k in range(blocks):
        if index[3 + 2 * k] == DIRTY:
            _refresh_block(values, index, k)
        low = index[2 + 2 * k]
        new_best = min(best, low)
        ties = ties * np.int64(best == new_best) + index[3 + 2 * k] * np.int64(low == new_best)
        best = new_best
    skip = randint(rng, ties) if ties > 1 else 0
    k = 0
    while k < blocks:
        if index[2 + 2 * k] == best:
            count = index[3 + 2 * k]
            if skip < count:
                break
            skip -= count
        k += 1
    shift = index[0]
    start = k << shift
    stop = min(start + (1 << shift), values.size)
    # branch-free: the hit at which skip reaches 0 (skip then goes negative)
    found = start
    for n in range(start, stop):
        hit = values[n] == best
        found = n if hit and skip == 0 else found
        skip -= hit
    return found
