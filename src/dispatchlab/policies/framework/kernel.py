"""The compiled machinery of framework Π: sampling, sorting, the cycle, the collapse measures.

Layout of the policy arrays (N servers, M dispatchers, cycle T, W = max(T, N)):

``int_params``    [T, M, N, reads, diagnostics, unit γ, <the decision's ints>] (header
                  :data:`HEADER`)
``float_params``  [γ, 1/γ, √γ, 1/√γ (N each), Σγ, <the decision's floats>]
                  (:func:`scaling_constants`)
``int_state``     rows 0..M−1: each dispatcher's destinations of the current cycle (first T
                  entries); row M: η; row M+1: the random permutation used for tie-breaks;
                  row M+2: scratch; row M+3: [next sampling slot, start of the current cycle]
``float_state``   row 0: sort keys

At t = kT ``begin_slot`` lets every dispatcher read Q (N one-way reports each when
the decision reads queues), sort the scaled lengths O_l = Q_l/γ_l in decreasing
order with uniform random tie-breaks (a uniform shuffle followed by a stable
sort), and call the decision function to fill its destinations; ``choose``
returns dest[t − kT]. Between samples nobody looks at Q.

Two built-in decisions never build η, and draw the same law in less work:

* ``shortest`` needs only η(N), uniform among the minimisers of O_l: their set is found
  once per read (every dispatcher reads the same Q(kT)) and each dispatcher draws one,
  O(N + M) per read instead of M shuffles and sorts;
* ``pod`` needs, per slot of the cycle, the largest of d uniform distinct ranks of η, i.e.
  the sampled server with the smallest O_l, ties broken by η's random order: each
  dispatcher's read draws a 64-bit key, and a tie between servers a and b goes to the
  larger hash of (key, server) — an independent uniform order per dispatcher and read,
  consistent over the cycle as η is (:func:`pod_pick`); O(d) per slot and dispatcher.

Per read, the O(N) work is one or two passes that vectorise: the per-server constants
1/γ, √γ, 1/√γ are computed once per run (in ``float_params``); with γ = 1 (the ``unit γ`` flag) the
minimisers and the collapse measures use integer arithmetic only (‖P_⊥‖² = (NΣQ² −
(ΣQ)²)/N, exact). For a general γ the minimisers compare the correctly rounded quotients
Q_l/γ_l as integers (their bit patterns), so they, and the trajectories, are exactly those
of a plain float scan; the collapse sums may be reordered (``fastmath`` without ``arcp``),
which moves ‖P_⊥‖² in its last digits only.
"""

from __future__ import annotations

import math
from functools import cache

import numpy as np
from numba import njit, types

from dispatchlab.compiled.alias import alias_draw
from dispatchlab.compiled.rng import next_u64, randint, sample_distinct_row
from dispatchlab.engine.interface import (
    REPORT,
    choose_function,
    hook_function,
    lazy_function,
)
from dispatchlab.policies.framework.decisions import (
    DECISION_TYPE,
    cycle_decision,
    pod_decision,
    shortest_decision,
    skip_longest_decision,
    uniform_decision,
    weighted_decision,
)

HEADER = 6
T_, M_, N_, READS, DIAGNOSE, UNIT_GAMMA = range(HEADER)
# fp: the scaling vector and its per-run constants, N entries each, then Σγ
GAMMA, INV_GAMMA, ROOT_GAMMA, INV_ROOT_GAMMA = range(4)
SCALING_ROWS = 4

# float reductions may be reordered (vectorised); no ``arcp``/``afn``: quotients stay exact
REDUCE_MATH = {"nnan", "ninf", "nsz", "reassoc"}
INT64_MAX = np.iinfo(np.int64).max

# diag layout: samples, ‖P_⊥‖² (P = Q/√γ on c = √γ), ‖O_⊥‖² literal (O = Q/γ on c = √γ),
# ΣQ at samples, (ΣQ)² at samples, then Q_l at samples for each server
DIAG_SAMPLES, DIAG_PERP_SQ, DIAG_PERP_SQ_LITERAL, DIAG_TOTAL, DIAG_TOTAL_SQ = range(5)
DIAG_HEADER = 5


# -- named access to the layout above ---------------------------------------------------------


@njit(inline="always", cache=True)
def cycle_length(memory):
    """T, the dispatching cycle."""
    return memory.int_params[T_]


@njit(inline="always", cache=True)
def dispatchers(memory):
    """M, the number of dispatchers."""
    return memory.int_params[M_]


@njit(inline="always", cache=True)
def servers(memory):
    """N, the number of servers."""
    return memory.int_params[N_]


