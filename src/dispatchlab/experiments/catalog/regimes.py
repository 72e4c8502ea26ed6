"""The heavy-traffic regimes of the three papers, reached with the coupled estimator
(docs/statistics.md#coupled): ε down to 10⁻³ (``*-regimes``) and 10⁻⁴ (``regimes-1e-4``).

Every point runs with ``estimator = "coupled"`` and ``start = "stationary"``: E[q] of the
resource-pooled queue is computed, q(0) is drawn from its stationary law, and the run
measures X = ΣQ − q, whose mean decides the theorems (a policy is heavy-traffic delay
optimal iff ε·E[X] → 0; docs/model.md#pooled-queue). The figures show ε·E[X] and ε·E[ΣQ]
against ε with ζ/2; the Reproductions page judges the claims from the same points.
Each ``X-regimes`` has an ``X-regimes-deep`` twin: a few of its policies at ε = 10⁻⁴.
"""

from __future__ import annotations

from dispatchlab.experiments.catalog import register_experiment
from dispatchlab.experiments.catalog.jbt import THRESHOLD_RULES
from dispatchlab.specs.experiment import ExperimentSpec, SlotsRule
from dispatchlab.specs.figure import FigureSpec, ReferenceLine
from dispatchlab.specs.run import PolicySpec, SystemSpec
from dispatchlab.theory.heavy_traffic import pooled_limit, random_routing_limit

EPSILONS = (0.1, 0.03, 0.01, 0.003, 0.001)
QUICK_EPSILONS = (0.1, 0.03)
#: slots per point: SLOTS_COEFFICIENT/ε² (10⁸ at ε = 10⁻³), one run whose CI is batch
#: means on X; X's autocorrelation time measured near ε = 10⁻³ was 4–13·10⁵ slots, so the
#: window holds ≥ 70 τ̂
SLOTS_COEFFICIENT = 100.0
MIN_SLOTS = 10**6
MAX_SLOTS = 10**8
#: the ε = 10⁻⁴ points (``*-regimes-deep``): one run of DEEP_SLOTS each, within 30
#: CPU-minutes on one core (N = 10 runs 5–8·10⁶ slots a second)
DEEP_EPSILON = 1e-4
DEEP_SLOTS = 2 * 10**9
#: the ε = 10⁻⁴ points that DEEP_SLOTS left too short for an interval (X's τ̂ of 1–1.3·10²
#: blocks of 2·10⁶ slots needs ≥ 2.6·10⁹ measured slots), run again at this length
#: (``*-regimes-deeper``, 10–20 CPU-minutes a point); the longer run supersedes the shorter
DEEPER_SLOTS = 4 * 10**9
OPTIONS = {"estimator": "coupled", "start": "stationary", "delay": "off",
           "imbalance": False}

JBT_SYSTEMS = (SystemSpec("10x0.5", label="homogeneous 10×0.5"),
               SystemSpec("5x0.2,5x0.8", label="heterogeneous 5×0.2 + 5×0.8"))
LED_SYSTEM = SystemSpec("5x0.2,5x0.8", dispatchers=3, label="5×0.2 + 5×0.8, M = 3")
#: L-Pod is δ-tilted on homogeneous servers only (check tilt): its Theorem 2 system
LED_HOMOGENEOUS = SystemSpec("10x0.5", dispatchers=3, label="10×0.5, M = 3")
LED_POLICIES = (
    PolicySpec("l-jba-pull", {"p": 0.2, "measure_error": False}, label="L-JBA-Pull"),
    PolicySpec("l-jba-push", {"p": 0.5, "d": 2, "measure_error": False}, label="L-JBA-Push"),
    PolicySpec("l-pod-pull", {"p": 0.2, "measure_error": False}, label="L-Pod-Pull"),
    PolicySpec("l-pod-push", {"p": 0.5, "d": 2, "measure_error": False}, label="L-Pod-Push"),
)
PI_SYSTEM = SystemSpec("0.2,0.4,0.6,0.8", label="0.2, 0.4, 0.6, 0.8")
PI_POLICIES = (
    PolicySpec("pi-jsq", label="JSQ (γ = 1)"),
    PolicySpec("pi-jsed", label="JSED (γ = μ)"),
    PolicySpec("pi-pod", {"d": 2}, label="Po2 (γ = 1)"),
)


