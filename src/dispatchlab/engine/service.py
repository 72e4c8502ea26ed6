"""Service, step 4 of a slot (docs/model.md#queue-dynamics): S_n(t) drawn, then
Q_n(t+1) = max(Q_n(t) + A_n(t) − S_n(t), 0), with the jobs served and, when every job is
timed, the FIFO departures.

The loop draws Bernoulli service itself (:func:`_serve_bernoulli`, the hot path of most
runs); the other laws, and Bernoulli with every job timed, come to it as a first-class
step (:data:`serve_other_law`, :data:`bernoulli_fifo`; :data:`bernoulli_only` for a run
that needs neither), so that each compiles only for a run that takes it.
"""

from __future__ import annotations

import numpy as np
from numba import njit, types
from numba.cpython.unsafe.numbers import trailing_zeros

from dispatchlab.compiled.lazy import AbsentStep, lazy_function
from dispatchlab.compiled.rng import (
    binomial,
    geometric0,
    poisson,
    select_unpredictable,
    splitmix64,
)
from dispatchlab.compiled.signature_types import BOOL, F64_VEC, I64, I64_MAT, I64_VEC, U64_VEC
from dispatchlab.engine.fifo import COUNT_MASK, FREE_COUNT, FREE_HEAD, NIL_LINK, _fifo_update
from dispatchlab.engine.interface import LOOP_ONLY, NOT_FIRST_CLASS
from dispatchlab.engine.layout import SUM_DELAY, delay_bin
from dispatchlab.model.service import (
    SERVICE_BINOMIAL,
    SERVICE_GEOMETRIC,
    SERVICE_POISSON,
)


@njit(**LOOP_ONLY)
def _draw_service(code, mu, trials, rng):
    """S_n(t) for the laws other than Bernoulli (which the loop draws inline)."""
    if code == SERVICE_BINOMIAL:
        return binomial(rng, trials, mu / trials)
    if code == SERVICE_POISSON:
        return poisson(rng, mu)
    if code == SERVICE_GEOMETRIC:
        return geometric0(rng, mu)
    return np.int64(mu)  # SERVICE_DETERMINISTIC


#: serve(Q, A, Q_prev, mu, service_code, service_trials, rng, record, queue_sum,
#: time_every_job, t, warmup, pool, tails, pool_free, delay_hist, moments, thresholds,
#: service_stream, S) -> (ΣQ(t+1), Σ S_n, departures): the service step for laws other than
#: Bernoulli and for Bernoulli with every job's delay (``delay="all"``), which the loop
#: receives as a first-class function (:data:`serve_other_law`, :data:`bernoulli_fifo`, or
#: :data:`bernoulli_only` for a Bernoulli run that needs neither), so that it compiles only
#: for a run that uses it (about 1 s of the loop's compile time each on a cold cache)
SERVE_SIGNATURE = types.UniTuple(I64, 3)(
    I64_VEC, I64_VEC, I64_VEC, F64_VEC, I64, I64, U64_VEC, BOOL, I64_VEC,
    BOOL, I64, I64, I64_MAT, I64_VEC, I64_VEC, I64_VEC, F64_VEC, U64_VEC,
    U64_VEC, I64_VEC,
)
SERVE_TYPE = types.FunctionType(SERVE_SIGNATURE)


