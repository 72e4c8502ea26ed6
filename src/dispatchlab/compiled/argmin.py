"""Small compiled building blocks shared by policies."""

from __future__ import annotations

import numpy as np
from numba import njit

from dispatchlab.compiled.rng import randint, select_unpredictable, xoshiro_step


@njit(inline="always", cache=True)
def argmin_random_ties(values, rng):
    """Index of the smallest entry of an integer vector, ties broken uniformly.

    Three passes instead of one branchy pass: the minimum and the number of ties are
    branch-free (vectorised) reductions, then one draw picks which tie; a single pass
    with reservoir sampling mispredicts on every new minimum and draws once per tie."""
    best = values[0]
    for n in range(1, values.size):
        best = min(best, values[n])
    ties = 0
    for n in range(values.size):
        ties += values[n] == best
    skip = randint(rng, ties) if ties > 1 else 0
    for n in range(values.size):
        if values[n] == best:
            if skip == 0:
                return n
            skip -= 1
    return 0


def slot_argmin_cache(n_servers: int) -> np.ndarray:
    """Initial memory row for :func:`argmin_random_ties_per_slot` (shape (1, N + 2))."""
    cache = np.zeros((1, n_servers + 2), np.int64)
    cache[0, 0] = -1
    return cache


@njit(inline="always", cache=True)
def argmin_random_ties_per_slot(values, t, cache, row, rng):
    """:func:`argmin_random_ties` for values that stay fixed during slot t (the slot-start
    Q(t) that every dispatcher sees): the set of minimisers is found once per slot and kept
    in ``cache[row]`` = (slot, number of ties, their indices…); each call then draws one
    of them uniformly. The same law as a full scan per dispatcher at O(1) per further call.

    ``cache`` is 2-D and indexed by ``row`` (no row view: a view costs two atomic
    reference-count updates per call); its row starts as :func:`slot_argmin_cache`."""
    if cache[row, 0] != t:
        best = values[0]
        for n in range(1, values.size):
            best = min(best, values[n])
        ties = 0
        for n in range(values.size):
            # store unconditionally, advance only on a tie: a branch-free compaction
            cache[row, 2 + ties] = n
            ties += values[n] == best
        cache[row, 0] = t
        cache[row, 1] = ties
    ties = cache[row, 1]
    return cache[row, 2 + (randint(rng, ties) if ties > 1 else 0)]


@njit(inline="always", cache=True)
def argmin_scaled_random_ties(values, offset, scale, rng):
    """argmin_n (values[n] + offset) / scale[n], ties broken uniformly (JSED-type rules)."""
    best = (values[0] + offset) / scale[0]
    arg = 0
    count = 1
    for n in range(1, values.size):
        v = (values[n] + offset) / scale[n]
        if v < best:
            best = v
            arg = n
            count = 1
        elif v == best:
            count += 1
            if randint(rng, count) == 0:
                arg = n
    return arg


@njit(inline="always", cache=True)
def shortest_of_row(values, table, row, d, rng):
    """The candidate among ``table[row, :d]`` with the smallest value, ties uniform.

    Branch-free (one draw per candidate after the first, used only on a tie): comparing
    random queues mispredicts a branch about half the time. ``table`` is a policy's 2-D
    memory, indexed by row to avoid a row view and its reference counting."""
    arg = table[row, 0]
    best = values[arg]
    count = 1
    for i in range(1, d):
        c = table[row, i]
        v = values[c]
        tie = v == best
        count = select_unpredictable(v < best, 1, count + np.int64(tie))
        take = (v < best) | (tie & (randint(rng, count) == 0))
        arg = select_unpredictable(take, c, arg)
        best = min(best, v)
    return arg


@njit(inline="always", cache=True)
def pair_draws(s0, s1, s2, s3, n):
    """The two distinct servers of Floyd's sample (d = 2) on N = ``n`` (uint64) servers,
    drawn from the random state (s0, s1, s2, s3) held in registers: (first, second, s0,
    s1, s2, s3 after the two draws). :func:`shorter_of_two` compares them; a look-ahead
    (policies.led.strategies.pod_pair) peeks at them on a copy of the state."""
    bits, s0, s1, s2, s3 = xoshiro_step(s0, s1, s2, s3)
    first = np.int64(((bits >> np.uint64(32)) * (n - np.uint64(1))) >> np.uint64(32))
    bits, s0, s1, s2, s3 = xoshiro_step(s0, s1, s2, s3)
    second = np.int64(((bits >> np.uint64(32)) * n) >> np.uint64(32))
    second = select_unpredictable(second == first, np.int64(n - np.uint64(1)), second)
    return first, second, s0, s1, s2, s3


@njit(inline="always", cache=True)
def shorter_of_two(values, rng):
    """Po-2 on ``values`` (the queues Q, or an LED dispatcher's estimates Q̃^m): exactly the
    draws and the answer of ``sample_distinct_row`` (Floyd, d = 2) then
    ``shortest_of_row``, with the random state kept in registers and no sample written to
    memory (stores there could alias the state, so it was reloaded and
    stored on each of the three draws)."""
    first, second, s0, s1, s2, s3 = pair_draws(rng[0], rng[1], rng[2], rng[3],
                                               np.uint64(values.size))
    best = values[first]
    v = values[second]
    tie = v == best
    count = select_unpredictable(v < best, np.int64(1), np.int64(1) + np.int64(tie))
    bits, s0, s1, s2, s3 = xoshiro_step(s0, s1, s2, s3)
    pick = np.int64(((bits >> np.uint64(32)) * np.uint64(count)) >> np.uint64(32))
    rng[0], rng[1], rng[2], rng[3] = s0, s1, s2, s3
    take = (v < best) | (tie & (pick == 0))
    return select_unpredictable(take, second, first)