def _figures(extra: tuple[FigureSpec, ...] = ()) -> tuple[FigureSpec, ...]:
    return (
        FigureSpec("eps-excess", x="epsilon", y="epsilon_excess", log_x=True, log_y=True,
                   title="ε·E[X], X = ΣQ − q (→ 0 iff heavy-traffic optimal)",
                   ylabel="ε·E[ΣQ − q]"),
        FigureSpec("eps-queue", x="epsilon", y="epsilon_total_queue", log_x=True,
                   title="ε·E[ΣQ] (coupled estimator)", ylabel="ε·E[ΣQ]",
                   references=(ReferenceLine("ζ/2 (heavy-traffic optimal)",
                                             function=pooled_limit),
                               ReferenceLine("weighted random routing",
                                             function=random_routing_limit, style=":"))),
        IDLE_WHILE_BUSY,
        *extra,
    )


#: [JBT] Eq. (7)'s term, whose limit decides heavy-traffic optimality (drift identity:
#: docs/statistics.md#drift)
IDLE_WHILE_BUSY = FigureSpec("idle-while-busy", x="epsilon", y="idle_while_busy", log_x=True,
                             log_y=True, title="E[ΣQ(t+1)·ΣU(t)] ([JBT] Eq. (7))",
                             ylabel="E[ΣQ(t+1)·ΣU(t)]")


def _spec(name: str, title: str, description: str, paper: str,
          systems: tuple[SystemSpec, ...], policies: tuple[PolicySpec, ...], quick: bool,
          seed: int, extra: tuple[FigureSpec, ...] = (), deep: bool = False,
          deep_slots: int = DEEP_SLOTS) -> ExperimentSpec:
    if deep:
        epsilons, slots, scale = (QUICK_EPSILONS[-1:] if quick else (DEEP_EPSILON,)), \
            deep_slots, 0.0005 * DEEP_SLOTS / deep_slots
    else:
        epsilons = QUICK_EPSILONS if quick else EPSILONS
        slots = SlotsRule(coefficient=SLOTS_COEFFICIENT, power=2, per="epsilon",
                          minimum=MIN_SLOTS, maximum=MAX_SLOTS)
        scale = 0.05
    return ExperimentSpec(
        name=name, title=title, description=description, paper=paper,
        systems=systems, policies=policies, epsilons=epsilons, replications=1,
        slots=slots, seed=seed, options=dict(OPTIONS), quick_scale=scale,
        figures=_figures(extra),
    )


@register_experiment(
    "jbt-regimes",
    title="JBT-r down to ε = 10⁻³: ε·E[ΣQ − q] for constant, logarithmic and polynomial r",
    paper="[JBT] Theorems 1–2 (docs/model.md#jbt-results)",
)
def jbt_regimes(quick: bool = False) -> ExperimentSpec:
    """The threshold rules of ``jbt-thresholds`` (r = 1, 3, ⌈log 1/ε⌉, ⌈2 log 1/ε⌉,
    ⌈(1/ε)^1.5⌉) on 10 × 0.5 and 5 × 0.2 + 5 × 0.8, one dispatcher, for ε from 0.1 to 10⁻³
    with the coupled estimator: 100/ε² slots a point (10⁸ at most), stored as they
    finish (a rerun resumes)."""
    return _spec("jbt-regimes", "JBT-r threshold regimes, coupled estimator",
                 jbt_regimes.__doc__ or "", "[JBT] Zhou, Tan, Shroff, POMACS 2018",
                 JBT_SYSTEMS, THRESHOLD_RULES, quick, seed=1808)


