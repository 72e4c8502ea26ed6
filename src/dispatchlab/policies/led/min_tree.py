"""An incremental minimum of one dispatcher's estimates, for L-JSQ and LSQ with push updates
(docs/model.md#led-strategies; with pull updates see :mod:`.min_blocks`), and SUJSQ/AUJSQ's shared
tree.

L-JSQ picks σ_t(1), the smallest local estimate Q̃^m_n with uniform ties; a scan of the N
estimates per dispatcher and slot made its cost grow as M·N. Here each dispatcher keeps a
tree of fan-out ``FAN`` over blocks of ``BLOCK`` consecutive estimates: node i holds the
smallest estimate below it and how many servers reach it. A write to Q̃^m_n only marks its
block dirty (a slot's updates to one block coalesce; see layout.write_estimate); the next
choice of that dispatcher refreshes the dirty blocks and their paths to the root (or
rebuilds the whole tree when that is cheaper), then walks down to the r-th minimiser in
index order for r uniform on the tie count — exactly the draw of
:func:`dispatchlab.compiled.argmin.argmin_random_ties`, so runs are bit-identical to the scan.
A leaf also keeps which servers of its block hold its min (a bit mask), so that the walk
ends on the mask and never reads the estimates: with M trees out of cache those were a
miss per walk, and the lines prefetched for them evicted the slot's other data.

Why four children a node: a choice costs about its tree's levels (a walk down, and LSQ's
write back up), each a step that waits for the one before. A binary tree over N = 10⁴
servers has ten levels; four children halve them, and a node's four (min, count) pairs
fill one cache line (with the kernel's memory starting on one, engine.interface), so a
level still reads one line. With the group walk's indices unsigned (no negative-index
test), LSQ and L-JSQ with push updates at M = 100, N = 10⁴ cost ×0.8 of the binary tree's
(cost(M = 100)/cost(M = 1) 2.26 → 1.82 and 2.04 → 1.72 with the aligned memory;
benchmarks/README.md, issue 26, fifth session).

One ``int_state`` row per dispatcher (P = FAN^D ≥ ⌈N/BLOCK⌉ leaves, L = (P − 1)/(FAN − 1)
inner nodes; nodes numbered from the root 0, node i's children FAN·i + 1 … FAN·i + FAN,
leaf L + b over block b):

    [0]                 P
    [1]                 number of dirty blocks
    [2]                 L
    [3]                 D, the levels below the root
    [4]                 MASKS = NODES + 2(L + P)
    [5]                 K = ⌈N/BLOCK⌉, the blocks (leaves past them are padding: min EMPTY,
                        count 0, no mask; so that a row fits in N entries, ≈ 0.8·N at most)
    [NODES + 2i], [NODES + 2i + 1]
                        min and tie count of node i (NODES = 6: the root at [6], [7], and
                        the FAN children of a node side by side from an entry ≡ 0 mod 8,
                        one cache line when the row is aligned to one); a dirty leaf's count
                        is DIRTY (the flag shares the leaf's cache line, which the refresh
                        writes anyway)
    [MASKS + b]         block b's minimisers: bit j set when estimate b·BLOCK + j is its min
    [MASKS + K + k]     the k-th dirty block
"""

from __future__ import annotations

import numpy as np
from numba import njit

from dispatchlab.compiled.bits import bit_count, select_bit
from dispatchlab.compiled.prefetch import prefetch
from dispatchlab.compiled.rng import randint, select_unpredictable
from dispatchlab.compiled.signature_types import I64_VEC

#: estimates per leaf (its minimisers: one int64 mask, so at most 64). On the binary tree
#: 64 made L-JSQ/LSQ's M = 100 choices at N = 10⁴ ×0.9 (the M trees fit in L2, two levels
#: fewer), but AUJSQ's refreshes, which read a block per report, ×2 slower at N = 10³
BLOCK = 16
#: children per inner node (a power of two; its FAN pairs fill one cache line at 4)
FAN = 4
LOG_FAN = FAN.bit_length() - 1
#: where node 0's pair starts (so that every node's children start at an entry ≡ 0 mod 8)
NODES = 6
EMPTY = np.iinfo(np.int64).max  # the min of a padding leaf (count 0)
DIRTY = -1  # the count of a leaf whose block changed since the last refresh


