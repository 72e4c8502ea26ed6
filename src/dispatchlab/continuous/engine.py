"""The event loop of the continuous-time engine.

Events are arrivals (one stream per dispatcher) and completions (one next completion per
server). The next event is found in a tournament tree over the N + M event times (leaves
0 … N−1 the servers' next completions, N … N+M−1 the dispatchers' next arrivals): the
root holds the leaf whose time is least, and a changed time is carried up in O(log(N+M)).
Ties between events are resolved by leaf order.

The loop runs in chunks of at most ``budget`` events and keeps all of its state in arrays,
so that Python regains control between chunks (Ctrl-C, a progress line) and the next
chunk continues the same run bit for bit.

Jobs are numbered in arrival order. Jobs ``warmup`` … ``jobs``−1 are measured: their
response times (completion − arrival), slowdowns (response time over the job's own service
time at its server, size/s) and whether they found their server busy, each added to the
block of the job's number (``blocks`` equal blocks); and the time-integral of the number in
system between arrivals ``warmup`` and ``jobs``, each stretch added to the block of the
arrival that opened it. Arrivals go on past ``jobs`` (so that the last measured jobs see the
same system as the others) until every measured job has completed.
"""

from __future__ import annotations

import math

import numpy as np
from numba import njit

from dispatchlab.compiled.rng import uniform
from dispatchlab.continuous.choose import JIQ, L_JSQ, L_POD, LWL, USER, choose
from dispatchlab.continuous.estimates import (
    F_INTERVAL,
    after_departure,
    after_dispatch,
    broadcast,
)
from dispatchlab.continuous.laws import EXPONENTIAL, draw
from dispatchlab.continuous.servers import (
    J_ARRIVAL,
    J_INDEX,
    J_SIZE,
    S_COUNT,
    S_NEXT,
    S_WORK,
    admit,
    complete,
)
from dispatchlab.continuous.tournament import carry_up

# the loop's counters (``counts``) and clock (``clock``)
(C_ARRIVALS, C_MEASURED_DONE, C_IN_SYSTEM, C_MAX_IN_SYSTEM, C_EVENTS, C_STATUS,
 C_MESSAGES, C_BAD_SERVER, C_BAD_DISPATCHER) = range(9)
N_COUNTS = 9
K_NOW = 0  # the time of the last event
N_CLOCK = 1
#: BAD_SERVER: a user's rule returned no server of 0 … N−1 (C_BAD_SERVER, at its
#: dispatcher C_BAD_DISPATCHER)
RUNNING, DONE, FULL, BAD_SERVER = range(4)
# per block: sums of response times, slowdowns, jobs found busy, jobs, the integral of the
# number in system and the time it covers
B_RESPONSE, B_SLOWDOWN, B_BUSY, B_JOBS, B_AREA, B_TIME = range(6)
N_BLOCK_ROWS = 6
#: response-time histogram: HISTOGRAM_PER_DECADE bins a decade from 10^HISTOGRAM_LOW_EXP
HISTOGRAM_PER_DECADE = 100
HISTOGRAM_LOW_EXP = -6
HISTOGRAM_BINS = 1600


@njit(cache=True)
def draw_phase(s, code, a, b, c):
    """A stream's first arrival: an exponential law's own draw (memoryless), else a
    uniform fraction of one interarrival time (so M dispatchers do not start in step)."""
    if code == EXPONENTIAL:
        return draw(s, code, a, b, c)
    return uniform(s) * draw(s, code, a, b, c)


@njit(inline="always", cache=True)
def histogram_bin(value):
    """The response-time histogram's bin of ``value`` (log-spaced; clipped at both ends)."""
    if value <= 0.0:
        return 0
    position = (math.log10(value) - HISTOGRAM_LOW_EXP) * HISTOGRAM_PER_DECADE
    if position < 0.0:
        return 0
    return min(np.int64(position), HISTOGRAM_BINS - 1)


