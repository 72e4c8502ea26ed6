"""Systems chosen so that the positive heavy-traffic gaps of [JBT] Theorem 1(1) are large
enough to measure at ε ≥ 10⁻³.

Why the papers' systems cannot show them: [JBT] Eq. (7) says JBT-r is heavy-traffic
optimal iff E[ΣQ(t+1)·ΣU(t)] → 0, i.e. no server idles while the others hold Θ(1/ε)
jobs. A server below the threshold gets every arrival of its dispatcher, so it idles only
after r slots in a row without one: the gap falls roughly like P(A_Σ = 0)^r. On 10 × 0.5
with Poisson arrivals P(A_Σ = 0) ≈ e⁻⁵ ≈ 0.007, so the limit for r = 3 is of order 10⁻⁶ —
below what any run resolves — and with Bernoulli arrivals on servers with μ_Σ = 1 it is
P(A_Σ = 0) = ε itself, which sends the gap to 0 with ε. Few slow servers with small
batches (μ_Σ = 0.5: P(A_Σ = 0) ≈ 0.5 for Bernoulli, 0.6 for Poisson arrivals), the
two-server setting of the Kelly–Laws conjecture that motivates [JBT], keep it large.
"""

from __future__ import annotations

from dispatchlab.experiments.catalog import register_experiment
from dispatchlab.experiments.catalog.regimes import EPSILONS, OPTIONS, QUICK_EPSILONS, _figures
from dispatchlab.specs.experiment import ExperimentSpec, SlotsRule
from dispatchlab.specs.run import PolicySpec, SystemSpec

GAP_SYSTEMS = (
    SystemSpec("0.25,0.25", arrivals="bernoulli", label="two servers 0.25, Bernoulli"),
    SystemSpec("0.1,0.4", arrivals="bernoulli", label="two servers 0.1 + 0.4, Bernoulli"),
    SystemSpec("5x0.1", arrivals="poisson", label="5×0.1, Poisson"),
)
GAP_RULES = (
    PolicySpec("jbt", {"r": 1}, label="r = 1 (JIQ)"),
    PolicySpec("jbt", {"r": 2}, label="r = 2"),
    PolicySpec("jbt", {"r": 3}, label="r = 3"),
    PolicySpec("jbt", {"r": 5}, label="r = 5"),
    PolicySpec("jbt", {"threshold": "log", "K": 1.0}, label="r = ⌈log(1/ε)⌉"),
    PolicySpec("jsq", label="JSQ"),
)
#: slots per point: 400/ε² (4·10⁸ at ε = 10⁻³): μ_Σ = 0.5 relaxes about as slowly as the
#: regimes' systems, and two to five servers run ≥ 10⁷ slots a second
GAP_SLOTS = SlotsRule(coefficient=400.0, power=2, per="epsilon", minimum=10**6,
                      maximum=4 * 10**8)


@register_experiment(
    "jbt-gaps",
    title="JBT-r where the gaps show: ε·E[X] and the Eq. (7) term on few slow servers",
    paper="[JBT] Theorem 1(1), Eq. (7) (docs/model.md#jbt-results)",
)
def jbt_gaps(quick: bool = False) -> ExperimentSpec:
    """r = 1, 2, 3, 5, ⌈log 1/ε⌉ and JSQ on two servers (0.25 + 0.25 and 0.1 + 0.4,
    Bernoulli arrivals) and on 5 × 0.1 (Poisson), one dispatcher, ε from 0.1 to 10⁻³ with
    the coupled estimator (400/ε² slots a point): systems where a server empties while
    the other holds Θ(1/ε) jobs often enough for lim ε·E[X] > 0 to be measured."""
    return ExperimentSpec(
        name="jbt-gaps", title="JBT-r heavy-traffic gaps on few slow servers",
        description=jbt_gaps.__doc__ or "", paper="[JBT] Zhou, Tan, Shroff, POMACS 2018",
        systems=GAP_SYSTEMS, policies=GAP_RULES,
        epsilons=QUICK_EPSILONS if quick else EPSILONS, replications=1, slots=GAP_SLOTS,
        seed=3407, options=dict(OPTIONS), quick_scale=0.01, figures=_figures(),
    )
