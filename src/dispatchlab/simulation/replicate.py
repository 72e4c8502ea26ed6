"""Executing a plan's replications: each on the plan's kernel, in this process or on a pool
of worker processes, bit-identical either way."""

from __future__ import annotations

from concurrent.futures import Executor
from typing import Any

from dispatchlab.core.pools import map_tasks
from dispatchlab.engine.raw import RawRun
from dispatchlab.simulation.plan import Replication, run_indexed


def run_replications(task: Replication, indices: Any, workers: int | None = 1,
                     pool: Executor | None = None) -> list[RawRun]:
    """The raw runs of replications ``indices`` (``None``: the single root-seeded run), in
    order, on ``workers`` processes (or ``pool``); each is bit-identical to its sequential
    run."""
    return map_tasks(run_indexed, [(task, index) for index in indices], workers=workers,
                     pool=pool)
