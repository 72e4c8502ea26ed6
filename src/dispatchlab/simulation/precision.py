"""A run to a precision target: replications in rounds, each round sized from the current
confidence interval, until the target is met or the slot budget is spent
(:func:`~dispatchlab.core.precision_target.run_in_rounds`)."""

from __future__ import annotations

from dataclasses import replace

from dispatchlab.core.precision_target import run_in_rounds
from dispatchlab.simulation.plan import Plan
from dispatchlab.simulation.replicate import run_replications
from dispatchlab.simulation.result import Result
from dispatchlab.simulation.summary import summarize_plan


def run_to_precision(plan: Plan, workers: int | None) -> Result:
    """Replications in rounds until the CI of E[ΣQ] meets the plan's target or the slot
    budget is spent; in whole rounds of ``workers`` (the first round too). Replication r
    always has the same seed, so a precision run's result is that of ``simulate(…,
    replications=R)`` for the R it stopped at (R may depend on the number of workers, as
    rounds are whole)."""
    task, target, budget = plan.task, plan.target, plan.budget
    assert target is not None
    affordable = budget // task.slots

    def judge(runs: list) -> tuple[float, float, bool]:
        result = summarize_plan(plan, runs)
        return (result.mean_total_queue, (result.ci_high - result.ci_low) / 2,
                result.stability == "unstable")

    runs, reason = run_in_rounds(
        target, len(plan.indices), affordable, workers,
        lambda start, count, pool: run_replications(task, range(start, start + count), 1,
                                                    pool),
        judge, f"slot budget spent ({affordable * task.slots} of {budget} slots)")
    return replace(summarize_plan(plan, runs), stop_reason=reason,
                   precision_target=target.rel, precision_abs_target=target.abs,
                   slot_budget=budget)
