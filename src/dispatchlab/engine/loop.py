"""The compiled slot loop (docs/model.md#slot-order, docs/model.md#queue-dynamics), written
once for every policy.

Order of events in slot t:
  1. ``begin_slot`` hook (e.g. a periodic policy samples the queues at t = kT);
  2. arrivals A_Σ(t), split into A^m(t) among the M dispatchers;
  3. each dispatcher with A^m(t) > 0 calls ``choose`` on the slot-start state Q(t)
     (once in batch mode, once per job in per-job mode), through the policy's adapter
     (engine.adapter): every dispatcher's choice in one call (batch mode), or up to
     TARGET_BUFFER of a dispatcher's jobs in one call (per job); the loop then places the
     jobs in order m = 0, …, M−1;
  4. service: Q_n(t+1) = max(Q_n(t) + A_n(t) − S_n(t), 0), unused service
     U_n(t) = max(S_n(t) − Q_n(t) − A_n(t), 0), FIFO departures timed per job;
     the pooled queue q(t+1) = max(q(t) + A_Σ(t) − Σ_n S_n(t), 0) on the same draws;
  5. ``end_slot`` hook: the memory-update phase (push/pull reports, ID lists, …).

Statistics accumulate from slot ``warmup`` on (including the distribution of ΣQ,
whose last histogram bin collects everything beyond it); ΣQ is also summed in blocks over the
whole run (batch means and the stability trend). The run stops early, reporting the
slot reached, when ΣQ exceeds ``bound``.

:func:`run_slots` runs one *chunk* of slots [t_start, t_stop) on state that persists
between chunks (:func:`init_loop_state`, set up in NumPy: only the loop and what a run
uses are compiled — the steps for laws and splits other than Bernoulli service and
split-Poisson arrivals come as first-class functions), so the Python driver
(:mod:`dispatchlab.engine.raw`) can check for Ctrl-C and report progress between chunks; a
run cut into chunks is bit-identical to the same run in one chunk. Every server index a
policy's ``choose`` returns is checked (0 ≤ target < N): a bad one stops the chunk before
it is used, with ``STATUS_BAD_TARGET`` and the offending value, slot and dispatcher in
``carry``.
"""

from __future__ import annotations

import math
from typing import NamedTuple

import numpy as np
from numba import njit, types
from numba.core import cgutils
from numba.cpython.unsafe.numbers import trailing_zeros
from numba.extending import intrinsic

from dispatchlab.compiled.histogram import DELAY_BINS, EXACT_DELAY_BINS, LOG_BINS_PER_OCTAVE
from dispatchlab.compiled.lazy import AbsentStep
from dispatchlab.compiled.rng import (
    bernoulli_thresholds,
    binomial,
    geometric0,
    poisson,
    select_unpredictable,
    splitmix64,
    uniform,
)
from dispatchlab.engine.adapter import (
    ADAPTER_TYPE,
    EVERY_DISPATCHER,
    HOOK_ADAPTER_TYPE,
    pack_arrays,
)
from dispatchlab.engine.arrivals import (
    PTRS_TYPE,
    _draw_other_arrivals,
    _draw_split_poisson,
    poisson_tables,
)
from dispatchlab.engine.interface import LOOP_ONLY, NOT_FIRST_CLASS, lazy_function
from dispatchlab.model.arrivals import (
    ARRIVAL_POISSON,
)
from dispatchlab.model.service import (
    SERVICE_BERNOULLI,
    SERVICE_BINOMIAL,
    SERVICE_GEOMETRIC,
    SERVICE_POISSON,
)

# counters[...] layout
ARRIVALS, ARRIVALS_MEASURED, DEPARTURES, DISPATCH_EVENTS, DISPATCH_EVENTS_MEASURED = range(5)
HERDING_SLOTS, INVARIANT_VIOLATIONS, MAX_TOTAL_QUEUE, MEASURED_SLOTS = range(5, 9)
TAGS_DROPPED = 9  # tagged jobs not followed: the tag table was full (see _tag_jobs)
N_COUNTERS = 10

# moments[...] layout (sums over measured slots)
SUM_TOTAL_QUEUE, SUM_TOTAL_QUEUE_SQ, SUM_POOLED, SUM_QU, SUM_DQI1, SUM_DQI2 = range(6)
SUM_DELAY, SUM_UNUSED = 6, 7
# Σ ΣU(t)² and Σ ū(t)², ū the pooled queue's unused service: the O(ε) terms of the drift
# identity that ties ε·E[X] to the Eq. (7) term E[ΣQ(t+1)·ΣU(t)] (docs/statistics.md)
SUM_UNUSED_SQ, SUM_POOLED_UNUSED_SQ = 8, 9
N_MOMENTS = 10

# carry[...] layout: what a chunk hands to the next one, and why it stopped
CARRY_POOLED, CARRY_FIFO_FULL, CARRY_STATUS, CARRY_BAD_TARGET, CARRY_BAD_DISPATCHER = range(5)
CARRY_BAD_SLOT = 5
# the tagged jobs (delay="tagged"): how many are followed, the jobs still to pass before the
# next tag, the flag of a chunk stopped for a tag table more than half full, and the first
# free row of the tag table (−1: none)
CARRY_TAG_COUNT, CARRY_TAG_SKIP, CARRY_TAGS_FULL, CARRY_TAG_FREE = 6, 7, 8, 9
N_CARRY = 10
#: CARRY_TAG_SKIP when nothing is tagged (the loop leaves it alone then)
NO_TAGS = np.int64(2**62)
#: CARRY_TAG_SKIP of a tagged run before its first tag: the first gap is still to draw
TAG_START = np.int64(-1)
# carry[CARRY_STATUS]: the chunk ran to t_stop (or stopped early for a FIFO about to fill
# up, with CARRY_FIFO_FULL set), ΣQ passed the bound, or ``choose`` returned a bad server
STATUS_RUNNING, STATUS_HIT_BOUND, STATUS_BAD_TARGET = range(3)
#: per-job dispatch: the most servers one adapter call chooses (a dispatcher's jobs in a
#: slot, that many at a time; a power of 2, so that the index into them is a mask)
TARGET_BUFFER = 32



@intrinsic
def _borrowed(typingctx, array):
    """The same array with no owner (meminfo and parent NULL), valid while the original lives.

    numba keeps arrays alive with atomic reference counts: a compiled function whose
    increfs/decrefs its pruner cannot remove pays two atomic operations per array argument
    and per row view on every call (in a policy's ``choose`` with 8 arrays, called M times
    a slot, that was most of the run time). On a borrowed array these are a null test."""
    if not isinstance(array, types.Array):
        return None

    def codegen(context, builder, signature, args):
        proxy = cgutils.create_struct_proxy(signature.args[0])(context, builder, value=args[0])
        proxy.meminfo = cgutils.get_null_value(proxy.meminfo.type)
        proxy.parent = cgutils.get_null_value(proxy.parent.type)
        return proxy._getvalue()

    return array(array), codegen