@register_experiment(
    "led-regimes",
    title="LED Theorem 2 down to ε = 10⁻³: L-JBA and L-Pod, push and pull, p fixed",
    paper="[LED] Theorem 2 (docs/model.md#led-results)",
)
def led_regimes(quick: bool = False) -> ExperimentSpec:
    """δ-tilted LED strategies with update probability p independent of ε (L-JBA-Pull and
    L-Pod-Pull with p̂ = 0.2, L-JBA-Push and L-Pod-Push with p̂ = 0.5, d = 2) on 5 × 0.2 +
    5 × 0.8 and on 10 × 0.5 (where L-Pod is tilted; on heterogeneous servers it is not),
    M = 3 dispatchers, ε from 0.1 to 10⁻³, coupled estimator (100/ε² slots a point).
    Theorem 2: a δ-tilted strategy has ε·E[ΣQ] → ζ/2, i.e. ε·E[X] → 0."""
    return _spec("led-regimes", "LED in heavy traffic, coupled estimator",
                 led_regimes.__doc__ or "", "[LED] Zhou, Shroff, Wierman 2020",
                 (LED_SYSTEM, LED_HOMOGENEOUS), LED_POLICIES, quick, seed=2002)


@register_experiment(
    "pi-regimes",
    title="Π Theorem 4.4 down to ε = 10⁻³: JSQ, JSED, Po-2 and E‖P_⊥‖²",
    paper="[Π] Theorem 4.4 (docs/model.md#pi-heavy-traffic)",
)
def pi_regimes(quick: bool = False) -> ExperimentSpec:
    """JSQ, JSED and Po-2 as framework-Π members on 0.2, 0.4, 0.6, 0.8 (one dispatcher),
    ε from 0.1 to 10⁻³, coupled estimator (100/ε² slots a point), with the state-space
    collapse measure E‖P_⊥‖² at the sampling times."""
    return _spec("pi-regimes", "Π in heavy traffic, coupled estimator",
                 pi_regimes.__doc__ or "", "[Π] Luo, Zubeldia 2025",
                 (PI_SYSTEM,), PI_POLICIES, quick, seed=2510, extra=(COLLAPSE,))


COLLAPSE = FigureSpec("collapse", x="epsilon", y="perp_sq", log_x=True, ci=False,
                      title="E‖P_⊥‖² at the sampling times", ylabel="E‖P_⊥‖²")
DEEP_NOTE = (" At ε = 10⁻⁴ only: one run of 2·10⁹ slots a point (5–10 CPU-minutes on one "
             "core), coupled estimator from a stationary start.")


@register_experiment(
    "jbt-regimes-deep",
    title="JBT-r at ε = 10⁻⁴: r = 1, 3 and ⌈log 1/ε⌉ on 10×0.5",
    paper="[JBT] Theorems 1–2 (docs/model.md#jbt-results)",
)
def jbt_regimes_deep(quick: bool = False) -> ExperimentSpec:
    """``jbt-regimes``'s constant and logarithmic rules on 10 × 0.5."""
    return _spec("jbt-regimes-deep", "JBT-r at ε = 10⁻⁴",
                 (jbt_regimes_deep.__doc__ or "") + DEEP_NOTE,
                 "[JBT] Zhou, Tan, Shroff, POMACS 2018", JBT_SYSTEMS[:1], THRESHOLD_RULES[:3],
                 quick, seed=1809, deep=True)


@register_experiment(
    "led-regimes-deep",
    title="LED at ε = 10⁻⁴: L-JBA-Pull on 5×0.2 + 5×0.8, M = 3",
    paper="[LED] Theorem 2 (docs/model.md#led-results)",
)
def led_regimes_deep(quick: bool = False) -> ExperimentSpec:
    """``led-regimes``'s L-JBA-Pull (p̂ = 0.2)."""
    return _spec("led-regimes-deep", "LED at ε = 10⁻⁴", (led_regimes_deep.__doc__ or "")
                 + DEEP_NOTE, "[LED] Zhou, Shroff, Wierman 2020", (LED_SYSTEM,),
                 LED_POLICIES[:1], quick, seed=2003, deep=True)


DEEPER_NOTE = (" At ε = 10⁻⁴ only: one run of 4·10⁹ slots a point (10–20 CPU-minutes on "
               "one core), for the points that 2·10⁹ slots left too short for an interval; "
               "on the Reproductions page a longer run of a point supersedes a shorter one.")


