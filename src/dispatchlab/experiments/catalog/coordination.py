"""Stochastic coordination against the herd: SCD and TWF beside LED, JSQ, LSQ, JIQ and
weighted random, in the slotted heterogeneous setting of the SCD paper (docs/policies.md,
section on coordination).

Every dispatcher of SCD and TWF computes the same probability vector from Q(t) and the
expected arrivals, so that the dispatchers together fill the shortest queues in
expectation without piling onto one of them; water-filling JSQ fills them on its own
arrivals alone, and M of them pour into the same queues (the herd of [LED] Fig. 1).
"""

from __future__ import annotations

from dispatchlab.experiments.catalog import register_experiment
from dispatchlab.experiments.catalog.led_fig1 import led_params, push_d
from dispatchlab.specs.experiment import ExperimentSpec
from dispatchlab.specs.figure import FigureSpec
from dispatchlab.specs.run import PolicySpec, SystemSpec

LOADS = (0.5, 0.7, 0.9, 0.95, 0.99)
QUICK_LOADS = (0.5, 0.9)
#: the SCD paper's kind of system: two server classes with rates 1 : 5, geometric service
#: (mean μ_n jobs a slot), each job of a dispatcher drawn on its own (per-job dispatch)
SYSTEM = SystemSpec("50x1,50x5", dispatchers=10, service="geometric", dispatch="per_job",
                    label="50×1 + 50×5, M = 10")
M_SWEEP = tuple(SystemSpec("50x1,50x5", dispatchers=m, service="geometric",
                           dispatch="per_job", label=f"50×1 + 50×5, M = {m}")
                for m in (1, 10, 100))
SLOTS = 40_000


def _policies(d: int) -> tuple[PolicySpec, ...]:
    """SCD, TWF and the baselines; the LED curves at 4 messages per job (Po-2's count)."""
    led = tuple(PolicySpec(name, led_params("arrival", d), label=label) for name, label in (
        ("l-jba-push", "L-JBA-Push"), ("l-jba-pull", "L-JBA-Pull"),
        ("l-pod-push", "L-Pod-Push"), ("l-pod-pull", "L-Pod-Pull")))
    return (
        PolicySpec("scd", label="SCD"),
        PolicySpec("twf", label="TWF"),
        PolicySpec("jsq", {"fill": True}, label="JSQ (water-filling)"),
        PolicySpec("lsq", {"p": 1.0, "d": 2, "learn_on_send": True, "measure_error": False},
                   label="LSQ"),
        *led,
        PolicySpec("jiq", label="JIQ"),
        PolicySpec("wrand", label="weighted random"),
    )


def _figures(x: str) -> tuple[FigureSpec, ...]:
    return (
        FigureSpec("queue", x=x, y="mean_total_queue", log_y=True, title="E[ΣQ]",
                   ylabel="E[ΣQ]"),
        FigureSpec("completion", x=x, y="mean_completion_time", log_y=True, ci=False,
                   title="Mean job completion time (departure − arrival + 1)",
                   ylabel="slots"),
        FigureSpec("p99", x=x, y="delay_p99", log_y=True, ci=False,
                   title="99th percentile of the delay", ylabel="slots"),
        FigureSpec("messages", x=x, y="messages_per_arrival", ci=False,
                   title="Messages per job", ylabel="messages / job"),
        FigureSpec("herding", x=x, y="herding_fraction", ci=False,
                   title="Slots in which ≥ 2 dispatchers chose one server",
                   ylabel="herding fraction"),
    )


@register_experiment("scd-loads", title="SCD and TWF against LED, water-filling JSQ, LSQ, JIQ "
                     "and weighted random: 50×1 + 50×5, M = 10, ρ = 0.5 … 0.99",
                     paper="[SCD] (docs/policies.md#coordination)")
def scd_loads(quick: bool = False) -> ExperimentSpec:
    """The SCD paper's comparison in our slotted model: 100 servers (50 of rate 1, 50 of
    rate 5, geometric service), M = 10 dispatchers, Poisson arrivals, per-job dispatch,
    loads 0.5 … 0.99, two runs of 40 000 slots a point. LED curves at 4 messages per job;
    E[ΣQ], completion time and its 99th percentile, messages and the herding measure."""
    loads = QUICK_LOADS if quick else LOADS
    return ExperimentSpec(
        name="scd-loads", title="Stochastic coordination: SCD against the herd",
        description=scd_loads.__doc__ or "", paper="[SCD] Goren, Vargaftik, Moses, PODC 2021",
        systems=(SYSTEM,), policies=_policies(push_d((SYSTEM,), max(loads))), loads=loads,
        replications=2, slots=SLOTS, warmup=0.3, seed=2105, options={"imbalance": False},
        quick_scale=0.1, figures=_figures("load"))


@register_experiment("scd-dispatchers", title="SCD and the baselines at ρ = 0.9 for M = 1, "
                     "10 and 100 dispatchers (50×1 + 50×5)",
                     paper="[SCD] (docs/policies.md#coordination)")
def scd_dispatchers(quick: bool = False) -> ExperimentSpec:
    """``scd-loads``'s policies at ρ = 0.9 with M = 1, 10 and 100 dispatchers: the herd of
    full-information JSQ grows with M, SCD's coordination does not."""
    systems = M_SWEEP[:2] if quick else M_SWEEP
    return ExperimentSpec(
        name="scd-dispatchers", title="Stochastic coordination as M grows",
        description=scd_dispatchers.__doc__ or "",
        paper="[SCD] Goren, Vargaftik, Moses, PODC 2021", systems=systems,
        policies=_policies(push_d(systems, 0.9)), loads=(0.9,), replications=2,
        slots=SLOTS, warmup=0.3, seed=2106, options={"imbalance": False}, quick_scale=0.1,
        figures=_figures("load"))