@njit(inline="always", cache=True)
def reads_queues(memory):
    """False when the decision ignores η: no queue read, no message."""
    return memory.int_params[READS] == 1


@njit(inline="always", cache=True)
def measures_collapse(memory):
    """True when the collapse measures of docs/model.md#pi-heavy-traffic are accumulated at
    the samples."""
    return memory.int_params[DIAGNOSE] == 1


@njit(inline="always", cache=True)
def unit_gamma(memory):
    """True when γ = (1, …, 1): scaled lengths are the integer queue lengths."""
    return memory.int_params[UNIT_GAMMA] == 1


@njit(inline="always", cache=True)
def scaling(memory, which):
    """One of γ, 1/γ, √γ, 1/√γ (``which`` = GAMMA, INV_GAMMA, ROOT_GAMMA, INV_ROOT_GAMMA)."""
    n = memory.int_params[N_]
    return memory.float_params[which * n: (which + 1) * n]


@njit(inline="always", cache=True)
def gamma(memory):
    """γ, the scaling vector of the sorting function."""
    return scaling(memory, GAMMA)


@njit(inline="always", cache=True)
def gamma_sum(memory):
    """Σ_l γ_l = ‖√γ‖², the squared norm of the collapse direction c = √γ."""
    return memory.float_params[SCALING_ROWS * memory.int_params[N_]]


@njit(inline="always", cache=True)
def decision_ints(memory):
    """The decision function's own integer parameters."""
    return memory.int_params[HEADER:]


@njit(inline="always", cache=True)
def decision_floats(memory):
    """The decision function's own float parameters."""
    return memory.float_params[SCALING_ROWS * memory.int_params[N_] + 1:]


@njit(inline="always", cache=True)
def destinations(memory, m):
    """Dispatcher m's destinations of the current cycle: entry i for slot kT + i."""
    return memory.int_state[m, : memory.int_params[T_]]


@njit(inline="always", cache=True)
def order(memory):
    """η of the last read: order(memory)[0] is the longest scaled queue."""
    return memory.int_state[memory.int_params[M_], : memory.int_params[N_]]


@njit(inline="always", cache=True)
def permutation(memory):
    """Work row for the random tie-breaking permutation."""
    return memory.int_state[memory.int_params[M_] + 1]


@njit(inline="always", cache=True)
def decision_scratch(memory):
    """N entries of free working memory for the decision function."""
    return memory.int_state[memory.int_params[M_] + 2, : memory.int_params[N_]]


@njit(inline="always", cache=True)
def cycle_clock(memory):
    """[next sampling slot, first slot of the current cycle]."""
    return memory.int_state[memory.int_params[M_] + 3]


@njit(inline="always", cache=True)
def sort_keys(memory):
    """Work row for the scaled lengths −Q_l/γ_l."""
    return memory.float_state[0]


NEXT_SAMPLE, CYCLE_START = 0, 1


# -- the compiled machinery ------------------------------------------------------------------


@njit(inline="always", cache=True)
def sample_order(Q, gamma, perm, keys, eta, rng):
    """η: servers by decreasing Q_l/γ_l, ties broken uniformly at random (V_k)."""
    n = Q.size
    for i in range(n):
        perm[i] = i
    for i in range(n - 1, 0, -1):  # Fisher–Yates shuffle
        j = randint(rng, i + 1)
        tmp = perm[i]
        perm[i] = perm[j]
        perm[j] = tmp
    for i in range(n):
        keys[i] = -(Q[perm[i]] / gamma[perm[i]])
    order = np.argsort(keys[:n], kind="mergesort")  # stable: keeps the random tie order
    for i in range(n):
        eta[i] = perm[order[i]]


def scaling_constants(gamma: np.ndarray) -> np.ndarray:
    """The head of ``float_params``: γ, 1/γ, √γ, 1/√γ (N entries each) and Σγ, computed once
    per run."""
    root = np.sqrt(gamma)
    return np.concatenate([gamma, 1.0 / gamma, root, 1.0 / root, [gamma.sum()]])


@njit(inline="always", cache=True)
def add_sample(total, perp, perp_literal, diag):
    """Count one sampling time with its ΣQ, ‖P_⊥‖² and ‖O_⊥‖²."""
    diag[DIAG_SAMPLES] += 1.0
    diag[DIAG_PERP_SQ] += perp
    diag[DIAG_PERP_SQ_LITERAL] += perp_literal
    diag[DIAG_TOTAL] += total
    diag[DIAG_TOTAL_SQ] += total * total


