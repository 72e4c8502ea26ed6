"""LED's ``choose`` functions, one per configuration a run can have ([LED]; docs/model.md#led).

The strategy (L-JSQ, L-JBA, L-Pod or a user rule), the index the kernel keeps beside the
estimates (a min tree, block minima, the sum, none) and whether the estimate is written at
dispatch (the LSQ options ``increment`` and ``learn_on_send``) are fixed when the kernel
is built, so :func:`choose_for` picks, in Python, the compiled function that does just
that: a run compiles one strategy on one index, not every combination behind run-time
branches (one body with all of them took 93 s and 2.5 GB to compile cold). Each consumes
the random numbers of the plug-in rule (``l_jsq``, ``l_jba``, ``l_pod``) it stands for:
identical runs (tests/policies/test_led_index.py).
"""

from __future__ import annotations

from typing import Any

import numpy as np
from numba import njit

from dispatchlab.compiled.argmin import shorter_of_two
from dispatchlab.engine.interface import ANSWER, choose_function
from dispatchlab.policies.led.ahead import tree_choice
from dispatchlab.policies.led.layout import (
    INDEX_BLOCKS,
    INDEX_SUM,
    INDEX_TREE,
    dispatchers,
    estimate_index,
    estimates,
    increments,
    index_kind,
    learns_on_send,
    learnt_slots,
    prefetch_next_index,
    rate_alias_table,
    strategy_params,
    strategy_scratch_row,
    write_estimate,
)
from dispatchlab.policies.led.min_blocks import block_argmin
from dispatchlab.policies.led.min_tree import tree_min, write_through
from dispatchlab.policies.led.strategies import (
    CODE_JBA,
    CODE_JSQ,
    CODE_POD,
    JBA_WEIGHTED,
    Strategy,
    l_jba_pick,
    l_jba_pick_by_sum,
    l_jsq_pick,
    l_pod_pick,
    prefetch_next_jba_draws,
    prefetch_next_pod_pairs,
)

#: ``current`` of :func:`estimate_after_send` when the caller has not read Q̃^m_target
#: (estimates are never negative)
UNREAD = -1


@njit(inline="always", cache=True)
def _estimate(m, target, current, memory):
    """Q̃^m_target: ``current``, or read when UNREAD."""
    return estimates(memory, m)[target] if current == UNREAD else current


@njit(inline="always", cache=True)
def estimate_after_send(m, target, jobs, current, slot, memory, ctx):
    """Q̃^m_target after the ``jobs`` just sent to ``target``, or −1 when it is left alone.
    ``current`` is Q̃^m_target before the send when the caller has it at hand (a min
    tree's min), else UNREAD: only the options that need it read it (an unconditional
    read cost ~5 ns a choice on L-Pod, measured).

    learn_on_send (the LSQ of the group's simulator): the destination answers with its
    queue length Q_target(t) (1 message, kind ``answer``, once per dispatcher, destination
    and slot) and the estimate becomes Q_target(t) + the jobs m has sent there this slot.
    increment (LSQ of [LSQ]): Q̃^m_target += jobs (per-job mode: water-filling one job at a
    time). Otherwise the estimate is left alone. The caller writes the value through
    write_estimate (or the min tree's write_through), so that the strategy's index stays
    current.
    """
    if learns_on_send(memory):
        learnt = learnt_slots(memory, m)
        if learnt[target] != slot.t:
            learnt[target] = slot.t
            ctx.msg[ANSWER] += 1
            return slot.Q[target] + jobs
        return _estimate(m, target, current, memory) + jobs
    if increments(memory):
        return _estimate(m, target, current, memory) + jobs
    return np.int64(-1)


#: the fewest estimates (M·N, int64) for which a choice looks ahead to the next
#: dispatchers' (2¹⁶: 512 KB, this AMD EPYC's L2 per core)
LOOKAHEAD_MIN_ESTIMATES = 1 << 16


@njit(inline="always", cache=True)
def _looks_ahead(jobs, memory, own):
    """Whether a choice of ``jobs`` jobs on Q̃^m = ``own`` prefetches what the next
    dispatchers' choices will read: several jobs (batch mode), several dispatchers and M·N ≥
    :data:`LOOKAHEAD_MIN_ESTIMATES` (:func:`_jba_choice`, :func:`_pod_choice`)."""
    M = dispatchers(memory)
    return jobs > 1 and M > 1 and M * own.size >= LOOKAHEAD_MIN_ESTIMATES