@register_experiment(
    "jbt-regimes-deeper",
    title="JBT-r at ε = 10⁻⁴, 4·10⁹ slots: r = 1 and ⌈log 1/ε⌉ on 10×0.5",
    paper="[JBT] Theorems 1–2 (docs/model.md#jbt-results)",
)
def jbt_regimes_deeper(quick: bool = False) -> ExperimentSpec:
    """``jbt-regimes-deep``'s JIQ and ⌈log 1/ε⌉, twice as long."""
    return _spec("jbt-regimes-deeper", "JBT-r at ε = 10⁻⁴ (4·10⁹ slots)",
                 (jbt_regimes_deeper.__doc__ or "") + DEEPER_NOTE,
                 "[JBT] Zhou, Tan, Shroff, POMACS 2018", JBT_SYSTEMS[:1],
                 (THRESHOLD_RULES[0], THRESHOLD_RULES[2]), quick, seed=1810, deep=True,
                 deep_slots=DEEPER_SLOTS)


@register_experiment(
    "led-regimes-deeper",
    title="LED at ε = 10⁻⁴, 4·10⁹ slots: L-JBA-Pull on 5×0.2 + 5×0.8, M = 3",
    paper="[LED] Theorem 2 (docs/model.md#led-results)",
)
def led_regimes_deeper(quick: bool = False) -> ExperimentSpec:
    """``led-regimes-deep``'s L-JBA-Pull, twice as long."""
    return _spec("led-regimes-deeper", "LED at ε = 10⁻⁴ (4·10⁹ slots)",
                 (led_regimes_deeper.__doc__ or "") + DEEPER_NOTE,
                 "[LED] Zhou, Shroff, Wierman 2020", (LED_SYSTEM,), LED_POLICIES[:1], quick,
                 seed=2004, deep=True, deep_slots=DEEPER_SLOTS)


@register_experiment(
    "pi-regimes-deep",
    title="Π at ε = 10⁻⁴: JSQ and Po-2 on 0.2, 0.4, 0.6, 0.8",
    paper="[Π] Theorem 4.4 (docs/model.md#pi-heavy-traffic)",
)
def pi_regimes_deep(quick: bool = False) -> ExperimentSpec:
    """``pi-regimes``'s JSQ and Po-2."""
    return _spec("pi-regimes-deep", "Π at ε = 10⁻⁴", (pi_regimes_deep.__doc__ or "")
                 + DEEP_NOTE, "[Π] Luo, Zubeldia 2025", (PI_SYSTEM,),
                 (PI_POLICIES[0], PI_POLICIES[2]), quick, seed=2511, extra=(COLLAPSE,),
                 deep=True)


#: JIQ on the heterogeneous system at ε = 10⁻³: 10⁸ slots left its interval ±1.3 wide
LONG_SLOTS = 2 * 10**9


@register_experiment(
    "jbt-regimes-long",
    title="JIQ at ε = 10⁻³, 2·10⁹ slots, on 5×0.2 + 5×0.8",
    paper="[JBT] Theorem 1(1) (docs/model.md#jbt-results)",
)
def jbt_regimes_long(quick: bool = False) -> ExperimentSpec:
    """``jbt-regimes``'s r = 1 (JIQ) on 5 × 0.2 + 5 × 0.8 at ε = 10⁻³ in one run of 2·10⁹
    slots (20 times the regimes' 10⁸, which left its CI ±1.3 wide); on the Reproductions
    page the longer run supersedes the shorter."""
    return ExperimentSpec(
        name="jbt-regimes-long", title="JIQ at ε = 10⁻³ (2·10⁹ slots)",
        description=jbt_regimes_long.__doc__ or "",
        paper="[JBT] Zhou, Tan, Shroff, POMACS 2018", systems=JBT_SYSTEMS[1:],
        policies=THRESHOLD_RULES[:1], epsilons=QUICK_EPSILONS[-1:] if quick else (1e-3,),
        replications=1, slots=LONG_SLOTS, seed=1811, options=dict(OPTIONS),
        quick_scale=0.0005, figures=_figures())


#: the points of ``led-regimes`` and ``pi-regimes`` that 10⁶–10⁸ slots left undecided, run
#: again at this length (L-JBA-Pull and L-Pod-Push on 10 × 0.5, M = 3: 2.8·10⁶ slots a
#: second a core, 6 CPU-minutes a point, AMD EPYC)
RERUN_SLOTS = 10**9


