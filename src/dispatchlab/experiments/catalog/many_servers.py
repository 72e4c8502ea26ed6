"""The many-server regimes (docs/model.md#many-servers): the system grows at a fixed load
(the large-system regime) and at ε = β·μ_Σ/√N (Halfin–Whitt), with M dispatchers fixed or
in proportion to N.

Jobs are dispatched one by one (per-job dispatch), the setting of the fluid limit
(docs/fluid.md) whose values the table beside these points gives
(``results/many_servers/``).
"""

from __future__ import annotations

from collections.abc import Iterable

from dispatchlab.experiments.catalog import register_experiment
from dispatchlab.specs.experiment import ExperimentSpec
from dispatchlab.specs.family import SystemFamily, family_systems
from dispatchlab.specs.figure import FigureSpec
from dispatchlab.specs.run import PolicySpec, SystemSpec

#: half the servers at μ = 0.1, half at 0.5 (a job takes 10 or 2 slots)
CLASSES = "0.5x0.1,0.5x0.5"
SIZES = (100, 1_000, 10_000)
QUICK_SIZES = (100, 1_000)
LOADS = (0.9, 0.95)
BETAS = (0.5, 1.0, 2.0)
#: slots a point: the per-server queues relax within a few hundred slots at these loads
#: (a μ = 0.1 server's busy period at ρ = 0.95 is ~10/(1 − ρ) = 200 slots)
SLOTS = 6_000

POLICIES = (
    PolicySpec("wrand", label="weighted random"),
    PolicySpec("jsq", label="JSQ"),
    PolicySpec("pod", {"d": 2}, label="Po-2"),
    PolicySpec("jiq", label="JIQ"),
    PolicySpec("jbt", {"r": 2}, label="JBT-2"),
    PolicySpec("lsq", label="LSQ"),
    PolicySpec("l-jba-push", label="L-JBA-Push"),
    PolicySpec("l-jba-pull", label="L-JBA-Pull"),
    PolicySpec("l-pod-push", label="L-Pod-Push"),
    PolicySpec("l-pod-pull", label="L-Pod-Pull"),
    PolicySpec("scd", label="SCD"),
)


#: the policies of the claims about N (a curve per policy and family: all of them would be
#: 22 curves in ten colours)
VS_N_POLICIES = ("weighted random", "JSQ", "Po-2", "JIQ")
#: the policies of the herd figure: full information (JSQ, SCD) and local memories (JIQ's
#: idle list, L-JBA-Pull's estimates), each with M = 10 and with M = N/100 dispatchers
HERD_POLICIES = ("JSQ", "SCD", "JIQ", "L-JBA-Pull")


def families(sizes: tuple[int, ...]) -> tuple[SystemFamily, ...]:
    """The two families of the experiments: M = 10 dispatchers, and M = N/100."""
    return (SystemFamily(CLASSES, sizes, dispatchers=10, dispatch="per_job", label="M = 10"),
            SystemFamily(CLASSES, sizes, dispatchers_per_server=0.01, dispatch="per_job",
                         label="M = N/100"))


def _distinct(systems: Iterable[SystemSpec]) -> tuple[SystemSpec, ...]:
    """The systems without a repeat: N = 1000 with M = 10 belongs to both families (the
    store holds it once, under the first one's label)."""
    seen: dict[str, SystemSpec] = {}
    for system in systems:
        seen.setdefault(repr(sorted(system.identity().items())), system)
    return tuple(seen.values())


def _figures(x: str, herd: bool = False) -> tuple[FigureSpec, ...]:
    """E[ΣQ] and P(wait) against the swept axis, and P(wait) against N (a panel per value
    of the axis): the regime's question, whether waiting vanishes as the system grows; with
    ``herd``, E[ΣQ]/N against N for the two families of dispatchers."""
    figures = (
        FigureSpec("queue", x=x, y="mean_total_queue", log_y=True, title="E[ΣQ]",
                   ylabel="E[ΣQ]"),
        FigureSpec("waiting", x=x, y="waiting_probability", title="Waiting probability",
                   ylabel="P(wait)"),
        FigureSpec("waiting-vs-n", x="servers", y="waiting_probability", log_x=True,
                   title="Waiting probability as N grows", ylabel="P(wait)",
                   policies=VS_N_POLICIES),
    )
    if not herd:
        return figures
    return (*figures, FigureSpec(
        "queue-vs-n", x="servers", y="queue_per_server", log_x=True, log_y=True,
        title="Mean queue per server as N grows, M = 10 and M = N/100 dispatchers",
        ylabel="E[ΣQ]/N", policies=HERD_POLICIES))


@register_experiment("large-system", title="N = 10² … 10⁴ servers at ρ = 0.9 and 0.95, M = 10 "
                     "and M = N/100, every policy family", paper="[HW81], [VDK], [JIQ]")
