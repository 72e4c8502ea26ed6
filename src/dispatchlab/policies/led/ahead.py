"""L-JSQ / LSQ choices on min trees made a few dispatchers ahead (push updates, batch slots).

With M trees out of cache (M = 100, N = 10⁴: ~13 MB of trees and estimates), a choice is
mostly one walk down its dispatcher's tree, a chain of dependent cache misses that no
prefetch can shorten: each level's address comes from the level before. The walks of
different dispatchers are independent, though, and in a batch slot the engine asks
dispatchers m, m + 1, … in order with nothing between their choices. So the choice of a
group leader m walks the trees of m … m + GROUP − 1 together
(:func:`~dispatchlab.policies.led.min_tree.group_select`), their misses overlapping, and
keeps the servers found for the others.

Same draws: dispatcher j's r is the j-th next draw of the policy's stream, computed on a
copy of the state (m's own draw is made for real), from j's tree after its refresh; a
choice of a dispatcher with push updates draws exactly once when its tree's min has
ties and never otherwise, and nothing else touches j's tree before j's own choice. The
server kept for j is used only when j's choice finds the stream in the state the group
assumed for it, in the same slot (a dispatcher without jobs between, or anything else
that drew, makes it walk alone, as without look-ahead); it then makes the draw it stands
for. Runs are bit-identical to those without look-ahead.

Where (the strategy's scratch row, unused by L-JSQ with push updates): entries
[AHEAD_STRIDE·j, AHEAD_STRIDE·j + 6) hold dispatcher j's server kept ahead, as
[t + 1 (0: none), server, the stream's state s0 … s3 it assumes]; the walks' nodes and
skips follow the M entries.
"""

from __future__ import annotations

import numpy as np
from numba import njit

from dispatchlab.compiled.rng import randint, randint_of_bits, xoshiro_step
from dispatchlab.compiled.signature_types import BOOL, I64, U64_VEC
from dispatchlab.engine.interface import MEMORY_TYPE
from dispatchlab.policies.led.layout import (
    IP_UPDATE,
    UPDATE_PUSH,
    dispatchers,
    estimate_index,
    estimates,
    index_rows_start,
    strategy_scratch_row,
)
from dispatchlab.policies.led.min_tree import (
    group_select,
    prefetch_refresh,
    refresh_prefetched,
    tree_argmin,
    tree_entries,
    tree_ties,
)

#: dispatchers whose walks run together (4: ~4 overlapping misses; the line-fill buffers
#: of one core hold 10-16)
GROUP = 8
#: scratch entries per dispatcher (one cache line)
AHEAD_STRIDE = 8
#: the fewest tree entries (M trees' rows) for which choices look ahead: the trees
#: must be out of the caches for overlapping their misses to pay (2¹⁶: 512 KB, an AMD
#: EPYC's L2 per core; at N = 10³, M = 100, trees in cache, LSQ ran ×1.2 slower with it)
AHEAD_MIN_TREE_ENTRIES = 1 << 16


@njit(inline="always", cache=True)
def looks_ahead(memory, servers):
    """Whether L-JSQ's choices on min trees look ahead: push updates, several dispatchers,
    M trees of at least AHEAD_MIN_TREE_ENTRIES entries in all, and room in the scratch
    row."""
    M = dispatchers(memory)
    entries = tree_entries(memory.int_state[index_rows_start(memory)])  # the same in every tree
    return (memory.int_params[IP_UPDATE] == UPDATE_PUSH and M > 1
            and M * entries >= AHEAD_MIN_TREE_ENTRIES
            and AHEAD_STRIDE * M + 2 * GROUP <= servers)


@njit(inline="always", cache=True)
def tree_choice(m, jobs, t, memory, rng, warm):
    """Dispatcher m's L-JSQ server on its min tree (refreshed, draw made), as
    :func:`~dispatchlab.policies.led.min_tree.tree_argmin`: kept from its group's walk
    when there is one for this slot and stream state, else, in a batch slot (more than one
    job) with look-ahead, m leads a new group, else m walks alone. ``warm``: see
    :func:`~dispatchlab.policies.led.min_tree.tree_select`."""
    own = estimates(memory, m)
    tree = estimate_index(memory, m)
    if looks_ahead(memory, own.size):
        kept = _kept_choice(memory, m, t, rng)
        if kept >= 0:
            ties = tree_ties(tree)
            if ties > 1:
                randint(rng, ties)  # the draw the group made for m, on its copy
            return kept
        if jobs > 1:
            # warm as a plain bool: one compiled walk for LSQ (True) and L-JSQ (False),
            # which the compile helper can compile ahead (CALLEES); it is read once a group
            return _group_choice(memory, m, t, rng, np.bool_(warm))
    return tree_argmin(own, tree, rng, warm)


@njit(inline="always", cache=True)
def _kept_choice(memory, m, t, rng):
    """The server kept for dispatcher m in slot t when the stream is in the state its group
    assumed (the entry is then spent), else −1."""
    entry = memory.int_state[strategy_scratch_row(memory)]
    at = AHEAD_STRIDE * m
    if entry[at] != t + 1:
        return np.int64(-1)
    for k in range(4):
        if entry[at + 2 + k] != np.int64(rng[k]):
            return np.int64(-1)
    entry[at] = 0
    return entry[at + 1]


@njit(cache=True)
def _group_choice(memory, m, t, rng, warm):
    """Dispatcher m's server, walking with those of m + 1 … m + GROUP − 1 (up to M − 1),
    whose servers and assumed stream states are kept. (Out of line: one call a group.)"""
    M = dispatchers(memory)
    count = min(GROUP, M - m)
    scratch = memory.int_state[strategy_scratch_row(memory)]
    work = AHEAD_STRIDE * M
    for k in range(count):
        prefetch_refresh(estimates(memory, m + k), estimate_index(memory, m + k))
    for k in range(count):
        refresh_prefetched(estimates(memory, m + k), estimate_index(memory, m + k))
    s0, s1, s2, s3 = rng[0], rng[1], rng[2], rng[3]
    for k in range(count):
        if k > 0:
            at = AHEAD_STRIDE * (m + k)
            scratch[at] = t + 1
            scratch[at + 2] = np.int64(s0)
            scratch[at + 3] = np.int64(s1)
            scratch[at + 4] = np.int64(s2)
            scratch[at + 5] = np.int64(s3)
        ties = tree_ties(estimate_index(memory, m + k))
        skip = np.int64(0)
        if ties > 1:
            bits, s0, s1, s2, s3 = xoshiro_step(s0, s1, s2, s3)
            skip = randint_of_bits(bits, ties)
        scratch[work + count + k] = skip
    ties = tree_ties(estimate_index(memory, m))
    if ties > 1:
        randint(rng, ties)  # m's own draw, for real (the first on the copy)
    group_select(memory.int_state, index_rows_start(memory) + m, count, scratch, work, warm, m)
    for k in range(1, count):
        scratch[AHEAD_STRIDE * (m + k) + 1] = scratch[work + k]
    return scratch[work]


#: the compiled functions this module's code calls rather than inlines, with the argument
#: types an adapter calls them with (``rng``: the stream state on its stack): a cold run's
#: compile helper compiles them ahead (engine.compile_helper.callees_to_compile)
CALLEES: dict[str, tuple[object, ...]] = {"_group_choice": (MEMORY_TYPE, I64, I64, U64_VEC, BOOL)}