@njit(inline="always", cache=True)
def _draw_and_serve(Q, A, Q_prev, thresholds, stream, record, queue_sum, S):
    """Bernoulli service in one branch-free, vectorised pass: S_n(t) ~ Bernoulli(μ_n), then
    Q_prev ← Q; Q ← max(Q + A − S, 0); S ← the jobs served, min(S_n, Q_n + A_n); and
    queue_sum += Q when ``record``. Returns (ΣQ(t+1), Σ S_n, departures).

    Server n's draw comes from the service stream ``stream`` = (start, γ)
    (:mod:`dispatchlab.compiled.rng`): the stream's next-but-n output and the integer
    compare ``(bits >> 11) < ⌈μ_n·2⁵³⌉`` (exactly ``uniform < μ_n``, see
    bernoulli_thresholds); the outputs depend on the counter alone, so the pass vectorises.
    (One pass, not the draws into S and then the update: storing min(S_n, ·) over the S_n
    just loaded became a masked store, microcoded on an AMD EPYC without AVX-512, where
    the one pass is a third faster: 330 → 210 ns a slot at N = 100, and the counter is an
    induction, x += γ, instead of a 64-bit multiply per server.)"""
    x = stream[0]
    gamma = stream[1]
    total_queue = np.int64(0)
    total_service = np.int64(0)
    departures = np.int64(0)
    for n in range(Q.size):
        x += gamma
        s = np.int64((splitmix64(x) >> np.uint64(11)) < thresholds[n])
        q = Q[n] + A[n]
        Q_prev[n] = Q[n]
        total_service += s
        served = min(s, q)
        S[n] = served
        departures += served
        left = q - served
        Q[n] = left
        total_queue += left
    stream[0] = x
    if record:
        for n in range(Q.size):
            queue_sum[n] += Q[n]
    return total_queue, total_service, departures


@njit(**NOT_FIRST_CLASS)
def _serve_bernoulli(Q, A, Q_prev, thresholds, stream, record, queue_sum, S):
    """Bernoulli service without delay tracking, the hot path of most runs: Q ← max(Q + A − S, 0).

    One pass (:func:`_draw_and_serve`). Returns (ΣQ(t+1), Σ S_n, departures). Its twin
    with delay tracking is :func:`_serve_bernoulli_fifo`: keep the two in step."""
    return _draw_and_serve(Q, A, Q_prev, thresholds, stream, record, queue_sum, S)


@njit(cache=True)
def _serve_bernoulli_fifo(Q, A, Q_prev, thresholds, stream, record, queue_sum, S, t, warmup,
                          pool, tails, pool_free, delay_hist, moments):
    """:func:`_serve_bernoulli` with FIFO delay tracking. Returns (ΣQ(t+1), Σ S_n,
    departures).

    After the service step, the FIFOs are updated 64 servers at a time: a vectorised pass
    sets one bit per server with an arrival and one per server with a departure (at most
    one each under Bernoulli service), then the set bits are visited in server order
    (a branch per server on "arrival or departure" mispredicted about a third of the
    time, and listing them took a serial pass over all servers): the appends, the
    departures, then the head batches left empty by them. Per server the order stays
    arrivals first, then departures; departures are timed in server order."""
    total_queue, total_service, departures = _draw_and_serve(Q, A, Q_prev, thresholds,
                                                             stream, record, queue_sum, S)
    N = Q.size
    delay_sum = moments[SUM_DELAY]
    free_head = pool_free[FREE_HEAD]
    free_count = pool_free[FREE_COUNT]
    for base in range(0, N, 64):
        top = min(N, base + 64)
        arrived_bits = np.uint64(0)
        departed_bits = np.uint64(0)
        for n in range(base, top):
            # (an unsigned index: with a signed one the wraparound select made LLVM
            # vectorise the loads as gathers)
            shift = np.uint64(n - base)
            arrived_bits |= np.uint64(A[np.uint64(n)] > 0) << shift
            departed_bits |= np.uint64(S[np.uint64(n)]) << shift
        # (unsigned indices below: a signed one costs a wraparound fix-up on every access;
        # selects, not branches, where the outcome is random)
        while arrived_bits != 0:
            # append the batch of A_n jobs that arrived in slot t to server n's FIFO: in
            # the head node n when the FIFO is empty, else in a node off the free stack
            # (there is one: a segment starts with ≥ N free and a slot appends ≤ N)
            n = np.uint64(base) + trailing_zeros(arrived_bits)
            arrived_bits &= arrived_bits - np.uint64(1)
            empty = (pool[n, 1] & COUNT_MASK) == 0
            node = np.uint64(select_unpredictable(empty, np.int64(n), free_head))
            free_head = select_unpredictable(
                empty, free_head, pool[np.uint64(free_head), 1] >> np.int64(32))
            free_count -= np.int64(not empty)
            tail = np.uint64(tails[n])
            batch = NIL_LINK | A[n]
            pool[node, 0] = t
            pool[node, 1] = batch
            pool[tail, 1] = select_unpredictable(
                empty, batch, (pool[tail, 1] & COUNT_MASK) | (np.int64(node) << np.int64(32)))
            tails[n] = node
        popped_bits = np.uint64(0)
        while departed_bits != 0:
            # one departure from server n's head batch (in node n)
            shift = trailing_zeros(departed_bits)
            n = np.uint64(base) + shift
            departed_bits &= departed_bits - np.uint64(1)
            arrived = pool[n, 0]
            if arrived >= warmup:
                delay = t - arrived
                delay_hist[delay_bin(delay)] += 1
                delay_sum += delay
            link = pool[n, 1] - 1
            pool[n, 1] = link
            popped_bits |= np.uint64((link & COUNT_MASK) == 0) << shift
        while popped_bits != 0:
            # server n's head batch is done (about a third of the departures): the next
            # batch h, if any, moves into node n and h goes on the free stack
            n = np.uint64(base) + trailing_zeros(popped_bits)
            popped_bits &= popped_bits - np.uint64(1)
            h = pool[n, 1] >> np.int64(32)
            has_next = h >= 0
            source = np.uint64(select_unpredictable(has_next, h, np.int64(n)))
            link = pool[source, 1]
            pool[n, 0] = pool[source, 0]
            pool[n, 1] = link
            tails[n] = select_unpredictable(has_next & (link < 0), np.int64(n), tails[n])
            pool[source, 1] = select_unpredictable(has_next, free_head << np.int64(32), link)
            free_head = select_unpredictable(has_next, h, free_head)
            free_count += np.int64(has_next)
    pool_free[FREE_HEAD] = free_head
    pool_free[FREE_COUNT] = free_count
    moments[SUM_DELAY] = delay_sum
    return total_queue, total_service, departures

