"""Validate the arguments of ``simulate`` into a :class:`Plan`: the replications to run
(a :class:`Replication` each worker can run) and, for a precision run, its :class:`Target`."""

from __future__ import annotations

import math
import sys
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from dispatchlab.core.errors import INTEGER_LIMIT, ValidationError, require
from dispatchlab.engine.interface import Kernel
from dispatchlab.engine.raw import RawRun, default_bound, run_once
from dispatchlab.model.size_limits import check_run_jobs
from dispatchlab.model.system import System
from dispatchlab.policies.base import Policy, make_policy

WARMUP_FRACTION = 0.1
WARMUP_METHODS = ("fraction", "mser5")
#: the headline estimator of E[ΣQ] (docs/statistics.md#coupled)
ESTIMATORS = ("coupled", "plain")
#: Q(0): empty, or the pooled queue's stationary law spread over the servers
STARTS = ("empty", "stationary")
#: the spawn key under a run's seed of the stream that draws a stationary start (no
#: replication index reaches it)
START_STREAM = 2**32 - 1
# a precision run stops when its slots (all replications, warm-ups included) would pass
# this multiple of ``slots``, unless ``max_slots`` says otherwise
PRECISION_BUDGET_FACTOR = 64
#: how delays are measured (docs/statistics.md#tagged-delays): ``tagged``, a sample of
#: tagged jobs followed through their FIFOs (O(tags) a slot); ``all``, every job timed
#: through a FIFO of batches; ``off``, none (the mean delay by Little's law stays)
DELAY_MODES = ("tagged", "all", "off")
#: the tagged jobs a replication aims at: each measured job is tagged with probability
#: p = min(1, TAGGED_JOBS / (λ_Σ·measured slots)); enough for a relative CI of p99 within
#: 2 % on the bench workloads (benchmarks/README.md#delay-quantiles)
TAGGED_JOBS = 200_000
#: the largest ΣQ bound (an int64 in the slot loop, with room to compare against)
MAX_BOUND = 2**62
#: the largest seed a run takes: a sweep point's seed is derived as a 63-bit integer
#: (specs.experiment.Point.seed), so runs take one bit more than the 2^62 of a root seed
SEED_LIMIT = 2**63 - 1
#: bins of each server's queue-length histogram (per_server=True) unless given
SERVER_BINS = 64
#: the most numbers (8 bytes each) the per-server histograms, or the trajectory, may hold
MAX_OBSERVED_ENTRIES = 10_000_000


@dataclass(frozen=True)
class Plan:
    """A validated simulation: its replications and, for a precision run, the target."""

    task: Replication
    indices: list[int | None]  # the replications of a fixed-length run
    warmup_method: str
    target: Target | None
    budget: int
    estimator: str = "coupled"


