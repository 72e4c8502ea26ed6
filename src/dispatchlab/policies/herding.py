"""JSQ and JSED with the herding options of docs/model.md#herding.

Three options, each off by default (then ``jsq``/``jsed`` run their plain compiled rule):

* ``ties`` — how a dispatcher breaks ties among the minimisers of its view:
  ``random`` (uniform, independently per dispatcher and call: today's rule), ``lowest``
  (the lowest server index) or ``shared`` (one uniformly random order of the servers drawn
  per slot and shared by every dispatcher, so that all of them pick the same server);
* ``lag`` = k — the view is Q(t − k), queue lengths k slots old (Q(s) = Q(0) for s < 0),
  kept in a ring of k + 1 past queue vectors filled in the end-of-slot phase;
* ``fill`` — water-filling (per-job dispatch only): each job goes to the minimum of the
  dispatcher's view plus the jobs it has already sent this slot, the "JSQ" of the public
  multi-dispatcher simulator of the LED/LSQ group. The dispatcher reads all N queues once
  per slot, so it spends 2N messages per dispatch event (not per job).

The score of server n is (V_n + sent^m_n + offset)/scale_n with V the view: scale ≡ 1 and
offset 0 for JSQ, scale = μ for JSED (offset 1 for the classical (Q + 1)/μ).

Memory ``int_state`` (width ≥ max(N + 2, M)), rows:
  ROW_MINIMISERS   (slot, number of minimisers, their indices…) of the slot's view (no fill)
  ROW_SHARED       [slot of the shared draw, shared pick, initialised]
  ROW_RANK         the shared random rank of each server this slot (ties = shared, fill)
  ROW_STAMP        per dispatcher: the last slot in which it dispatched (fill)
  then k + 1 ring rows (lag k ≥ 1), then M rows of jobs sent this slot (fill).
Memory ``float_state`` (fill): row m holds dispatcher m's scores this slot.
"""

from __future__ import annotations

import numpy as np
from numba import njit

from dispatchlab.compiled.rng import randint
from dispatchlab.engine.interface import PROBE, REPLY, choose_function, hook_function

TIES = ("random", "lowest", "shared")
TIE_RANDOM, TIE_LOWEST, TIE_SHARED = range(3)

# ip entries
IP_LAG, IP_TIES, IP_FILL, IP_SCALED, IP_RING, IP_SENT = range(6)
IP_SIZE = 6
# fixed rows of ist
ROW_MINIMISERS, ROW_SHARED, ROW_RANK, ROW_STAMP = range(4)
FIXED_ROWS = 4
SHARED_SLOT, SHARED_PICK, SHARED_READY = range(3)


