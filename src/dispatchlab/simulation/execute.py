"""Run a :class:`~dispatchlab.simulation.plan.Plan` in the order a run flows: its
replications (:mod:`.replicate`), in rounds when it has a precision target
(:mod:`.precision`), summarised into a Result (:mod:`.summary`)."""

from __future__ import annotations

from dispatchlab.core.pools import resolve_workers
from dispatchlab.core.progress_display import notebook_progress
from dispatchlab.engine.control import Progress, current_progress, progress_to
from dispatchlab.simulation.plan import Plan
from dispatchlab.simulation.result import Result


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
    # imported here: a pool's worker imports this module (through the script's own
    # ``from dispatchlab import simulate``) but never summarises, and the summary's
    # statistics load scipy.special, 0.3 s of CPU at each worker's start
    from dispatchlab.simulation.precision import run_to_precision
    from dispatchlab.simulation.replicate import run_replications
    from dispatchlab.simulation.summary import summarize_plan

    if plan.target is not None:
        return run_to_precision(plan, workers)
    return summarize_plan(plan, run_replications(plan.task, plan.indices, workers))
