"""The dispatching rules of the continuous-time engine: which server a job joins.

Each dispatcher decides on the state at the job's arrival instant, with full information
(the true number of jobs at each server, their unfinished work). Ties are broken uniformly
at random among the tied servers, from the policy's own random stream. LWL compares the
times at which the servers will have emptied, kept in a tournament tree (O(log N) a job):
the idle servers tie (at random); busy ones tie with probability 0 unless sizes are
deterministic, and then the lower-numbered wins.

``choose`` reads the policy's integer parameters ``ints`` (``P_D``: d of JSQ(d);
``P_REPLACE``: its samples with replacement) and float parameters (``cumulative``: the
cumulative speeds, for weighted random; ``cutoffs``: SITA's size cutoffs), and its state
(``cursor``: each dispatcher's round-robin position; ``credit``: each dispatcher's smooth
weighted round-robin credits, (M, N)).
"""

from __future__ import annotations

from numba import njit

from dispatchlab.compiled.argmin import argmin_random_ties
from dispatchlab.compiled.rng import randint, sample_distinct_row, weighted_index
from dispatchlab.continuous.servers import S_COUNT

(RANDOM, WEIGHTED_RANDOM, ROUND_ROBIN, WEIGHTED_ROUND_ROBIN, JSQ, JSQ_D, JIQ, LWL,
 SITA, L_JSQ, L_POD) = range(11)
#: a user's rule (:mod:`.user_rules`): the event loop calls it instead of :func:`choose`
USER = 11
#: the policy's integer parameters: d of JSQ(d) and L-Pod, its samples with replacement;
#: the estimates' update (UPDATE_*), the servers a push samples, the local increment
P_D, P_REPLACE, P_UPDATE, P_PROBES, P_INCREMENT = range(5)
N_POLICY_INTS = 5
NO_UPDATE, PUSH, PULL, PERIODIC = range(4)


@njit(inline="always", cache=True)
def _fewest_of_sample(values, s, N, d, replace, sample):
    """JSQ(d): d servers sampled uniformly (distinct unless ``replace``: Floyd's
    algorithm into ``sample``, a (1, d) scratch row), the one with the fewest jobs among
    them, ties at random (reservoir)."""
    if not replace:
        sample_distinct_row(s, N, d, sample, 0)
    best = -1
    least = 0
    ties = 0
    for k in range(d):
        n = randint(s, N) if replace else sample[0, k]
        q = values[n]
        if best < 0 or q < least:
            best, least, ties = n, q, 1
        elif q == least:
            ties += 1
            if randint(s, ties) == 0:
                best = n
    return best


@njit(inline="always", cache=True)
def _smooth_round_robin(credit, m, speeds, total):
    """Smooth weighted round robin (nginx's): every server gains its speed in credit, the
    richest serves and pays the total; over Σ s_n turns server n is chosen s_n times (for
    integer speeds), evenly spread."""
    best = 0
    for n in range(speeds.size):
        credit[m, n] += speeds[n]
        if credit[m, n] > credit[m, best]:
            best = n
    credit[m, best] -= total
    return best


@njit(cache=True)
def choose(policy, m, size, si, speeds, ints, cumulative, cutoffs, cursor, credit, idle,
           empty_tree, estimates, s, sample):
    """The server for dispatcher m's job of ``size``. ``idle``: the idle servers' list, its
    count in idle[N] (JIQ and LWL); ``empty_tree``: the tournament tree over the times at
    which the servers will have emptied (LWL); ``estimates``: each dispatcher's estimates
    of the jobs present (L-JSQ, L-Pod: :mod:`.estimates`)."""
    N = speeds.size
    if policy == RANDOM:
        return randint(s, N)
    if policy == WEIGHTED_RANDOM:
        return weighted_index(s, cumulative)
    if policy == ROUND_ROBIN:
        n = cursor[m]
        cursor[m] = n + 1 if n + 1 < N else 0
        return n
    if policy == WEIGHTED_ROUND_ROBIN:
        return _smooth_round_robin(credit, m, speeds, cumulative[N - 1])
    if policy == JSQ:
        return argmin_random_ties(si[S_COUNT], s)
    if policy == JSQ_D:
        return _fewest_of_sample(si[S_COUNT], s, N, ints[P_D], ints[P_REPLACE] != 0, sample)
    if policy == L_JSQ:
        return argmin_random_ties(estimates[m], s)
    if policy == L_POD:
        return _fewest_of_sample(estimates[m], s, N, ints[P_D], ints[P_REPLACE] != 0, sample)
    if policy == JIQ:
        idle_count = idle[N]
        return idle[randint(s, idle_count)] if idle_count > 0 else randint(s, N)
    if policy == LWL:  # an idle server at random, else the one that empties first
        idle_count = idle[N]
        return idle[randint(s, idle_count)] if idle_count > 0 else empty_tree[1]
    # SITA: the interval of cutoffs the size falls in; cutoffs[n] is server n's upper end
    n = 0
    while n < N - 1 and size > cutoffs[n]:
        n += 1
    return n