@njit(cache=True, fastmath=REDUCE_MATH)
def record_collapse(Q, gamma, inv_gamma, root, inv_root, gamma_sum, diag, shares=True):
    """Accumulate the state-space-collapse measures of docs/model.md#pi-heavy-traffic at a
    sampling time (any γ); ``shares``: also add Q_l to the per-server sums.

    P = Q/√γ and O = Q/γ, both projected on c = √γ (‖c‖² = Σγ): P_∥ = (ΣQ/Σγ)·√γ and
    O_∥ = (⟨O, c⟩/Σγ)·√γ. Two passes (the deviations, not ‖P‖² − ‖P_∥‖², whose
    difference would cancel), each one vectorised."""
    n = Q.size
    total = 0
    inner = 0.0  # ⟨O, c⟩ = Σ Q_l/√γ_l
    for l in range(n):
        total += Q[l]
        inner += Q[l] * inv_root[l]
    level = total / gamma_sum
    literal = inner / gamma_sum
    perp = 0.0
    perp_literal = 0.0
    for l in range(n):
        x = Q[l] * inv_root[l] - level * root[l]
        y = Q[l] * inv_gamma[l] - literal * root[l]
        perp += x * x
        perp_literal += y * y
        if shares:  # loop-invariant: compiled as two loops
            diag[DIAG_HEADER + l] += Q[l]
    add_sample(float(total), perp, perp_literal, diag)


@njit(cache=True)
def record_collapse_unit(Q, diag):
    """:func:`record_collapse` for γ = 1 in integer arithmetic, one pass: ‖P_⊥‖² = ‖O_⊥‖² =
    Σ(Q_l − ΣQ/N)² = (N·ΣQ² − (ΣQ)²)/N, exact up to the final division. Returns False,
    with only the per-server sums added, when N·ΣQ² could overflow 64 bits."""
    n = Q.size
    total = 0
    squares = 0
    longest = 0
    for l in range(n):
        q = Q[l]
        total += q
        squares += q * q
        longest = max(longest, q)
        diag[DIAG_HEADER + l] += q
    if longest > _square_limit(n) or squares > INT64_MAX // n:
        return False  # queues beyond ~3·10⁹/√N
    perp = (n * squares - total * total) / n  # Cauchy–Schwarz: no overflow, ≥ 0
    add_sample(float(total), perp, perp, diag)
    return True


@njit(inline="always", cache=True)
def _square_limit(n):
    """The largest q with n·q² < 2⁶³ (so that Σ_l Q_l² cannot overflow when every Q_l ≤ q)."""
    bound = INT64_MAX // n
    q = int(math.sqrt(bound))
    while q > 0 and q > bound // q:  # q·q > bound, without computing q·q
        q -= 1
    return q


@njit(inline="always", cache=True)
def collapse_at_read(Q, memory, diag):
    """The collapse measures of the read at a sampling time, on the unit or general path."""
    unit = unit_gamma(memory)
    if not unit or not record_collapse_unit(Q, diag):  # the unit path adds the shares
        record_collapse(Q, gamma(memory), scaling(memory, INV_GAMMA),
                        scaling(memory, ROOT_GAMMA), scaling(memory, INV_ROOT_GAMMA),
                        gamma_sum(memory), diag, not unit)


@choose_function
def pi_choose(m, jobs, slot, memory, ctx):
    """φ_{t−kT+1}(k): this dispatcher's destination for the current slot of the cycle."""
    return memory.int_state[m, slot.t - cycle_clock(memory)[CYCLE_START]]


@njit(inline="always", cache=True)
def start_cycle(slot, step, memory):
    """True at t = kT (then the cycle clock advances and the collapse measures are taken)."""
    t = slot.t
    clock = cycle_clock(memory)
    if t < clock[NEXT_SAMPLE]:
        return False
    clock[NEXT_SAMPLE] = t + cycle_length(memory)
    clock[CYCLE_START] = t
    if step.record and measures_collapse(memory):
        collapse_at_read(slot.Q, memory, step.diag)
    return True


@njit(inline="always", cache=True)
def read_queues(m, slot, memory, ctx):
    """Dispatcher m reads Q (N one-way reports) and samples η, unless the decision ignores η;
    returns the decision's arguments (η, its ip, its fp, the destinations, scratch)."""
    eta = order(memory)
    if reads_queues(memory):
        ctx.msg[REPORT] += servers(memory)
        sample_order(slot.Q, gamma(memory), permutation(memory), sort_keys(memory), eta,
                     ctx.rng)
    return (eta, decision_ints(memory), decision_floats(memory), destinations(memory, m),
            decision_scratch(memory))