@register_experiment(
    "led-regimes-long",
    title="L-JBA-Pull and L-Pod-Push on 10×0.5, M = 3, at ε = 0.01 and 0.003, 10⁹ slots",
    paper="[LED] Theorem 2 (docs/model.md#led-results)",
)
def led_regimes_long(quick: bool = False) -> ExperimentSpec:
    """``led-regimes``' L-JBA-Pull and L-Pod-Push on 10 × 0.5 at ε = 0.01 and 0.003 in one
    run of 10⁹ slots a point: there 10⁶ and 1.1·10⁷ slots had left L-JBA-Pull judged
    unstable at ε = 0.01 and L-Pod-Push's interval reaching below 0 at ε = 0.003, so that
    each curve had two judged points, too few for a checked fit. On the Reproductions page
    the longer run of a point supersedes the shorter."""
    return ExperimentSpec(
        name="led-regimes-long", title="LED on 10×0.5 at ε = 0.01, 0.003 (10⁹ slots)",
        description=led_regimes_long.__doc__ or "",
        paper="[LED] Zhou, Shroff, Wierman 2020", systems=(LED_HOMOGENEOUS,),
        policies=(LED_POLICIES[0], LED_POLICIES[3]),
        epsilons=QUICK_EPSILONS if quick else (0.01, 0.003), replications=1,
        slots=RERUN_SLOTS, seed=2005, options=dict(OPTIONS), quick_scale=0.001,
        figures=_figures())


@register_experiment(
    "pi-regimes-long",
    title="JSED (γ = μ) on 0.2, 0.4, 0.6, 0.8 at ε = 10⁻³, 2·10⁹ slots",
    paper="[Π] Theorem 4.4 (docs/model.md#pi-heavy-traffic)",
)
def pi_regimes_long(quick: bool = False) -> ExperimentSpec:
    """``pi-regimes``' JSED at ε = 10⁻³ in one run of 2·10⁹ slots (20 times the regimes'
    10⁸, which the summary found still relaxing), its curve's third judged point (7
    CPU-minutes on an AMD EPYC)."""
    return ExperimentSpec(
        name="pi-regimes-long", title="JSED at ε = 10⁻³ (2·10⁹ slots)",
        description=pi_regimes_long.__doc__ or "", paper="[Π] Luo, Zubeldia 2025",
        systems=(PI_SYSTEM,), policies=PI_POLICIES[1:2],
        epsilons=QUICK_EPSILONS[-1:] if quick else (1e-3,), replications=1,
        slots=LONG_SLOTS, seed=2512, options=dict(OPTIONS), quick_scale=0.0005,
        figures=_figures((COLLAPSE,)))


#: r = ⌈(1/ε)^1.5⌉ is random routing but for rare crossings of r, so its X relaxes like
#: random routing's slowest server: 4·q_n/δ_n ≈ 450/ε² slots on 5 × 0.2 + 5 × 0.8 (q_n ≈
#: σ_n²/(2δ_n), δ_n = μ_n·ε/μ_Σ), four times the regimes' 100/ε²; 50 of them a point
POLY_SLOTS = SlotsRule(coefficient=50 * 450.0, power=2, per="epsilon", minimum=10**7,
                       maximum=25 * 10**8)


@register_experiment(
    "jbt-poly-long",
    title="r = ⌈(1/ε)^1.5⌉ run past its relaxation: ε = 0.03, 0.01, 0.003",
    paper="[JBT] Theorem 1(2) (docs/model.md#jbt-results)",
)
def jbt_poly_long(quick: bool = False) -> ExperimentSpec:
    """``jbt-regimes``'s polynomial threshold on both systems at ε = 0.03, 0.01 and 0.003,
    22500/ε² slots a point (2.5·10⁹ at 0.003): 50 relaxation times of random routing's
    slowest server, which ``jbt-regimes``'s 100/ε² slots did not reach."""
    return ExperimentSpec(
        name="jbt-poly-long", title="JBT-r, r = ⌈(1/ε)^1.5⌉, long runs",
        description=jbt_poly_long.__doc__ or "",
        paper="[JBT] Zhou, Tan, Shroff, POMACS 2018", systems=JBT_SYSTEMS,
        policies=THRESHOLD_RULES[4:], epsilons=QUICK_EPSILONS if quick else (0.03, 0.01, 0.003),
        replications=1, slots=POLY_SLOTS, seed=1812, options=dict(OPTIONS),
        quick_scale=0.001, figures=_figures())
