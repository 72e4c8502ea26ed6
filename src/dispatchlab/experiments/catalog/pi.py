"""Framework Π experiments: the stability threshold of [Π] Eq. (3) and heavy-traffic collapse
([Π] Theorem 4.4; docs/model.md#pi-stability, docs/model.md#pi-heavy-traffic).

``pi-stability`` sweeps the load across the induced threshold ρ̄ of several Π policies on
two heterogeneous rate profiles; unstable points (the run passes the lowered bound) are
drawn as gaps, so each curve should stop at its predicted ρ̄ (:func:`predicted_thresholds`).
``pi-collapse`` drives JSQ, JSED and Po-d to heavy traffic and plots E‖P_⊥‖² at the
sampling times (bounded), the direction gap ½‖Q̄/ΣQ̄ − γ/‖γ‖₁‖₁ (→ 0), and ε·E[ΣQ]
against ζ/2; :func:`exponential_ks_distance` compares ε·ΣQ with Exp(mean ζ/2).
"""

from __future__ import annotations

import numpy as np

from dispatchlab.experiments.catalog import register_experiment
from dispatchlab.model.service import parse_rates
from dispatchlab.policies import make_policy
from dispatchlab.policies.framework.fractions import dispatch_fractions
from dispatchlab.simulation.result import Result
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
from dispatchlab.theory.stability import induced_threshold

STABILITY_PROFILES = ("0.1,0.1,0.5,1.0", "2x0.1,2x0.4,0.8")
STABILITY_POLICIES = (
    PolicySpec("pi-rand", label="RAND"),
    PolicySpec("pi-pod", {"d": 2}, label="Po2"),
    PolicySpec("periodic-pod", {"d": 2, "T": 4}, label="periodic Po2 (T=4)"),
    PolicySpec("kslq", {"d": 2}, label="1-SLQ-2"),
    PolicySpec("pi-jsq", label="JSQ"),
)
# 0.97 and 0.99: above Po2's ρ̄ = 0.926 on 2x0.1,2x0.4,0.8 by more than the judging margin
STABILITY_LOADS = (*(round(x, 3) for x in np.arange(0.15, 0.96, 0.05)), 0.97, 0.99)
QUICK_STABILITY_LOADS = (0.2, 0.3, 0.5, 0.7, 0.8, 0.9)
STABILITY_BOUND = 4_000

COLLAPSE_PROFILE = "0.2,0.4,0.6,0.8"
COLLAPSE_POLICIES = (
    PolicySpec("pi-jsq", label="JSQ (γ = 1)"),
    PolicySpec("pi-jsed", label="JSED (γ = μ)"),
    PolicySpec("pi-pod", {"d": 2}, label="Po2 (γ = 1)"),
)
COLLAPSE_EPSILONS = (0.4, 0.2, 0.1, 0.05)
QUICK_COLLAPSE_EPSILONS = (0.4, 0.2, 0.1)
#: the full scale (``pi-collapse-full``): down to ε = 0.01, 10⁴/ε² slots per point uncapped
#: (10⁸ at ε = 0.01), where Po-2's E‖P_⊥‖² should level off if it collapses
FULL_COLLAPSE_EPSILONS = (0.4, 0.2, 0.1, 0.05, 0.02, 0.01)
FULL_COLLAPSE_MAX_SLOTS = 10**9


def predicted_thresholds(profiles=STABILITY_PROFILES,
                         policies=STABILITY_POLICIES) -> dict[tuple[str, str], float]:
    """ρ̄ of each (profile, policy label) from Eq. (3), for comparison with the sweep."""
    out = {}
    for servers in profiles:
        mu = parse_rates(servers)
        for spec in policies:
            policy = make_policy(spec.name, **dict(spec.params))
            region = induced_threshold(dispatch_fractions(policy, mu), mu)
            out[(servers, spec.label or spec.name)] = region.threshold_load
    return out


def exponential_ks_distance(result: Result) -> float:
    """sup_x |P(ε·ΣQ ≤ x) − (1 − e^{−x/(ζ/2)})| from the stored ΣQ distribution
    (the limit law of docs/model.md#pi-heavy-traffic).

    Evaluated at the atoms ε·k of the lattice (both one-sided limits); the last bin of
    the distribution is an overflow bin, so the CDF is only compared below it."""
    pmf = np.asarray(result.total_queue_distribution, dtype=float)
    if pmf.size == 0 or not np.isfinite(result.mean_total_queue):
        return float("nan")
    epsilon = result.epsilon
    mean = result.heavy_traffic_limit
    k = np.arange(pmf.size - 1)
    cdf_right = np.cumsum(pmf)[:-1]
    cdf_left = cdf_right - pmf[:-1]
    target = 1.0 - np.exp(-epsilon * k / mean)
    return float(max(np.abs(cdf_right - target).max(), np.abs(cdf_left - target).max()))


@register_experiment("pi-stability", title="Π policies: simulated stability across the "
                     "induced threshold ρ̄ of Eq. (3)",
                     paper="[Π] Eq. (3) and the transience condition (docs/model.md#pi-stability, "
                     "docs/model.md#pi-transience); [HLM]")
