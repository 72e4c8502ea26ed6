"""An incremental minimum of one dispatcher's estimates, for L-JSQ and LSQ with push updates
(docs/model.md#led-strategies; with pull updates see :mod:`.min_blocks`), and SUJSQ/AUJSQ's shared
tree.

L-JSQ picks σ_t(1), the smallest local estimate Q̃^m_n with uniform ties; a scan of the N
estimates per dispatcher and slot made its cost grow as M·N. Here each dispatcher keeps a
segment tree over blocks of ``BLOCK`` consecutive estimates: node i holds the smallest
estimate below it and how many servers reach it. A write to Q̃^m_n only marks its block
dirty (a slot's updates to one block coalesce; see layout.write_estimate); the next
choice of that dispatcher refreshes the dirty blocks and their paths to the root (or
rebuilds the whole tree when that is cheaper), then walks down to the r-th minimiser in
index order for r uniform on the tie count — exactly the draw of
:func:`dispatchlab.compiled.argmin.argmin_random_ties`, so runs are bit-identical to the scan.
A leaf also keeps which servers of its block hold its min (a bit mask), so that the walk
ends on the mask and never reads the estimates: with M trees out of cache those were a
miss per walk, and the lines prefetched for them evicted the slot's other data.

One ``ist`` row per dispatcher (width ≥ 6P, P = the power of two ≥ ⌈N/BLOCK⌉ leaves):

    [0]             P
    [1]             number of dirty blocks
    [2i], [2i + 1]  min and tie count of heap node i (root 1, leaf P + b for block b), side
                    by side so that a step of the walk down reads one cache line, not two;
                    a dirty leaf's count is DIRTY (the flag shares the leaf's cache line,
                    which the refresh writes anyway)
    [4P + k]        the k-th dirty block
    [5P + b]        block b's minimisers: bit j set when estimate b·BLOCK + j is its min
                    (eight blocks to a cache line, next to one another)
"""

from __future__ import annotations

import numpy as np
from numba import njit

from dispatchlab.compiled.bits import bit_count, select_bit
from dispatchlab.compiled.prefetch import prefetch
from dispatchlab.compiled.rng import randint, select_unpredictable

#: estimates per leaf (its minimisers: one int64 mask, so at most 64). 64 made L-JSQ/LSQ's
#: M = 100 choices at N = 10⁴ ×0.9 (the M trees fit in L2, two levels fewer), but AUJSQ's
#: refreshes, which read a block per report, ×2 slower at N = 10³ (bench --scaling)
BLOCK = 16
EMPTY = np.iinfo(np.int64).max  # the min of a padding leaf (count 0)
DIRTY = -1  # the count of a leaf whose block changed since the last refresh


