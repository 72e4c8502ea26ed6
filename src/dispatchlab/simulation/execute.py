"""Run a :class:`~dispatchlab.simulation.plan.Plan`: its replications, on worker processes
when asked, in rounds until a precision target is met."""

from __future__ import annotations

import math
from concurrent.futures import Executor
from contextlib import ExitStack
from dataclasses import replace
from typing import Any

from dispatchlab.core.pools import map_tasks, process_pool, resolve_workers
from dispatchlab.core.progress_display import notebook_progress
from dispatchlab.engine.control import Progress, current_progress, progress_to
from dispatchlab.engine.raw import RawRun
from dispatchlab.simulation.plan import Plan, Replication, run_indexed
from dispatchlab.simulation.result import Result

# rounds of a precision run aim this much beyond the replications the t-CI says it needs
PRECISION_OVERSHOOT = 1.2


def execute(plan: Plan, workers: int | None) -> Result:
    """Run a plan's replications (in ``workers`` processes when asked; in rounds when it has
    a precision target) and summarise them into a Result. In a Jupyter notebook a run in
    this process shows its progress (:mod:`dispatchlab.core.progress_display`; nowhere
    else, and never when a caller installed its own)."""
    show = (notebook_progress() if current_progress() is None
            and resolve_workers(workers, len(plan.indices)) == 1 else None)
    if show is None:
        return _execute(plan, workers)
    with progress_to(Progress(lambda line: show(f"simulate {plan.task.policy.name}: {line}"),
                              runs=len(plan.indices))):
        return _execute(plan, workers)


def _execute(plan: Plan, workers: int | None) -> Result:
    if plan.target is None:
        runs = run_replications(plan.task, plan.indices, workers)
        return summarize_plan(plan, runs)
    return _to_precision(plan, workers)


def summarize_plan(plan: Plan, runs: list[RawRun]) -> Result:
    """The :class:`Result` of ``runs``, replications of ``plan``'s configuration."""
    # imported here: a pool's spawned worker imports this module (through the script's own
    # ``from dispatchlab import simulate``) but never summarises, and the summary's
    # statistics load scipy.special, 0.3 s of CPU at each worker's start
    from dispatchlab.simulation.summary import summarize

    return summarize(plan.task.system, plan.task.policy, runs, seed=plan.task.seed,
                     warmup_method=plan.warmup_method, estimator=plan.estimator,
                     start=plan.task.start)


def run_replications(task: Replication, indices: Any, workers: int | None = 1,
                     pool: Executor | None = None) -> list[RawRun]:
    """The raw runs of replications ``indices`` (``None``: the single root-seeded run), in
    order, on ``workers`` processes (or ``pool``); each is bit-identical to its sequential
    run."""
    return map_tasks(run_indexed, [(task, index) for index in indices], workers=workers,
                     pool=pool)


def _to_precision(plan: Plan, workers: int | None) -> Result:
    """Replications in rounds until the CI meets ``target`` or the slot budget is spent.

    Each round sizes itself from the current half-width h: about R·(h/h*)² replications
    reach h* (the half-width shrinks as 1/√R), PRECISION_OVERSHOOT beyond, rounded up to
    whole rounds of ``workers`` (the first round too); replication r always has the same
    seed, so a precision run's result is that of ``simulate(…, replications=R)`` for the R
    it stopped at (R may depend on the number of workers, as rounds are whole).
    """
    per_round = resolve_workers(workers, plan.budget // plan.task.slots)
    with ExitStack() as stack:
        pool = stack.enter_context(process_pool(per_round)) if per_round > 1 else None
        return _rounds(plan, per_round, pool)


def _rounds(plan: Plan, per_round: int, pool: Executor | None) -> Result:
    task, target, budget = plan.task, plan.target, plan.budget
    assert target is not None
    affordable = budget // task.slots
    count = min(max(len(plan.indices), per_round), affordable)
    runs = run_replications(task, range(count), 1, pool)
    while True:
        result = summarize_plan(plan, runs)
        half = (result.ci_high - result.ci_low) / 2
        if result.stability == "unstable":
            reason = "unstable: no mean to estimate"
        elif target.met(result.mean_total_queue, half):
            reason = "target reached"
        elif count >= affordable:
            reason = f"slot budget spent ({count * task.slots} of {budget} slots)"
        else:
            reason = ""
        if reason:
            return replace(result, stop_reason=reason, precision_target=target.relative,
                           precision_abs_target=target.absolute, slot_budget=budget)
        aim = target.half_width(result.mean_total_queue)
        if math.isfinite(half) and half > 0 and aim > 0 and half / aim < math.sqrt(affordable):
            wanted = math.ceil(count * (half / aim) ** 2 * PRECISION_OVERSHOOT)
        elif math.isfinite(half) and half > 0:  # out of reach: the budget (no overflow)
            wanted = affordable
        else:
            wanted = 2 * count
        more = max(wanted - count, 1)
        more = min(-(-more // per_round) * per_round, affordable - count)
        runs += run_replications(task, range(count, count + more), 1, pool)
        count += more
