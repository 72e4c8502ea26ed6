"""A run to a precision target: replications in rounds, each round sized from the current
confidence interval, until the target is met or the slot budget is spent."""

from __future__ import annotations

from concurrent.futures import Executor
from contextlib import ExitStack
from dataclasses import replace

from dispatchlab.core.pools import process_pool, resolve_workers
from dispatchlab.core.precision_target import next_round
from dispatchlab.simulation.plan import Plan
from dispatchlab.simulation.replicate import run_replications
from dispatchlab.simulation.result import Result
from dispatchlab.simulation.summary import summarize_plan


def run_to_precision(plan: Plan, workers: int | None) -> Result:
    """Replications in rounds until the CI meets ``target`` or the slot budget is spent.

    Each round sizes itself from the current half-width
    (:func:`~dispatchlab.core.precision_target.next_round`), in whole rounds of
    ``workers`` (the first round too); replication r always has the same
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
            return replace(result, stop_reason=reason, precision_target=target.rel,
                           precision_abs_target=target.abs, slot_budget=budget)
        more = next_round(count, half, target.half_width(result.mean_total_queue),
                          affordable, per_round)
        runs += run_replications(task, range(count, count + more), 1, pool)
        count += more