def _serve_other_law(Q, A, Q_prev, mu, service_code, service_trials, rng, record, queue_sum,
                     time_every_job, t, warmup, pool, tails, pool_free, delay_hist, moments,
                     thresholds, service_stream, S):
    """The service step for the laws other than Bernoulli (the Bernoulli twins are
    :func:`_serve_bernoulli` and :func:`_serve_bernoulli_fifo`). Returns (ΣQ(t+1), Σ S_n,
    departures)."""
    total_queue = np.int64(0)
    total_service = np.int64(0)
    departures = np.int64(0)
    for n in range(Q.size):
        arrived = A[n]
        q = Q[n] + arrived
        Q_prev[n] = Q[n]
        s = _draw_service(service_code, mu[n], service_trials, rng)
        total_service += s
        served = min(s, q)
        departures += served
        left = q - served
        Q[n] = left
        total_queue += left
        if record:
            queue_sum[n] += left
        if time_every_job and (arrived > 0 or served > 0):
            _fifo_update(n, arrived, served, t, warmup, pool, tails, pool_free, delay_hist,
                         moments)
    return total_queue, total_service, departures


def _bernoulli_with_fifo(Q, A, Q_prev, mu, service_code, service_trials, rng, record,
                        queue_sum, time_every_job, t, warmup, pool, tails, pool_free, delay_hist,
                        moments, thresholds, service_stream, S):
    """Bernoulli service timing every job (:func:`_serve_bernoulli_fifo`), as the loop's
    ``serve_other``."""
    return _serve_bernoulli_fifo(Q, A, Q_prev, thresholds, service_stream, record, queue_sum,
                                 S, t, warmup, pool, tails, pool_free, delay_hist, moments)


#: the loop's ``serve_other`` (:data:`SERVE_SIGNATURE`), compiled on first use: for a run
#: under a law other than Bernoulli, for a Bernoulli run timing every job, and for the other
#: Bernoulli runs a step the loop never calls (nothing to compile)
serve_other_law = lazy_function(_serve_other_law, SERVE_SIGNATURE, allocates=False)
bernoulli_fifo = lazy_function(_bernoulli_with_fifo, SERVE_SIGNATURE, allocates=False)
bernoulli_only = AbsentStep(SERVE_SIGNATURE, "bernoulli_only")
