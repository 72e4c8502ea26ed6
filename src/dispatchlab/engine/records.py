"""The records the slot loop takes (named tuples: numba compiles a field access to a plain
load), each built with its compiled type from one list of (field, numba type), so that the
two cannot fall out of order; and the NumPy set-up of a run's :class:`LoopState`."""

from __future__ import annotations

from typing import NamedTuple

import numpy as np
from numba import types

from dispatchlab.compiled.rng import bernoulli_thresholds
from dispatchlab.compiled.signature_types import (
    BOOL,
    F64,
    F64_MAT,
    F64_VEC,
    I64,
    I64_MAT,
    I64_VEC,
    U64_VEC,
)
from dispatchlab.engine.arrivals import poisson_tables
from dispatchlab.engine.fifo import NIL_LINK, new_pool
from dispatchlab.engine.layout import (
    CARRY_POOLED,
    CARRY_TAG_FREE,
    CARRY_TAG_SKIP,
    N_CARRY,
    NO_TAGS,
    TARGET_BUFFER,
    WORK_LAST_SLOT,
)
from dispatchlab.engine.observe import NO_POINT, POINT_SERVERS
from dispatchlab.engine.tags import ARRIVED_ON, new_tags

_PYTHON_TYPES = {types.Array: np.ndarray, types.Boolean: bool, types.Integer: int,
                 types.Float: float}


def _record(name: str, doc: str, fields: list[tuple[str, types.Type]]
            ) -> tuple[type, types.NamedTuple]:
    """The named tuple ``name`` with ``fields`` in their order, and its numba type."""
    annotations = [(field, _PYTHON_TYPES[type(kind)]) for field, kind in fields]
    record = NamedTuple(name, annotations)  # type: ignore[misc]
    record.__doc__ = doc
    return record, types.NamedTuple([kind for _, kind in fields], record)


LoopLaws, LOOP_LAWS_TYPE = _record(
    "LoopLaws",
    """The model as the slot loop reads it (one record, built once a run by
    :func:`dispatchlab.engine.raw.loop_laws`).""",
    [
        ("mu", F64_VEC),  # μ_n, the mean service of each server
        ("service_code", I64),  # the law of S_n(t) (model.service.SERVICE_CODES)
        ("service_trials", I64),  # K of a binomial service law
        ("arrival_code", I64),  # the law of A_Σ(t) (model.arrivals.ARRIVAL_CODES)
        ("arrival_rate", F64),  # λ_Σ
        ("arrival_trials", I64),  # K of binomial arrivals
        ("trace", I64_VEC),  # the per-slot counts of a trace, replayed cyclically (else one 0)
        ("dispatcher_p", F64_VEC),  # p_m, each dispatcher's share of the arrivals
        ("batch_split", BOOL),  # all of a slot's arrivals to one dispatcher (else job by job)
        ("per_job", BOOL),  # ``choose`` once per job (else once per dispatcher and slot)
    ])

LoopPolicy, LOOP_POLICY_TYPE = _record(
    "LoopPolicy",
    """The policy's side of the loop besides its compiled functions: which hooks it has,
    and its :class:`~dispatchlab.engine.interface.Memory` arrays.""",
    [("has_begin", BOOL), ("has_end", BOOL), ("int_params", I64_VEC),
     ("float_params", F64_VEC), ("int_state", I64_MAT), ("float_state", F64_MAT)])

LoopControl, LOOP_CONTROL_TYPE = _record(
    "LoopControl",
    """What one run asks of the loop.""",
    [
        ("slots", I64),  # the run's length (a chunk runs part of it)
        ("warmup", I64),  # statistics from this slot on
        ("block_length", I64),  # slots per block of the block sums (batch means, the trend)
        ("bound", I64),  # ΣQ above which the run stops, unstable
        ("time_every_job", BOOL),  # time every job through its FIFO
        ("imbalance", BOOL),  # measure the queue imbalance every slot
        ("tag_probability", F64),  # p, each measured job's chance to be tagged (0: none)
    ])

LoopAccumulators, LOOP_ACCUMULATORS_TYPE = _record(
    "LoopAccumulators",
    """The run's statistics, which the loop adds to (the layouts of ``counters`` and
    ``moments``: :mod:`dispatchlab.engine.layout`).""",
    [
        ("queue_sum", I64_VEC),  # Σ_t Q_n(t+1), measured slots
        ("block_sum", F64_VEC),  # Σ ΣQ(t+1) per block, every slot
        ("block_pooled", F64_VEC),  # Σ q(t+1) per block, every slot
        ("block_queue_unused", F64_VEC),  # Σ ΣQ(t+1)·ΣU(t) per block, every slot
        ("delay_hist", I64_VEC),  # the delay histogram (compiled.histogram)
        ("queue_hist", I64_VEC),  # the distribution of ΣQ(t+1); the last bin is ≥ its index
        ("msg", I64_VEC),  # messages by kind, the whole run
        ("msg_at_warmup", I64_VEC),  # ``msg`` when slot ``warmup`` began
        ("diag", F64_VEC),  # the policy's diagnostics
        ("counters", I64_VEC),
        ("moments", F64_VEC),
    ])