@njit(inline="always", cache=True)
def _delay_bin(delay):
    if delay < EXACT_DELAY_BINS:
        return delay
    b = EXACT_DELAY_BINS + np.int64(
        math.log2(delay / EXACT_DELAY_BINS) * LOG_BINS_PER_OCTAVE)
    return min(b, DELAY_BINS - 1)



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


_i64 = types.int64
_f64 = types.float64
_b = types.boolean
_iv = types.int64[::1]
_fv = types.float64[::1]
#: serve(Q, A, Q_prev, mu, service_code, service_trials, rng, record, queue_sum,
#: track_delay, t, warmup, pool, tails, pool_free, delay_hist, moments, thresholds,
#: service_stream, S) -> (ΣQ(t+1), Σ S_n, departures): the service step for laws other than
#: Bernoulli and for Bernoulli with every job's delay (``delay="all"``), which the loop
#: receives as a first-class function (:data:`serve_other_law`, :data:`bernoulli_fifo`, or
#: :data:`bernoulli_only` for a Bernoulli run that needs neither), so that it compiles only
#: for a run that uses it (about 1 s of the loop's compile time each on a cold cache)
SERVE_SIGNATURE = types.UniTuple(_i64, 3)(
    _iv, _iv, _iv, _fv, _i64, _i64, types.uint64[::1], _b, _iv,
    _b, _i64, _i64, types.int64[:, ::1], _iv, _iv, _iv, _fv, types.uint64[::1],
    types.uint64[::1], _iv,
)
SERVE_TYPE = types.FunctionType(SERVE_SIGNATURE)
#: arrivals(code, rate, trials, trace, t, p, cumulative, batch_split, A_m, rng) -> A_Σ(t):
#: the arrival step for every case but Poisson arrivals split job by job among M > 1
#: dispatchers (which the loop draws itself, :func:`_draw_split_poisson`); a first-class
#: function like ``serve_other``, so that the other laws and splits (Binomial, PTRS, the
#: multinomial split) compile only for a run that uses them
ARRIVALS_SIGNATURE = _i64(_i64, _f64, _i64, _iv, _i64, _fv, _fv, _b, _iv, types.uint64[::1])
ARRIVALS_TYPE = types.FunctionType(ARRIVALS_SIGNATURE)


# Delay tracking: the FIFO of each server is a linked list of (arrival slot, job count)
# batches in one shared pool of nodes, so memory follows the number of pending batches
# (at most ΣQ), not N × the longest queue. A node is two int64: the arrival slot, and
# ``link`` = (next node << 32) | jobs left (next = −1: the end of the list). Node n < N
# holds the batch at the head of server n's FIFO in place (jobs left 0: the FIFO is empty,
# and then next = −1), so that a departure reads its arrival slot at a known address
# instead of at the end of a chain of two loads; the batches behind it follow its ``next``.
# ``tails[n]`` is the last node of server n's list (n itself when the head is all there
# is). Free nodes form a stack linked the same way, with its head and size in
# ``pool_free``. A server gains at most one batch per slot, so a segment stops when fewer
# than N nodes are free and the pool grows (doubles) outside the hot loop; node indices
# stay valid across growth.
COUNT_MASK = np.int64(0xFFFFFFFF)
NIL_LINK = np.int64(-1) << np.int64(32)  # next = −1, count 0
FREE_HEAD, FREE_COUNT = 0, 1


def _link_free(pool: np.ndarray, first: int, stop: int) -> None:
    """Link free nodes first … stop − 1 each to the next, (k + 1) << 32, a million at a
    time (at N = 10⁶ the pool grows to millions of nodes: no temporary of their size)."""
    for start in range(first, stop, 1 << 20):
        end = min(stop, start + (1 << 20))
        links = pool[start:end, 1]
        links[:] = np.arange(start + 1, end + 1, dtype=np.int64)
        links <<= 32


