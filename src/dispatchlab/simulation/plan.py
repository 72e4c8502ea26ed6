"""Validate the arguments of ``simulate`` into a :class:`Plan`: the replications to run
(a :class:`Replication` each worker can run) and, for a precision run, its target (a
checked :class:`~dispatchlab.core.precision_target.Precision`)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from dispatchlab.core.errors import ValidationError, keywords_of, require
from dispatchlab.core.precision_target import Precision
from dispatchlab.engine.interface import Kernel
from dispatchlab.engine.raw import RawRun, default_bound, run_once
from dispatchlab.model.size_limits import check_run_jobs
from dispatchlab.model.system import System
from dispatchlab.policies.base import Policy, make_policy
from dispatchlab.simulation.measures import (
    PerServer,
    Trajectory,
    check_delay,
    check_flag,
    refuse_renamed,
)

WARMUP_FRACTION = 0.1
WARMUP_METHODS = ("fraction", "mser5")
#: the headline estimator of E[ΣQ] (docs/statistics.md#coupled)
ESTIMATORS = ("coupled", "plain")
#: Q(0): empty, or the pooled queue's stationary law spread over the servers
STARTS = ("empty", "stationary")
#: the spawn key under a run's seed of the stream that draws a stationary start (no
#: replication index reaches it)
START_STREAM = 2**32 - 1
#: the tagged jobs a replication aims at: each measured job is tagged with probability
#: p = min(1, TAGGED_JOBS / (λ_Σ·measured slots)); enough for a relative CI of p99 within
#: 2 % on the bench workloads (benchmarks/README.md#delay-quantiles)
TAGGED_JOBS = 200_000
#: the largest ΣQ bound (an int64 in the slot loop, with room to compare against)
MAX_BOUND = 2**62
#: the largest seed a run takes: a sweep point's seed is derived as a 63-bit integer
#: (specs.experiment.Point.seed), so runs take one bit more than the 2^62 of a root seed
SEED_LIMIT = 2**63 - 1
#: slots per replication unless given: simulate, sweep, run specs and experiment grids
DEFAULT_SLOTS = 1_000_000


@dataclass(frozen=True)
class Plan:
    """A validated simulation: its replications and, for a precision run, the target."""

    task: Replication
    indices: list[int | None]  # the replications of a fixed-length run
    warmup_method: str
    target: Precision | None  # checked: max_slots is the budget
    budget: int
    estimator: str = "coupled"


def plan_run(system: System, policy: Policy | str, *, slots: int = DEFAULT_SLOTS,
             warmup: int | None = None, seed: int = 0, replications: int = 1,
             warmup_method: str = "fraction", estimator: str = "coupled",
             start: str = "empty", bound: int | None = None, delay: str = "tagged",
             imbalance: bool = True, per_server: PerServer | bool | None = None,
             trajectory: Trajectory | None = None, precision: Precision | None = None,
             policy_params: dict[str, Any] | None = None) -> Plan:
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
    slots = int(slots)
    check_run_jobs(system.arrival_rate, system.mu_sum, slots)
    require(warmup is None or is_int(warmup), "warmup", f"must be an integer (got {warmup!r})")
    require(is_int(seed) and 0 <= seed <= SEED_LIMIT, "seed",
            f"must be an integer in [0, 2^63 − 1] (got {seed!r})")
    require(is_int(replications), "replications",
            f"must be an integer ≥ 1 (got {replications!r})")
    warmup = int(slots * WARMUP_FRACTION) if warmup is None else int(warmup)
    require(0 <= warmup < slots, "warmup", f"must be in [0, slots) (got {warmup})")
    require(replications >= 1, "replications", f"must be ≥ 1 (got {replications})")
    require(bound is None or (is_int(bound) and 1 <= bound <= MAX_BOUND), "bound",
            f"must be an integer in [1, 2^62] (got {bound!r})")  # the loop holds it as int64
    delay = check_delay(delay)
    imbalance = check_flag(imbalance, "imbalance")
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
    per_server = PerServer.of(per_server)
    per_server = None if per_server is None else per_server.check(system.n_servers)
    trajectory = Trajectory.of(trajectory)
    trajectory = None if trajectory is None else trajectory.check(system.n_servers, slots)
    target = Precision.of(precision)
    target = None if target is None else target.check(slots, replications)
    policy.check_system(system)
    try:  # policies check their memory first (dispatchlab.core.ram); this is the backstop
        kernel = policy.kernel(system)  # validates the policy's parameters against the system
    except MemoryError:
        raise out_of_memory(system, policy) from None
    task = Replication(system, policy, slots, warmup, int(seed),
                       default_bound(system) if bound is None else int(bound),
                       delay == "all", imbalance, kernel, start,
                       tag_probability(system, slots - warmup) if delay == "tagged" else 0.0,
                       per_server, trajectory)
    if target is None:
        indices: list[int | None] = list(range(replications)) if replications > 1 else [None]
        return Plan(task, indices, warmup_method, None, slots * replications, estimator)
    assert target.max_slots is not None
    return Plan(task, list(range(max(replications, 2))), warmup_method, target,
                target.max_slots, estimator)


def check_settings(settings: Mapping[str, Any], caller: str) -> None:
    """Refuse a renamed or unknown keyword among the run ``settings`` a ``caller`` passes on
    to :func:`plan_run` (the allowed ones are read from its signature)."""
    refuse_renamed(settings)
    allowed = [name for name in keywords_of(plan_run) if name not in ("system", "policy")]
    unknown = sorted(set(settings) - set(allowed))
    if unknown:
        raise ValidationError(unknown[0], f"unknown keyword of {caller}; allowed: workers, "
                              + ", ".join(allowed))


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
    time_every_job: bool  # delay="all": every job timed through a FIFO of batches
    imbalance: bool
    kernel: Kernel | None = field(default=None, compare=False, repr=False)
    start: str = "empty"
    tag_probability: float = 0.0  # > 0: delays from tagged jobs (delay="tagged")
    per_server: PerServer | None = None
    trajectory: Trajectory | None = None  # of the first replication only

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
                            bound=self.bound, time_every_job=self.time_every_job,
                            imbalance=self.imbalance, policy=self.policy.name,
                            initial_queues=self.initial_queues(seed),
                            tag_probability=self.tag_probability,
                            server_bins=0 if self.per_server is None else self.per_server.bins,
                            trajectory_every=(self.trajectory.every if self.trajectory
                                              and index in (None, 0) else 0),
                            trajectory_servers=self.trajectory.servers if self.trajectory else ())
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


def is_int(value: object) -> bool:
    """True for a Python or NumPy integer that is not a bool."""
    return isinstance(value, int | np.integer) and not isinstance(value, bool)