LoopState, LOOP_STATE_TYPE = _record(
    "LoopState",
    """What :func:`dispatchlab.engine.loop.run_slots` carries from chunk to chunk, and the
    per-run tables it reads.""",
    [
        ("Q", I64_VEC),  # Q_n(t), the queues at the start of the next slot to run
        ("A_m", I64_VEC),  # A^m(t), the current slot's arrivals at each dispatcher
        # the servers the adapter chose: dispatcher m's at m (batch dispatch), or those of
        # one dispatcher's next jobs (per job); max(M, TARGET_BUFFER) entries
        ("targets", I64_VEC),
        ("rng", U64_VEC),  # the xoshiro256++ state of the policies' draws (the policy stream)
        ("service_stream", U64_VEC),  # the SplitMix64 state of Bernoulli service
        # the xoshiro256++ state of the arrivals and the other service laws
        # (compiled.rng.make_exogenous_stream): the same draws whatever the policy
        ("exogenous", U64_VEC),
        # the WORK_* rows (engine.layout) and a_n (tags.ARRIVED_ON)
        ("work", I64_MAT),
        ("carry", I64_VEC),  # CARRY_* entries (engine.layout)
        ("pool", I64_MAT),  # the FIFOs (fifo.new_pool); replaced by fifo.grow_pool
        ("tails", I64_VEC),
        ("pool_free", I64_VEC),
        ("thresholds", U64_VEC),  # ⌈μ_n·2⁵³⌉, Bernoulli service as an integer compare
        ("cumulative", F64_VEC),  # the cumulative sum of the dispatcher weights p_m
        # the per-dispatcher Poisson tables (arrivals.poisson_tables), or none (one offset)
        # when the run's arrivals are not split Poisson
        ("poisson_offsets", I64_VEC),
        ("poisson_table", F64_VEC),
        ("tags", I64_MAT),  # the tagged jobs followed, (server, mark, arrival slot, next) rows
        ("tag_wheel", I64_VEC),  # the first row of each slot's list of tags (tags.new_tags)
        ("tag_stream", U64_VEC),  # the xoshiro256++ state of the tags' draws (compiled.rng)
    ])

LoopObservation, LOOP_OBSERVATION_TYPE = _record(
    "LoopObservation",
    """What the loop observes on request besides its statistics: per-server statistics and
    a decimated trajectory (:func:`dispatchlab.engine.observe._observe`; both off, the loop
    tests one flag a slot).""",
    [
        ("per_server", BOOL),  # count each server's jobs served and Q_n(t+1) histogram
        ("every", I64),  # k: a trajectory point every k slots (0: none)
        ("servers", I64_VEC),  # the servers whose Q_n(t) the trajectory records
        ("served", I64_VEC),  # jobs served by each server in the measured slots
        ("server_hist", I64_MAT),  # (N, bins): measured slots with Q_n(t+1) = k, last bin ≥ k
        ("trajectory", I64_MAT),  # (points, POINT_SERVERS + servers) rows
        ("cursor", I64_VEC),  # the next point's slot (NO_POINT: none), the points recorded
    ])

def observes(observation: LoopObservation) -> bool:
    """Whether the loop calls its observation step for ``observation`` (as it decides)."""
    return bool(observation.per_server or observation.every > 0)


def no_observation() -> LoopObservation:
    """The :class:`LoopObservation` of a run that observes nothing."""
    return LoopObservation(False, 0, np.zeros(0, np.int64), np.zeros(0, np.int64),
                           np.zeros((0, 1), np.int64), np.zeros((0, POINT_SERVERS), np.int64),
                           np.array([NO_POINT, 0], np.int64))


def init_loop_state(Q: np.ndarray, rng: np.ndarray, service_stream: np.ndarray,
                    mu: np.ndarray, time_every_job: bool, arrival_rate: float,
                    dispatcher_p: np.ndarray, split_poisson: bool,
                    exogenous: np.ndarray | None = None, tag_stream: np.ndarray | None = None,
                    tag_rows: int = 1) -> LoopState:
    """The :class:`LoopState` of a run that starts from queues ``Q`` (NumPy, not compiled:
    it runs once a run, and compiling it cost a cold first run about a second). The
    Poisson tables only for ``split_poisson`` (the loop then draws the arrivals itself; see
    :func:`~dispatchlab.engine.arrivals.needs_other_arrivals`), else none. ``exogenous``:
    the exogenous stream (default: a copy of ``rng``'s state, for tests that build a state
    by hand); ``tag_stream`` and ``tag_rows``: the tags' stream (default: none is drawn
    from) and table rows."""
    N = Q.size
    work = np.zeros((ARRIVED_ON + 1, N), np.int64)
    work[WORK_LAST_SLOT] = -1
    carry = np.zeros(N_CARRY, np.int64)
    carry[CARRY_POOLED] = Q.sum()  # the pooled queue q(0) = ΣQ(0)
    if time_every_job:
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
