"""One run of the compiled slot loop, returning its raw accumulators."""

from __future__ import annotations

import math
import signal
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from dispatchlab.compiled import histogram
from dispatchlab.compiled.rng import (
    make_exogenous_stream,
    make_rng_state,
    make_service_stream,
    make_tag_stream,
)
from dispatchlab.core.errors import PolicyError, SimulationError
from dispatchlab.core.signals import interruption, stops_caught
from dispatchlab.engine import arrivals, fifo, layout, loop, observe, records, service, tags
from dispatchlab.engine.adapter import bounds_checked, is_policy_function, policy_adapter
from dispatchlab.engine.compile_helper import compile_alongside, describe, pieces_to_compile
from dispatchlab.engine.control import (
    ChunkSizer,
    RunInterrupted,
    current_progress,
)
from dispatchlab.engine.interface import MESSAGE_KINDS, Kernel, compiled, no_hook
from dispatchlab.model.service import SERVICE_BERNOULLI
from dispatchlab.model.system import System

BLOCKS = 1000
QUEUE_HISTOGRAM_BINS = 4096


@dataclass
class RawRun:
    """Raw accumulators of one run (see :mod:`dispatchlab.engine.layout` for the layouts)."""

    slots: int
    slots_run: int
    warmup: int
    block_length: int
    bound: int
    block_sum: np.ndarray
    block_pooled: np.ndarray
    block_queue_unused: np.ndarray  # Σ ΣQ(t+1)·ΣU(t) per block (the Eq. (7) term's blocks)
    queue_sum: np.ndarray
    delay_hist: np.ndarray
    queue_hist: np.ndarray  # distribution of ΣQ(t+1); the last bin is ≥ its index
    messages: np.ndarray  # measured window, by kind
    diag: np.ndarray
    counters: np.ndarray
    moments: np.ndarray
    final_queues: np.ndarray
    seconds: float
    hit_bound: bool = False  # stopped because ΣQ passed ``bound``
    initial_jobs: int = 0  # ΣQ(0)
    # what delay_hist holds: every measured job's delay (``all``), the tagged jobs' (each
    # measured job tagged with probability ``tag_probability``), or nothing (``off``)
    delay: str = "all"
    tag_probability: float = 0.0
    imbalance: bool = True  # whether the queue imbalance was measured (else its sums are 0)
    # on request (run_once's server_bins and trajectory_every): each server's jobs served
    # and histogram of Q_n(t+1) over the measured slots, and the trajectory rows (t, ΣQ(t),
    # q(t), Q_n(t) of trajectory_servers) at t = 0, k, 2k, …; empty when not asked for
    served: np.ndarray = field(default_factory=lambda: np.zeros(0, np.int64))
    server_hist: np.ndarray = field(default_factory=lambda: np.zeros((0, 1), np.int64))
    trajectory: np.ndarray = field(
        default_factory=lambda: np.zeros((0, observe.POINT_SERVERS), np.int64))
    trajectory_servers: np.ndarray = field(default_factory=lambda: np.zeros(0, np.int64))

    @property
    def measured_slots(self) -> int:
        return int(self.counters[layout.MEASURED_SLOTS])

    @property
    def mean_total_queue(self) -> float:
        """The mean of ΣQ(t+1) over the measured slots (0 when none was)."""
        return float(self.moments[layout.SUM_TOTAL_QUEUE] / max(self.measured_slots, 1))

    @property
    def mean_excess(self) -> float:
        """The mean of X(t+1) = ΣQ(t+1) − q(t+1) over the measured slots (0 when none was)."""
        moments = self.moments
        return float((moments[layout.SUM_TOTAL_QUEUE] - moments[layout.SUM_POOLED])
                     / max(self.measured_slots, 1))

    def excess_block_means(self) -> np.ndarray:
        """Mean X = ΣQ − q of each complete block run, q the pooled queue on the same draws."""
        complete = self.slots_run // self.block_length
        return (self.block_sum[:complete] - self.block_pooled[:complete]) / self.block_length

    def queue_unused_block_means(self) -> np.ndarray:
        """Mean ΣQ(t+1)·ΣU(t) of each complete block run ([JBT] Eq. (7)'s term)."""
        complete = self.slots_run // self.block_length
        return self.block_queue_unused[:complete] / self.block_length

    def block_means(self) -> np.ndarray:
        """Mean ΣQ of each complete block run (the last block may be partial and is dropped)."""
        complete = self.slots_run // self.block_length
        return self.block_sum[:complete] / self.block_length


