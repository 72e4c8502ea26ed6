"""Classical baselines over loads: an end-to-end catalog experiment with no paper policy."""

from __future__ import annotations

from dispatchlab.experiments.catalog import register_experiment
from dispatchlab.specs.experiment import ExperimentSpec
from dispatchlab.specs.figure import (
    FigureSpec,
    ReferenceLine,
)
from dispatchlab.specs.run import (
    PolicySpec,
    SystemSpec,
)
from dispatchlab.theory.closed_forms import pooled_queue_mean, weighted_random_total_mean

LOADS = (0.5, 0.6, 0.7, 0.8, 0.85, 0.9, 0.95)
QUICK_LOADS = (0.5, 0.7, 0.9)


@register_experiment(
    "classic-load-sweep",
    title="Weighted random, JSQ, JSED and Po2 on 50×0.1 + 50×0.5 servers, M = 10, over ρ",
)
def classic_load_sweep(quick: bool = False) -> ExperimentSpec:
    """E[ΣQ], delay and messages of the classical policies as the load ρ grows.

    Uniform Po2 is not throughput optimal on heterogeneous servers: it becomes
    unstable once ρ exceeds the capacity it can reach (and is then drawn as a gap).
    """
    return ExperimentSpec(
        name="classic-load-sweep",
        title="Classical policies on heterogeneous servers over the load ρ",
        description=classic_load_sweep.__doc__ or "",
        systems=(SystemSpec("50x0.1,50x0.5", dispatchers=10),),
        policies=(
            PolicySpec("wrand", label="weighted random"),
            PolicySpec("jsq", label="JSQ"),
            PolicySpec("jsed", label="JSED"),
            PolicySpec("pod", {"d": 2}, label="Po2"),
        ),
        loads=QUICK_LOADS if quick else LOADS,
        replications=2,
        slots=400_000,
        seed=2024,
        figures=(
            FigureSpec("queue", x="load", y="mean_total_queue", log_y=True,
                       title="Mean total queue length E[ΣQ]", ylabel="E[ΣQ]",
                       references=(
                           ReferenceLine("weighted random (exact)",
                                         function=weighted_random_total_mean),
                           ReferenceLine("resource-pooled queue (lower bound)",
                                         function=pooled_queue_mean, style=":"),
                       )),
            FigureSpec("delay", x="load", y="mean_delay", log_y=True,
                       title="Mean delay (slots)", ylabel="E[delay]"),
            FigureSpec("messages", x="load", y="messages_per_arrival", ci=False,
                       title="Messages per arrival", ylabel="messages / arrival"),
        ),
    )