@njit(inline="always", cache=True)
def _written(own, m, target, jobs, slot, memory, ctx):
    """LSQ's write at dispatch after a scan's choice of ``target``: the value of
    :func:`estimate_after_send` into Q̃^m_target, keeping the index informed."""
    value = estimate_after_send(m, target, jobs, UNREAD, slot, memory, ctx)
    if value >= 0:
        write_estimate(own, estimate_index(memory, m), index_kind(memory), target, value)
    return target


@njit(inline="always", cache=True)
def _jsq_choice(own, m, memory, ctx):
    """L-JSQ's scan, on block minima when the kernel keeps them (the same draw)."""
    if index_kind(memory) == INDEX_BLOCKS:
        return block_argmin(own, estimate_index(memory, m), ctx.rng)
    return l_jsq_pick(own, ctx.rng)


@njit(inline="always", cache=True)
def _jba_choice(own, m, jobs, slot, memory, ctx):
    """L-JBA's choice: with the plain average from the kept sum (alias draws ∝ μ, the
    scan's law), prefetching the next dispatchers' draws when the estimates are out of
    cache (:func:`_looks_ahead`); else the scan, plain or μ-weighted."""
    if index_kind(memory) == INDEX_SUM:
        target = l_jba_pick_by_sum(own, estimate_index(memory, m)[0], slot.mu,
                                   rate_alias_table(memory), ctx.rng)
        if _looks_ahead(jobs, memory, own):
            prefetch_next_jba_draws(memory.int_state, m, dispatchers(memory), ctx.rng,
                                    rate_alias_table(memory))
        return target
    return l_jba_pick(own, slot.mu, ctx.rng, strategy_params(memory)[0] == JBA_WEIGHTED)


@njit(inline="always", cache=True)
def _pod_choice(own, m, jobs, memory, ctx):
    """L-Pod's choice of a server for ``jobs`` jobs on Q̃^m = ``own``; with d = 2 it may
    prefetch the next dispatchers' comparisons (:func:`_looks_ahead`)."""
    d = np.int64(strategy_params(memory)[0])
    target = l_pod_pick(own, ctx.rng, d, memory.int_state, strategy_scratch_row(memory))
    if d == 2 and _looks_ahead(jobs, memory, own):
        prefetch_next_pod_pairs(memory.int_state, m, dispatchers(memory), ctx.rng)
    return target


@choose_function
def _lsq_tree_choose(m, jobs, slot, memory, ctx):
    """L-JSQ on its min tree with an LSQ option (increment or learn_on_send): the walk
    does not read the estimates, and the chosen one is the tree's min (reading it would
    be a cache miss with M trees); the tree is updated at once, while the path just
    walked is in cache."""
    own = estimates(memory, m)
    index = estimate_index(memory, m)
    target = tree_choice(m, jobs, slot.t, memory, ctx.rng, True)
    current = tree_min(index)
    value = estimate_after_send(m, target, jobs, current, slot, memory, ctx)
    if value >= 0:
        write_through(own, index, target, current, value)
    return target


@choose_function
def _jsq_scan_choose(m, jobs, slot, memory, ctx):
    """L-JSQ by a scan of Q̃^m (too few servers for an index), no LSQ option."""
    return l_jsq_pick(estimates(memory, m), ctx.rng)


@choose_function
def _jsq_written_choose(m, jobs, slot, memory, ctx):
    """L-JSQ by a scan or on block minima, with an LSQ option."""
    prefetch_next_index(memory, m)
    own = estimates(memory, m)
    return _written(own, m, _jsq_choice(own, m, memory, ctx), jobs, slot, memory, ctx)


@choose_function
def _jba_choose(m, jobs, slot, memory, ctx):
    """L-JBA (plain average from the kept sum, or the μ-weighted scan), no LSQ option."""
    return _jba_choice(estimates(memory, m), m, jobs, slot, memory, ctx)


@choose_function
def _jba_written_choose(m, jobs, slot, memory, ctx):
    """L-JBA with an LSQ option."""
    own = estimates(memory, m)
    return _written(own, m, _jba_choice(own, m, jobs, slot, memory, ctx), jobs, slot,
                    memory, ctx)


