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
between chunks (``records.init_loop_state``, set up in NumPy: only the loop and what a run
uses are compiled — the steps for laws and splits other than Bernoulli service and
split-Poisson arrivals come as first-class functions), so the Python driver
(:mod:`dispatchlab.engine.raw`) can check for Ctrl-C and report progress between chunks; a
run cut into chunks is bit-identical to the same run in one chunk. Every server index a
policy's ``choose`` returns is checked (0 ≤ target < N): a bad one stops the chunk before
it is used, with ``STATUS_BAD_TARGET`` and the offending value, slot and dispatcher in
``carry``.

The loop's parts, one job each: :mod:`.arrivals` (step 2's draws), :mod:`.service` (step
4), :mod:`.fifo` (every job timed), :mod:`.tags` (a sample of jobs timed), :mod:`.observe`
(imbalance, per-server statistics, trajectories), :mod:`.records` (what the loop takes) and
:mod:`.layout` (where it keeps its counts).
"""

from __future__ import annotations

import math

import numpy as np
from numba import njit, types
from numba.core import cgutils
from numba.extending import intrinsic

from dispatchlab.compiled.signature_types import BOOL, F64_VEC, I64, I64_MAT, I64_VEC, U64_VEC
from dispatchlab.engine.adapter import (
    ADAPTER_TYPE,
    EVERY_DISPATCHER,
    HOOK_ADAPTER_TYPE,
    pack_arrays,
)
from dispatchlab.engine.arrivals import ARRIVALS_TYPE, PTRS_TYPE, _draw_split_poisson
from dispatchlab.engine.fifo import FREE_COUNT
from dispatchlab.engine.interface import lazy_function
from dispatchlab.engine.layout import (
    ARRIVALS,
    ARRIVALS_MEASURED,
    CARRY_BAD_DISPATCHER,
    CARRY_BAD_SLOT,
    CARRY_BAD_TARGET,
    CARRY_FIFO_FULL,
    CARRY_POOLED,
    CARRY_STATUS,
    CARRY_TAG_COUNT,
    CARRY_TAGS_FULL,
    DEPARTURES,
    DISPATCH_EVENTS,
    DISPATCH_EVENTS_MEASURED,
    HERDING_SLOTS,
    INVARIANT_VIOLATIONS,
    JOBS_FOUND_BUSY,
    JOBS_QUEUED,
    MAX_TOTAL_QUEUE,
    MEASURED_SLOTS,
    STATUS_BAD_TARGET,
    STATUS_HIT_BOUND,
    STATUS_RUNNING,
    SUM_DQI1,
    SUM_DQI2,
    SUM_POOLED,
    SUM_POOLED_UNUSED_SQ,
    SUM_QU,
    SUM_TOTAL_QUEUE,
    SUM_TOTAL_QUEUE_SQ,
    SUM_UNUSED,
    SUM_UNUSED_SQ,
    TARGET_BUFFER,
    WORK_ARRIVALS,
    WORK_LAST_CHOOSER,
    WORK_LAST_SLOT,
    WORK_Q_PREV,
    WORK_SERVICE,
)
from dispatchlab.engine.observe import OBSERVE_TYPE, _imbalance
from dispatchlab.engine.records import (
    LOOP_ACCUMULATORS_TYPE,
    LOOP_CONTROL_TYPE,
    LOOP_LAWS_TYPE,
    LOOP_OBSERVATION_TYPE,
    LOOP_POLICY_TYPE,
    LOOP_STATE_TYPE,
)
from dispatchlab.engine.service import SERVE_TYPE, _serve_bernoulli
from dispatchlab.engine.tags import (
    ARRIVED_ON,
    TAG_ONE_TYPE,
    _follow_tags,
    _tag_one_job,
    _tag_placement,
)
from dispatchlab.model.service import SERVICE_BERNOULLI, SERVICE_BINOMIAL


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


def _run_slots(laws, policy, control, acc, state, serve_other, draw_other_arrivals, choose,
               begin_slot, end_slot, t_start, t_stop, observation, observe_step, ptrs,
               tag_one):
    """Run slots [``t_start``, ``t_stop``) of a ``control.slots``-slot run from the state
    left by the previous chunk (or ``records.init_loop_state``). Returns the next slot to
    run; it is below ``t_stop`` when the chunk stopped early: ``carry[CARRY_STATUS]`` says
    why (the bound or a bad target; the slot of a bad target is returned, left half done),
    or ``carry[CARRY_FIFO_FULL]`` is set and the caller grows the FIFO pool
    (``fifo.grow_pool``) before the next call.

    ``laws``, ``policy``, ``control``, ``acc``, ``state`` and ``observation`` are the named
    records of :mod:`dispatchlab.engine.records`; ``serve_other`` and
    ``draw_other_arrivals`` the steps of the laws the loop does not draw itself
    (:mod:`.service`, :mod:`.arrivals`); ``choose`` and the hooks the policy's adapters
    (:mod:`.adapter`); ``observe_step`` (:mod:`.observe`, called when ``records.observes``),
    ``ptrs`` (``arrivals.ptrs_draw``, the PTRS rows of split-Poisson arrivals) and
    ``tag_one`` (``tags.tag_one_step``, a tagged per-job run's tagging) the steps that
    compile only for the runs that take them (``NO_OBSERVE``, ``NO_PTRS``, ``NO_TAG_ONE``
    for the others)."""
    # every array is used borrowed (see _borrowed): the originals live in the caller. (One
    # function, not a wrapper that borrows and calls the loop: that compiled ~0.7 s longer.)
    mu, trace = _borrowed(laws.mu), _borrowed(laws.trace)
    dispatcher_p = _borrowed(laws.dispatcher_p)
    service_code, service_trials = laws.service_code, laws.service_trials
    arrival_code, arrival_rate = laws.arrival_code, laws.arrival_rate
    arrival_trials, batch_split, per_job = laws.arrival_trials, laws.batch_split, laws.per_job
    has_begin, has_end = policy.has_begin, policy.has_end
    int_params, float_params = _borrowed(policy.int_params), _borrowed(policy.float_params)
    int_state, float_state = _borrowed(policy.int_state), _borrowed(policy.float_state)
    slots, warmup, block_length = control.slots, control.warmup, control.block_length
    bound, time_every_job, imbalance = control.bound, control.time_every_job, control.imbalance
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
    A = work[WORK_ARRIVALS]
    Q_prev = work[WORK_Q_PREV]
    last_slot_chosen = work[WORK_LAST_SLOT]
    last_chooser = work[WORK_LAST_CHOOSER]
    S = work[WORK_SERVICE]
    arrived_on = work[ARRIVED_ON]
    # the most jobs a server serves in one slot (0: no bound), for the tags' wake-up slots
    max_served = (1 if service_code == SERVICE_BERNOULLI
                  else service_trials if service_code == SERVICE_BINOMIAL else 0)
    pooled = carry[CARRY_POOLED]
    # choose is the policy's adapter (engine.adapter): it reads the arrays from here
    packed = pack_arrays((Q, mu, int_params, float_params, int_state, float_state, rng, msg,
                          A_m, targets))
    # and the hooks' adapters theirs: in begin_slot Q_prev is Q(t) itself; in end_slot Q is
    # Q(t+1) and Q_prev Q(t)
    begin_packed = pack_arrays((Q, mu, int_params, float_params, int_state, float_state, rng,
                                msg, Q, A, A_m, diag))
    end_packed = pack_arrays((Q, mu, int_params, float_params, int_state, float_state, rng,
                              msg, Q_prev, A, A_m, diag))
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
        queued = 0
        found_busy = 0
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
                        _tag_one_job(tag_one, target, Q, A, arrived_on, t, max_served,
                                     tag_probability, tags, wheel, carry, tag_stream,
                                     counters)
                    queued += (Q[target] + A[target]) > 0
                    found_busy += Q[target] > 0
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
                    _tag_placement(target, jobs, Q, A, arrived_on, t, max_served,
                                   tag_probability, tags, wheel, carry, tag_stream, counters)
                # herding: one placement per dispatcher, so a server that already has jobs
                # of slot t has them from another dispatcher
                herded |= A[target] != 0
                # the batch's first job waits only behind others; the rest behind it
                queued += jobs - ((Q[target] + A[target]) == 0)
                found_busy += jobs * (Q[target] > 0)
                A[target] += jobs
                events += 1
        counters[DISPATCH_EVENTS] += events
        counters[ARRIVALS] += total
        if record:
            counters[DISPATCH_EVENTS_MEASURED] += events
            counters[ARRIVALS_MEASURED] += total
            counters[JOBS_QUEUED] += queued
            counters[JOBS_FOUND_BUSY] += found_busy
            if herded:
                counters[HERDING_SLOTS] += 1

        # service, unused service and FIFO departures
        if service_code == SERVICE_BERNOULLI and not time_every_job:
            total_queue, total_service, departures = _serve_bernoulli(
                Q, A, Q_prev, thresholds, service_stream, record, queue_sum, S)
        else:  # another law, or Bernoulli timing every job (loop_steps in engine.raw)
            total_queue, total_service, departures = serve_other(
                Q, A, Q_prev, mu, service_code, service_trials, exogenous, record, queue_sum,
                time_every_job, t, warmup, pool, tails, pool_free, delay_hist, moments,
                thresholds, service_stream, S)
        total_unused = total_service - departures
        counters[DEPARTURES] += departures
        if wheel[t & (wheel.size - 1)] >= 0:  # tags to look at in slot t
            _follow_tags(Q, arrived_on, t, max_served, tags, wheel, carry, delay_hist, moments)
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
            if imbalance:
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
        if time_every_job and pool_free[FREE_COUNT] < N:  # the next slot may need N nodes
            carry[CARRY_POOLED] = pooled
            carry[CARRY_FIFO_FULL] = 1
            return t + 1
        if 2 * carry[CARRY_TAG_COUNT] > tags.shape[0]:  # the next slot may tag as many
            carry[CARRY_POOLED] = pooled
            carry[CARRY_TAGS_FULL] = 1
            return t + 1
    carry[CARRY_POOLED] = pooled
    return t_stop


#: next slot to run
LOOP_SIGNATURE = I64(
    LOOP_LAWS_TYPE, LOOP_POLICY_TYPE, LOOP_CONTROL_TYPE, LOOP_ACCUMULATORS_TYPE,
    LOOP_STATE_TYPE, SERVE_TYPE, ARRIVALS_TYPE, ADAPTER_TYPE, HOOK_ADAPTER_TYPE,
    HOOK_ADAPTER_TYPE, I64, I64, LOOP_OBSERVATION_TYPE, OBSERVE_TYPE, PTRS_TYPE,
    TAG_ONE_TYPE,
)


#: one chunk of the slot loop, compiled once for every policy with :data:`LOOP_SIGNATURE`
#: on first use (``interface.compiled(run_slots, only=True)``); without reference counting,
#: as it allocates nothing (every array borrowed): its cold compile, on the path of every
#: cold run, took 10 % less (2.9 → 2.6 s, five paired runs on AMD EPYC), same speed
run_slots = lazy_function(_run_slots, LOOP_SIGNATURE, allocates=False, first_class=False)

#: the compiled functions the loop calls rather than inlines, by name in this module, with
#: the argument types it passes. The loop compiles a callee when its type inference meets
#: the call, one after the other on one core; a cold run's compile helper compiles these
#: first (engine.compile_helper), so that the loop finds them in the cache (measured on AMD
#: EPYC: they cost the loop ~1 s alone, ~0.6 s of waiting for the helper, which starts
#: late; a cold classical run 4.9 → 4.7 s)
CALLEES: dict[str, tuple[object, ...]] = {
    "_serve_bernoulli": (I64_VEC, I64_VEC, I64_VEC, U64_VEC, U64_VEC, BOOL, I64_VEC, I64_VEC),
    "_follow_tags": (I64_VEC, I64_VEC, I64, I64, I64_MAT, I64_VEC, I64_VEC, I64_VEC, F64_VEC),
    "_imbalance": (I64_VEC, I64),
}