def tree_leaves(n_servers: int) -> int:
    """P, the number of leaves (blocks, padded to a power of FAN)."""
    blocks = -(-n_servers // BLOCK)
    leaves = 1
    while leaves < blocks:
        leaves *= FAN
    return leaves


#: below this many servers a scan of the N estimates (same draw) is as fast as the tree
TREE_MIN_SERVERS = 64


def uses_tree(n_servers: int, width: int) -> bool:
    """Whether a dispatcher keeps a tree: N ≥ TREE_MIN_SERVERS and a tree row fits in
    ``width`` entries."""
    return n_servers >= TREE_MIN_SERVERS and tree_width(n_servers) <= width


def _inner_nodes(leaves: int) -> int:
    return (leaves - 1) // (FAN - 1)


def tree_width(n_servers: int) -> int:
    """Entries a dispatcher's tree row needs."""
    P = tree_leaves(n_servers)
    return NODES + 2 * (_inner_nodes(P) + P) + 2 * -(-n_servers // BLOCK)


def new_tree_rows(n_servers: int, dispatchers: int, width: int) -> np.ndarray:
    """The M tree rows for all-zero estimates Q̃^m(0) = 0 (nothing dirty)."""
    P = tree_leaves(n_servers)
    L = _inner_nodes(P)
    masks = NODES + 2 * (L + P)
    K = -(-n_servers // BLOCK)
    tree = np.zeros(width, np.int64)
    tree[:6] = P, 0, L, (P.bit_length() - 1) // LOG_FAN, masks, K
    sizes = np.minimum(BLOCK, n_servers - BLOCK * np.arange(P)).clip(min=0)
    leaves = NODES + 2 * L
    tree[leaves: masks: 2] = np.where(sizes > 0, 0, EMPTY)
    tree[leaves + 1: masks: 2] = sizes
    # (all BLOCK bits when BLOCK = 64: -1; a shift by 64 is undefined)
    tree[masks: masks + K] = np.where(sizes[:K] >= 64, -1,
                                      (1 << np.minimum(sizes[:K], 63)) - 1)
    # the inner nodes level by level from the bottom, as _combine makes them (no compiling)
    level, size = L, P  # the first node and the width of the level below the one made
    while size > 1:
        children = tree[NODES + 2 * level: NODES + 2 * (level + size)].reshape(-1, FAN, 2)
        best = children[:, :, 0].min(axis=1)
        count = (children[:, :, 1] * (children[:, :, 0] == best[:, None])).sum(axis=1)
        size //= FAN
        level -= size
        tree[NODES + 2 * level: NODES + 2 * (level + size): 2] = best
        tree[NODES + 2 * level + 1: NODES + 2 * (level + size): 2] = count
    return np.tile(tree, (dispatchers, 1))


@njit(inline="always", cache=True)
def tree_min(tree):
    """The smallest value (the root's min; tree up to date)."""
    return tree[NODES]


@njit(inline="always", cache=True)
def tree_ties(tree):
    """How many servers hold the smallest value (the root's count; tree up to date)."""
    return tree[NODES + 1]


@njit(inline="always", cache=True)
def tree_entries(tree):
    """The entries the tree's row uses (:func:`tree_width`)."""
    return tree[4] + 2 * tree[5]


@njit(inline="always", cache=True)
def tree_depth(tree):
    """D = log_FAN P, the number of levels from the root to the leaves."""
    return tree[3]


@njit(inline="always", cache=True)
def _parent(node):
    """The parent of ``node`` (−1 for the root)."""
    return (node - 1) >> LOG_FAN


@njit(inline="always", cache=True)
def _children(node):
    """The entry of the first child's pair of ``node`` (its FAN pairs follow)."""
    return NODES + 2 * (FAN * node + 1)


@njit(inline="always", cache=True)
def _block_leaf(values, tree, b):
    """Set block b's leaf to (min, count) of its estimates, and its minimisers."""
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
    leaf = NODES + 2 * (tree[2] + b)
    tree[leaf] = best
    tree[leaf + 1] = bit_count(mask)
    tree[tree[4] + b] = mask


@njit(inline="always", cache=True)
def _combine(tree, i):
    """Node i from its FAN children; returns whether it changed."""
    first = _children(i)
    best = tree[first]
    for c in range(1, FAN):
        best = min(best, tree[first + 2 * c])
    count = np.int64(0)
    for c in range(FAN):
        count += select_unpredictable(tree[first + 2 * c] == best, tree[first + 2 * c + 1],
                                      np.int64(0))
    pair = NODES + 2 * i
    changed = tree[pair] != best or tree[pair + 1] != count
    tree[pair] = best
    tree[pair + 1] = count
    return changed


@njit(inline="always", cache=True)
def mark_dirty(tree, n):
    """Record that estimate n changed (its block is refreshed at the next choice)."""
    b = n // BLOCK
    count = NODES + 2 * (tree[2] + b) + 1
    if tree[count] != DIRTY:
        tree[count] = DIRTY
        dirty = tree[1]
        tree[tree[4] + tree[5] + dirty] = b
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
    b = n // BLOCK
    node = tree[2] + b
    if _keeps_min(tree, node, old, value):
        tree[tree[4] + b] &= ~(np.int64(1) << (n - b * BLOCK))  # n leaves the block's minimisers
    else:
        _block_leaf(values, tree, b)
        node = _parent(node)
        while node >= 0 and not _keeps_min(tree, node, old, value):
            if not _combine(tree, node):
                return
            node = _parent(node)
    # n was one of several servers at ``old`` below this node (LSQ's increment of the chosen
    # server, usually at its leaf): every node from here up whose min is ``old`` keeps it
    # and loses one tie; the nodes above one with a smaller min do not count n
    while node >= 0 and tree[NODES + 2 * node] == old:
        tree[NODES + 2 * node + 1] -= 1
        node = _parent(node)


@njit(inline="always", cache=True)
def _keeps_min(tree, node, old, value):
    """Whether ``node`` keeps its min when one server below it goes from ``old`` up to
    ``value``: the min is ``old`` and another server holds it too."""
    pair = NODES + 2 * node
    return value > old and tree[pair] == old and tree[pair + 1] > 1


@njit(inline="always", cache=True)
def refresh(values, tree):
    """Bring the tree up to date with ``values`` (the dispatcher's estimates)."""
    prefetch_refresh(values, tree)
    refresh_prefetched(values, tree)


@njit(inline="always", cache=True)
def prefetch_refresh(values, tree):
    """Prefetch what a refresh reads when it updates the dirty blocks one by one (nothing
    when it rebuilds), so that its loads wait together; a caller that refreshes several
    trees prefetches them all first, then calls :func:`refresh_prefetched` on each."""
    if _rebuilds(values, tree):
        return
    listed = tree[4] + tree[5]
    for k in range(tree[1]):
        _prefetch_block_update(values, tree, tree[listed + k])


@njit(inline="always", cache=True)
def refresh_prefetched(values, tree):
    """:func:`refresh` without its prefetch (made before by :func:`prefetch_refresh`)."""
    if tree[1] != 0:
        _refresh_dirty(values, tree)


@njit(cache=True)
def _refresh_dirty(values, tree):
    """The refresh of a tree with dirty blocks. Out of line: L-JSQ's and LSQ's choices,
    which refresh alone and in a group, inlined it twice (compiling their ``choose`` took
    12.7 and 17.7 s cold, now 8.6 and 13.1 s; Intel Xeon), for a call that costs
    nanoseconds beside the blocks it reads (the scaling benchmark's ns per job unchanged)."""
    if _rebuilds(values, tree):
        rebuild(values, tree)  # most blocks changed: everything bottom-up
        return
    listed = tree[4] + tree[5]
    for k in range(tree[1]):
        update_block(values, tree, tree[listed + k])
    tree[1] = 0


@njit(inline="always", cache=True)
def _rebuilds(values, tree):
    """Whether a refresh rebuilds the whole tree rather than update its dirty blocks one by
    one (then most blocks changed)."""
    return tree[1] * (BLOCK + FAN * tree_depth(tree)) >= values.size + 2 * tree[0]


@njit(inline="always", cache=True)
def _prefetch_block_update(values, tree, b):
    """Prefetch what :func:`update_block` of block b touches: its estimates, its mask and
    its path to the root with each node's siblings (one line a level; known in advance:
    with M trees out of cache the path's loads would otherwise wait for one another)."""
    start = b * BLOCK
    for k in range(0, BLOCK, 8):
        prefetch(values, start + k)
    prefetch(tree, tree[4] + b)
    node = tree[2] + b
    while node >= 0:
        prefetch(tree, NODES + 2 * node)
        node = _parent(node)


@njit(inline="always", cache=True)
def rebuild(values, tree):
    """Recompute every leaf and node from ``values`` (nothing dirty afterwards)."""
    for b in range(tree[5]):
        _block_leaf(values, tree, b)
    for i in range(tree[2] - 1, -1, -1):
        _combine(tree, i)
    tree[1] = 0


@njit(inline="always", cache=True)
def update_block(values, tree, b):
    """Recompute block b's leaf from ``values`` now, and its path to the root."""
    _block_leaf(values, tree, b)
    node = _parent(tree[2] + b)
    while node >= 0 and _combine(tree, node):
        node = _parent(node)


@njit(inline="always", cache=True)
def tree_argmin(values, tree, rng, warm):
    """The smallest estimate's server, ties uniform (the r-th minimiser in index order);
    ``warm``: see :func:`tree_select`."""
    refresh(values, tree)
    return tree_pick(values, tree, rng, warm)


@njit(inline="always", cache=True)
def tree_pick(values, tree, rng, warm):
    """:func:`tree_argmin` on a tree that is up to date with ``values`` (no refresh)."""
    ties = tree_ties(tree)
    return tree_select(values, tree, randint(rng, ties) if ties > 1 else 0, warm)


@njit(inline="always", cache=True)
def tree_select(values, tree, skip, warm):
    """The (skip + 1)-th server in index order that holds the smallest value (tree up to
    date, 0 ≤ skip < its tie count). The walk reads the tree only; with ``warm`` it also
    prefetches what a write of the chosen estimate reads (:func:`prefetch_write`), for a
    caller that writes it next (LSQ)."""
    L = tree[2]
    best = tree_min(tree)
    node = np.int64(0)
    # branches, not a branch-free step: with M trees out of cache, a predicted branch lets
    # the next level's load start before this one's arrives (1.2-1.6× faster at M = 100,
    # N = 10⁴ on a binary tree; the branch-free step won only in L1)
    while node < L:
        child = FAN * node + 1
        while True:  # the child holding the (skip + 1)-th minimiser (skip < the node's count)
            pair = NODES + 2 * child
            if tree[pair] == best:
                count = tree[pair + 1]
                if skip < count:
                    break
                skip -= count
            child += 1
        node = child
    b = node - L
    target = b * BLOCK + select_bit(tree[tree[4] + b], skip, BLOCK)
    if warm:
        prefetch_write(values, 0, target, tree[NODES + 2 * node + 1] == 1)
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
    out of cache a walk is a chain of dependent misses, one a level; the walks of several
    dispatchers overlap theirs (memory-level parallelism), which one walk cannot. The step
    is branch-free, so that a mispredicted turn of one walk does not discard the loads the
    others have issued; each walk prefetches the children of the node it moves to."""
    width = table.shape[1]
    L = table[tree_row, 2]
    masks = table[tree_row, 4]
    nodes = base  # work[base + k]: walk k's node, then its server
    skips = base + count
    for k in range(count):
        work[nodes + k] = 0
    for _ in range(table[tree_row, 3]):  # every walk is at a node of the same level
        for k in range(count):
            row = tree_row + k
            best = _at(table, row, NODES)
            skip = work[skips + k]
            first = FAN * work[nodes + k] + 1
            pair = NODES + 2 * first
            before = np.int64(0)  # minimisers below the children passed
            passed = np.int64(0)  # children passed
            total = np.int64(0)
            for c in range(FAN - 1):  # (the last child is never passed: skip < the count)
                total += select_unpredictable(_at(table, row, pair + 2 * c) == best,
                                              _at(table, row, pair + 2 * c + 1), np.int64(0))
                beyond = skip >= total
                passed += np.int64(beyond)
                before = select_unpredictable(beyond, total, before)
            node = first + passed
            work[skips + k] = skip - before
            work[nodes + k] = node
            ahead = select_unpredictable(node < L, NODES + 2 * (FAN * node + 1), masks + node - L)
            prefetch(table, row * width + ahead)
    for k in range(count):
        leaf = work[nodes + k]
        row = tree_row + k
        b = leaf - L
        target = b * BLOCK + select_bit(table[row, masks + b], work[skips + k], BLOCK)
        work[nodes + k] = target
        if warm:
            prefetch_write(table, (values_row + k) * width, target,
                           table[row, NODES + 2 * leaf + 1] == 1)


@njit(inline="always", cache=True)
def _at(table, row, column):
    """table[row, column] for indices known to be ≥ 0 (unsigned: no test for a negative
    index, a third of a walk step's instructions)."""
    return table[np.uint64(row), np.uint64(column)]


#: the compiled functions this module's code calls rather than inlines, with the argument
#: types its callers pass (a tree and its values: rows of the policy's state): a cold run's
#: compile helper compiles them ahead (engine.compile_helper.callees_to_compile)
CALLEES: dict[str, tuple[object, ...]] = {"_refresh_dirty": (I64_VEC, I64_VEC)}
