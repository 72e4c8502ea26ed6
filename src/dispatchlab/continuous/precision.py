"""A continuous-time run to a precision target: replications in rounds, each sized from
the current interval of E[T], until the target is met or the job budget is spent (the
slotted model's rounds, :mod:`dispatchlab.simulation.precision`, with jobs for slots)."""

from __future__ import annotations

from concurrent.futures import Executor
from contextlib import ExitStack

import numpy as np

from dispatchlab.continuous.replicate import Settings, run_replication
from dispatchlab.continuous.summary import Replication, means, stability_of
from dispatchlab.core.pools import map_tasks, process_pool, resolve_workers
from dispatchlab.core.precision_target import Precision, next_round


def replications(root: np.random.SeedSequence, count: int, jobs: int, warmup: int,
                 settings: Settings, workers: int | None = None,
                 pool: Executor | None = None) -> list[Replication]:
    """The next ``count`` replications of a run: each seeded by the next child of
    ``root``, so that replication r has the same seed however the run was cut into rounds
    (r's seed is ``root.spawn`` 's r-th child, as in a run of a fixed number)."""
    tasks = [(child, jobs, warmup, settings) for child in root.spawn(count)]
    return map_tasks(run_replication, tasks, workers=workers, pool=pool)


def replications_to_precision(root: np.random.SeedSequence, first: int, jobs: int,
                              warmup: int, settings: Settings, target: Precision,
                              workers: int | None) -> tuple[list[Replication], str]:
    """Replications of ``jobs`` jobs in rounds until the 95 % CI of E[T] meets ``target``
    (checked: ``max_jobs`` is the budget) or the budget is spent; with the reason it
    stopped.

    The first round runs ``first`` replications (at least one a worker), each next one
    as many as :func:`~dispatchlab.core.precision_target.next_round` says."""
    assert target.max_jobs is not None
    affordable = target.max_jobs // jobs
    per_round = resolve_workers(workers, affordable)
    with ExitStack() as stack:
        pool = stack.enter_context(process_pool(per_round)) if per_round > 1 else None
        count = min(max(first, per_round), affordable)
        runs = replications(root, count, jobs, warmup, settings, 1, pool)
        while True:
            estimate = means(runs)["mean_response"]
            half = estimate.half_width
            if stability_of(runs, settings.bound, jobs - warmup)[0] == "unstable":
                return runs, "unstable: no mean to estimate"
            if target.met(estimate.mean, half):
                return runs, "target reached"
            if count >= affordable:
                return runs, (f"job budget spent ({count * jobs:,} of {target.max_jobs:,} "
                              "jobs)")
            more = next_round(count, half, target.half_width(estimate.mean), affordable,
                              per_round)
            runs += replications(root, more, jobs, warmup, settings, 1, pool)
            count += more