# One hook per built-in decision, identical but for the decision it calls: each is a
# module-level function so that numba caches it on disk (a factory's closures, or functions
# made by exec, have no cacheable source and would recompile in every process).

# The order-oblivious decisions (rand, wrand, rr) are written out in their hooks when
# nobody reads η: the same draws in the same order as the decision functions, without the
# five array views and the indirect call per dispatcher (which cost more than the draw at
# M ≫ jobs per slot). A decision registered to read η anyway takes the generic loop.

@hook_function(allocates=True)  # np.argsort in sample_order
def _rand_begin(slot, step, memory, ctx):
    if start_cycle(slot, step, memory):
        if reads_queues(memory):
            for m in range(dispatchers(memory)):
                eta, dip, dfp, dest, scratch = read_queues(m, slot, memory, ctx)
                uniform_decision(eta, slot.mu, dip, dfp, ctx.rng, dest, scratch)
            return
        n, cycle = servers(memory), cycle_length(memory)
        for m in range(dispatchers(memory)):
            for i in range(cycle):
                memory.int_state[m, i] = randint(ctx.rng, n)


@hook_function(allocates=True)  # np.argsort in sample_order
def _weighted_begin(slot, step, memory, ctx):
    if start_cycle(slot, step, memory):
        if reads_queues(memory):
            for m in range(dispatchers(memory)):
                eta, dip, dfp, dest, scratch = read_queues(m, slot, memory, ctx)
                weighted_decision(eta, slot.mu, dip, dfp, ctx.rng, dest, scratch)
            return
        table, cycle = decision_floats(memory), cycle_length(memory)
        for m in range(dispatchers(memory)):
            for i in range(cycle):
                memory.int_state[m, i] = alias_draw(ctx.rng, table)


@hook_function(allocates=True)  # np.argsort in sample_order
def _cycle_begin(slot, step, memory, ctx):
    if start_cycle(slot, step, memory):
        if reads_queues(memory):
            for m in range(dispatchers(memory)):
                eta, dip, dfp, dest, scratch = read_queues(m, slot, memory, ctx)
                cycle_decision(eta, slot.mu, dip, dfp, ctx.rng, dest, scratch)
            return
        order_of_cycle, cycle = decision_ints(memory), cycle_length(memory)
        for m in range(dispatchers(memory)):
            for i in range(cycle):
                memory.int_state[m, i] = order_of_cycle[i]


@njit(cache=True)
def minimisers(Q, ties):
    """Write the servers with the smallest Q_l into ``ties``; return their number (γ = 1;
    Q may be any int64 array)."""
    best = Q[0]
    for n in range(1, Q.size):
        best = min(best, Q[n])
    count = 0
    for n in range(Q.size):
        ties[count] = n  # store always, advance on a tie: a branch-free compaction
        count += Q[n] == best
    return count


@njit(cache=True, error_model="numpy")  # no zero-division branch: the quotients vectorise
def scaled_minimisers(Q, gamma, keys, ties):
    """Write the servers with the smallest O_l = Q_l/γ_l into ``ties``; return their number.

    The quotients (the correctly rounded ones) are computed once, into ``keys``; being
    non-negative doubles, they order and compare as their 64-bit patterns, so the minimum
    and the ties are integer passes that vectorise (a float ``min`` does not)."""
    for n in range(Q.size):
        keys[n] = Q[n] / gamma[n]
    return minimisers(keys[: Q.size].view(np.int64), ties)


@hook_function  # no η sorted: (scaled_)minimisers scan Q once
def _shortest_begin(slot, step, memory, ctx):
    # η(N) is uniform among the minimisers of Q_l/γ_l: find them once, draw per dispatcher
    if start_cycle(slot, step, memory):
        ties = decision_scratch(memory)
        if unit_gamma(memory):
            count = minimisers(slot.Q, ties)
        else:
            count = scaled_minimisers(slot.Q, gamma(memory), sort_keys(memory), ties)
        cycle = cycle_length(memory)
        for m in range(dispatchers(memory)):
            ctx.msg[REPORT] += servers(memory)
            shortest = ties[randint(ctx.rng, count) if count > 1 else 0]
            for i in range(cycle):
                memory.int_state[m, i] = shortest