def large_system(quick: bool = False) -> ExperimentSpec:
    """The large-system regime: N = 100, 1000 and 10 000 servers (half at μ = 0.1, half at
    0.5), ρ = 0.9 and 0.95, M = 10 dispatchers or M = N/100, jobs dispatched one by one;
    weighted random, JSQ, Po-2, JIQ, JBT-2, LSQ, L-JBA and L-Pod (push and pull) and SCD,
    four runs of 6000 slots a point (N = 1000 with M = 10 is in both families: one point).
    Budget: 6 CPU-minutes on a 2-core AMD EPYC (N = 10⁴ dominates: 0.1–2 ms a slot)."""
    sizes = QUICK_SIZES if quick else SIZES
    return ExperimentSpec(
        name="large-system", title="Many servers at a fixed load",
        description=large_system.__doc__ or "", paper="[HW81], [VDK], [JIQ]",
        systems=_distinct(system for family in families(sizes)
                          for system in family_systems(family, "families")),
        policies=POLICIES, loads=LOADS, replications=4, slots=SLOTS, warmup=0.3, seed=5301,
        options={"imbalance": False}, quick_scale=0.1, figures=_figures("load", herd=True))


#: the largest systems: N = 10⁵ with M = 10, for the policies whose cost per job stays
#: flat in N (a slot of 2.9·10⁴ jobs: 1–3 ms for weighted random, JSQ, Po-2 and JIQ, 4–12
#: ms for L-Pod-Push, LSQ, L-JBA-Pull and JBT-2; AMD EPYC). Not SCD (its per-slot solve),
#: not the M = N/100 family (M·N = 10⁸ estimates)
HUGE_SIZE = 100_000
HUGE_POLICIES = ("wrand", "jsq", "pod", "jiq", "jbt", "lsq", "l-jba-pull", "l-pod-push")


@register_experiment("large-system-1e5", title="N = 10⁵ servers at ρ = 0.9 and 0.95, M = 10",
                     paper="[HW81], [VDK], [JIQ]")
def large_system_huge(quick: bool = False) -> ExperimentSpec:
    """``large-system`` one decade further for the family with M = 10 dispatchers: N =
    100 000 servers (half at μ = 0.1, half at 0.5), ρ = 0.9 and 0.95, jobs dispatched one
    by one (2.9·10⁴ a slot at ρ = 0.95); weighted random, JSQ, Po-2, JIQ, JBT-2, LSQ,
    L-JBA-Pull and L-Pod-Push, four runs of 6000 slots a point. On the Reproductions page
    and in its figures these points extend ``large-system``'s curves. Budget: 24
    CPU-minutes on a 2-core AMD EPYC (LSQ and L-JBA-Pull 48 s a run, JBT-2 31, the others
    ≤ 21)."""
    size = QUICK_SIZES[-1] if quick else HUGE_SIZE
    family = SystemFamily(CLASSES, (size,), dispatchers=10, dispatch="per_job",
                          label="M = 10")
    return ExperimentSpec(
        name="large-system-1e5", title="Many servers at a fixed load: N = 10⁵",
        description=large_system_huge.__doc__ or "", paper="[HW81], [VDK], [JIQ]",
        systems=tuple(family_systems(family, "families")),
        policies=tuple(p for p in POLICIES if p.name in HUGE_POLICIES), loads=LOADS,
        replications=4, slots=SLOTS, warmup=0.3, seed=5303, options={"imbalance": False},
        quick_scale=0.1, figures=_figures("load")[:2])  # (one N: no figures against N)


@register_experiment("halfin-whitt", title="Halfin–Whitt: ε = β·μ_Σ/√N, β = 0.5, 1, 2, "
                     "N = 10² … 10⁴ homogeneous servers", paper="[HW81]")
def halfin_whitt(quick: bool = False) -> ExperimentSpec:
    """The Halfin–Whitt regime: 1 − ρ = β/√N for β = 0.5, 1 and 2 at N = 100, 1000 and
    10 000 homogeneous servers of μ = 0.1 (a slot is a tenth of a job: close to continuous
    time), M = 10, jobs dispatched one by one; JSQ, JIQ, Po-2 and weighted random, four
    runs of 20 000 slots a point. Budget: 76 CPU-seconds on a 2-core AMD EPYC."""
    sizes = QUICK_SIZES if quick else SIZES
    family = SystemFamily("1x0.1", sizes, dispatchers=10, dispatch="per_job",
                          label="N × 0.1, M = 10")
    return ExperimentSpec(
        name="halfin-whitt", title="The Halfin–Whitt regime",
        description=halfin_whitt.__doc__ or "", paper="[HW81]",
        systems=tuple(family_systems(family, "families")),
        policies=tuple(p for p in POLICIES if p.name in ("wrand", "jsq", "pod", "jiq")),
        betas=BETAS, replications=4, slots=20_000, warmup=0.3, seed=5302,
        options={"imbalance": False}, quick_scale=0.1, figures=(*_figures("beta"), FigureSpec(
            "jobs-waiting-vs-n", x="servers", y="jobs_waiting_per_server", log_x=True,
            log_y=True, title="Jobs waiting beyond the one in service, per server, as N "
            "grows (1/√N: a slope of −1/2)", ylabel="E[Σ(Q_n + A_n − 1)⁺]/N",
            policies=("JSQ", "JIQ"))))
