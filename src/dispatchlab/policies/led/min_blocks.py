"""A three-level minimum of one dispatcher's estimates, for L-JSQ and LSQ with pull updates
(docs/model.md#led-strategies, docs/model.md#led-updates).

L-JSQ picks σ_t(1), the smallest local estimate Q̃^m_n with uniform ties. Each dispatcher
keeps, for blocks of B consecutive estimates and for groups of G consecutive blocks (B,
G powers of two, B·G ≈ N^(2/3)), the smallest estimate and how many servers reach it. A
write to Q̃^m_n updates its block's and its group's pairs in O(1) from the old and new
value (:func:`block_write`); only when a block's (group's) last minimiser rises is its
pair marked DIRTY and recomputed at the next choice. A choice streams the J = ⌈K/G⌉ group
pairs (refreshing the dirty ones), draws r uniform on the tie count, and finds the r-th
minimiser in index order by a pass over the groups, one over the G block pairs of one
group and a scan of one block — exactly the draw of
:func:`dispatchlab.compiled.argmin.argmin_random_ties`, so runs are bit-identical to the scan.

Why three levels: with M rows out of cache (M = 100, N = 10⁴) a choice costs about the cache
lines it reads. Blocks of √N alone read ⌈N/B⌉ pairs and a block of B, 2√N entries (≈ 36
lines at N = 10⁴); with groups it reads 2J + 2G + B entries, ≈ 5·N^(1/3) (≈ 14 lines), for
one more pair written per estimate write (a line shared by every write to the group).

Why not the segment tree of :mod:`.min_tree` for pull: pull updates write p̂·N estimates
per slot into random dispatchers' rows (p̂·N/M per row and choice); with the tree each
write dirtied a block whose refresh walked up to ~log2(N/16) levels, out of cache at
M = 100. Here a write touches two pairs, a pair changes only when its minimum does, and a
choice is three short sequential reads. With push updates (a few writes per row and
choice) the tree's walk is cheaper: push and LSQ-with-push keep the tree, as does the
shared tree of SUJSQ/AUJSQ (which selects the minimiser at a given position, a walk down
the tree).

One index row per dispatcher (width 4 + 2J + 2K, K = ⌈N/B⌉ blocks, J = ⌈K/G⌉ groups):

    [0]             log2 B
    [1]             K
    [2]             log2 G
    [3]             J
    [4 + 2j]        min of group j
    [5 + 2j]        its tie count, or DIRTY (−1) when the pair must be recomputed
    [4 + 2J + 2k]   min of block k
    [5 + 2J + 2k]   its tie count, or DIRTY
"""

from __future__ import annotations

import math

import numpy as np
from numba import njit

from dispatchlab.compiled.rng import randint

EMPTY = np.iinfo(np.int64).max
DIRTY = -1
#: the smallest block; below 3·MIN_BLOCK_SHIFT bits of N the blocks are this size
MIN_BLOCK_SHIFT = 5
#: below this many servers a scan of the N estimates (same draw) is as fast
BLOCKS_MIN_SERVERS = 64
HEADER = 4


def block_shift(n_servers: int) -> int:
    """log2 B: B the power of two nearest N^(1/3), at least 2^MIN_BLOCK_SHIFT."""
    return max(MIN_BLOCK_SHIFT, round(math.log2(max(n_servers, 1)) / 3))


def group_shift(n_servers: int) -> int:
    """log2 G: G the power of two nearest √K (K blocks), at least 2."""
    blocks = -(-n_servers >> block_shift(n_servers))
    return max(1, round(math.log2(blocks) / 2))


def blocks_width(n_servers: int) -> int:
    """Entries a dispatcher's index row needs."""
    blocks = -(-n_servers >> block_shift(n_servers))
    groups = -(-blocks >> group_shift(n_servers))
    return HEADER + 2 * groups + 2 * blocks


def uses_blocks(n_servers: int, width: int) -> bool:
    """Whether a dispatcher keeps a block index: N ≥ BLOCKS_MIN_SERVERS and a row fits in
    ``width`` entries."""
    return n_servers >= BLOCKS_MIN_SERVERS and blocks_width(n_servers) <= width