def plan_run(system: System, policy: Policy | str, *, slots: int = 1_000_000,
          warmup: int | None = None, seed: int = 0, replications: int = 1,
          warmup_method: str = "fraction", bound: int | None = None, track_delay: bool = True,
          detail: bool = True, policy_params: dict[str, Any] | None = None,
          precision: float | None = None, precision_abs: float | None = None,
          max_slots: int | None = None, estimator: str = "coupled",
          start: str = "empty", delay: str | None = None, per_server: bool = False,
          per_server_bins: int | None = None, trajectory: int | None = None,
          trajectory_servers: Sequence[int] = ()) -> Plan:
    """Validate the arguments of :func:`simulate` (ValidationError on bad input)."""
    require(isinstance(system, System), "system",
            f"expected a System (System.build(...)), got {type(system).__name__}")
    require(policy_params is None or isinstance(policy_params, dict), "policy_params",
            f"expected a dict of parameter: value (got {type(policy_params).__name__})")
    if isinstance(policy, str):
        policy = make_policy(policy, **(policy_params or {}))
    else:
        require(isinstance(policy, Policy), "policy", "expected a registered policy name or a "
                f"Policy (got {policy!r})")
        require(not policy_params, "policy_params",
                "give parameters to make_policy, not with a Policy object")
    require(is_int(slots) and slots >= 1, "slots", f"must be an integer ≥ 1 (got {slots!r})")
    check_run_jobs(system.arrival_rate, system.mu_sum, int(slots))
    require(warmup is None or is_int(warmup), "warmup", f"must be an integer (got {warmup!r})")
    require(is_int(seed) and 0 <= seed <= SEED_LIMIT, "seed",
            f"must be an integer in [0, 2^63 − 1] (got {seed!r})")
    require(is_int(replications), "replications",
            f"must be an integer ≥ 1 (got {replications!r})")
    warmup = int(slots * WARMUP_FRACTION) if warmup is None else warmup
    require(0 <= warmup < slots, "warmup", f"must be in [0, slots) (got {warmup})")
    require(replications >= 1, "replications", f"must be ≥ 1 (got {replications})")
    require(bound is None or (is_int(bound) and 1 <= bound <= MAX_BOUND), "bound",
            f"must be an integer in [1, 2^62] (got {bound!r})")  # the loop holds it as int64
    for name, flag in (("track_delay", track_delay), ("detail", detail)):
        require(isinstance(flag, bool), name, f"expected True or False (got {flag!r})")
    delay = delay_mode(delay, track_delay)
    require(isinstance(warmup_method, str) and warmup_method in WARMUP_METHODS, "warmup_method",
            f"allowed: {', '.join(WARMUP_METHODS)}")
    require(isinstance(estimator, str) and estimator in ESTIMATORS, "estimator",
            f"allowed: {', '.join(ESTIMATORS)} (got {estimator!r})")
    require(isinstance(start, str) and start in STARTS, "start",
            f"allowed: {', '.join(STARTS)} (got {start!r})")
    if start == "stationary":
        from dispatchlab.theory.pooled_queue import pooled_queue_of

        pooled = pooled_queue_of(system)
        require(pooled.law is not None, "start",
                f"a stationary start draws q(0) from the pooled queue's law, which is "
                f"{pooled.method}")
    for name, value in (("precision", precision), ("precision_abs", precision_abs)):
        require(value is None or (isinstance(value, int | float) and not isinstance(value, bool)
                                  and math.isfinite(value) and value > 0),
                name, f"must be a number > 0 (got {value!r})")
    require(max_slots is None or (is_int(max_slots) and slots <= max_slots <= INTEGER_LIMIT),
            "max_slots", f"must be an integer in [slots = {slots}, 2^62] (got {max_slots!r})")
    # a relative half-width below double precision's resolution of a mean cannot be reached
    # (asking for it overflowed the rounds' arithmetic: an OverflowError traceback)
    require(precision is None or precision >= sys.float_info.epsilon, "precision",
            f"must be ≥ {sys.float_info.epsilon:.3g}, the resolution of a double (got "
            f"{precision!r})")
    observed = observation_settings(system, int(slots), per_server, per_server_bins, trajectory,
                                    trajectory_servers)
    policy.check_system(system)
    try:  # policies check their memory first (dispatchlab.core.ram); this is the backstop
        kernel = policy.kernel(system)  # validates the policy's parameters against the system
    except MemoryError:
        raise out_of_memory(system, policy) from None
    task = Replication(system, policy, int(slots), int(warmup), int(seed),
                       default_bound(system) if bound is None else int(bound),
                       delay == "all", bool(detail), kernel, start,
                       tag_probability(system, int(slots) - int(warmup)) if delay == "tagged"
                       else 0.0, *observed)
    if precision is None and precision_abs is None:
        require(max_slots is None, "max_slots", "a slot budget needs a precision target")
        indices: list[int | None] = list(range(replications)) if replications > 1 else [None]
        return Plan(task, indices, warmup_method, None, int(slots) * replications, estimator)
    budget = PRECISION_BUDGET_FACTOR * int(slots) if max_slots is None else int(max_slots)
    require(budget // int(slots) >= 2, "max_slots", f"the budget {budget} slots does not "
            f"cover two replications of {slots} slots")
    return Plan(task, list(range(max(replications, 2))), warmup_method,
                Target(precision, precision_abs), budget, estimator)


