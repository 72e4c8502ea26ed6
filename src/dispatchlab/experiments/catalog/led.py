"""[LED] §6 Fig. 2 (docs/model.md#led-fig2) and a heavy-traffic check of Theorem 2 (Fig. 1, in two
models, is in :mod:`.led_fig1`)."""

from __future__ import annotations

from dataclasses import replace

from dispatchlab.experiments.catalog import register_experiment
from dispatchlab.specs.experiment import (
    ExperimentSpec,
    SlotsRule,
)
from dispatchlab.specs.figure import (
    FigureSpec,
    ReferenceLine,
)
from dispatchlab.specs.run import (
    PolicySpec,
    SystemSpec,
)
from dispatchlab.theory.heavy_traffic import random_routing_limit

LOADS = (0.5, 0.6, 0.7, 0.8, 0.9, 0.95, 0.98)
QUICK_LOADS = (0.5, 0.7, 0.9)
FIG2_SERVERS = "100x0.3"
COMMON = {"measure_error": False}


def _queue_figures(title: str) -> tuple[FigureSpec, ...]:
    return (
        FigureSpec("queue", x="load", y="mean_total_queue", log_y=True, title=title,
                   ylabel="E[ΣQ]"),
        FigureSpec("messages", x="load", y="messages_per_arrival", ci=False,
                   title="Messages per arrival", ylabel="messages / arrival"),
        FigureSpec("herding", x="load", y="herding_fraction", ci=False,
                   title="Slots in which ≥ 2 dispatchers chose one server",
                   ylabel="herding fraction"),
    )


@register_experiment("led-fig2", title="Rare updates (p̂ = 0.01, d = 2): L-JSQ-Push vs "
                     "L-JBA-Push and L-Pod-Push (100×0.3 servers, M = 10)",
                     paper="[LED] §6, Fig. 2 (our setting, docs/model.md#led-fig2)")
def led_fig2(quick: bool = False) -> ExperimentSpec:
    """Fig. 2, "randomness helps with heavily delayed information": N = 100 homogeneous
    servers (μ = 0.3), M = 10, Poisson arrivals; push updates every slot with p̂ = 0.01 and
    d = 2, no increments; L-Pod compares 2 servers. Expected: L-JBA-Push and L-Pod-Push
    beat L-JSQ-Push, which herds onto its stale minimum between updates.
    """
    params = {"p": 0.01, "d": 2, **COMMON}
    return ExperimentSpec(
        name="led-fig2",
        title="Randomness helps with heavily delayed information",
        description=led_fig2.__doc__ or "",
        paper="[LED] Zhou, Shroff, Wierman 2020, Fig. 2",
        systems=(SystemSpec(FIG2_SERVERS, dispatchers=10, label="100×0.3, M = 10"),),
        policies=(PolicySpec("l-jsq-push", params, label="L-JSQ-Push"),
                  PolicySpec("l-jba-push", params, label="L-JBA-Push"),
                  PolicySpec("l-pod-push", {**params, "pod_d": 2}, label="L-Pod-Push")),
        loads=QUICK_LOADS if quick else LOADS,
        replications=2,
        slots=200_000,
        seed=2003,
        options={"imbalance": False},
        figures=_queue_figures("E[ΣQ] with p̂ = 0.01"),
    )


#: L-JSQ-Push's ΣQ relaxes with a time constant of ≈ 9·10⁴ slots at ρ = 0.95 (the 2·10⁵-slot
#: runs' evidence), growing like 1/(1 − ρ)²: 4000/(1 − ρ)² slots give ≥ 10 of them
LONG_FIG2_SLOTS = SlotsRule(coefficient=4000.0, power=2, per="load", minimum=2 * 10**6,
                            maximum=10**7)


@register_experiment("led-fig2-long", title="Fig. 2's L-JSQ-Push at ρ = 0.9–0.98, run long "
                     "enough to tell a transient from instability",
                     paper="[LED] §6, Fig. 2 (our setting, docs/model.md#led-fig2)")