def new_block_rows(n_servers: int, dispatchers: int, width: int) -> np.ndarray:
    """The M index rows for all-zero estimates Q̃^m(0) = 0: every pair (0, its size)."""
    shift, gshift = block_shift(n_servers), group_shift(n_servers)
    size, group_size = 1 << shift, 1 << (shift + gshift)
    blocks = -(-n_servers // size)
    groups = -(-blocks >> gshift)
    row = np.zeros(width, np.int64)
    row[:HEADER] = shift, blocks, gshift, groups
    first = HEADER + 2 * groups
    row[HEADER + 1: first: 2] = np.minimum(group_size,
                                           n_servers - group_size * np.arange(groups))
    row[first + 1: first + 2 * blocks: 2] = np.minimum(size,
                                                       n_servers - size * np.arange(blocks))
    return np.tile(row, (dispatchers, 1))


@njit(inline="always", cache=True)
def _pair_write(index, entry, old, value):
    """One estimate of the set whose (min, count) pair is at ``entry`` goes from ``old`` to
    ``value``: the pair stays exact, or DIRTY when the set's only minimiser rose.

    Branch-free (selects, not branches): at M = 1 a pull update writes ~p̂·N random
    estimates per slot, and the branchy version mispredicted on most of them."""
    best = index[entry]
    count = index[entry + 1]
    # not lower: +1 when the new value joins the minimum, −1 when the old one leaves it
    new_count = 1 if value < best else count + np.int64(value == best) - np.int64(old == best)
    new_count -= np.int64(new_count == 0)  # the last minimiser rose: DIRTY (−1)
    index[entry + 1] = DIRTY if count == DIRTY else new_count
    index[entry] = min(best, value)  # (stale while DIRTY: the refresh recomputes it)


@njit(inline="always", cache=True)
def block_entry(index, n):
    """Where estimate n's block pair is in the row."""
    return HEADER + 2 * index[3] + 2 * (n >> index[0])


@njit(inline="always", cache=True)
def group_entry(index, n):
    """Where estimate n's group pair is in the row."""
    return HEADER + 2 * (n >> (index[0] + index[2]))


@njit(inline="always", cache=True)
def block_write(values, index, n, value):
    """Q̃^m_n ← value (``values`` = Q̃^m), keeping the (min, count) pairs of n's block and
    group exact (or DIRTY)."""
    old = values[n]
    values[n] = value
    _pair_write(index, block_entry(index, n), old, value)
    _pair_write(index, group_entry(index, n), old, value)


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
    entry = HEADER + 2 * index[3] + 2 * k
    index[entry] = best
    index[entry + 1] = count


@njit(inline="always", cache=True)
def _clean_blocks(values, index, first, stop):
    """Refresh the dirty blocks first … stop − 1; returns their (min, count)."""
    base = HEADER + 2 * index[3]
    best = EMPTY
    ties = 0
    for k in range(first, stop):
        if index[base + 2 * k + 1] == DIRTY:
            _refresh_block(values, index, k)
        low = index[base + 2 * k]
        new_best = min(best, low)
        ties = ties * np.int64(best == new_best) + index[base + 2 * k + 1] * np.int64(
            low == new_best)
        best = new_best
    return best, ties


@njit(inline="always", cache=True)
def _select(index, base, first, stop, best, skip):
    """The pair among first … stop − 1 (at ``base`` + 2k) holding the (skip + 1)-th
    minimiser, and the skip left inside it."""
    k = first
    while k < stop - 1:
        if index[base + 2 * k] == best:
            count = index[base + 2 * k + 1]
            if skip < count:
                break
            skip -= count
        k += 1
    return k, skip


@njit(inline="always", cache=True)
def block_argmin(values, index, rng):
    """The smallest estimate's server, ties uniform (the r-th minimiser in index order)."""
    shift, blocks, gshift, groups = index[0], index[1], index[2], index[3]
    best = EMPTY
    ties = 0
    for j in range(groups):
        entry = HEADER + 2 * j
        if index[entry + 1] == DIRTY:
            low, count = _clean_blocks(values, index, j << gshift,
                                       min((j + 1) << gshift, blocks))
            index[entry] = low
            index[entry + 1] = count
        low = index[entry]
        new_best = min(best, low)
        ties = ties * np.int64(best == new_best) + index[entry + 1] * np.int64(low == new_best)
        best = new_best
    skip = randint(rng, ties) if ties > 1 else 0
    j, skip = _select(index, HEADER, 0, groups, best, skip)
    first = j << gshift
    stop = min(first + (1 << gshift), blocks)
    _clean_blocks(values, index, first, stop)  # (a clean group may hold dirty blocks)
    k, skip = _select(index, HEADER + 2 * groups, first, stop, best, skip)
    start = k << shift
    stop = min(start + (1 << shift), values.size)
    # branch-free: the hit at which skip reaches 0 (skip then goes negative)
    found = start
    for n in range(start, stop):
        hit = values[n] == best
        found = n if hit and skip == 0 else found
        skip -= hit
    return found