def delay_mode(delay: Any, track_delay: bool) -> str:
    """``delay`` checked (one of DELAY_MODES); ``None``: ``tagged``, or ``off`` when
    ``track_delay`` is False. ``track_delay=False`` with ``tagged`` or ``all`` is refused."""
    if delay is None:
        return "tagged" if track_delay else "off"
    require(isinstance(delay, str) and delay in DELAY_MODES, "delay",
            f"allowed: {', '.join(DELAY_MODES)} (got {delay!r})")
    require(track_delay or delay == "off", "delay",
            f"delay={delay!r} measures delays and track_delay=False (--no-delay) none; "
            "give one of them")
    return delay


def observation_settings(system: System, slots: int, per_server: Any, bins: Any,
                         trajectory: Any, servers: Any) -> tuple[bool, int, int, tuple[int, ...]]:
    """``(per_server, bins, every, servers)`` checked (docs/statistics.md#per-server):
    per-server statistics with a ``bins``-bin histogram of each Q_n (default SERVER_BINS);
    a trajectory point every ``trajectory`` slots (0: none) with Q_n(t) of ``servers``;
    each of them within MAX_OBSERVED_ENTRIES numbers."""
    require(isinstance(per_server, bool), "per_server",
            f"expected True or False (got {per_server!r})")
    if bins is None:
        bins = SERVER_BINS
    else:
        require(per_server, "per_server_bins", "bins of the per-server histograms: give "
                "per_server=True (--per-server) too")
        require(is_int(bins) and bins >= 2, "per_server_bins",
                f"must be an integer ≥ 2 (Q_n = 0 … bins − 2, and one bin for the rest; "
                f"got {bins!r})")
    n = system.n_servers
    require(not per_server or n * bins <= MAX_OBSERVED_ENTRIES, "per_server_bins",
            f"N × bins = {n} × {bins} histogram entries; at most {MAX_OBSERVED_ENTRIES:,}")
    require(trajectory is None or (is_int(trajectory) and 1 <= trajectory <= slots),
            "trajectory", f"must be an integer k in [1, slots = {slots}], a point every k "
            f"slots (got {trajectory!r})")
    require(isinstance(servers, Sequence | np.ndarray) and not isinstance(servers, str | bytes),
            "trajectory_servers", f"expected a list of server indices (got {servers!r})")
    servers = list(servers)
    require(not servers or trajectory is not None, "trajectory_servers",
            "the servers whose Q_n(t) the trajectory records: give trajectory=k "
            "(--trajectory K) too")
    for i, server in enumerate(servers):
        require(is_int(server) and 0 <= server < n, f"trajectory_servers[{i}]",
                f"must be a server index in 0 … N − 1 = {n - 1} (got {server!r})")
    require(len(set(servers)) == len(servers), "trajectory_servers",
            f"a server given twice ({servers!r})")
    every = 0 if trajectory is None else int(trajectory)
    if every:
        points = slots // every + 1
        entries = points * (3 + len(servers))
        require(entries <= MAX_OBSERVED_ENTRIES, "trajectory",
                f"a point every {every} slots of {slots} is {points:,} points × "
                f"{3 + len(servers)} numbers; at most {MAX_OBSERVED_ENTRIES:,} (take k ≥ "
                f"{-(-slots * (3 + len(servers)) // MAX_OBSERVED_ENTRIES)})")
    return per_server, int(bins), every, tuple(int(server) for server in servers)


def tag_probability(system: System, measured_slots: int) -> float:
    """p, each measured job's chance to be tagged: TAGGED_JOBS over the expected measured
    jobs λ_Σ·``measured_slots`` (at most 1: every job)."""
    expected = float(system.arrival_rate) * max(measured_slots, 1)
    return min(1.0, TAGGED_JOBS / expected) if expected > 0 else 1.0


