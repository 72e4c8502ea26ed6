"""A continuous-time run to a precision target: replications in rounds, each sized from
the current interval of E[T], until the target is met or the job budget is spent
(:func:`~dispatchlab.core.precision_target.run_in_rounds`, as in the slotted model with jobs
for slots)."""

from __future__ import annotations

from concurrent.futures import Executor

import numpy as np

from dispatchlab.continuous.replicate import Settings, run_replication
from dispatchlab.continuous.summary import (
    Replication,
    detect_warmup,
    means,
    stability_of,
)
from dispatchlab.core.pools import map_tasks
from dispatchlab.core.precision_target import Precision, run_in_rounds


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
    stopped. The first round runs ``first`` replications (at least one a worker)."""
    assert target.max_jobs is not None
    affordable = target.max_jobs // jobs

    def judge(runs: list[Replication]) -> tuple[float, float, bool]:
        kept, dropped = detect_warmup(runs, settings.warmup_method)
        estimate = means(kept)["mean_response"]
        unstable = stability_of(kept, settings.bound,
                                jobs - warmup - int(dropped))[0] == "unstable"
        return estimate.mean, estimate.half_width, unstable

    return run_in_rounds(
        target, first, affordable, workers,
        lambda start, count, pool: replications(root, count, jobs, warmup, settings, 1, pool),
        judge, f"job budget spent ({affordable * jobs:,} of {target.max_jobs:,} jobs)")