@choose_function
def _pod_written_choose(m, jobs, slot, memory, ctx):
    """L-Pod with an LSQ option."""
    own = estimates(memory, m)
    return _written(own, m, _pod_choice(own, m, jobs, memory, ctx), jobs, slot, memory, ctx)


@choose_function
def _tree_choose(m, jobs, slot, memory, ctx):
    """L-JSQ on its min tree (push updates), without the LSQ options: the walk alone
    (:func:`_lsq_tree_choose` without the write at dispatch)."""
    return tree_choice(m, jobs, slot.t, memory, ctx.rng, False)


@choose_function
def _blocks_choose(m, jobs, slot, memory, ctx):
    """L-JSQ on block minima (pull updates), without the LSQ options: the
    block minima's choice alone (a small adapter, whose loop over the dispatchers the
    compiler keeps in registers)."""
    prefetch_next_index(memory, m)
    return block_argmin(estimates(memory, m), estimate_index(memory, m), ctx.rng)


@choose_function
def _pod2_choose(m, jobs, slot, memory, ctx):
    """L-Pod with d = 2, without the LSQ options, on M rows of estimates that stay in cache
    (M·N below :data:`LOOKAHEAD_MIN_ESTIMATES`: no look-ahead): :func:`_pod_choose`'s
    choice with nothing read but the two estimates and the random state (the bench's
    led-pod-push: a choice is made ~9.4 times a slot)."""
    return shorter_of_two(estimates(memory, m), ctx.rng)


@choose_function
def _pod_choose(m, jobs, slot, memory, ctx):
    """L-Pod without the LSQ options (no write at dispatch)."""
    return _pod_choice(estimates(memory, m), m, jobs, memory, ctx)


_CUSTOM_CHOOSE_CACHE: dict[Any, Any] = {}


def custom_choose(strategy_fn: Any) -> Any:
    """A ``choose`` that runs a user strategy (its adapter compiled once per strategy, and
    kept in the disk cache when the strategy was declared from a file)."""
    if strategy_fn in _CUSTOM_CHOOSE_CACHE:
        return _CUSTOM_CHOOSE_CACHE[strategy_fn]

    def choose(m, jobs, slot, memory, ctx):
        own = estimates(memory, m)
        target = strategy_fn(own, slot.mu, ctx.rng, strategy_params(memory),
                             memory.int_state[strategy_scratch_row(memory)])
        # (write_estimate, not the min tree's write-through: a user rule walks no tree,
        # and inlining the tree update tripled its compile time)
        return _written(own, m, target, jobs, slot, memory, ctx)

    # a closure over a user function: numba's own key pickles its cells and never hits,
    # so no cache of its own; its adapter's is keyed by the user's function (keyed_by).
    # The user's rule may allocate.
    compiled = choose_function(choose, cache=False, allocates=True)
    compiled.keyed_by = (strategy_fn,)
    compiled.bounds_checked = True  # (the user's rule, inlined: engine.adapter)
    _CUSTOM_CHOOSE_CACHE[strategy_fn] = compiled
    return compiled


def choose_for(strategy: Strategy, index: int, *, writes: bool, pod_d: int,
               n_servers: int, n_dispatchers: int) -> Any:
    """The compiled ``choose`` for a configuration: a user rule's, or the one for the
    built-in strategy on ``index`` (``layout.INDEX_*``), with the LSQ write at dispatch
    when ``writes``. L-Pod with ``pod_d`` = 2 of N > 2 servers on M·N estimates that stay in
    cache compares the pair and nothing else."""
    if not strategy.builtin:
        return custom_choose(strategy.function)
    code = strategy.code
    if code == CODE_JSQ:
        if index == INDEX_TREE:
            return _lsq_tree_choose if writes else _tree_choose
        if writes:
            return _jsq_written_choose
        return _blocks_choose if index == INDEX_BLOCKS else _jsq_scan_choose
    if code == CODE_JBA:
        return _jba_written_choose if writes else _jba_choose
    if code != CODE_POD:
        raise ValueError(f"no choose for strategy code {code}")
    if writes:
        return _pod_written_choose
    pair = pod_d == 2 and n_servers > 2  # (d ≥ N: every server, a scan)
    in_cache = n_dispatchers * n_servers < LOOKAHEAD_MIN_ESTIMATES
    return _pod2_choose if pair and in_cache else _pod_choose