@dataclass(frozen=True)
class Replication:
    """What one worker needs to run replications of one configuration (picklable)."""

    system: System
    policy: Policy
    slots: int
    warmup: int
    seed: int
    bound: int
    track_delay: bool
    detail: bool
    kernel: Kernel | None = field(default=None, compare=False, repr=False)
    start: str = "empty"
    tag_probability: float = 0.0  # > 0: delays from tagged jobs (track_delay is then off)
    per_server: bool = False  # per-server statistics (observation_settings)
    per_server_bins: int = SERVER_BINS
    trajectory: int = 0  # k: the first replication's trajectory, a point every k slots
    trajectory_servers: tuple[int, ...] = ()

    def seed_sequence(self, index: int | None) -> np.random.SeedSequence:
        """Replication ``index``'s seed: ``SeedSequence(seed).spawn(R)[index]``, and the root
        ``SeedSequence(seed)`` for a single run (``None``)."""
        if index is None:
            return np.random.SeedSequence(self.seed)
        return np.random.SeedSequence(self.seed, spawn_key=(index,))

    def initial_queues(self, seed: np.random.SeedSequence) -> np.ndarray | None:
        """Q(0): empty (``None``), or for ``start="stationary"`` a stationary q(0) spread
        over the servers, drawn from its own stream (the loop's streams are untouched)."""
        if self.start == "empty":
            return None
        from dispatchlab.theory.pooled_queue import stationary_start

        own = np.random.SeedSequence(seed.entropy, spawn_key=(*seed.spawn_key, START_STREAM))
        return stationary_start(self.system, np.random.default_rng(own))

    def __getstate__(self) -> dict[str, Any]:
        # a worker builds the kernel again: its compiled functions need not pickle
        return {**self.__dict__, "kernel": None}

    def run(self, index: int | None) -> RawRun:
        """Replication ``index`` (see :meth:`seed_sequence`), on the plan's kernel when this
        process built it (``Kernel.memory()`` gives every run fresh memory arrays)."""
        try:
            kernel = self.policy.kernel(self.system) if self.kernel is None else self.kernel
            seed = self.seed_sequence(index)
            return run_once(self.system, kernel, slots=self.slots,
                            warmup=self.warmup, seed=seed,
                            bound=self.bound, track_delay=self.track_delay,
                            detail=self.detail, policy=self.policy.name,
                            initial_queues=self.initial_queues(seed),
                            tag_probability=self.tag_probability,
                            per_server=self.per_server, server_bins=self.per_server_bins,
                            trajectory_every=self.trajectory if index in (None, 0) else 0,
                            trajectory_servers=self.trajectory_servers)
        except MemoryError:
            raise out_of_memory(self.system, self.policy) from None



def run_indexed(item: tuple[Replication, int | None]) -> RawRun:
    """Run one ``(replication, index)`` pair into its RawRun: the task a process pool's
    worker runs (here, with the Replication it unpickles, so that a worker imports neither
    the summary's statistics nor scipy: 0.3 s of CPU at each worker's start)."""
    task, index = item
    return task.run(index)

def out_of_memory(system: System, policy: Policy) -> ValidationError:
    """The ValidationError for a run that ran out of memory, naming the policy, N and M."""
    return ValidationError("memory", f"out of memory running {policy.name} on N = "
                           f"{system.n_servers} servers, M = {system.dispatchers} dispatchers")


@dataclass(frozen=True)
class Target:
    """A precision target: relative and/or absolute half-width of the 95 % CI of E[ΣQ]."""

    relative: float | None
    absolute: float | None

    def half_width(self, mean: float) -> float:
        """The half-width that meets every given target at this mean."""
        widths = [self.absolute] if self.absolute is not None else []
        if self.relative is not None:
            widths.append(self.relative * abs(mean))
        return min(widths)

    def met(self, estimate_mean: float, half_width: float) -> bool:
        return math.isfinite(half_width) and half_width <= self.half_width(estimate_mean)


def is_int(value: object) -> bool:
    """True for a Python or NumPy integer that is not a bool."""
    return isinstance(value, int | np.integer) and not isinstance(value, bool)