def pi_stability(quick: bool = False) -> ExperimentSpec:
    """Sweep ρ across ρ̄ for RAND, Po2, periodic Po2, 1-SLQ-2 and JSQ on two profiles.

    Predicted ρ̄ (0.1,0.1,0.5,1.0): RAND 0.235, Po2 and periodic Po2 0.706, 1-SLQ-2
    0.824, JSQ 1. On 2x0.1,2x0.4,0.8: RAND 0.278, Po2 0.926, 1-SLQ-2 0.833, JSQ 1. A point is
    drawn only when its run was judged stable; runs pass the bound
    (``options.bound``) soon after ρ̄. Non-monotone verdicts (a stable point above an
    unstable one) would show as a curve resuming after a gap."""
    return ExperimentSpec(
        name="pi-stability",
        title="Stability of Π policies across the induced threshold",
        description=pi_stability.__doc__ or "",
        paper="[Π] Luo & Zubeldia 2025, Eq. (3) and the transience theorem",
        systems=tuple(SystemSpec(servers) for servers in STABILITY_PROFILES),
        policies=STABILITY_POLICIES,
        loads=QUICK_STABILITY_LOADS if quick else STABILITY_LOADS,
        replications=1,
        slots=1_000_000,  # near ρ̄ a stable run still climbs for a few 10⁵ slots
        seed=314,
        options={"bound": STABILITY_BOUND, "delay": "off"},
        quick_scale=0.5,
        figures=(
            FigureSpec("queue", x="load", y="mean_total_queue", log_y=True,
                       title="E[ΣQ] of stable runs (gaps: judged unstable)", ylabel="E[ΣQ]"),
        ),
    )


@register_experiment("pi-collapse", title="Π heavy traffic: state-space collapse, direction "
                     "Q ∝ γ and ε·E[ΣQ] → ζ/2 (JSQ, JSED, Po2)",
                     paper="[Π] Theorem 4.4 (docs/model.md#pi-heavy-traffic)")
def pi_collapse(quick: bool = False) -> ExperimentSpec:
    """JSQ (γ = 1), JSED (γ = μ) and Po2 on 0.2,0.4,0.6,0.8 as ε → 0.

    Measured at the sampling times kT: E‖P_⊥‖² with P = Q/√γ on c = √γ (Theorem 4.4:
    bounded), the same read literally (O = Q/γ on √γ; grows like 1/ε² for γ ≠ 1), the
    direction gap ½‖Q̄/ΣQ̄ − γ/‖γ‖₁‖₁ (→ 0), and ε·E[ΣQ] against ζ/2. The KS distance of
    ε·ΣQ to Exp(ζ/2) comes from :func:`exponential_ks_distance` on the stored results.
    The full scale (ε down to 0.01) is ``pi-collapse-full``."""
    return _collapse_spec("pi-collapse", QUICK_COLLAPSE_EPSILONS if quick else COLLAPSE_EPSILONS,
                          8_000_000, pi_collapse.__doc__ or "")


@register_experiment("pi-collapse-full", title="pi-collapse at full scale: ε down to 0.01 "
                     "(10⁸ slots per point at the last ε)",
                     paper="[Π] Theorem 4.4 (docs/model.md#pi-heavy-traffic)")
def pi_collapse_full(quick: bool = False) -> ExperimentSpec:
    """:func:`pi_collapse` with ε ∈ {0.4, …, 0.05, 0.02, 0.01} and 10⁴/ε² slots per point
    without the 8·10⁶ cap (10⁸ at ε = 0.01, 2 replications): does Po-2's E‖P_⊥‖² level
    off? Points are stored as they finish; a rerun resumes."""
    return _collapse_spec("pi-collapse-full",
                          QUICK_COLLAPSE_EPSILONS if quick else FULL_COLLAPSE_EPSILONS,
                          FULL_COLLAPSE_MAX_SLOTS, pi_collapse_full.__doc__ or "")


def _collapse_spec(name: str, epsilons: tuple[float, ...], max_slots: int,
                   description: str) -> ExperimentSpec:
    diag_figure = dict(x="epsilon", log_x=True)
    return ExperimentSpec(
        name=name,
        title="State-space collapse of Π policies in heavy traffic",
        description=description,
        paper="[Π] Luo & Zubeldia 2025, Theorem 4.4 and the limit law",
        systems=(SystemSpec(COLLAPSE_PROFILE),),
        policies=COLLAPSE_POLICIES,
        epsilons=epsilons,
        replications=2,
        slots=SlotsRule(coefficient=1e4, power=2, per="epsilon", minimum=200_000,
                        maximum=max_slots),
        seed=2718,
        options={"delay": "off"},
        quick_scale=0.25,
        figures=(
            FigureSpec("perp", y="perp_sq", log_y=True, ylabel="E‖P⊥‖²",
                       title="Perpendicular component at kT (bounded as ε → 0)",
                       **diag_figure),
            FigureSpec("perp-literal", y="perp_sq_literal", log_y=True, ylabel="E‖O⊥‖²",
                       title="Literal reading O = Q/γ on c = √γ", **diag_figure),
            FigureSpec("direction", y="direction_gap", ci=False,
                       ylabel="½‖Q̄/ΣQ̄ − γ/‖γ‖₁‖₁", title="Direction of the queue vector",
                       **diag_figure),
            FigureSpec("eps-queue", y="epsilon_total_queue", ylabel="ε·E[ΣQ]",
                       title="ε·E[ΣQ] against ζ/2",
                       references=(ReferenceLine("ζ/2", field="heavy_traffic_limit"),),
                       **diag_figure),
        ),
    )
