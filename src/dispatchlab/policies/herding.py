"""JSQ and JSED with the herding options of THEORY.md §2.7 ("Fig. 1 revisited").

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

Memory ``ist`` (width ≥ max(N + 2, M)), rows:
  ROW_MINIMISERS   (slot, number of minimisers, their indices…) of the slot's view (no fill)
  ROW_SHARED       [slot of the shared draw, shared pick, initialised]
  ROW_RANK         the shared random rank of each server this slot (ties = shared, fill)
  ROW_STAMP        per dispatcher: the last slot in which it dispatched (fill)
  then k + 1 ring rows (lag k ≥ 1), then M rows of jobs sent this slot (fill).
Memory ``fst`` (fill): row m holds dispatcher m's scores this slot.
"""

from __future__ import annotations

import numpy as np
from numba import njit

from dispatchlab.engine.interface import PROBE, REPLY, choose_function, hook_function
from dispatchlab.engine.rng import randint

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


@njit(inline="always", cache=True)
def _view_row(t, ip):
    """Row of ``ist`` holding Q(t − k) (k = lag ≥ 1): ring slot (t − k) mod (k + 1)."""
    k = ip[IP_LAG]
    return ip[IP_RING] + (t + 1) % (k + 1)


@njit(inline="always", cache=True)
def _score(n, t, m, Q, mu, ip, fp, ist):
    """(V_n + sent^m_n + offset) / scale_n, the dispatcher's view of server n."""
    v = Q[n] if ip[IP_LAG] == 0 else ist[_view_row(t, ip), n]
    if ip[IP_FILL] != 0:
        v += ist[ip[IP_SENT] + m, n]
    value = v + fp[0]
    if ip[IP_SCALED] != 0:
        value /= mu[n]
    return value


@njit(inline="always", cache=True)
def _draw_shared_order(t, N, ist, rng):
    """Once per slot: a uniform random rank of each server, shared by all dispatchers."""
    if ist[ROW_SHARED, SHARED_SLOT] == t:
        return
    ist[ROW_SHARED, SHARED_SLOT] = t
    rank = ist[ROW_RANK]
    for n in range(N):
        rank[n] = n
    for i in range(N - 1, 0, -1):  # Fisher–Yates
        j = randint(rng, i + 1)
        rank[i], rank[j] = rank[j], rank[i]


@njit(inline="always", cache=True)
def _pick_filled(t, m, N, ip, fst, ist, rng):
    """argmin of dispatcher m's scores ``fst[m]`` with the tie rule (one draw for random
    ties, as :func:`dispatchlab.engine.kernels.argmin_random_ties` does)."""
    best = fst[m, 0]
    for n in range(1, N):
        best = min(best, fst[m, n])
    ties_rule = ip[IP_TIES]
    if ties_rule == TIE_SHARED:
        _draw_shared_order(t, N, ist, rng)
        arg = -1
        for n in range(N):
            if fst[m, n] == best and (arg < 0 or ist[ROW_RANK, n] < ist[ROW_RANK, arg]):
                arg = n
        return arg
    ties = 0
    for n in range(N):
        ties += fst[m, n] == best
    skip = randint(rng, ties) if ties > 1 and ties_rule == TIE_RANDOM else 0
    for n in range(N):
        if fst[m, n] == best:
            if skip == 0:
                return n
            skip -= 1
    return 0


@njit(inline="always", cache=True)
def _pick_per_slot(t, m, Q, mu, ip, fp, ist, rng):
    """Without water-filling the view is the same for every call of slot t: its minimisers
    are listed once per slot (ascending), then each call draws one by the tie rule."""
    cache = ist[ROW_MINIMISERS]
    if cache[0] != t:
        N = Q.size
        best = _score(0, t, m, Q, mu, ip, fp, ist)
        for n in range(1, N):
            best = min(best, _score(n, t, m, Q, mu, ip, fp, ist))
        ties = 0
        for n in range(N):
            if _score(n, t, m, Q, mu, ip, fp, ist) == best:
                cache[2 + ties] = n
                ties += 1
        cache[0] = t
        cache[1] = ties
        if ip[IP_TIES] == TIE_SHARED:  # one uniform draw for all dispatchers this slot
            ist[ROW_SHARED, SHARED_PICK] = cache[2 + (randint(rng, ties) if ties > 1 else 0)]
    ties_rule = ip[IP_TIES]
    if ties_rule == TIE_SHARED:
        return ist[ROW_SHARED, SHARED_PICK]
    if ties_rule == TIE_LOWEST:
        return cache[2]
    ties = cache[1]
    return cache[2 + (randint(rng, ties) if ties > 1 else 0)]


@choose_function
def herding_choose(m, jobs, t, Q, mu, ip, fp, ist, fst, rng, msg):
    N = Q.size
    if ip[IP_FILL] == 0:
        msg[PROBE] += N
        msg[REPLY] += N
        return _pick_per_slot(t, m, Q, mu, ip, fp, ist, rng)
    # water-filling: fst[m] holds the dispatcher's scores, updated after each job
    sent = ip[IP_SENT] + m
    if ist[ROW_STAMP, m] != t:  # the dispatcher's first job this slot: one full read
        ist[ROW_STAMP, m] = t
        for n in range(N):
            ist[sent, n] = 0
        for n in range(N):
            fst[m, n] = _score(n, t, m, Q, mu, ip, fp, ist)
        msg[PROBE] += N
        msg[REPLY] += N
    target = _pick_filled(t, m, N, ip, fst, ist, rng)
    ist[sent, target] += jobs
    fst[m, target] = _score(target, t, m, Q, mu, ip, fp, ist)
    return target


@hook_function
def herding_begin(t, Q, Q_prev, A, A_m, mu, ip, fp, ist, fst, rng, msg, diag, record):
    # lag: before the first slot every ring row holds Q(0) (Q(s) = Q(0) for s < 0)
    if ip[IP_LAG] == 0 or ist[ROW_SHARED, SHARED_READY] == 1:
        return None
    for r in range(ip[IP_LAG] + 1):
        for n in range(Q.size):
            ist[ip[IP_RING] + r, n] = Q[n]
    ist[ROW_SHARED, SHARED_READY] = 1
    return None


@hook_function
def herding_end(t, Q, Q_prev, A, A_m, mu, ip, fp, ist, fst, rng, msg, diag, record):
    # store Q(t+1) in ring slot (t + 1) mod (k + 1); slot t+1 reads (t + 1 − k) mod (k + 1)
    k = ip[IP_LAG]
    if k == 0:
        return None
    row = ip[IP_RING] + (t + 1) % (k + 1)
    for n in range(Q.size):
        ist[row, n] = Q[n]
    return None
