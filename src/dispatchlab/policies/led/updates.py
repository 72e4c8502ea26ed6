"""LED update strategies (docs/model.md#led-updates): the end-of-slot refresh of the local
estimates.

Both run in the end-of-slot phase, on Q(t+1), after every dispatch of slot t:

* **push(p̂, d)** — each dispatcher, with probability p̂, samples d distinct servers
  uniformly and copies their queue lengths: 2d messages (d probes, d replies). The coin
  is flipped every slot (``trigger = slot``, P(I^m_n = 1) = p̂·d/N) or only in slots in
  which the dispatcher received jobs (``trigger = arrival``).
* **pull(p̂)** — each server, with probability p̂, reports its queue length to one
  dispatcher drawn uniformly: 1 message (report); P(I^m_n = 1) = p̂/M.

An estimate that is not refreshed keeps its value (docs/model.md#led-updates), unless the
policy's LSQ increment option moved it at dispatch time. Every write goes through
:func:`~dispatchlab.policies.led.layout.write_estimate`, which keeps the dispatcher's
index (L-JSQ's block minima, L-JBA's sum) exact.

The Bernoulli(p̂) trials of a run form one stream — (slot, server) pairs for pull,
(slot, dispatcher) pairs for per-slot push, dispatch events for arrival-triggered
push — and the hooks jump from one success to the next with geometric gaps. That is
exactly the i.i.d. Bernoulli(p̂) law, at O(N·p̂) work per slot instead of N uniforms.
"""

from __future__ import annotations

import math

import numpy as np
from numba import njit

from dispatchlab.compiled.rng import randint, sample_distinct_row, uniform
from dispatchlab.engine.interface import PROBE, REPLY, REPORT, hook_function
from dispatchlab.policies.led.layout import (
    arrival_triggered,
    dispatchers,
    error_stride,
    estimate_index,
    estimates,
    index_kind,
    log_miss,
    measures_error,
    prefetch_estimate,
    pull_position,
    push_d,
    push_position,
    push_sample_row,
    strategy_scratch_row,
    update_p,
    write_estimate,
)

DIAG_ESTIMATION_ERROR, DIAG_ERROR_SAMPLES = 0, 1


#: a gap this long means "no further success in any run"; capping it keeps the trial
#: positions (t·N + gap) inside int64 for a tiny p̂ (p̂ = 1e-300 gives gaps ≈ 1e300, whose
#: conversion to int64 wrapped negative and made the hooks write outside the estimates)
MAX_GAP = 2**62


@njit(inline="always", cache=True)
def failures_before_success(rng, p, log_miss):
    """Geometric number of failed Bernoulli(p) trials before the next success (≤ MAX_GAP)."""
    if p >= 1.0:
        return np.int64(0)
    gap = math.log(1.0 - uniform(rng)) / log_miss  # compared as a float: floor() → int64
    if gap >= MAX_GAP:
        return np.int64(MAX_GAP)
    return np.int64(math.floor(gap))


@njit(inline="always", cache=True)
def _push_sample(m, Q, memory, d, ctx):
    """Dispatcher m samples d distinct servers and sets Q̃^m_n = Q_n(t+1) for them. (Inlined
    at the hook's one call site: out of line, its call passed the policy's memory and the
    run's context, a reference count each, and L-Pod push ran ~7 % slower.)"""
    N = Q.size
    own = estimates(memory, m)
    index = estimate_index(memory, m)
    kind = index_kind(memory)
    if d >= N:  # every server: no randomness needed
        for n in range(N):
            write_estimate(own, index, kind, n, Q[n])
    else:
        row = push_sample_row(memory)
        sample_distinct_row(ctx.rng, N, d, memory.int_state, row)
        sample = memory.int_state[row]
        for i in range(d):
            n = sample[i]
            write_estimate(own, index, kind, n, Q[n])
    ctx.msg[PROBE] += d
    ctx.msg[REPLY] += d