@dataclass(frozen=True)
class Totals:
    """The loop's counters and moments summed over runs, by name (see the ``counters`` and
    ``moments`` layouts of :mod:`dispatchlab.engine.layout`). Counts are over the measured
    window unless they say otherwise; the sums are NaN when no slot was measured."""

    arrivals: int  # every slot
    arrivals_measured: int
    departures: int  # every slot
    dispatch_events: int  # every slot
    dispatch_events_measured: int
    herding_slots: int  # slots in which two dispatchers chose one server
    jobs_queued: int  # measured jobs placed behind another job (layout.JOBS_QUEUED)
    invariant_violations: int  # slots with ΣQ < q, every slot
    measured_slots: int
    sum_total_queue: float  # Σ ΣQ(t+1)
    sum_total_queue_sq: float  # Σ ΣQ(t+1)²
    sum_pooled: float  # Σ q(t+1), the pooled queue
    sum_queue_unused: float  # Σ ΣQ(t+1)·ΣU(t)
    sum_imbalance_l1: float  # Σ_t Σ_n |Q_n − ΣQ/N|
    sum_imbalance_l2: float  # Σ_t ‖Q − ΣQ/N‖₂
    sum_delay: float  # Σ of the measured jobs' delays
    sum_unused: float  # Σ ΣU(t)
    sum_unused_sq: float  # Σ ΣU(t)²
    sum_pooled_unused_sq: float  # Σ ū(t)², ū the pooled queue's unused service

    @classmethod
    def of(cls, runs: list[RawRun]) -> Totals:
        counters = sum(run.counters for run in runs)
        moments = sum(run.moments for run in runs)
        if counters[layout.MEASURED_SLOTS] == 0:  # stopped before the warm-up ended
            moments = moments * math.nan
        return cls(
            arrivals=int(counters[layout.ARRIVALS]),
            arrivals_measured=int(counters[layout.ARRIVALS_MEASURED]),
            departures=int(counters[layout.DEPARTURES]),
            dispatch_events=int(counters[layout.DISPATCH_EVENTS]),
            dispatch_events_measured=int(counters[layout.DISPATCH_EVENTS_MEASURED]),
            herding_slots=int(counters[layout.HERDING_SLOTS]),
            jobs_queued=int(counters[layout.JOBS_QUEUED]),
            invariant_violations=int(counters[layout.INVARIANT_VIOLATIONS]),
            measured_slots=int(counters[layout.MEASURED_SLOTS]),
            sum_total_queue=float(moments[layout.SUM_TOTAL_QUEUE]),
            sum_total_queue_sq=float(moments[layout.SUM_TOTAL_QUEUE_SQ]),
            sum_pooled=float(moments[layout.SUM_POOLED]),
            sum_queue_unused=float(moments[layout.SUM_QU]),
            sum_imbalance_l1=float(moments[layout.SUM_DQI1]),
            sum_imbalance_l2=float(moments[layout.SUM_DQI2]),
            sum_delay=float(moments[layout.SUM_DELAY]),
            sum_unused=float(moments[layout.SUM_UNUSED]),
            sum_unused_sq=float(moments[layout.SUM_UNUSED_SQ]),
            sum_pooled_unused_sq=float(moments[layout.SUM_POOLED_UNUSED_SQ]),
        )


def default_bound(system: System) -> int:
    """ΣQ above which a run is declared unstable: far above any stable mean we can simulate."""
    return int(min(2**40, max(10**6, 10**4 * system.n_servers)))


#: the fewest rows of a run's tag table (it doubles when more than half full)
TAG_ROWS = 1024


def tag_rows(system: System, tag_probability: float) -> int:
    """The initial rows of the tag table: room for the tags of 8·(p·λ_Σ + 64) slots' mean
    arrivals at half full, so that one slot fills the free half with a negligible
    chance (the loop stops a chunk and the table doubles once it is half full)."""
    per_slot = tag_probability * float(system.arrival_rate)
    return int(max(TAG_ROWS, 16 * (per_slot + 64 + 8 * math.sqrt(per_slot))))


def loop_steps(system: System, time_every_job: bool = False) -> tuple[Any, Any]:
    """The slot loop's service and arrival steps for ``system`` (not yet compiled): the
    other laws' service step, the Bernoulli one timing every job (``time_every_job``:
    ``delay="all"``) or the Bernoulli stub, and ``arrivals.arrival_step``'s."""
    if system.service.code != SERVICE_BERNOULLI:
        serve = service.serve_other_law
    else:
        serve = service.bernoulli_fifo if time_every_job else service.bernoulli_only
    return serve, arrivals.arrival_step(system.arrivals.code, system.dispatchers,
                                        system.split == "batch")


