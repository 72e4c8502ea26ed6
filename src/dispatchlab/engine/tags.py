"""Tagged jobs (``delay="tagged"``, docs/statistics.md#tagged-delays): the delays of a
sample of the jobs, followed without a FIFO.

Each job of the measured window is tagged with probability p, independently (geometric gaps
between tags, drawn from the tag stream alone), and followed by a row of ``tags``: (server
n, departure mark, arrival slot, next row). Server n's FIFO serves its jobs in arrival
order: with a_n the jobs placed on n in the measured slots (``work[ARRIVED_ON]``), a_n − Q_n
grows by n's departures, and the tagged job placed after a of them leaves at the end of the
first slot where a_n − Q_n reaches its mark a + 1; no per-job FIFO is kept. A server serves
at most ``most`` jobs a slot (1 under Bernoulli service, K under binomial:K; 0 here: no
bound), so a tag with r departures still to come cannot leave before ⌈r / most⌉ slots have
passed: it waits in a timing wheel of TAG_WHEEL lists, one per slot modulo TAG_WHEEL, and is
looked at only in that slot (or TAG_WHEEL slots on, if that comes first), not every slot. On
led-pod-push ≈ 41 tags are live, each for E[W] ≈ 185 slots, and a slot visits about one.
Rows not in use form a free list through their ``next`` column.
"""

from __future__ import annotations

import math

import numpy as np
from numba import njit, types

from dispatchlab.compiled.lazy import AbsentStep, lazy_function
from dispatchlab.compiled.rng import uniform
from dispatchlab.compiled.signature_types import F64, I64, I64_MAT, I64_VEC, U64_VEC
from dispatchlab.engine.interface import LOOP_ONLY
from dispatchlab.engine.layout import (
    CARRY_TAG_COUNT,
    CARRY_TAG_FREE,
    CARRY_TAG_SKIP,
    SUM_DELAY,
    TAGS_DROPPED,
    delay_bin,
)

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
TAG_ONE_SIGNATURE = types.none(I64, I64, I64, I64, I64, F64, I64_MAT, I64_VEC, I64_VEC, U64_VEC,
                               I64_VEC)
TAG_ONE_TYPE = types.FunctionType(TAG_ONE_SIGNATURE)
#: the tagging of a per-job placement, a first-class function compiled for tagged per-job
#: runs alone (:data:`NO_TAG_ONE` for the others): the loop then holds one inlined copy of
#: the tagging, the batch placement's (a second copy was ~0.6 s of a cold first run)
tag_one_step = lazy_function(_tag_one, TAG_ONE_SIGNATURE, allocates=False, from_python=False)
NO_TAG_ONE = AbsentStep(TAG_ONE_SIGNATURE, "no_tag_one")


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
            delay_hist[delay_bin(delay)] += 1
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