@njit(inline="always", cache=True)
def _record_error(slot, step, memory):
    """diag[0] += mean over (m, n) of |Q_n(t+1) − Q̃^m_n(t+1)|, diag[1] += 1, in every k-th
    slot (k = :func:`error_stride`) when measuring: O(MN/k) per slot."""
    if not step.record or not measures_error(memory) or slot.t % error_stride(memory) != 0:
        return
    Q = slot.Q
    M = dispatchers(memory)
    N = Q.size
    total = 0
    for m in range(M):
        own = estimates(memory, m)
        for n in range(N):
            total += abs(Q[n] - own[n])
    step.diag[DIAG_ESTIMATION_ERROR] += total / (M * N)
    step.diag[DIAG_ERROR_SAMPLES] += 1.0


@hook_function
def push_end_slot(slot, step, memory, ctx):
    """LED push update, end of slot (docs/model.md#led-updates): each dispatcher, with
    probability p̂ per slot (or per dispatch event), samples d distinct servers and copies
    their Q(t+1); 2d messages per sample."""
    t = slot.t
    Q = slot.Q
    rng = ctx.rng
    M = dispatchers(memory)
    d = push_d(memory)
    p = update_p(memory)
    miss = log_miss(memory)
    position = push_position(memory)
    # arrival-triggered: position[0] counts the failures left before the next success among
    # dispatch events; per slot: it is the index t·M + m of the next successful (slot,
    # dispatcher) trial. Both walk to their next sampling dispatcher and meet at one
    # (inlined) sample.
    per_event = arrival_triggered(memory)
    if position[0] < 0:
        position[0] = failures_before_success(rng, p, miss) + (0 if per_event else t * M)
    A_m = step.A_m
    end = (t + 1) * M
    m = 0
    while True:
        if per_event:
            while m < M and (A_m[m] == 0 or position[0] > 0):
                if A_m[m] != 0:
                    position[0] -= 1
                m += 1
            if m == M:
                break
            sampler = m
            m += 1
        else:
            if position[0] >= end:
                break
            sampler = position[0] - t * M
        _push_sample(sampler, Q, memory, d, ctx)
        gap = failures_before_success(rng, p, miss)
        position[0] = gap if per_event else position[0] + 1 + gap
    _record_error(slot, step, memory)


@hook_function
def pull_end_slot(slot, step, memory, ctx):
    """LED pull update, end of slot (docs/model.md#led-updates): each server, with
    probability p̂, reports Q_n(t+1) to one uniformly drawn dispatcher; 1 message each."""
    t = slot.t
    Q = slot.Q
    rng = ctx.rng
    M = dispatchers(memory)
    N = Q.size
    p = update_p(memory)
    miss = log_miss(memory)
    position = pull_position(memory)
    # position[0]: index t·N + n of the next successful (slot, server) trial
    if position[0] < 0:
        position[0] = t * N + failures_before_success(rng, p, miss)
    end = (t + 1) * N
    # the slot's reports are drawn first, (m, n) as m·2³² + n into the strategy's scratch
    # row (free in this phase), with their cache lines prefetched; then written in the
    # same order: the same draws and writes, but M rows of N out of cache no longer make
    # every write wait for its own misses
    pending = memory.int_state[strategy_scratch_row(memory)]
    reports = 0
    while position[0] < end:
        n = position[0] - t * N
        m = randint(rng, M) if M > 1 else 0
        pending[reports] = (m << 32) | n
        prefetch_estimate(memory, m, n)
        reports += 1
        position[0] += 1 + failures_before_success(rng, p, miss)
    kind = index_kind(memory)
    for i in range(reports):
        m = pending[i] >> 32
        n = pending[i] & 0xFFFFFFFF
        write_estimate(estimates(memory, m), estimate_index(memory, m), kind, n, Q[n])
    ctx.msg[REPORT] += reports
    _record_error(slot, step, memory)