def led_fig2_long(quick: bool = False) -> ExperimentSpec:
    """``led-fig2``'s L-JSQ-Push at ρ = 0.9, 0.95 and 0.98, 2·10⁶–10⁷ slots a run (two
    runs a load): its 2·10⁵-slot runs were still relaxing there (LED Theorem 1 makes it
    throughput optimal: tilted, with p̂ > 0); on the Reproductions page a longer run of a
    point supersedes a shorter one."""
    base = led_fig2(quick)
    return replace(base, name="led-fig2-long", title="L-JSQ-Push, long runs",
                   description=led_fig2_long.__doc__ or "", policies=base.policies[:1],
                   loads=(0.9,) if quick else (0.9, 0.95, 0.98), slots=LONG_FIG2_SLOTS,
                   quick_scale=0.05)


EPSILONS = (1.0, 0.5, 0.25, 0.1, 0.05, 0.02)
QUICK_EPSILONS = (1.0, 0.5)


@register_experiment("led-heavy-traffic", title="ε·E[ΣQ] of LED policies as ε → 0 against ζ/2 "
                     "(5×0.2 + 5×0.8 servers, M = 3)",
                     paper="[LED] Theorem 2 (docs/model.md#led-results)")
def led_heavy_traffic(quick: bool = False) -> ExperimentSpec:
    """Theorem 2: a δ-tilted strategy with p independent of ε is heavy-traffic delay
    optimal, ε·E[ΣQ] → ζ/2. N = 10 heterogeneous servers (5 at 0.2, 5 at 0.8), M = 3,
    Poisson arrivals; L-JSQ-Pull and L-JBA-Pull with p̂ = 0.2, L-JBA-Push with p̂ = 0.5,
    d = 2, and LSQ (pull, p̂ = 0.2), against weighted random routing (not optimal) and
    JSQ, for ε from 1 down to 0.02. Slots per point 2·10⁴/ε² (at least 2·10⁵); about 2
    minutes on 2 cores.
    """
    common = {"measure_error": False}
    return ExperimentSpec(
        name="led-heavy-traffic",
        title="LED in heavy traffic: ε·E[ΣQ] → ζ/2",
        description=led_heavy_traffic.__doc__ or "",
        paper="[LED] Theorem 2",
        systems=(SystemSpec("5x0.2,5x0.8", dispatchers=3, label="5×0.2 + 5×0.8, M = 3"),),
        policies=(PolicySpec("l-jsq-pull", {"p": 0.2, **common}, label="L-JSQ-Pull"),
                  PolicySpec("l-jba-pull", {"p": 0.2, **common}, label="L-JBA-Pull"),
                  PolicySpec("l-jba-push", {"p": 0.5, "d": 2, **common}, label="L-JBA-Push"),
                  PolicySpec("lsq", {"update": "pull", "p": 0.2, **common}, label="LSQ"),
                  PolicySpec("jsq", label="JSQ"),
                  PolicySpec("wrand", label="weighted random")),
        epsilons=QUICK_EPSILONS if quick else EPSILONS,
        replications=2,
        slots=SlotsRule(coefficient=2e4, power=2, per="epsilon", minimum=200_000),
        seed=2004,
        options={"imbalance": False},
        figures=(
            FigureSpec("eps-queue", x="epsilon", y="epsilon_total_queue", log_x=True,
                       log_y=True, title="ε·E[ΣQ]", ylabel="ε·E[ΣQ]",
                       references=(ReferenceLine("ζ/2", field="heavy_traffic_limit"),
                                   ReferenceLine("weighted random routing (limit)",
                                                 function=random_routing_limit, style=":"))),
            FigureSpec("queue", x="epsilon", y="mean_total_queue", log_x=True, log_y=True,
                       title="E[ΣQ]", ylabel="E[ΣQ]",
                       references=(ReferenceLine("lower bound",
                                                 field="lower_bound_total_queue"),)),
        ),
    )