@njit(cache=True)
def run_events(budget, discipline, policy, speeds, arrival_law, size_law, jobs, warmup,
               sf, si, jf, ji, free, when, tree, idle, empty_at, empty_tree, counts, clock,
               blocks, histogram,
               ints, floats, cumulative, cutoffs, cursor, credit, sample, estimates, probed,
               trace_times, trace_sizes, trace_owners, timer, arrival_s, size_s, policy_s,
               update_s, rule, rule_params, rule_state):
    """Run at most ``budget`` events; the status (RUNNING, DONE, FULL: the job pool is
    exhausted, the run is unstable or its bound too small) is left in counts[C_STATUS].

    ``arrival_law`` and ``size_law`` are (code, a, b, c) of :func:`.laws.draw`, the first
    with each dispatcher's mean interarrival time. ``estimates``, ``probed`` and
    ``update_s``: the dispatchers' estimates, the push's scratch row and the updates' own
    stream (:mod:`.estimates`); the messages they send in the measured window (between
    arrivals ``warmup`` and ``jobs``) are counted in counts[C_MESSAGES]. A trace
    (:mod:`.trace`; ``trace_times`` not empty) replaces the arrival streams: one arrival
    leaf replays its times, job k going to dispatcher ``trace_owners[k]`` (k mod M without
    that column) with size ``trace_sizes[k]`` (drawn without that column). ``timer``: the
    leaf of the periodic broadcast of LED's estimates (−1 without one; it fires every
    floats[F_INTERVAL]). ``rule``: a user's rule (:mod:`.user_rules`, called for
    ``policy`` USER with ``rule_params`` and its dispatcher's row of ``rule_state``), or
    ``user_rules.NO_RULE``."""
    N = speeds.size
    width = when.size
    n_blocks = blocks.shape[1]
    measured = jobs - warmup
    a_code, a_a, a_b, a_c = np.int64(arrival_law[0]), arrival_law[1], arrival_law[2], arrival_law[3]
    x_code, x_a, x_b, x_c = np.int64(size_law[0]), size_law[1], size_law[2], size_law[3]
    track_idle = policy == JIQ or policy == LWL
    least_work = policy == LWL
    estimating = policy == L_JSQ or policy == L_POD
    tracing = trace_times.size > 0
    dispatchers = cursor.size  # (one round-robin cursor a dispatcher)
    empty_width = empty_at.size
    now = clock[K_NOW]
    for _ in range(budget):
        leaf = tree[1]
        event_time = when[leaf]
        arrivals = counts[C_ARRIVALS]
        # the number in system on [now, event_time), in the block of the last arrival
        opened = arrivals - 1
        if warmup <= opened < jobs:
            b = (opened - warmup) * n_blocks // measured
            span = event_time - now
            blocks[B_AREA, b] += counts[C_IN_SYSTEM] * span
            blocks[B_TIME, b] += span
        now = event_time
        counts[C_EVENTS] += 1
        if leaf == timer:  # every dispatcher learns every count
            sent = broadcast(estimates, si)
            if warmup <= arrivals - 1 < jobs:
                counts[C_MESSAGES] += sent
            when[leaf] = now + floats[F_INTERVAL]
            carry_up(when, tree, leaf, width)
        elif leaf >= N:  # an arrival at dispatcher m
            if tracing:
                m = trace_owners[arrivals] if trace_owners.size else arrivals % dispatchers
            else:
                m = leaf - N
            if free[0] == 0:
                counts[C_STATUS] = FULL
                clock[K_NOW] = now
                return
            job = free[free[0]]
            free[0] -= 1
            if trace_sizes.size:
                size = trace_sizes[arrivals]
            else:
                size = draw(size_s, x_code, x_a, x_b, x_c)
            jf[J_ARRIVAL, job] = now
            jf[J_SIZE, job] = size
            ji[J_INDEX, job] = arrivals
            counts[C_ARRIVALS] = arrivals + 1
            if policy == USER:
                n = rule(m, size, si[S_COUNT], speeds, rule_params, rule_state[m], policy_s)
                if n < 0 or n >= N:  # stop before indexing with it
                    counts[C_STATUS] = BAD_SERVER
                    counts[C_BAD_SERVER] = n
                    counts[C_BAD_DISPATCHER] = m
                    clock[K_NOW] = now
                    return
            else:
                n = choose(policy, m, size, si, speeds, ints, cumulative, cutoffs, cursor,
                           credit, idle, empty_tree, estimates, policy_s, sample)
            if warmup <= arrivals < jobs and si[S_COUNT, n] > 0:
                blocks[B_BUSY, (arrivals - warmup) * n_blocks // measured] += 1
            if track_idle and si[S_COUNT, n] == 0:  # n leaves the idle list
                last = idle[N] - 1
                position = idle[N + 1 + n]
                moved = idle[last]
                idle[position] = moved
                idle[N + 1 + moved] = position
                idle[N] = last
            when[n] = admit(discipline, sf, si, jf, ji, n, job, now, speeds[n])
            carry_up(when, tree, n, width)
            if least_work:  # only an arrival moves the time a server will have emptied
                empty_at[n] = now + sf[S_WORK, n] / speeds[n]
                carry_up(empty_at, empty_tree, n, empty_width)
            if estimating:
                sent = after_dispatch(estimates, m, n, si, ints, floats, update_s, probed)
                if warmup <= arrivals < jobs:
                    counts[C_MESSAGES] += sent
            in_system = counts[C_IN_SYSTEM] + 1
            counts[C_IN_SYSTEM] = in_system
            if in_system > counts[C_MAX_IN_SYSTEM]:
                counts[C_MAX_IN_SYSTEM] = in_system
            if tracing:
                following = arrivals + 1
                when[leaf] = trace_times[following] if following < trace_times.size else np.inf
            else:
                when[leaf] = now + draw(arrival_s, a_code, a_a, a_b, a_c)
            carry_up(when, tree, leaf, width)
        else:  # server leaf completes a job
            n = leaf
            job = complete(discipline, sf, si, jf, ji, n, now, speeds[n])
            when[n] = sf[S_NEXT, n]
            carry_up(when, tree, n, width)
            counts[C_IN_SYSTEM] -= 1
            free[0] += 1
            free[free[0]] = job
            if estimating:
                sent = after_departure(estimates, n, si, ints, floats, update_s)
                if warmup <= counts[C_ARRIVALS] - 1 < jobs:
                    counts[C_MESSAGES] += sent
            if track_idle and si[S_COUNT, n] == 0:  # n joins the idle list
                idle[idle[N]] = n
                idle[N + 1 + n] = idle[N]
                idle[N] += 1
            index = ji[J_INDEX, job]
            if warmup <= index < jobs:
                response = now - jf[J_ARRIVAL, job]
                b = (index - warmup) * n_blocks // measured
                blocks[B_RESPONSE, b] += response
                blocks[B_SLOWDOWN, b] += response * speeds[n] / jf[J_SIZE, job]
                blocks[B_JOBS, b] += 1
                histogram[(index - warmup) * histogram.shape[0] // measured,
                          histogram_bin(response)] += 1
                counts[C_MEASURED_DONE] += 1
                if counts[C_MEASURED_DONE] == measured:
                    counts[C_STATUS] = DONE
                    clock[K_NOW] = now
                    return
    clock[K_NOW] = now