@njit(inline="always", cache=True)
def tie_priority(key, n):
    """A 64-bit hash of (key, n) (splitmix64's finaliser): for a uniform random key, an
    order of the servers that is uniform for every practical purpose."""
    z = key + np.uint64(n + 1) * np.uint64(0x9E3779B97F4A7C15)
    z = (z ^ (z >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
    z = (z ^ (z >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
    return z ^ (z >> np.uint64(31))


@njit(inline="always", cache=True)
def pod_pick(Q, gamma, d, key, table, row, rng):
    """Po-d on the order of a read: d distinct uniform servers (into ``table[row, :d]``),
    the smallest O_l = Q_l/γ_l wins, ties to the larger :func:`tie_priority` under ``key``.
    The same law as the largest of d uniform distinct ranks of η."""
    sample_distinct_row(rng, Q.size, d, table, row)
    best = table[row, 0]
    best_value = Q[best] / gamma[best]
    for i in range(1, d):
        c = table[row, i]
        value = Q[c] / gamma[c]
        if value < best_value or (value == best_value
                                  and tie_priority(key, c) > tie_priority(key, best)):
            best = c
            best_value = value
    return best


@hook_function  # no η sorted: pod_pick samples d servers directly
def _pod_begin(slot, step, memory, ctx):
    if start_cycle(slot, step, memory):
        d = decision_ints(memory)[0]
        scratch_row = dispatchers(memory) + 2
        scale, cycle = gamma(memory), cycle_length(memory)
        for m in range(dispatchers(memory)):
            ctx.msg[REPORT] += servers(memory)
            key = next_u64(ctx.rng)  # this dispatcher's tie order η for the cycle
            for i in range(cycle):
                memory.int_state[m, i] = pod_pick(slot.Q, scale, d, key, memory.int_state,
                                                  scratch_row, ctx.rng)


@hook_function(allocates=True)  # np.argsort in sample_order
def _skip_longest_begin(slot, step, memory, ctx):
    if start_cycle(slot, step, memory):
        for m in range(dispatchers(memory)):
            eta, dip, dfp, dest, scratch = read_queues(m, slot, memory, ctx)
            skip_longest_decision(eta, slot.mu, dip, dfp, ctx.rng, dest, scratch)


_BUILTIN_HOOKS = {
    uniform_decision: _rand_begin,
    weighted_decision: _weighted_begin,
    cycle_decision: _cycle_begin,
    shortest_decision: _shortest_begin,
    pod_decision: _pod_begin,
    skip_longest_decision: _skip_longest_begin,
}


@cache
def make_begin_slot(decide):
    """The ``begin_slot`` hook for the decision function ``decide``.

    Built-in decisions have hooks of their own. A user's decision gets a closure, whose
    adapter the disk cache keeps when ``decide`` was declared from a file (``keyed_by``:
    :mod:`dispatchlab.engine.adapter` keys it by ``decide``'s code and source file)."""
    if decide in _BUILTIN_HOOKS:
        return _BUILTIN_HOOKS[decide]

    def user_begin(slot, step, memory, ctx):
        if start_cycle(slot, step, memory):
            for m in range(dispatchers(memory)):
                eta, dip, dfp, dest, scratch = read_queues(m, slot, memory, ctx)
                decide(eta, slot.mu, dip, dfp, ctx.rng, dest, scratch)

    # (numba's own key for a closure pickles its cells: it never hits, so no cache of its
    # own; the adapter inlines it)
    hook = hook_function(user_begin, cache=False, allocates=True)
    hook.keyed_by = (decide,)
    # the user's decision runs bounds-checked (engine.adapter.bounds_checked), compiled
    # with the check where it has not been compiled yet
    hook.bounds_checked = True
    hook.targetoptions["boundscheck"] = True
    if not getattr(decide, "overloads", True):
        decide.targetoptions["boundscheck"] = True
    return hook


def _count_destinations(decide, eta, mu, ip, fp, rng, T, samples):
    """Monte Carlo of a_l(η) (docs/model.md#pi-fractions): how often each rank receives a
    slot over ``samples`` cycles of the decision function ``decide`` for the fixed order η."""
    n = eta.size
    rank_of = np.empty(n, np.int64)
    for l in range(n):
        rank_of[eta[l]] = l
    dest = np.zeros(T, np.int64)
    scratch = np.zeros(n, np.int64)
    counts = np.zeros(n, np.int64)
    for _ in range(samples):
        decide(eta, mu, ip, fp, rng, dest, scratch)
        for i in range(T):
            counts[rank_of[dest[i]]] += 1
    return counts


count_destinations = lazy_function(_count_destinations, types.int64[::1](
    DECISION_TYPE, types.int64[::1], types.float64[::1], types.int64[::1], types.float64[::1],
    types.uint64[::1], types.int64, types.int64))