def needs_ptrs(system: System) -> bool:
    """Whether runs of ``system`` draw split-Poisson arrivals with a PTRS row (some
    λ_m ≥ arrivals.POISSON_TABLE_LIMIT), the loop's
    :data:`~dispatchlab.engine.arrivals.ptrs_draw`."""
    if arrivals.needs_other_arrivals(system.arrivals.code, system.dispatchers,
                                     system.split == "batch"):
        return False
    offsets, _ = arrivals.poisson_tables(float(system.arrival_rate) * system.weights)
    return arrivals.has_ptrs_rows(offsets)


def on_demand_functions(state: records.LoopState, observed: records.LoopObservation,
                        tags_per_job: bool) -> tuple[Any, Any, Any]:
    """The loop's observation step, the PTRS draw of its split-Poisson arrivals and the
    tagging of per-job placements for a run: the lazily compiled function when the run
    takes it, else the absent step (nothing to compile: a cold first run that neither
    observes, nor has a dispatcher at λ_m ≥ arrivals.POISSON_TABLE_LIMIT, nor tags in
    per-job dispatch compiles none of them). ``tags_per_job``: the run tags delays in
    per-job dispatch."""
    return (observe.observe_step if records.observes(observed) else observe.NO_OBSERVE,
            (arrivals.ptrs_draw if arrivals.has_ptrs_rows(state.poisson_offsets)
             else arrivals.NO_PTRS),
            tags.tag_one_step if tags_per_job else tags.NO_TAG_ONE)


def loop_laws(system: System, trace: np.ndarray) -> records.LoopLaws:
    """The model as the slot loop reads it; ``trace``: the arrival trace as int64 (else one 0)."""
    return records.LoopLaws(system.mu, system.service.code, system.service.trials,
                            system.arrivals.code, float(system.arrival_rate),
                            system.arrivals.trials, trace, system.weights,
                            system.split == "batch", system.dispatch == "per_job")


def observation(queues: np.ndarray, slots: int, bins: int, every: int,
                servers: Sequence[int]) -> records.LoopObservation:
    """The loop's :class:`~dispatchlab.engine.records.LoopObservation` of a run from
    ``queues`` = Q(0): per-server counts with a ``bins``-bin histogram (0: none);
    a trajectory point every ``every`` slots (0: none), Q_n(t) of ``servers`` in it, its
    first row (t = 0, q(0) = ΣQ(0)) written here."""
    per_server = bins > 0
    if not per_server and every == 0:
        return records.no_observation()
    n = queues.size
    servers = np.asarray(servers, np.int64).reshape(-1)
    points = slots // every + 1 if every else 0
    trajectory = np.zeros((points, observe.POINT_SERVERS + servers.size), np.int64)
    cursor = np.array([every if every else observe.NO_POINT, 0], np.int64)
    if every:
        total = queues.sum()
        trajectory[0, :observe.POINT_SERVERS] = (0, total, total)
        trajectory[0, observe.POINT_SERVERS:] = queues[servers]
        cursor[observe.CURSOR_POINTS] = 1
    return records.LoopObservation(
        per_server, every, servers, np.zeros(n if per_server else 0, np.int64),
        np.zeros((n, bins) if per_server else (0, 1), np.int64), trajectory, cursor)


def _raised(error: Exception, first: int, stop: int) -> str:
    """What a user's policy raised in slots ``first`` … ``stop`` − 1, in one line."""
    where = f"{type(error).__name__} ({error}) in slots {first:,} … {stop - 1:,}"
    if isinstance(error, IndexError):
        return where + (": it reads or writes outside its arrays (a user policy runs with "
                        "bounds checking)")
    return where


