"""JBT-r thresholds in heavy traffic: the regimes of Theorems 1–2 of [JBT]
(docs/model.md#jbt-results)."""

from __future__ import annotations

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
from dispatchlab.theory.heavy_traffic import pooled_limit, random_routing_limit

EPSILONS = (0.5, 0.2, 0.1, 0.05, 0.02)
QUICK_EPSILONS = (0.5, 0.2, 0.1)
#: the full scale (``jbt-thresholds-full``): down to ε = 0.005, where Theorem 2's regimes
#: should separate (3·10⁴/ε² = 1.2·10⁹ slots at the last point)
FULL_EPSILONS = (0.5, 0.2, 0.1, 0.05, 0.02, 0.01, 0.005)
FULL_MAX_SLOTS = 2 * 10**9
#: slots per point = SLOTS_COEFFICIENT/ε²: a batch-means CI of ε·E[ΣQ] within ±5 % (at
#: 10⁴/ε² the half-widths reached 7.9 %; the width shrinks as 1/√slots)
SLOTS_COEFFICIENT = 3e4

THRESHOLD_RULES = (
    PolicySpec("jbt", {"r": 1}, label="r = 1 (JIQ)"),
    PolicySpec("jbt", {"r": 3}, label="r = 3"),
    PolicySpec("jbt", {"threshold": "log", "K": 1.0}, label="r = ⌈log(1/ε)⌉"),
    PolicySpec("jbt", {"threshold": "log", "K": 2.0}, label="r = ⌈2 log(1/ε)⌉"),
    PolicySpec("jbt", {"threshold": "poly", "a": 1.5}, label="r = ⌈(1/ε)^1.5⌉"),
)


@register_experiment(
    "jbt-thresholds",
    title="ε·E[ΣQ] of JBT-r against ε for constant, logarithmic and polynomial thresholds",
    paper="[JBT] Theorems 1–2 (our experiment, docs/model.md#jbt-results)",
)
def jbt_thresholds(quick: bool = False) -> ExperimentSpec:
    """JBT-r on N = 10 servers (10×0.5, and 5×0.2 + 5×0.8), Poisson arrivals, Bernoulli
    service, one dispatcher, batch dispatch; ε from 0.5 down to 0.02.

    Expected (Theorems 1–2): constant r (including r = 1, JIQ) strictly between ζ/2 and
    the random-routing constant; r = K·log(1/ε) approaching ζ/2; r = (1/ε)^1.5 approaching
    random routing. Slots per point: 3·10⁴/ε² (10⁵ at least), one long run per point with
    batch-means CIs. The default takes ≈ 20 minutes on 2 cores; the full scale, ε down to
    0.005, is the experiment ``jbt-thresholds-full`` (same points plus ε = 0.01, 0.005; each
    halving of ε costs 4× the slots of the previous point; its points are stored one by
    one, so an interrupted run resumes where it stopped).
    """
    return _spec("jbt-thresholds", QUICK_EPSILONS if quick else EPSILONS,
                 jbt_thresholds.__doc__ or "", 10**9)


@register_experiment(
    "jbt-thresholds-full",
    title="jbt-thresholds at full scale: ε down to 0.005 (≈ 1.6·10¹⁰ slots in all)",
    paper="[JBT] Theorems 1–2 (our experiment, docs/model.md#jbt-results)",
)
def jbt_thresholds_full(quick: bool = False) -> ExperimentSpec:
    """:func:`jbt_thresholds` with ε ∈ {0.5, …, 0.02, 0.01, 0.005}: the regime where
    ⌈K log(1/ε)⌉ should separate from r = 3 and approach ζ/2, and (1/ε)^1.5 turn towards
    the random-routing constant. 3·10⁴/ε² slots per point (1.2·10⁹ at ε = 0.005); run it
    with all cores (``--workers``) or a cluster; points are stored as they finish, and a
    rerun skips them (resume)."""
    return _spec("jbt-thresholds-full", QUICK_EPSILONS if quick else FULL_EPSILONS,
                 jbt_thresholds_full.__doc__ or "", FULL_MAX_SLOTS)


def _spec(name: str, epsilons: tuple[float, ...], description: str,
          max_slots: int) -> ExperimentSpec:
    return ExperimentSpec(
        name=name,
        title="JBT-r threshold regimes in heavy traffic",
        description=description,
        paper="[JBT] Zhou, Tan, Shroff, POMACS 2018",
        systems=(SystemSpec("10x0.5", label="homogeneous 10×0.5"),
                 SystemSpec("5x0.2,5x0.8", label="heterogeneous 5×0.2 + 5×0.8")),
        policies=THRESHOLD_RULES,
        epsilons=epsilons,
        replications=1,
        slots=SlotsRule(coefficient=SLOTS_COEFFICIENT, power=2, per="epsilon",
                        minimum=100_000, maximum=max_slots),
        seed=1808,
        options={"delay": "off"},
        quick_scale=0.05,
        figures=(
            FigureSpec("eps-queue", x="epsilon", y="epsilon_total_queue", log_x=True, log_y=True,
                       title="ε·E[ΣQ] of JBT-r", ylabel="ε·E[ΣQ]",
                       references=(
                           ReferenceLine("ζ/2 (heavy-traffic optimal)", function=pooled_limit),
                           ReferenceLine("weighted random routing", function=random_routing_limit,
                                         style=":"),
                       )),
            FigureSpec("idle-while-busy", x="epsilon", y="idle_while_busy", log_x=True,
                       log_y=True, ci=False, title="E[‖Q(t+1)‖₁·‖U(t)‖₁] (Eq. (7))",
                       ylabel="idle while busy"),
            FigureSpec("distance", x="epsilon", y="distance_to_region", log_x=True, ci=False,
                       title="E[d(Q, R^(r))]", ylabel="mean distance to R^(r)"),
            FigureSpec("empty-memory", x="epsilon", y="empty_memory_fraction", log_x=True,
                       ci=False, title="Dispatches that found the memory empty",
                       ylabel="fraction"),
        ),
    )