def herding_layout(n_servers: int, dispatchers: int, *, lag: int, ties: str, fill: bool,
                   scaled: bool, offset: float
                   ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """(ip, fp, ist, fst) of a JSQ/JSED herding variant on N servers and M dispatchers."""
    ring = FIXED_ROWS
    sent = ring + (lag + 1 if lag > 0 else 0)
    rows = sent + (dispatchers if fill else 0)
    ist = np.zeros((rows, max(n_servers + 2, dispatchers, 3)), np.int64)
    ist[ROW_MINIMISERS, 0] = -1
    ist[ROW_SHARED, SHARED_SLOT] = -1
    ist[ROW_STAMP, :] = -1
    ip = np.zeros(IP_SIZE, np.int64)
    ip[IP_LAG] = lag
    ip[IP_TIES] = TIES.index(ties)
    ip[IP_FILL] = int(fill)
    ip[IP_SCALED] = int(scaled)
    ip[IP_RING] = ring
    ip[IP_SENT] = sent
    fst = np.zeros((dispatchers if fill else 1, n_servers))
    return ip, np.array([offset]), ist, fst


# -- the layout, named ------------------------------------------------------------------------


@njit(inline="always", cache=True)
def lag(memory):
    """k: the view is Q(t − k)."""
    return memory.int_params[IP_LAG]


@njit(inline="always", cache=True)
def tie_rule(memory):
    """TIE_RANDOM, TIE_LOWEST or TIE_SHARED."""
    return memory.int_params[IP_TIES]


@njit(inline="always", cache=True)
def fills(memory):
    """Water-filling: each job sees the jobs the dispatcher already sent this slot."""
    return memory.int_params[IP_FILL] != 0


@njit(inline="always", cache=True)
def ring_row(memory, s):
    """The ``int_state`` row holding Q(s) (lag k ≥ 1): ring slot s mod (k + 1)."""
    return memory.int_params[IP_RING] + s % (memory.int_params[IP_LAG] + 1)


@njit(inline="always", cache=True)
def sent_row(memory, m):
    """The ``int_state`` row of the jobs dispatcher m has sent to each server this slot (fill)."""
    return memory.int_params[IP_SENT] + m


@njit(inline="always", cache=True)
def scores(memory, m):
    """Dispatcher m's scores this slot (fill): a writable row of ``float_state``."""
    return memory.float_state[m]


@njit(inline="always", cache=True)
def _score(n, m, slot, memory):
    """(V_n + sent^m_n + offset) / scale_n, the dispatcher's view of server n."""
    t = slot.t
    k = lag(memory)
    # Q(t − k) sits in ring slot (t − k) mod (k + 1) = (t + 1) mod (k + 1)
    v = slot.Q[n] if k == 0 else memory.int_state[ring_row(memory, t + 1), n]
    if fills(memory):
        v += memory.int_state[sent_row(memory, m), n]
    value = v + memory.float_params[0]
    if memory.int_params[IP_SCALED] != 0:
        value /= slot.mu[n]
    return value


@njit(inline="always", cache=True)
def _draw_shared_order(t, N, memory, rng):
    """Once per slot: a uniform random rank of each server, shared by all dispatchers."""
    shared = memory.int_state[ROW_SHARED]
    if shared[SHARED_SLOT] == t:
        return
    shared[SHARED_SLOT] = t
    rank = memory.int_state[ROW_RANK]
    for n in range(N):
        rank[n] = n
    for i in range(N - 1, 0, -1):  # Fisher–Yates
        j = randint(rng, i + 1)
        rank[i], rank[j] = rank[j], rank[i]


@njit(inline="always", cache=True)
def _pick_filled(m, slot, memory, rng):
    """argmin of dispatcher m's scores with the tie rule (one draw for random ties, as
    :func:`dispatchlab.compiled.argmin.argmin_random_ties` does)."""
    own = scores(memory, m)
    N = slot.Q.size
    best = own[0]
    for n in range(1, N):
        best = min(best, own[n])
    rule = tie_rule(memory)
    if rule == TIE_SHARED:
        _draw_shared_order(slot.t, N, memory, rng)
        rank = memory.int_state[ROW_RANK]
        arg = -1
        for n in range(N):
            if own[n] == best and (arg < 0 or rank[n] < rank[arg]):
                arg = n
        return arg
    ties = 0
    for n in range(N):
        ties += own[n] == best
    skip = randint(rng, ties) if ties > 1 and rule == TIE_RANDOM else 0
    for n in range(N):
        if own[n] == best:
            if skip == 0:
                return n
            skip -= 1
    return 0


@njit(inline="always", cache=True)
def _pick_per_slot(m, slot, memory, rng):
    """Without water-filling the view is the same for every call of slot t: its minimisers
    are listed once per slot (ascending), then each call draws one by the tie rule."""
    t = slot.t
    cache = memory.int_state[ROW_MINIMISERS]
    shared = memory.int_state[ROW_SHARED]
    if cache[0] != t:
        N = slot.Q.size
        best = _score(0, m, slot, memory)
        for n in range(1, N):
            best = min(best, _score(n, m, slot, memory))
        ties = 0
        for n in range(N):
            if _score(n, m, slot, memory) == best:
                cache[2 + ties] = n
                ties += 1
        cache[0] = t
        cache[1] = ties
        if tie_rule(memory) == TIE_SHARED:  # one uniform draw for all dispatchers this slot
            shared[SHARED_PICK] = cache[2 + (randint(rng, ties) if ties > 1 else 0)]
    rule = tie_rule(memory)
    if rule == TIE_SHARED:
        return shared[SHARED_PICK]
    if rule == TIE_LOWEST:
        return cache[2]
    ties = cache[1]
    return cache[2 + (randint(rng, ties) if ties > 1 else 0)]


@choose_function
def herding_choose(m, jobs, slot, memory, ctx):
    """Compiled choose of JSQ/JSED with herding options: the minimiser of the dispatcher's
    view (Q or Q(t − k), by the tie rule), or with ``fill`` the water-filling pick; 2N
    messages per dispatch event (docs/model.md#herding)."""
    N = slot.Q.size
    if not fills(memory):
        ctx.msg[PROBE] += N
        ctx.msg[REPLY] += N
        return _pick_per_slot(m, slot, memory, ctx.rng)
    # water-filling: scores(memory, m) holds the dispatcher's view, updated after each job
    sent = memory.int_state[sent_row(memory, m)]
    own = scores(memory, m)
    stamps = memory.int_state[ROW_STAMP]
    if stamps[m] != slot.t:  # the dispatcher's first job this slot: one full read
        stamps[m] = slot.t
        for n in range(N):
            sent[n] = 0
        for n in range(N):
            own[n] = _score(n, m, slot, memory)
        ctx.msg[PROBE] += N
        ctx.msg[REPLY] += N
    target = _pick_filled(m, slot, memory, ctx.rng)
    sent[target] += jobs
    own[target] = _score(target, m, slot, memory)
    return target


@hook_function
def herding_begin(slot, step, memory, ctx):
    # lag: before the first slot every ring row holds Q(0) (Q(s) = Q(0) for s < 0)
    """Begin-of-slot hook of the herding options: with lag k ≥ 1, fill every ring row with
    Q(0) once, before the first slot (Q(s) = Q(0) for s < 0)."""
    shared = memory.int_state[ROW_SHARED]
    if lag(memory) == 0 or shared[SHARED_READY] == 1:
        return None
    Q = slot.Q
    for r in range(lag(memory) + 1):
        row = memory.int_state[memory.int_params[IP_RING] + r]
        for n in range(Q.size):
            row[n] = Q[n]
    shared[SHARED_READY] = 1
    return None


@hook_function
def herding_end(slot, step, memory, ctx):
    # store Q(t+1) in its ring slot; slot t + 1 then reads Q(t + 1 − k)
    """End-of-slot hook of the herding options: with lag k ≥ 1, store Q(t+1) in its ring row."""
    if lag(memory) == 0:
        return None
    Q = slot.Q
    row = memory.int_state[ring_row(memory, slot.t + 1)]
    for n in range(Q.size):
        row[n] = Q[n]
    return None