def new_pool(N: int, capacity: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """A pool of ``capacity`` ≥ N nodes: N empty FIFOs (tails at their head nodes), the rest
    free. Returns (pool, tails, pool_free). (NumPy, not compiled: it runs once a run.)"""
    pool = np.zeros((capacity, 2), np.int64)
    pool[:N, 1] = NIL_LINK
    _link_free(pool, N, capacity)
    pool[capacity - 1, 1] = NIL_LINK
    tails = np.arange(N, dtype=np.int64)
    pool_free = np.array([N if capacity > N else -1, capacity - N], np.int64)
    return pool, tails, pool_free


def grow_pool(pool: np.ndarray, pool_free: np.ndarray) -> np.ndarray:
    """The FIFO pool at twice its capacity (after a chunk stopped with CARRY_FIFO_FULL; node
    indices stay valid); the new nodes go on top of the free stack, ``pool_free`` is
    updated in place."""
    capacity = pool.shape[0]
    grown = np.zeros((2 * capacity, 2), np.int64)
    grown[:capacity] = pool
    _link_free(grown, capacity, 2 * capacity)
    grown[2 * capacity - 1, 1] = pool_free[FREE_HEAD] << np.int64(32)
    pool_free[FREE_HEAD] = capacity
    pool_free[FREE_COUNT] += capacity
    return grown


@njit(inline="always", cache=True)
def _fifo_append(n, slot, jobs, pool, tails, pool_free):
    """Append a batch of ``jobs`` jobs arrived in ``slot`` to server n's FIFO."""
    if pool[n, 1] & COUNT_MASK == 0:  # empty: the batch becomes the head, in place
        pool[n, 0] = slot
        pool[n, 1] = NIL_LINK | jobs
        return
    node = pool_free[FREE_HEAD]
    pool_free[FREE_HEAD] = pool[node, 1] >> np.int64(32)
    pool_free[FREE_COUNT] -= 1
    pool[node, 0] = slot
    pool[node, 1] = NIL_LINK | jobs
    tail = tails[n]
    pool[tail, 1] = (pool[tail, 1] & COUNT_MASK) | (node << np.int64(32))
    tails[n] = node


@njit(inline="always", cache=True)
def _fifo_pop(n, pool, tails, pool_free):
    """Server n's head batch is done: the next batch moves into the head node (its own node
    is freed), or the FIFO is left empty."""
    h = pool[n, 1] >> np.int64(32)
    if h < 0:
        pool[n, 1] = NIL_LINK
        return
    pool[n, 0] = pool[h, 0]
    pool[n, 1] = pool[h, 1]
    if tails[n] == h:
        tails[n] = n
    pool[h, 1] = pool_free[FREE_HEAD] << np.int64(32)
    pool_free[FREE_HEAD] = h
    pool_free[FREE_COUNT] += 1


@njit(inline="always", cache=True)
def _fifo_update(n, arrived_now, served, t, warmup, pool, tails, pool_free, delay_hist,
                 moments):
    """Append this slot's arrivals to server n's FIFO, then time its ``served`` departures."""
    if arrived_now > 0:
        _fifo_append(n, t, arrived_now, pool, tails, pool_free)
    while served > 0:
        link = pool[n, 1]
        count = link & COUNT_MASK
        if count == 0:  # more served than queued (a policy wrote Q): check_invariants says so
            break
        take = min(served, count)
        arrived = pool[n, 0]
        if arrived >= warmup:
            delay = t - arrived
            delay_hist[_delay_bin(delay)] += take
            moments[SUM_DELAY] += delay * take
        served -= take
        if take == count:
            _fifo_pop(n, pool, tails, pool_free)
        else:
            pool[n, 1] = link - take


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
                delay_hist[_delay_bin(delay)] += 1
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


# Tagged jobs (delay="tagged", docs/statistics.md#tagged-delays): each job of the measured
# window is tagged with probability p, independently (geometric gaps between tags, drawn
# from the tag stream alone), and followed by a row of ``tags``: (server n, departure mark,
# arrival slot, next row). Server n's FIFO serves its jobs in arrival order: with a_n the
# jobs placed on n in the measured slots (``work[ARRIVED_ON]``), a_n − Q_n grows by n's
# departures, and the tagged job placed after a of them leaves at the end of the first slot
# where a_n − Q_n reaches its mark a + 1; no per-job FIFO is kept. A server serves at most
# ``most`` jobs a slot (1 under Bernoulli service, K under binomial:K; 0 here: no bound), so
# a tag with r departures still to come cannot leave before ⌈r / most⌉ slots have passed:
# it waits in a timing wheel of TAG_WHEEL lists, one per slot modulo TAG_WHEEL, and is
# looked at only in that slot (or TAG_WHEEL slots on, if that comes first), not every slot.
# On led-pod-push ≈ 41 tags are live, each for E[W] ≈ 185 slots, and a slot visits about
# one. Rows not in use form a free list through their ``next`` column.
TAG_SERVER, TAG_MARK, TAG_ARRIVED, TAG_NEXT = range(4)
TAG_COLUMNS = 4
#: the timing wheel's lists (a power of 2): a tag is looked at again at most this many
#: slots on
TAG_WHEEL = 256
#: the row of ``state.work`` that counts the jobs placed on each server in the measured
#: slots (a_n above; unused when nothing is tagged)
ARRIVED_ON = 5


@njit(inline="always", cache=True)
def _tag_gap(log_q, stream):
    """Untagged jobs before the next tag: Geometric on {0, 1, …}, log_q = log(1 − p)."""
    u = 1.0 - uniform(stream)  # in (0, 1]
    return np.int64(math.floor(math.log(u) / log_q)) if log_q < 0.0 else np.int64(0)


@njit(inline="always", cache=True)
def _wake_slot(t, remaining, most):
    """The first slot after t whose end may see ``remaining`` (≥ 1) more departures from a
    server that serves at most ``most`` jobs a slot (0: no bound, the next slot). Bernoulli
    service (``most`` = 1) takes no division (a 64-bit one costs tens of cycles)."""
    if most == 1:
        return t + remaining
    if most <= 0:
        return t + 1
    return t + (remaining + most - 1) // most


@njit(inline="always", cache=True)
def _wait(row, wake, latest, tags, wheel):
    """Put tag ``row`` in the wheel's list of slot ``wake``, or of slot ``latest`` if that
    comes first: the wheel's lists are those of the TAG_WHEEL slots from the next one to be
    looked at, and ``latest`` is the last of them."""
    slot = min(wake, latest)
    bucket = slot & (wheel.size - 1)
    tags[row, TAG_NEXT] = wheel[bucket]
    wheel[bucket] = row


@njit(inline="always", cache=True)
def _tag_jobs(target, placed, ahead, arrived, t, most, probability, tags, wheel, carry,
              stream, counters):
    """Tag the jobs of a placement of ``placed`` jobs on server ``target`` that the skip
    counter reaches (``carry[CARRY_TAG_SKIP]`` < ``placed``); ``ahead``: the jobs already
    in front of the placement's first job, Q_n(t) + the jobs placed on n earlier in slot t;
    ``arrived``: a_n, the jobs placed on n in the measured slots before this placement.
    The gaps are Geometric(p) on {0, 1, …}, by inversion; a negative skip (TAG_START, a
    run's first measured placement) draws the first gap."""
    skip = carry[CARRY_TAG_SKIP]
    count = carry[CARRY_TAG_COUNT]
    log_q = math.log1p(-probability)
    # the first gap drawn as if a tag stood at −1: one call of _tag_gap, whose inlined
    # draw was a tenth of a second of a cold run's compiling per call site
    tagged = skip < 0
    if tagged:
        skip = -1
    while True:
        if tagged:
            skip += 1 + _tag_gap(log_q, stream)
        if skip >= placed:
            break
        tagged = True
        row = carry[CARRY_TAG_FREE]
        if row >= 0:
            carry[CARRY_TAG_FREE] = tags[row, TAG_NEXT]
            tags[row, TAG_SERVER] = target
            tags[row, TAG_MARK] = arrived + skip + 1
            tags[row, TAG_ARRIVED] = t
            # ahead + skip + 1 departures to come from slot t on
            _wait(row, _wake_slot(t - 1, ahead + skip + 1, most), t - 1 + wheel.size,
                  tags, wheel)
            count += 1
        else:  # cannot happen while a slot tags fewer than half the table (run_once says)
            counters[TAGS_DROPPED] += 1
    carry[CARRY_TAG_COUNT] = count
    carry[CARRY_TAG_SKIP] = skip


@njit(inline="always", cache=True)
def _tag_placement(target, placed, Q, A, arrived_on, t, most, probability, tags, wheel, carry,
                   stream, counters):
    """The tagging of a measured placement of ``placed`` jobs on server ``target`` (before
    A_target(t) counts them): :func:`_tag_jobs` when the skip counter reaches one of them,
    and a_target moves past them."""
    if carry[CARRY_TAG_SKIP] < placed:
        _tag_jobs(target, placed, Q[target] + A[target], arrived_on[target], t, most,
                  probability, tags, wheel, carry, stream, counters)
    carry[CARRY_TAG_SKIP] -= placed
    arrived_on[target] += placed


@njit(inline="always", cache=True)
def _tag_one_job(tag_step, target, Q, A, arrived_on, t, most, probability, tags, wheel, carry,
                 stream, counters):
    """:func:`_tag_placement` of one job (per-job dispatch), tagging through ``tag_step``
    (:data:`tag_one_step`)."""
    if carry[CARRY_TAG_SKIP] < 1:
        tag_step(target, Q[target] + A[target], arrived_on[target], t, most, probability,
                 tags, wheel, carry, stream, counters)
    carry[CARRY_TAG_SKIP] -= 1
    arrived_on[target] += 1


def _tag_one(target, ahead, arrived, t, most, probability, tags, wheel, carry, stream,
             counters):
    _tag_jobs(target, 1, ahead, arrived, t, most, probability, tags, wheel, carry, stream,
              counters)


#: tag_one(target, ahead, arrived, t, most, probability, tags, wheel, carry, stream,
#: counters): :func:`_tag_jobs` for a placement of one job
TAG_ONE_SIGNATURE = types.none(types.int64, types.int64, types.int64, types.int64, types.int64,
                               types.float64, types.int64[:, ::1], types.int64[::1],
                               types.int64[::1], types.uint64[::1], types.int64[::1])
TAG_ONE_TYPE = types.FunctionType(TAG_ONE_SIGNATURE)
#: the tagging of a per-job placement, a first-class function compiled for tagged per-job
#: runs alone (:data:`NO_TAG_ONE` for the others): the loop then holds one inlined copy of
#: the tagging, the batch placement's (a second copy was ~0.6 s of a cold first run)
tag_one_step = lazy_function(_tag_one, TAG_ONE_SIGNATURE, allocates=False, from_python=False)
NO_TAG_ONE = AbsentStep(TAG_ONE_SIGNATURE, "no_tag_one")


@njit(inline="always", cache=True)
def _stop_at_bad_target(target, m, t, pooled, events, record, carry, counters):
    """Record in ``carry`` that dispatcher m's ``choose`` returned ``target``, outside
    0 … N−1, in slot t (a policy bug: the loop returns before indexing with it), with the
    slot's dispatch events so far."""
    carry[CARRY_POOLED] = pooled
    carry[CARRY_STATUS] = STATUS_BAD_TARGET
    carry[CARRY_BAD_TARGET] = target
    carry[CARRY_BAD_DISPATCHER] = m
    carry[CARRY_BAD_SLOT] = t
    counters[DISPATCH_EVENTS] += events
    if record:
        counters[DISPATCH_EVENTS_MEASURED] += events


@njit(**LOOP_ONLY)
def _follow_tags(Q, arrived_on, t, most, tags, wheel, carry, delay_hist, moments):
    """Slot t's departures for the tagged jobs in the wheel's list of slot t: with
    Q = Q(t+1), a tag whose server's a_n − Q_n reached its mark departs in slot t (delay
    t − its arrival slot, into the delay histogram and SUM_DELAY; its row is freed); the
    others wait for the next slot that may see their remaining departures."""
    bucket = t & (wheel.size - 1)
    row = wheel[bucket]
    wheel[bucket] = -1
    count = carry[CARRY_TAG_COUNT]
    free = carry[CARRY_TAG_FREE]
    delay_sum = moments[SUM_DELAY]
    while row >= 0:
        following = tags[row, TAG_NEXT]
        n = tags[row, TAG_SERVER]
        remaining = tags[row, TAG_MARK] - (arrived_on[n] - Q[n])
        if remaining <= 0:
            delay = t - tags[row, TAG_ARRIVED]
            delay_hist[_delay_bin(delay)] += 1
            delay_sum += delay
            count -= 1
            tags[row, TAG_NEXT] = free
            free = row
        else:
            _wait(row, _wake_slot(t, remaining, most), t + wheel.size, tags, wheel)
        row = following
    carry[CARRY_TAG_COUNT] = count
    carry[CARRY_TAG_FREE] = free
    moments[SUM_DELAY] = delay_sum


def new_tags(rows: int) -> tuple[np.ndarray, np.ndarray]:
    """A tag table of ``rows`` free rows, linked in order (the free list starts at row 0:
    ``carry[CARRY_TAG_FREE]``), and an empty timing wheel of TAG_WHEEL lists."""
    tags = np.zeros((rows, TAG_COLUMNS), np.int64)
    tags[:, TAG_NEXT] = np.arange(1, rows + 1)
    tags[-1, TAG_NEXT] = -1
    return tags, np.full(TAG_WHEEL, -1, np.int64)


def grow_tags(tags: np.ndarray, carry: np.ndarray) -> np.ndarray:
    """The tag table at twice its rows (after a chunk stopped with CARRY_TAGS_FULL; rows in
    use keep their index); the new rows go on top of the free list in ``carry``."""
    rows = tags.shape[0]
    grown = np.zeros((2 * rows, TAG_COLUMNS), np.int64)
    grown[:rows] = tags
    grown[rows:, TAG_NEXT] = np.arange(rows + 1, 2 * rows + 1)
    grown[-1, TAG_NEXT] = carry[CARRY_TAG_FREE]
    carry[CARRY_TAG_FREE] = rows
    return grown


def _serve_other_law(Q, A, Q_prev, mu, service_code, service_trials, rng, record, queue_sum,
                     track_delay, t, warmup, pool, tails, pool_free, delay_hist, moments,
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
        if track_delay and (arrived > 0 or served > 0):
            _fifo_update(n, arrived, served, t, warmup, pool, tails, pool_free, delay_hist,
                         moments)
    return total_queue, total_service, departures


def _bernoulli_with_fifo(Q, A, Q_prev, mu, service_code, service_trials, rng, record,
                        queue_sum, track_delay, t, warmup, pool, tails, pool_free, delay_hist,
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
#: the loop's ``draw_other_arrivals`` (:data:`ARRIVALS_SIGNATURE`), compiled on first use
#: (see :func:`needs_other_arrivals`), and the step of split-Poisson runs, never called
other_arrivals = lazy_function(_draw_other_arrivals, ARRIVALS_SIGNATURE, allocates=False)
split_poisson_only = AbsentStep(ARRIVALS_SIGNATURE, "split_poisson_only")


def needs_other_arrivals(arrival_code: int, dispatchers: int, batch_split: bool) -> bool:
    """Whether a run draws its arrivals with ``other_arrivals``: all but Poisson arrivals
    split job by job among M > 1 dispatchers."""
    return not (arrival_code == ARRIVAL_POISSON and dispatchers > 1 and not batch_split)


# _imbalance is exact in int64 while N·(ΣQ)² stays below this
IMBALANCE_EXACT_LIMIT = 2.0**62


@njit(**NOT_FIRST_CLASS)
def _imbalance(Q, total):
    """(Σ_n |Q_n − q̄|, Σ_n (Q_n − q̄)²) for q̄ = ΣQ/N = ``total``/N (DQI₁ and DQI₂²).

    In integers, exactly, with one rounding each: Σ|Q_n − q̄| = 2·Σ_{Q_n > q̄}(Q_n − q̄)
    = 2·(N·Σ_{Q_n > q̄} Q_n − k·ΣQ)/N for the k servers above q̄, and
    Σ(Q_n − q̄)² = (N·ΣQ_n² − (ΣQ)²)/N; three integer sums that vectorise, where the
    float loop was a serial chain of additions. Beyond IMBALANCE_EXACT_LIMIT, that loop.

    Below the limit no 64-bit product is needed per server (AVX2 has none: LLVM builds one
    from three 32-bit multiplies): Q_n > q̄ ⟺ Q_n > ⌊ΣQ/N⌋, and Q_n ≤ ΣQ < 2³¹ there, so
    Q_n² is the 32 × 32-bit product of its low half (one ``vpmuludq``): 72 → 42 ns at
    N = 100 on an AMD EPYC."""
    N = Q.size
    if float(N) * float(total) * float(total) < IMBALANCE_EXACT_LIMIT:
        level = total // N
        above_sum = np.int64(0)
        above_count = np.int64(0)
        squares = np.uint64(0)
        for n in range(N):
            q = Q[n]
            above = q > level
            above_sum += q if above else 0
            above_count += above
            low = np.uint64(q) & np.uint64(0xFFFFFFFF)
            squares += low * low
        absolute = 2.0 * float(N * above_sum - above_count * total) / N
        square = float(N * np.int64(squares) - total * total) / N
        return absolute, square
    mean = total / N
    absolute = 0.0
    square = 0.0
    for n in range(N):
        deviation = Q[n] - mean
        absolute += abs(deviation)
        square += deviation * deviation
    return absolute, square


#: LoopObservation.cursor[0] when no trajectory is recorded (never reached)
NO_POINT = np.int64(2**62)
CURSOR_NEXT, CURSOR_POINTS = range(2)
#: trajectory columns: t, ΣQ(t), q(t), then Q_n(t) of each recorded server
POINT_SLOT, POINT_TOTAL, POINT_POOLED, POINT_SERVERS = range(4)


def _observe(t, record, Q, Q_prev, A, total_queue, pooled, per_server, served, server_hist,
             every, servers, trajectory, cursor):
    """The optional observations of slot t (docs/statistics.md#per-server): in a measured
    slot, each server's jobs served Q_n(t) + A_n(t) − Q_n(t+1) and the histogram of
    Q_n(t+1) (its last bin: ≥ its index); at t + 1 = the next trajectory point, the row
    (t + 1, ΣQ(t+1), q(t+1), Q_n(t+1) of each recorded server)."""
    if per_server and record:
        top = server_hist.shape[1] - 1
        for n in range(Q.size):
            q = Q[n]
            served[n] += Q_prev[n] + A[n] - q
            server_hist[n, min(max(q, 0), top)] += 1
    if t + 1 == cursor[CURSOR_NEXT]:
        row = cursor[CURSOR_POINTS]
        trajectory[row, POINT_SLOT] = t + 1
        trajectory[row, POINT_TOTAL] = total_queue
        trajectory[row, POINT_POOLED] = pooled
        for i in range(servers.size):
            trajectory[row, POINT_SERVERS + i] = Q[servers[i]]
        cursor[CURSOR_POINTS] = row + 1
        cursor[CURSOR_NEXT] = t + 1 + every


#: observe(t, record, Q, Q_prev, A, ΣQ(t+1), q(t+1), per_server, served, server_hist, every,
#: servers, trajectory, cursor): :func:`_observe`
OBSERVE_SIGNATURE = types.none(_i64, _b, _iv, _iv, _iv, _i64, _i64, _b, _iv, types.int64[:, ::1],
                               _i64, _iv, types.int64[:, ::1], _iv)
OBSERVE_TYPE = types.FunctionType(OBSERVE_SIGNATURE)
#: the loop's observation step, a first-class function: compiled for a run that observes
#: (per-server statistics, a trajectory) alone (about a tenth of a cold first run's
#: compiling), :data:`NO_OBSERVE` for the others
observe_step = lazy_function(_observe, OBSERVE_SIGNATURE, allocates=False, from_python=False)
NO_OBSERVE = AbsentStep(OBSERVE_SIGNATURE, "no_observe")


class LoopLaws(NamedTuple):
    """The model as the slot loop reads it (one record, built once a run by
    :func:`dispatchlab.engine.raw.loop_laws`)."""

    mu: np.ndarray  # μ_n, the mean service of each server
    service_code: int  # the law of S_n(t) (model.service.SERVICE_CODES)
    service_trials: int  # K of a binomial service law
    arrival_code: int  # the law of A_Σ(t) (model.arrivals.ARRIVAL_CODES)
    arrival_rate: float  # λ_Σ
    arrival_trials: int  # K of binomial arrivals
    trace: np.ndarray  # the per-slot counts of a trace, replayed cyclically (else one 0)
    dispatcher_p: np.ndarray  # p_m, each dispatcher's share of the arrivals
    batch_split: bool  # all of a slot's arrivals to one dispatcher (else job by job)
    per_job: bool  # ``choose`` once per job (else once per dispatcher and slot)


class LoopPolicy(NamedTuple):
    """The policy's side of the loop besides its compiled functions: which hooks it has,
    and its :class:`~dispatchlab.engine.interface.Memory` arrays."""

    has_begin: bool
    has_end: bool
    ip: np.ndarray
    fp: np.ndarray
    ist: np.ndarray
    fst: np.ndarray


class LoopControl(NamedTuple):
    """What one run asks of the loop."""

    slots: int  # the run's length (a chunk runs part of it)
    warmup: int  # statistics from this slot on
    block_length: int  # slots per block of the block sums (batch means, the trend)
    bound: int  # ΣQ above which the run stops, unstable
    track_delay: bool  # time every job through its FIFO
    detail: bool  # measure the queue imbalance every slot
    tag_probability: float  # p, each measured job's chance to be tagged (0: none)


class LoopAccumulators(NamedTuple):
    """The run's statistics, which the loop adds to (the layouts: ``ARRIVALS`` … for
    ``counters``, ``SUM_TOTAL_QUEUE`` … for ``moments``)."""

    queue_sum: np.ndarray  # Σ_t Q_n(t+1), measured slots
    block_sum: np.ndarray  # Σ ΣQ(t+1) per block, every slot
    block_pooled: np.ndarray  # Σ q(t+1) per block, every slot
    block_queue_unused: np.ndarray  # Σ ΣQ(t+1)·ΣU(t) per block, every slot
    delay_hist: np.ndarray  # the delay histogram (compiled.histogram)
    queue_hist: np.ndarray  # the distribution of ΣQ(t+1); the last bin is ≥ its index
    msg: np.ndarray  # messages by kind, the whole run
    msg_at_warmup: np.ndarray  # ``msg`` when slot ``warmup`` began
    diag: np.ndarray  # the policy's diagnostics
    counters: np.ndarray
    moments: np.ndarray


class LoopState(NamedTuple):
    """What :func:`run_slots` carries from chunk to chunk, and the per-run tables it reads."""

    Q: np.ndarray  # Q_n(t), the queues at the start of the next slot to run
    A_m: np.ndarray  # A^m(t), the current slot's arrivals at each dispatcher
    targets: np.ndarray  # the servers the adapter chose: dispatcher m's at m (batch
    # dispatch), or those of one dispatcher's next jobs (per job); max(M, TARGET_BUFFER)
    rng: np.ndarray  # the xoshiro256++ state of the policies' draws (the policy stream)
    service_stream: np.ndarray  # the SplitMix64 state of Bernoulli service
    exogenous: np.ndarray  # the xoshiro256++ state of the arrivals and the other service
    # laws (compiled.rng.make_exogenous_stream): the same draws whatever the policy
    work: np.ndarray  # A, Q_prev, last slot chosen, last chooser, S(t) (then the jobs served)
    carry: np.ndarray  # CARRY_* entries
    pool: np.ndarray  # the FIFOs (see new_pool); replaced by grow_pool
    tails: np.ndarray
    pool_free: np.ndarray
    thresholds: np.ndarray  # ⌈μ_n·2⁵³⌉, Bernoulli service as an integer compare
    cumulative: np.ndarray  # the cumulative sum of the dispatcher weights p_m
    poisson_offsets: np.ndarray  # the per-dispatcher Poisson tables (poisson_tables), or
    # none (one offset) when the run's arrivals are not split Poisson
    poisson_table: np.ndarray
    tags: np.ndarray  # the tagged jobs followed, (server, mark, arrival slot, next) rows
    tag_wheel: np.ndarray  # the first row of each slot's list of tags to look at (new_tags)
    tag_stream: np.ndarray  # the xoshiro256++ state of the tags' draws (compiled.rng)


class LoopObservation(NamedTuple):
    """What the loop observes on request besides its statistics: per-server statistics and
    a decimated trajectory (:func:`_observe`; both off, the loop tests one flag a slot)."""

    per_server: bool  # count each server's jobs served and Q_n(t+1) histogram
    every: int  # k: a trajectory point every k slots (0: none)
    servers: np.ndarray  # the servers whose Q_n(t) the trajectory records
    served: np.ndarray  # jobs served by each server in the measured slots
    server_hist: np.ndarray  # (N, bins): measured slots with Q_n(t+1) = k, last bin ≥ k
    trajectory: np.ndarray  # (points, POINT_SERVERS + servers) rows
    cursor: np.ndarray  # the next point's slot (NO_POINT: none), the points recorded


def observes(observation: LoopObservation) -> bool:
    """Whether the loop calls its observation step for ``observation`` (as it decides)."""
    return bool(observation.per_server or observation.every > 0)


def no_observation() -> LoopObservation:
    """The :class:`LoopObservation` of a run that observes nothing."""
    return LoopObservation(False, 0, np.zeros(0, np.int64), np.zeros(0, np.int64),
                           np.zeros((0, 1), np.int64), np.zeros((0, POINT_SERVERS), np.int64),
                           np.array([NO_POINT, 0], np.int64))


def init_loop_state(Q: np.ndarray, rng: np.ndarray, service_stream: np.ndarray,
                    mu: np.ndarray, track_delay: bool, arrival_rate: float,
                    dispatcher_p: np.ndarray, split_poisson: bool,
                    exogenous: np.ndarray | None = None, tag_stream: np.ndarray | None = None,
                    tag_rows: int = 1) -> LoopState:
    """The :class:`LoopState` of a run that starts from queues ``Q`` (NumPy, not compiled:
    it runs once a run, and compiling it cost a cold first run about a second). The
    Poisson tables only for ``split_poisson`` (the loop then draws the arrivals itself; see
    :func:`needs_other_arrivals`), else none. ``exogenous``: the exogenous stream (default:
    a copy of ``rng``'s state, for tests that build a state by hand); ``tag_stream`` and
    ``tag_rows``: the tags' stream (default: none is drawn from) and table rows."""
    N = Q.size
    work = np.zeros((ARRIVED_ON + 1, N), np.int64)
    work[2] = -1
    carry = np.zeros(N_CARRY, np.int64)
    carry[CARRY_POOLED] = Q.sum()  # the pooled queue q(0) = ΣQ(0)
    if track_delay:
        # room for one slot's arrivals and more; the initial jobs wait in their servers'
        # head nodes as one batch "arrived" in slot −1 each
        pool, tails, pool_free = new_pool(N, 3 * N + 16)
        waiting = np.flatnonzero(Q > 0)
        pool[waiting, 0] = -1
        pool[waiting, 1] = NIL_LINK | Q[waiting]
    else:
        pool, tails, pool_free = new_pool(1, 2)  # never used
    tables = (poisson_tables(arrival_rate * dispatcher_p) if split_poisson
              else (np.zeros(1, np.int64), np.zeros(0)))
    exogenous = rng.copy() if exogenous is None else exogenous
    carry[CARRY_TAG_SKIP] = NO_TAGS
    tag_stream = np.ones(4, np.uint64) if tag_stream is None else tag_stream
    tags, wheel = new_tags(max(tag_rows, 1))
    carry[CARRY_TAG_FREE] = 0
    return LoopState(Q, np.zeros(dispatcher_p.size, np.int64),
                     np.zeros(max(dispatcher_p.size, TARGET_BUFFER), np.int64), rng,
                     service_stream, exogenous, work, carry, pool, tails, pool_free,
                     bernoulli_thresholds(mu), np.cumsum(dispatcher_p), *tables, tags, wheel,
                     tag_stream)


def _run_slots(laws, policy, control, acc, state, serve_other, draw_other_arrivals, choose,
               begin_slot, end_slot, t_start, t_stop, observation, observe_step, ptrs,
               tag_one):
    """Run slots [``t_start``, ``t_stop``) of a ``control.slots``-slot run from the state
    left by the previous chunk (or :func:`init_loop_state`). Returns the next slot to run;
    it is below ``t_stop`` when the chunk stopped early: ``carry[CARRY_STATUS]`` says why
    (the bound or a bad target; the slot of a bad target is returned, left half done), or
    ``carry[CARRY_FIFO_FULL]`` is set and the caller grows the FIFO pool
    (:func:`grow_pool`) before the next call.

    ``laws`` (:class:`LoopLaws`), ``policy`` (:class:`LoopPolicy`), ``control``
    (:class:`LoopControl`), ``acc`` (:class:`LoopAccumulators`) and ``state``
    (:class:`LoopState`) are named records, and so is ``observation``
    (:class:`LoopObservation`, what is observed on request); ``serve_other`` and
    ``draw_other_arrivals`` are the steps of the laws the loop does not draw itself,
    ``choose`` and the hooks the policy's adapters (engine.adapter); ``observe_step``
    (:data:`observe_step`, called when :func:`observes`), ``ptrs`` (:data:`ptrs_draw`,
    for the PTRS rows of split-Poisson arrivals) and ``tag_one`` (:data:`tag_one_step`, a
    tagged per-job run's tagging) the steps that compile only for the runs that take them
    (:data:`NO_OBSERVE`, :data:`NO_PTRS`, :data:`NO_TAG_ONE` for the others)."""
    # every array is used borrowed (see _borrowed): the originals live in the caller. (One
    # function, not a wrapper that borrows and calls the loop: that compiled ~0.7 s longer.)
    mu, trace = _borrowed(laws.mu), _borrowed(laws.trace)
    dispatcher_p = _borrowed(laws.dispatcher_p)
    service_code, service_trials = laws.service_code, laws.service_trials
    arrival_code, arrival_rate = laws.arrival_code, laws.arrival_rate
    arrival_trials, batch_split, per_job = laws.arrival_trials, laws.batch_split, laws.per_job
    has_begin, has_end = policy.has_begin, policy.has_end
    ip, fp = _borrowed(policy.ip), _borrowed(policy.fp)
    ist, fst = _borrowed(policy.ist), _borrowed(policy.fst)
    slots, warmup, block_length = control.slots, control.warmup, control.block_length
    bound, track_delay, detail = control.bound, control.track_delay, control.detail
    queue_sum, block_sum = _borrowed(acc.queue_sum), _borrowed(acc.block_sum)
    block_pooled = _borrowed(acc.block_pooled)
    block_queue_unused = _borrowed(acc.block_queue_unused)
    delay_hist, queue_hist = _borrowed(acc.delay_hist), _borrowed(acc.queue_hist)
    msg, msg_at_warmup = _borrowed(acc.msg), _borrowed(acc.msg_at_warmup)
    diag, counters, moments = _borrowed(acc.diag), _borrowed(acc.counters), _borrowed(acc.moments)
    Q, A_m, targets = _borrowed(state.Q), _borrowed(state.A_m), _borrowed(state.targets)
    rng, service_stream = _borrowed(state.rng), _borrowed(state.service_stream)
    exogenous = _borrowed(state.exogenous)
    work, carry = _borrowed(state.work), _borrowed(state.carry)
    pool, tails = _borrowed(state.pool), _borrowed(state.tails)
    pool_free, thresholds = _borrowed(state.pool_free), _borrowed(state.thresholds)
    cumulative = _borrowed(state.cumulative)
    poisson_offsets = _borrowed(state.poisson_offsets)
    poisson_table = _borrowed(state.poisson_table)
    tags, tag_stream = _borrowed(state.tags), _borrowed(state.tag_stream)
    wheel = _borrowed(state.tag_wheel)
    tag_probability = control.tag_probability
    tagging = tag_probability > 0.0
    per_server, every = observation.per_server, observation.every
    observe = per_server or every > 0
    servers, served = _borrowed(observation.servers), _borrowed(observation.served)
    server_hist = _borrowed(observation.server_hist)
    trajectory, cursor = _borrowed(observation.trajectory), _borrowed(observation.cursor)
    carry[CARRY_STATUS] = STATUS_RUNNING
    if not (0 <= t_start <= t_stop <= slots):
        return t_start
    N = Q.size
    M = A_m.size
    # split-Poisson arrivals are drawn here exactly when the run has their tables
    # (init_loop_state builds them for those runs alone, raw passes the other step then)
    split_poisson = poisson_offsets.size > 1
    A = work[0]
    Q_prev = work[1]
    last_slot_chosen = work[2]
    last_chooser = work[3]
    S = work[4]
    arrived_on = work[ARRIVED_ON]
    # the most jobs a server serves in one slot (0: no bound), for the tags' wake-up slots
    most = (1 if service_code == SERVICE_BERNOULLI
            else service_trials if service_code == SERVICE_BINOMIAL else 0)
    pooled = carry[CARRY_POOLED]
    # choose is the policy's adapter (engine.adapter): it reads the arrays from here
    packed = pack_arrays((Q, mu, ip, fp, ist, fst, rng, msg, A_m, targets))
    # and the hooks' adapters theirs: in begin_slot Q_prev is Q(t) itself; in end_slot Q is
    # Q(t+1) and Q_prev Q(t)
    begin_packed = pack_arrays((Q, mu, ip, fp, ist, fst, rng, msg, Q, A, A_m, diag))
    end_packed = pack_arrays((Q, mu, ip, fp, ist, fst, rng, msg, Q_prev, A, A_m, diag))
    block = t_start // block_length  # the block of slot t, and the slots left in it
    block_left = block_length - t_start % block_length
    for t in range(t_start, t_stop):
        record = t >= warmup
        if t == warmup:
            for k in range(msg.size):
                msg_at_warmup[k] = msg[k]
        if has_begin:
            begin_slot(t, record, begin_packed)

        # arrivals and immediate dispatch on the slot-start state Q(t)
        if split_poisson:
            total = _draw_split_poisson(poisson_offsets, poisson_table, A_m, exogenous,
                                        ptrs)
        else:
            total = draw_other_arrivals(arrival_code, arrival_rate, arrival_trials, trace, t,
                                        dispatcher_p, cumulative, batch_split, A_m,
                                        exogenous)
        for n in range(N):
            A[n] = 0
        herded = False
        events = 0
        if per_job:
            for m in range(M):
                jobs = A_m[m]
                for j in range(jobs):
                    k = j % TARGET_BUFFER  # the placement's entry in targets
                    if k == 0:  # the servers of its next TARGET_BUFFER jobs
                        choose(m, min(jobs - j, TARGET_BUFFER), t, packed)
                    target = targets[k]
                    if target < 0 or target >= N:  # a policy bug: stop before indexing
                        _stop_at_bad_target(target, m, t, pooled, events, record, carry,
                                            counters)
                        return t
                    if record and tagging:
                        _tag_one_job(tag_one, target, Q, A, arrived_on, t, most,
                                     tag_probability, tags, wheel, carry, tag_stream,
                                     counters)
                    A[target] += 1
                    # herding: another dispatcher chose the same server in this slot (no
                    # branch: whether it did is random)
                    herded |= (last_slot_chosen[target] == t) & (last_chooser[target] != m)
                    last_slot_chosen[target] = t
                    last_chooser[target] = m
                events += np.int64(jobs > 0)
        else:
            if total > 0:  # one call: every dispatcher's server into targets
                choose(EVERY_DISPATCHER, 0, t, packed)
            for m in range(M):
                jobs = A_m[m]
                if jobs == 0:
                    continue
                target = targets[m]
                if target < 0 or target >= N:
                    _stop_at_bad_target(target, m, t, pooled, events, record, carry, counters)
                    return t
                if record and tagging:
                    _tag_placement(target, jobs, Q, A, arrived_on, t, most, tag_probability,
                                   tags, wheel, carry, tag_stream, counters)
                # herding: one placement per dispatcher, so a server that already has jobs
                # of slot t has them from another dispatcher
                herded |= A[target] != 0
                A[target] += jobs
                events += 1
        counters[DISPATCH_EVENTS] += events
        counters[ARRIVALS] += total
        if record:
            counters[DISPATCH_EVENTS_MEASURED] += events
            counters[ARRIVALS_MEASURED] += total
            if herded:
                counters[HERDING_SLOTS] += 1

        # service, unused service and FIFO departures
        if service_code == SERVICE_BERNOULLI and not track_delay:
            total_queue, total_service, departures = _serve_bernoulli(
                Q, A, Q_prev, thresholds, service_stream, record, queue_sum, S)
        else:  # another law, or Bernoulli timing every job (loop_steps in engine.raw)
            total_queue, total_service, departures = serve_other(
                Q, A, Q_prev, mu, service_code, service_trials, exogenous, record, queue_sum,
                track_delay, t, warmup, pool, tails, pool_free, delay_hist, moments,
                thresholds, service_stream, S)
        total_unused = total_service - departures
        counters[DEPARTURES] += departures
        if wheel[t & (wheel.size - 1)] >= 0:  # tags to look at in slot t
            _follow_tags(Q, arrived_on, t, most, tags, wheel, carry, delay_hist, moments)
        pooled += total - total_service
        pooled_unused = max(-pooled, 0)
        pooled += pooled_unused
        if total_queue < pooled:
            counters[INVARIANT_VIOLATIONS] += 1
        if total_queue > counters[MAX_TOTAL_QUEUE]:
            counters[MAX_TOTAL_QUEUE] = total_queue

        if has_end:
            end_slot(t, record, end_packed)

        block_sum[block] += total_queue
        block_pooled[block] += pooled
        queue_unused = float(total_queue) * float(total_unused)
        block_queue_unused[block] += queue_unused
        block_left -= 1
        if block_left == 0:  # t + 1 starts the next block (no division per slot)
            block += 1
            block_left = block_length
        if record:
            queue_hist[min(total_queue, queue_hist.size - 1)] += 1
            counters[MEASURED_SLOTS] += 1
            moments[SUM_TOTAL_QUEUE] += total_queue
            moments[SUM_TOTAL_QUEUE_SQ] += float(total_queue) * float(total_queue)
            moments[SUM_POOLED] += pooled
            moments[SUM_QU] += queue_unused
            moments[SUM_UNUSED] += total_unused
            moments[SUM_UNUSED_SQ] += float(total_unused) * float(total_unused)
            moments[SUM_POOLED_UNUSED_SQ] += float(pooled_unused) * float(pooled_unused)
            if detail:
                absolute, square = _imbalance(Q, total_queue)
                moments[SUM_DQI1] += absolute
                moments[SUM_DQI2] += math.sqrt(square)
        if observe:  # per-server statistics, the trajectory (off: this test alone)
            observe_step(t, record, Q, Q_prev, A, total_queue, pooled, per_server, served,
                         server_hist, every, servers, trajectory, cursor)
        if total_queue > bound:
            carry[CARRY_POOLED] = pooled
            carry[CARRY_STATUS] = STATUS_HIT_BOUND
            return t + 1
        if track_delay and pool_free[FREE_COUNT] < N:  # the next slot may need N nodes
            carry[CARRY_POOLED] = pooled
            carry[CARRY_FIFO_FULL] = 1
            return t + 1
        if 2 * carry[CARRY_TAG_COUNT] > tags.shape[0]:  # the next slot may tag as many
            carry[CARRY_POOLED] = pooled
            carry[CARRY_TAGS_FULL] = 1
            return t + 1
    carry[CARRY_POOLED] = pooled
    return t_stop


_u64v = types.uint64[::1]
_i2 = types.int64[:, ::1]
_f2 = types.float64[:, ::1]
LOOP_LAWS_TYPE = types.NamedTuple([_fv, _i64, _i64, _i64, _f64, _i64, _iv, _fv, _b, _b],
                                  LoopLaws)
LOOP_POLICY_TYPE = types.NamedTuple([_b, _b, _iv, _fv, _i2, _f2], LoopPolicy)
LOOP_CONTROL_TYPE = types.NamedTuple([_i64, _i64, _i64, _i64, _b, _b, _f64], LoopControl)
LOOP_ACCUMULATORS_TYPE = types.NamedTuple([_iv, _fv, _fv, _fv, _iv, _iv, _iv, _iv, _fv, _iv, _fv],
                                          LoopAccumulators)
LOOP_STATE_TYPE = types.NamedTuple(
    [_iv, _iv, _iv, _u64v, _u64v, _u64v, _i2, _iv, _i2, _iv, _iv, _u64v, _fv, _iv, _fv, _i2,
     _iv, _u64v],
    LoopState)
LOOP_OBSERVATION_TYPE = types.NamedTuple([_b, _i64, _iv, _iv, _i2, _i2, _iv], LoopObservation)
#: run_slots(laws, policy, control, acc, state, serve_other, draw_other_arrivals, choose,
#: begin_slot, end_slot, t_start, t_stop, observation, observe_step, ptrs, tag_one) -> the
#: next slot to run
LOOP_SIGNATURE = _i64(
    LOOP_LAWS_TYPE, LOOP_POLICY_TYPE, LOOP_CONTROL_TYPE, LOOP_ACCUMULATORS_TYPE,
    LOOP_STATE_TYPE, SERVE_TYPE, ARRIVALS_TYPE, ADAPTER_TYPE, HOOK_ADAPTER_TYPE,
    HOOK_ADAPTER_TYPE, _i64, _i64, LOOP_OBSERVATION_TYPE, OBSERVE_TYPE, PTRS_TYPE,
    TAG_ONE_TYPE,
)


#: one chunk of the slot loop, compiled once for every policy with :data:`LOOP_SIGNATURE`
#: on first use (``interface.compiled(run_slots, only=True)``)
run_slots = lazy_function(_run_slots, LOOP_SIGNATURE, first_class=False)