def tree_leaves(n_servers: int) -> int:
    """P, the number of leaves (blocks, padded to a power of two)."""
    blocks = -(-n_servers // BLOCK)
    return 1 << max(0, (blocks - 1).bit_length())


#: below this many servers a scan of the N estimates (same draw) is as fast as the tree
TREE_MIN_SERVERS = 64


def uses_tree(n_servers: int, width: int) -> bool:
    """Whether a dispatcher keeps a tree: N ≥ TREE_MIN_SERVERS and a tree row fits in
    ``width`` entries."""
    return n_servers >= TREE_MIN_SERVERS and tree_width(n_servers) <= width


def tree_width(n_servers: int) -> int:
    """Entries a dispatcher's tree row needs."""
    return 6 * tree_leaves(n_servers)


def new_tree_rows(n_servers: int, dispatchers: int, width: int) -> np.ndarray:
    """The M tree rows for all-zero estimates Q̃^m(0) = 0 (nothing dirty)."""
    P = tree_leaves(n_servers)
    tree = np.zeros(width, np.int64)
    tree[0] = P
    sizes = np.minimum(BLOCK, n_servers - BLOCK * np.arange(P)).clip(min=0)
    tree[2 * P: 4 * P: 2] = np.where(sizes > 0, 0, EMPTY)
    tree[2 * P + 1: 4 * P: 2] = sizes
    # (all BLOCK bits when BLOCK = 64: -1; a shift by 64 is undefined)
    tree[5 * P: 6 * P] = np.where(sizes >= 64, -1, (1 << np.minimum(sizes, 63)) - 1)
    for i in range(P - 1, 0, -1):
        _combine(tree, i)
    return np.tile(tree, (dispatchers, 1))


@njit(inline="always", cache=True)
def tree_min(tree):
    """The smallest value (the root's min; tree up to date)."""
    return tree[2]


@njit(inline="always", cache=True)
def tree_ties(tree):
    """How many servers hold the smallest value (the root's count; tree up to date)."""
    return tree[3]


@njit(inline="always", cache=True)
def tree_depth(tree):
    """log₂ P, the number of levels from the root to the leaves."""
    depth = 0
    while (1 << depth) < tree[0]:
        depth += 1
    return depth


@njit(inline="always", cache=True)
def _block_leaf(values, tree, P, b):
    """Set leaf P + b to (min, count) of the estimates of block b, and its minimisers."""
    start = b * BLOCK
    stop = min(start + BLOCK, values.size)
    best = EMPTY
    mask = 0
    if stop - start == BLOCK:
        # a full block: constant trip counts, which the compiler unrolls
        best = values[start]
        for j in range(1, BLOCK):
            best = min(best, values[start + j])
        for j in range(BLOCK):
            mask |= np.int64(values[start + j] == best) << j
    elif start < stop:
        best = values[start]
        for n in range(start + 1, stop):
            best = min(best, values[n])
        for n in range(start, stop):
            mask |= np.int64(values[n] == best) << (n - start)
    leaf = 2 * (P + b)
    tree[leaf] = best
    tree[leaf + 1] = bit_count(mask)
    tree[5 * P + b] = mask


@njit(inline="always", cache=True)
def _combine(tree, i):
    """Node i from its two children (nodes 2i, 2i + 1 at [4i .. 4i + 4)); returns whether
    it changed."""
    left_min = tree[4 * i]
    right_min = tree[4 * i + 2]
    best = min(left_min, right_min)
    count = (np.int64(left_min == best) * tree[4 * i + 1]
             + np.int64(right_min == best) * tree[4 * i + 3])
    changed = tree[2 * i] != best or tree[2 * i + 1] != count
    tree[2 * i] = best
    tree[2 * i + 1] = count
    return changed


@njit(inline="always", cache=True)
def mark_dirty(tree, n):
    """Record that estimate n changed (its block is refreshed at the next choice)."""
    P = tree[0]
    b = n // BLOCK
    count = 2 * (P + b) + 1
    if tree[count] != DIRTY:
        tree[count] = DIRTY
        dirty = tree[1]
        tree[4 * P + dirty] = b
        tree[1] = dirty + 1


@njit(inline="always", cache=True)
def write_through(values, tree, n, old, value):
    """values[n] ← value (from ``old`` = values[n], which the caller knows: for the chosen
    server, the tree's min) with the tree brought up to date at once, when it is up to date
    (else n's block joins the dirty ones). For a write to the server just chosen: the walk
    down has just brought its path into cache, where a later refresh would find it evicted
    by the other dispatchers' trees. The tree is the same either way."""
    if tree[1] != 0:
        mark_dirty(tree, n)
        values[n] = value
        return
    values[n] = value
    P = tree[0]
    b = n // BLOCK
    node = P + b
    if _keeps_min(tree, node, old, value):
        tree[5 * P + b] &= ~(np.int64(1) << (n - b * BLOCK))  # n leaves the block's minimisers
    else:
        _block_leaf(values, tree, P, b)
        node >>= 1
        while node >= 1 and not _keeps_min(tree, node, old, value):
            if not _combine(tree, node):
                return
            node >>= 1
    # n was one of several servers at ``old`` below this node (LSQ's increment of the chosen
    # server, usually at its leaf): every node from here up whose min is ``old`` keeps it
    # and loses one tie; the nodes above one with a smaller min do not count n
    while node >= 1 and tree[2 * node] == old:
        tree[2 * node + 1] -= 1
        node >>= 1


@njit(inline="always", cache=True)
def _keeps_min(tree, node, old, value):
    """Whether ``node`` keeps its min when one server below it goes from ``old`` up to
    ``value``: the min is ``old`` and another server holds it too."""
    return value > old and tree[2 * node] == old and tree[2 * node + 1] > 1


@njit(inline="always", cache=True)
def refresh(values, tree):
    """Bring the tree up to date with ``values`` (the dispatcher's estimates)."""
    P = tree[0]
    dirty = tree[1]
    if dirty == 0:
        return
    if dirty * (BLOCK + tree_depth(tree)) >= values.size + 2 * P:
        rebuild(values, tree)  # most blocks changed: everything bottom-up
        return
    for k in range(dirty):
        _prefetch_block_update(values, tree, P, tree[4 * P + k])
    for k in range(dirty):
        update_block(values, tree, tree[4 * P + k])
    tree[1] = 0


@njit(inline="always", cache=True)
def _prefetch_block_update(values, tree, P, b):
    """Prefetch what :func:`update_block` of block b touches: its estimates, its mask and
    its path to the root (known in advance: with M trees out of cache the path's loads
    would otherwise wait for one another)."""
    start = b * BLOCK
    for k in range(0, BLOCK, 8):
        prefetch(values, start + k)
    prefetch(tree, 5 * P + b)
    i = P + b
    while i >= 1:
        prefetch(tree, 2 * i)
        i >>= 1


@njit(inline="always", cache=True)
def rebuild(values, tree):
    """Recompute every leaf and node from ``values`` (nothing dirty afterwards)."""
    P = tree[0]
    for b in range(P):
        _block_leaf(values, tree, P, b)
    for i in range(P - 1, 0, -1):
        _combine(tree, i)
    tree[1] = 0


@njit(inline="always", cache=True)
def update_block(values, tree, b):
    """Recompute block b's leaf from ``values`` now, and its path to the root."""
    P = tree[0]
    _block_leaf(values, tree, P, b)
    i = (P + b) >> 1
    while i >= 1 and _combine(tree, i):
        i >>= 1


@njit(inline="always", cache=True)
def tree_argmin(values, tree, rng, warm):
    """The smallest estimate's server, ties uniform (the r-th minimiser in index order);
    ``warm``: see :func:`tree_select`."""
    refresh(values, tree)
    return tree_pick(values, tree, rng, warm)


@njit(inline="always", cache=True)
def tree_pick(values, tree, rng, warm):
    """:func:`tree_argmin` on a tree that is up to date with ``values`` (no refresh)."""
    ties = tree[3]
    return tree_select(values, tree, randint(rng, ties) if ties > 1 else 0, warm)


@njit(inline="always", cache=True)
def tree_select(values, tree, skip, warm):
    """The (skip + 1)-th server in index order that holds the smallest value (tree up to
    date, 0 ≤ skip < its tie count). The walk reads the tree only; with ``warm`` it also
    prefetches what a write of the chosen estimate reads (:func:`prefetch_write`), for a
    caller that writes it next (LSQ)."""
    P = tree[0]
    i = 1
    # branches, not a branch-free step: with M trees out of cache, a predicted branch lets
    # the next level's load start before this one's arrives (measured 1.2-1.6× faster at
    # M = 100, N = 10⁴; the branch-free step wins only while the tree sits in L1)
    while i < P:
        left = 2 * i
        # the next two levels below i (grandchildren: one cache line, great-grandchildren:
        # two), so that their loads overlap this one's
        prefetch(tree, 8 * i)
        prefetch(tree, 16 * i)
        prefetch(tree, 16 * i + 8)
        if 4 * left >= P and 2 * left < P:
            # three levels above the leaves: the masks of the 8 blocks below i too (one
            # line, or two when the row's alignment splits them)
            first = 5 * P + 4 * left - P
            prefetch(tree, first)
            prefetch(tree, first + 7)
        if tree[2 * left] == tree[2 * i]:
            left_count = tree[2 * left + 1]
            if skip < left_count:
                i = left
                continue
            skip -= left_count
        i = left + 1
    target = (i - P) * BLOCK + select_bit(tree[5 * P + i - P], skip, BLOCK)
    if warm:
        prefetch_write(values, 0, target, tree[2 * i + 1] == 1)
    return target


@njit(inline="always", cache=True)
def prefetch_write(values, offset, target, sole):
    """Prefetch what LSQ's write of the chosen estimate reads (``values[offset + n]`` holds
    estimate n): the chosen server's block when it is the block's only minimiser
    (``sole``: the write then recomputes the leaf from the block), else the estimate."""
    if sole:
        start = offset + target - target % BLOCK
        for k in range(0, BLOCK, 8):
            prefetch(values, start + k)
    else:
        prefetch(values, offset + target)


@njit(inline="always", cache=True)
def group_select(table, tree_row, count, work, base, warm, values_row):
    """:func:`tree_select` on ``count`` trees at once, in lockstep: the trees are rows
    ``tree_row`` … ``tree_row + count − 1`` of ``table`` (up to date, of one size), walk k
    starts from skip ``work[base + count + k]`` and ends with its server in
    ``work[base + k]``; with ``warm``, what a write of walk k's chosen estimate reads is
    prefetched from row ``values_row + k`` (:func:`prefetch_write`). Why: with M trees
    out of cache a walk is a chain of dependent misses, one a level or two; the walks of
    several dispatchers overlap theirs (memory-level parallelism), which one walk cannot.
    The step is branch-free, so that a mispredicted turn of one walk does not discard the
    loads the others have issued."""
    width = table.shape[1]
    P = table[tree_row, 0]
    nodes = base  # work[base + k]: walk k's node, then its server
    skips = base + count
    for k in range(count):
        work[nodes + k] = 1
    i = np.int64(1)
    while i < P:  # every walk is at a node of the level of i
        for k in range(count):
            row = tree_row + k
            node = work[nodes + k]
            skip = work[skips + k]
            left = 2 * node
            start = row * width
            prefetch(table, start + 8 * node)
            prefetch(table, start + 16 * node)
            prefetch(table, start + 16 * node + 8)
            if 4 * left >= P and 2 * left < P:
                first = 5 * P + 4 * left - P
                prefetch(table, start + first)
                prefetch(table, start + first + 7)
            left_count = table[row, 2 * left + 1]
            holds = table[row, 2 * left] == table[row, 2]  # the left child has the min
            go_left = holds and skip < left_count
            work[skips + k] = skip - select_unpredictable(holds and not go_left,
                                                          left_count, np.int64(0))
            work[nodes + k] = select_unpredictable(go_left, left, left + 1)
        i *= 2
    for k in range(count):
        leaf = work[nodes + k]
        mask = table[tree_row + k, 5 * P + leaf - P]
        target = (leaf - P) * BLOCK + select_bit(mask, work[skips + k], BLOCK)
        work[nodes + k] = target
        if warm:
            prefetch_write(table, (values_row + k) * width, target,
                           table[tree_row + k, 2 * leaf + 1] == 1)