def run_once(system: System, kernel: Kernel, *, slots: int, warmup: int,
             seed: int | np.random.SeedSequence, bound: int, time_every_job: bool = True,
             imbalance: bool = True, initial_queues: np.ndarray | None = None,
             policy: str = "policy", chunk: int | None = None,
             tag_probability: float = 0.0, server_bins: int = 0,
             trajectory_every: int = 0, trajectory_servers: Sequence[int] = ()) -> RawRun:
    """Run the slot loop once, in chunks (see :mod:`dispatchlab.engine.control`), and
    return its raw accumulators.

    Raises :class:`~dispatchlab.core.errors.PolicyError` when ``choose`` returns no valid
    server, :class:`~dispatchlab.core.errors.SimulationError` when the final state breaks an
    invariant (:func:`check_invariants`), and
    :class:`~dispatchlab.engine.control.RunInterrupted` on Ctrl-C (between two chunks).
    ``policy`` names the policy in these messages. ``chunk`` fixes the slots per chunk
    (default: sized to about CHUNK_SECONDS each); the results never depend on it.
    ``tag_probability`` p > 0 (with ``time_every_job`` off): the delay histogram holds the
    delays of tagged jobs, each measured job tagged with probability p from a stream of
    its own (docs/statistics.md#tagged-delays), and no other draw changes.
    ``server_bins`` > 0 (per-server statistics with a histogram of that many bins of each
    Q_n) and
    ``trajectory_every`` k > 0 (with Q_n(t) of ``trajectory_servers``) observe the run
    (:func:`observation`; docs/statistics.md#per-server) and change no draw either."""
    tagged = tag_probability > 0.0
    if tagged and time_every_job:
        raise ValueError("tagged jobs replace the FIFO tracking of every job: not both")
    n = system.n_servers
    block_length = max(1, -(-slots // BLOCKS))
    blocks = -(-slots // block_length)
    queues = (np.zeros(n, np.int64) if initial_queues is None
              else np.ascontiguousarray(initial_queues, dtype=np.int64).copy())
    initial_total = int(queues.sum())
    trace = (system.arrivals.trace if system.arrivals.trace is not None
             else np.zeros(1, np.int64)).astype(np.int64)
    out = RawRun(
        slots=slots, slots_run=0, warmup=warmup, block_length=block_length, bound=bound,
        block_sum=np.zeros(blocks), block_pooled=np.zeros(blocks),
        block_queue_unused=np.zeros(blocks),
        queue_sum=np.zeros(n, np.int64),
        delay_hist=np.zeros(histogram.DELAY_BINS, np.int64),
        queue_hist=np.zeros(QUEUE_HISTOGRAM_BINS, np.int64),
        messages=np.zeros(len(MESSAGE_KINDS), np.int64),
        diag=np.zeros(max(1, kernel.n_diagnostics)), counters=np.zeros(layout.N_COUNTERS, np.int64),
        moments=np.zeros(layout.N_MOMENTS), final_queues=queues, seconds=0.0,
        initial_jobs=initial_total,
        delay="tagged" if tagged else "all" if time_every_job else "off",
        tag_probability=float(tag_probability), imbalance=bool(imbalance),
    )
    rng = make_rng_state(seed)
    service_stream = make_service_stream(seed)
    serve_step, arrival_step = loop_steps(system, time_every_job)
    state = records.init_loop_state(queues, rng, service_stream, system.mu, time_every_job,
                                 float(system.arrival_rate), system.weights,
                                 arrival_step is arrivals.split_poisson_only,
                                 make_exogenous_stream(seed), make_tag_stream(seed),
                                 tag_rows(system, tag_probability) if tagged else 1)
    carry = state.carry
    if tagged:
        carry[layout.CARRY_TAG_SKIP] = layout.TAG_START
    laws = loop_laws(system, trace)
    memory = records.LoopPolicy(kernel.begin_slot is not no_hook, kernel.end_slot is not no_hook,
                             *kernel.memory())
    control = records.LoopControl(slots, warmup, block_length, bound, time_every_job, imbalance,
                               float(tag_probability))
    accumulators = records.LoopAccumulators(
        out.queue_sum, out.block_sum, out.block_pooled, out.block_queue_unused, out.delay_hist,
        out.queue_hist, out.messages, np.zeros_like(out.messages), out.diag, out.counters,
        out.moments)
    observed = observation(queues, slots, server_bins, trajectory_every, trajectory_servers)
    per_job = system.dispatch == "per_job"
    sizer = ChunkSizer()
    progress = current_progress()
    # a user's policy function may raise inside the loop (bounds checking, its own raise):
    # a PolicyError then; a built-in one's error is a bug and goes up as it is
    checked = any(bounds_checked(f) for f in (kernel.choose, kernel.begin_slot, kernel.end_slot)
                  if is_policy_function(f) and f is not no_hook)
    if progress is not None:
        progress.start_run()
    on_demand = on_demand_functions(state, observed, per_job and control.tag_probability > 0)
    # in the order compiled below (a helper process compiles them from the end)
    cold = pieces_to_compile((loop.run_slots, kernel.choose, kernel.begin_slot,
                              kernel.end_slot, serve_step, arrival_step, *on_demand))
    if cold and progress is not None:
        progress.compiling(describe(cold))
    with compile_alongside(cold):
        run_slots = compiled(loop.run_slots, only=True)
        choose = policy_adapter(kernel.choose)
        begin_slot, end_slot = policy_adapter(kernel.begin_slot), policy_adapter(kernel.end_slot)
        serve_other, other_arrivals = compiled(serve_step), compiled(arrival_step)
        observe_step, ptrs, tag_one = (compiled(function) for function in on_demand)
    start = time.perf_counter()
    t = 0
    with stops_caught() as stopped:
        while t < slots:
            chunk_start = time.perf_counter()
            t_before = t
            t_stop = min(slots, t + (chunk or sizer.size))
            try:
                t = int(run_slots(laws, memory, control, accumulators, state, serve_other,
                                  other_arrivals, choose, begin_slot, end_slot, t, t_stop,
                                  observed, observe_step, ptrs, tag_one))
            except Exception as error:
                if not checked:
                    raise
                raise PolicyError(policy, _raised(error, t_before, t_stop)) from None
            sizer.record(t - t_before, time.perf_counter() - chunk_start)
            status = carry[layout.CARRY_STATUS]
            if status == layout.STATUS_BAD_TARGET:
                raise PolicyError(policy, (
                    f"choose returned server {int(carry[layout.CARRY_BAD_TARGET])}, not in "
                    f"0 … N − 1 = {n - 1} (dispatcher {int(carry[layout.CARRY_BAD_DISPATCHER])}"
                    f", slot {int(carry[layout.CARRY_BAD_SLOT])})"))
            if status == layout.STATUS_HIT_BOUND:
                out.hit_bound = True
                break
            if carry[layout.CARRY_FIFO_FULL]:
                state = state._replace(pool=fifo.grow_pool(state.pool, state.pool_free))
                carry[layout.CARRY_FIFO_FULL] = 0
            if carry[layout.CARRY_TAGS_FULL]:
                state = state._replace(tags=tags.grow_tags(state.tags, carry))
                carry[layout.CARRY_TAGS_FULL] = 0
            signum = stopped()
            if signum == signal.SIGINT:
                raise RunInterrupted(t, slots, policy)
            if signum:
                raise interruption(signum, f"at slot {t:,} of {slots:,} ({policy})")
            if progress is not None:
                progress.update(t, slots)
    out.seconds = time.perf_counter() - start
    out.slots_run = t
    if progress is not None:
        progress.finish_run(slots)
    out.messages -= accumulators.msg_at_warmup
    out.served, out.server_hist = observed.served, observed.server_hist
    out.trajectory = observed.trajectory[:observed.cursor[observe.CURSOR_POINTS]]
    out.trajectory_servers = observed.servers
    if out.counters[layout.TAGS_DROPPED]:  # a slot tagged more than half the table
        raise SimulationError(f"the run of policy {policy} tagged more jobs in one slot than "
                              f"its tag table holds ({int(out.counters[layout.TAGS_DROPPED])} "
                              "not followed); run it with delay='all'")
    check_invariants(out, initial_total, policy)
    return out


def check_invariants(run: RawRun, initial_total: int, policy: str) -> None:
    """Raise :class:`SimulationError` unless the run's final state is possible.

    Jobs are conserved (arrived = departed + in system − initially there), no queue is
    negative, and ΣQ(t) ≥ q(t), the pooled queue on the same draws, held in every slot
    (docs/model.md#queue-dynamics). A policy that writes into ``slot.Q`` can break them."""
    arrived = int(run.counters[layout.ARRIVALS])
    departed = int(run.counters[layout.DEPARTURES])
    in_system = int(run.final_queues.sum())
    problems = []
    if arrived != departed + in_system - initial_total:
        problems.append(f"jobs not conserved: {arrived} arrived, {departed} departed, "
                        f"{in_system - initial_total} more in the system than at the start")
    if run.final_queues.size and run.final_queues.min() < 0:
        problems.append(f"negative queue Q_{int(run.final_queues.argmin())} = "
                        f"{int(run.final_queues.min())}")
    violations = int(run.counters[layout.INVARIANT_VIOLATIONS])
    if violations:
        problems.append(f"ΣQ < q (the pooled queue) in {violations} slots")
    if problems:
        raise SimulationError(f"the run of policy {policy} broke an invariant: "
                              f"{'; '.join(problems)} (a policy that writes into slot.Q, "
                              "or a bug in the engine)")
