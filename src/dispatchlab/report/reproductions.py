"""The "Reproductions" page: each claim of the three papers, judged from the results store.

Every claim names the catalog experiments that test it and a rule that reads their
stored points — nothing is hard-coded but the claim, the rule and its tolerance. A claim
whose experiment is not in the store reads "not run yet" with the command that runs it.
The verdict words (:data:`VERDICTS`) are defined on the page itself.

The heavy-traffic claims are judged on lim ε·E[X], X = ΣQ − q the excess over the
resource-pooled queue, measured with the coupled estimator (docs/statistics.md#coupled)
and extrapolated to ε = 0 with a CI (:mod:`dispatchlab.report.limit_claims`,
docs/statistics.md#limits), beside [JBT] Eq. (7)'s term and, where the committed table
has them, the exact two-server values (:mod:`dispatchlab.report.exact_evidence`). Points
that are not equilibrated are shown, not judged (:func:`claim_frame`).

    dispatchlab reproductions --store results/reproductions/store.sqlite \
        --out docs/reproductions.md          # what ``make reproductions`` runs
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from functools import cache
from pathlib import Path

import pandas as pd

from dispatchlab.core.errors import require
from dispatchlab.core.paths import guarded_io, write_whole
from dispatchlab.experiments.store import Store
from dispatchlab.report import REPRODUCTIONS_STORE
from dispatchlab.report.comparisons import (
    across_systems,
    beat,
    beats_all,
    sampling_region,
)
from dispatchlab.report.exact_evidence import (
    DEFAULT_EXACT,
    DEFAULT_RANDOM_ROUTING,
    exact_column,
    load_exact,
    load_random_routing,
)
from dispatchlab.report.limit_claims import (
    exact_text,
    excess_curves,
    excess_persists,
    excess_vanishes,
    gap_falls_with_r,
    judged_points,
    leaves_heavy_traffic,
    limit_of,
    separate,
    term_text,
    with_collapse,
)
from dispatchlab.report.many_server_claims import (
    matches,
    per_value,
    scales_like_root,
    waiting_vanishes,
)
from dispatchlab.report.plots import reference_curve, write_figures
from dispatchlab.report.verdicts import (
    LIMIT_TOLERANCE,
    VERDICTS,
    Verdict,
    ci_text,
    fmt,
    missing_curves,
    numeric,
    summary_of,
)
from dispatchlab.specs.experiment import ExperimentSpec

#: a coupled run from a stationary start is equilibrated when it ran this many of X's τ̂
EQUILIBRATED_TAUS = 100

#: the committed store the page is built from
DEFAULT_STORE = REPRODUCTIONS_STORE

@dataclass(frozen=True)
class Claim:
    """One claim of a paper: its key, source and statement, the catalog experiment and
    figure that test it, the rule that judges it from the stored points, and any
    experiments whose points join them."""

    key: str
    paper: str
    statement: str
    experiment: str
    figure: str  # the figure of the experiment that shows it
    judge: Callable[[ExperimentSpec, pd.DataFrame], Verdict]
    extra: tuple[str, ...] = ()  # experiments whose points join the frame (deeper ε)


def _stability_threshold(spec: ExperimentSpec, frame: pd.DataFrame, label: str,
                         threshold: float, margin: float = 0.03) -> Verdict:
    """``label`` is stable below ``threshold`` − margin and unstable above + margin."""
    summary = summary_of(spec, frame, "mean_total_queue")
    missing = missing_curves(summary, [label])
    if missing:
        return missing
    curve = summary[summary["policy"] == label]
    below = curve[curve["x"] < threshold - margin]
    above = curve[curve["x"] > threshold + margin]
    wrong = [f"{x:g}" for x in below[~below["stable"]]["x"]] + \
            [f"{x:g}" for x in above[above["stable"]]["x"]]
    first = curve[~curve["stable"]]["x"].min() if (~curve["stable"]).any() else math.nan
    numbers = (f"predicted ρ̄ = {threshold:.3g}; first unstable load {fmt(first)} "
               f"({len(below)} loads below, {len(above)} above)")
    if above.empty:
        return Verdict("undecided", numbers + "; no load above ρ̄ was run")
    return Verdict("not held" if wrong else "held",
                   numbers + (f"; disagree at ρ = {', '.join(wrong)}" if wrong else ""))


def _approach(spec: ExperimentSpec, frame: pd.DataFrame, labels: list[str], figure: str,
              reference: int) -> Verdict:
    """ε·E[ΣQ] of ``labels`` tends to the figure's ``reference`` line as ε decreases:
    held when within LIMIT_TOLERANCE (or its CI covers the line) at the smallest ε, a trend
    when the relative distance shrinks from the largest to the smallest ε. Points that are
    not equilibrated (:func:`claim_frame`) are named, not judged."""
    chosen = next(f for f in spec.figures if f.name == figure)
    line = chosen.references[reference]
    summary = summary_of(spec, frame, chosen.y)
    missing = missing_curves(summary, labels)
    if missing:
        return missing
    settled = frame.groupby(["system", "policy_label", "x"])["equilibrated"].all()
    statuses, texts = [], []
    for system in sorted(set(summary["system"])):
        xs, ys = reference_curve(line, frame, spec, system)
        limit = dict(zip(xs.tolist(), ys.tolist(), strict=True))
        for label in labels:
            rows = summary[(summary["system"] == system) & (summary["policy"] == label)
                           & summary["stable"]].sort_values("x")
            kept = [bool(settled.get((system, label, x), True)) for x in rows["x"]]
            curve, unsettled = rows[kept], rows[[not k for k in kept]]
            if len(curve) < 2:
                statuses.append("undecided")
                continue
            small, large = curve.iloc[0], curve.iloc[-1]
            target = limit.get(small["x"], math.nan)
            gap_small = small["y"] / target - 1
            gap_large = large["y"] / limit.get(large["x"], math.nan) - 1
            covers = small["ci_low"] <= target <= small["ci_high"]
            if abs(gap_small) <= LIMIT_TOLERANCE or covers:
                statuses.append("held")
            elif abs(gap_small) < abs(gap_large) and \
                    abs(small["ci_high"] / target - 1) < abs(gap_large):  # beyond the noise
                statuses.append("trend")
            elif abs(gap_small) < abs(gap_large):
                statuses.append("undecided")
            else:
                statuses.append("not held")
            where = f"{system}: " if len(set(summary["system"])) > 1 else ""
            texts.append(f"{where}{label} {ci_text(small)} at ε = {small['x']:g} vs "
                         f"{line.label} {fmt(target)} ({gap_small:+.1%}; {gap_large:+.1%} "
                         f"at ε = {large['x']:g})")
            if len(unsettled):
                texts[-1] += (" (ε = " + ", ".join(f"{x:g}" for x in unsettled["x"])
                              + ": not equilibrated, not judged)")
    order = ("not held", "undecided", "trend", "held")
    status = min(statuses, key=order.index) if statuses else "undecided"
    return Verdict(status, "; ".join(texts))


def _between(spec: ExperimentSpec, frame: pd.DataFrame, labels: list[str]) -> Verdict:
    """JBT Theorem 1(1): at the smallest ε, ζ/2 < ε·E[ΣQ] < the random-routing constant."""
    chosen = next(f for f in spec.figures if f.name == "eps-queue")
    summary = summary_of(spec, frame, chosen.y)
    missing = missing_curves(summary, labels)
    if missing:
        return missing
    statuses, texts = [], []
    for system in sorted(set(summary["system"])):
        low = dict(zip(*[a.tolist() for a in reference_curve(chosen.references[0], frame,
                                                             spec, system)], strict=True))
        high = dict(zip(*[a.tolist() for a in reference_curve(chosen.references[1], frame,
                                                              spec, system)], strict=True))
        for label in labels:
            curve = summary[(summary["system"] == system) & (summary["policy"] == label)
                            & summary["stable"]].sort_values("x")
            if curve.empty:
                statuses.append("undecided")
                continue
            row = curve.iloc[0]
            lo, hi = low[row["x"]], high[row["x"]]
            if row["ci_low"] > lo and row["ci_high"] < hi:
                statuses.append("held")
            elif row["y"] <= lo or row["y"] >= hi:
                statuses.append("not held")
            else:
                statuses.append("undecided")
            texts.append(f"{system}: {label} {ci_text(row)} at ε = {row['x']:g}, between "
                         f"{fmt(lo)} and {fmt(hi)}")
    status = ("held" if set(statuses) == {"held"} else
              "not held" if "not held" in statuses else "undecided")
    return Verdict(status, "; ".join(texts))


def _pi_thresholds(spec: ExperimentSpec, frame: pd.DataFrame) -> Verdict:
    from dispatchlab.experiments.catalog.pi import predicted_thresholds

    predicted = predicted_thresholds()
    verdicts = []
    for (servers, label), threshold in predicted.items():
        part = frame[frame["system"].str.startswith(servers)]
        if threshold >= 0.999 or part.empty:
            continue  # throughput optimal (ρ̄ = 1): nothing to cross in the sweep
        verdicts.append((f"{label} on {servers}",
                         _stability_threshold(spec, part, label, threshold)))
    if not verdicts:
        return Verdict("incomplete", "no stored points")
    statuses = [v.status for _, v in verdicts]
    status = ("held" if set(statuses) == {"held"} else
              "not held" if "not held" in statuses else "undecided")
    return Verdict(status, "; ".join(f"{name}: {v.status} ({v.numbers})"
                                     for name, v in verdicts))


LED_REGIMES = ["L-JBA-Pull", "L-JBA-Push", "L-Pod-Pull", "L-Pod-Push"]
LED_HETEROGENEOUS = "5×0.2 + 5×0.8, M = 3"


def _without(frame: pd.DataFrame, system: str, labels: list[str]) -> pd.DataFrame:
    """``frame`` less the points of ``labels`` on ``system``."""
    return frame[~((frame["system"] == system) & frame["policy_label"].isin(labels))]


def _only(frame: pd.DataFrame, system: str) -> pd.DataFrame:
    return frame[frame["system"] == system]


#: the label suffix of ``led-fig1``'s LED curves at Po-2's messages per dispatch event
DISPATCH_UNIT = " (Po-2/dispatch)"
#: the JBT claims' evidence beyond ``jbt-regimes``: ε = 10⁻⁴, JIQ's long run at 10⁻³, and
#: the systems where the gaps are large (catalog.gaps)
JBT_EXTRA = ("jbt-regimes-deep", "jbt-regimes-deeper", "jbt-regimes-long", "jbt-gaps")
PI_REGIMES = ["JSQ (γ = 1)", "JSED (γ = μ)", "Po2 (γ = 1)"]

CLAIMS: tuple[Claim, ...] = (
    Claim("led-fig1-herding", "[LED] Fig. 1",
          "At Po-2's message overhead the LED policies beat JSQ, which herds with M = 10 "
          "dispatchers (50×0.1 + 50×0.5 servers). Batch model (a dispatcher's jobs of a slot "
          "to one server); JSQ with shared ties (every dispatcher picks the same shortest "
          "queue: the herd); LED at 4 messages per job, [LED] §5's count of Po-2's.",
          "led-fig1", "queue",
          lambda s, f: beat(s, f, ["L-JBA-Pull", "L-JSQ-Pull", "L-JBA-Push", "L-JSQ-Push"],
                            "JSQ (shared ties)")),
    Claim("led-fig1-budget", "[LED] Fig. 1",
          "The same at equal message budgets: each LED policy at the messages per arrival "
          "Po-2 spends in the batch model (4 per dispatch event, ≈ 1.3 per job).",
          "led-fig1", "queue",
          lambda s, f: beat(s, f, [label + DISPATCH_UNIT for label in
                                   ("L-JBA-Pull", "L-JSQ-Pull", "L-JBA-Push",
                                    "L-JSQ-Push")], "JSQ (shared ties)")),
    Claim("led-fig1-slotted", "[LED] Fig. 1",
          "In the slot model of the LED/LSQ group's public simulator (per-job dispatch, "
          "geometric service, 50×1 + 50×5, ≈ 300 jobs a slot), L-JBA-Push at 4 messages "
          "per job beats JSQ, which water-fills the true slot-start queues and so herds.",
          "led-fig1-slotted", "queue",
          lambda s, f: beat(s, f, ["L-JBA-Push"], "JSQ (water-filling)")),
    Claim("scd-herd", "[SCD]",
          "Stochastically coordinated dispatching beats full-information JSQ (water-filling), "
          "LSQ, JIQ and weighted random routing on heterogeneous servers with many "
          "dispatchers (50×1 + 50×5, M = 10, per-job dispatch, geometric service).",
          "scd-loads", "queue",
          lambda s, f: beats_all(s, f, "SCD", ["JSQ (water-filling)", "LSQ", "JIQ",
                                                "weighted random"],
                                  _random_routing_exact(s, "weighted random"))),
    Claim("scd-dispatchers", "[SCD]",
          "As dispatchers multiply (M = 1, 10, 100 at ρ = 0.9, the same system), "
          "full-information JSQ (water-filling) herds more — its E[ΣQ] grows with M — while "
          "SCD beats every baseline at every M.",
          "scd-dispatchers", "queue",
          lambda s, f: across_systems(s, f, "SCD", ["JSQ (water-filling)", "TWF", "LSQ",
                                                     "JIQ", "L-JBA-Push", "L-JBA-Pull",
                                                     "weighted random"],
                                       "JSQ (water-filling)")),
    Claim("led-fig1-po2", "[LED] Fig. 1, [HLM]",
          "Po-2 is unstable above ρ ≈ 0.67 on 50×0.1 + 50×0.5 servers (and stable below).",
          "led-fig1", "queue",
          lambda s, f: _stability_threshold(s, f, "Po-2", (1 / 6) / (1225 / 4950))),
    Claim("led-fig2", "[LED] Fig. 2",
          "With rare updates (p̂ = 0.01, d = 2) L-JBA-Push and L-Pod-Push beat L-JSQ-Push.",
          "led-fig2", "queue",
          lambda s, f: beat(s, f, ["L-JBA-Push", "L-Pod-Push"], "L-JSQ-Push"),
          extra=("led-fig2-long",)),
    Claim("led-theorem-2", "[LED] Theorem 2",
          "δ-tilted LED policies (L-JBA, L-Pod; push and pull) with p independent of ε are "
          "heavy-traffic delay optimal: ε·E[X] → 0, i.e. ε·E[ΣQ] → ζ/2 (L-JBA on "
          "5×0.2 + 5×0.8 and 10×0.5; L-Pod on 10×0.5, where it is δ-tilted).", "led-regimes",
          "eps-excess",
          lambda s, f: excess_vanishes(s, _without(f, LED_HETEROGENEOUS,
                                                    ["L-Pod-Pull", "L-Pod-Push"]),
                                        LED_REGIMES),
          extra=("led-regimes-deep", "led-regimes-deeper", "led-regimes-long")),
    Claim("led-pod-untilted", "[LED] Theorem 2 (its condition)",
          "L-Pod is not tilted on heterogeneous servers (`dispatchlab check tilt`), and "
          "there it is not heavy-traffic optimal (5×0.2 + 5×0.8).", "led-regimes",
          "eps-excess",
          lambda s, f: leaves_heavy_traffic(s, _only(f, LED_HETEROGENEOUS),
                                             ["L-Pod-Pull", "L-Pod-Push"],
                                             sampling_region(_only(f, LED_HETEROGENEOUS)))),
    Claim("jbt-jiq", "[JBT] Theorem 1(1)",
          "JIQ (r = 1, a constant threshold) is not heavy-traffic optimal: lim ε·E[X] > 0 "
          "(on the papers' systems and on few slow servers, where the gap is large).",
          "jbt-regimes", "eps-excess",
          lambda s, f: excess_persists(s, f, ["r = 1 (JIQ)"]), extra=JBT_EXTRA),
    Claim("jbt-constant", "[JBT] Theorem 1(1)",
          "Nor is any constant threshold (r = 2, 3, 5): lim ε·E[X] > 0, a gap that falls "
          "with r.", "jbt-gaps", "eps-excess",
          lambda s, f: gap_falls_with_r(excess_persists(s, f, ["r = 2", "r = 3", "r = 5"])),
          extra=("jbt-regimes", *JBT_EXTRA[:-1])),
    Claim("jbt-log", "[JBT] Theorem 2",
          "A logarithmic threshold r = ⌈K·log(1/ε)⌉ is heavy-traffic optimal: ε·E[X] → 0.",
          "jbt-regimes", "eps-excess",
          lambda s, f: excess_vanishes(s, f, ["r = ⌈log(1/ε)⌉", "r = ⌈2 log(1/ε)⌉"]),
          extra=JBT_EXTRA),
    Claim("jbt-separate", "[JBT] Theorems 1–2",
          "So in the limit the logarithmic threshold ⌈log(1/ε)⌉ ends below the constant "
          "r = 3 (at the ε run, its larger r costs more: the order is the limit's).",
          "jbt-regimes", "eps-excess",
          lambda s, f: separate(s, f, "r = ⌈log(1/ε)⌉", "r = 3"), extra=JBT_EXTRA),
    Claim("jbt-poly", "[JBT] Theorem 1(2)",
          "A polynomial threshold r = (1/ε)^1.5 degenerates to random routing: ε·E[ΣQ] → "
          "the random-routing constant.", "jbt-regimes", "eps-queue",
          lambda s, f: _approach(s, f, ["r = ⌈(1/ε)^1.5⌉"], "eps-queue", 1),
          extra=("jbt-poly-long",)),
    Claim("pi-threshold", "[Π] Eq. (3) and the transience theorem",
          "A Π policy is stable below its induced threshold ρ̄ and unstable above it.",
          "pi-stability", "queue", _pi_thresholds),
    Claim("pi-collapse", "[Π] Theorem 4.4",
          "Strictly majorising Π policies (JSQ, JSED, Po2) collapse to the line Q ∝ γ "
          "(E‖P_⊥‖² bounded as ε → 0, P = Q/√γ) and are heavy-traffic optimal: "
          "ε·E[X] → 0, i.e. ε·E[ΣQ] → ζ/2.", "pi-regimes", "eps-excess",
          lambda s, f: with_collapse(excess_vanishes(s, f, PI_REGIMES), f),
          extra=("pi-regimes-deep", "pi-regimes-long")),
    Claim("large-system-waiting", "[Sto15], [MBLW16]",
          "At a fixed load ρ < 1, as N → ∞ the waiting probability of JIQ and of JSQ "
          "vanishes while Po-d's does not (continuous time). Judged on N = 10², 10³, 10⁴, "
          "10⁵ servers (half at μ = 0.1, half at 0.5), M = 10, jobs dispatched one by one, "
          "ρ = 0.9 and 0.95; in the slotted model a slot's jobs arrive together "
          "(docs/model.md#many-servers).", "large-system", "waiting",
          lambda s, f: per_value(f, lambda chosen, scope: waiting_vanishes(
              f, ["JIQ", "JSQ"], ["Po-2"], chosen & (f["system.dispatchers"] == 10), scope),
              sorted(set(f["x"].round(9))), "ρ"),
          extra=("large-system-1e5",)),
    Claim("halfin-whitt-jiq", "[EG18], [MBLW16]",
          "In the Halfin–Whitt regime (1 − ρ = β/√N) JIQ matches JSQ on homogeneous "
          "servers: the same limit, with a waiting probability vanishing like 1/√N. Judged "
          "on N = 10², 10³, 10⁴ servers of μ = 0.1 (a slot is a tenth of a job), M = 10, "
          "β = 0.5, 1, 2, jobs dispatched one by one.", "halfin-whitt", "waiting",
          lambda s, f: per_value(f, lambda chosen, scope: matches(f, "JIQ", "JSQ", chosen,
                                                                  scope),
                                 sorted(set(f["x"].round(9))), "β")),
    Claim("halfin-whitt-root", "[EG18], [MBLW16]",
          "In the Halfin–Whitt regime JSQ and JIQ keep the jobs waiting beyond the one in "
          "service at O(√N): per server they vanish like 1/√N (O(√N) servers hold a "
          "second job). Judged on the jobs waiting per server, "
          "E[Σ_n (Q_n + A_n − 1)⁺]/N = E[ΣQ]/N − ρ(1 − μ) by rate balance "
          "(docs/statistics.md#jobs-waiting), at N = 10², 10³, 10⁴ servers of μ = 0.1, "
          "M = 10, β = 0.5, 1, 2.", "halfin-whitt", "jobs-waiting-vs-n",
          lambda s, f: per_value(f, lambda chosen, scope: scales_like_root(
              f, ["JIQ", "JSQ"], chosen, scope), sorted(set(f["x"].round(9))), "β")),
)


def judge_all(store: Store) -> list[tuple[Claim, Verdict, ExperimentSpec | None]]:
    """Judge every claim of :data:`CLAIMS` from ``store``: (claim, verdict, its experiment's
    spec, or ``None`` when the experiment is not run yet)."""
    out = []
    stored = set(store.experiment_names())
    for claim in CLAIMS:
        if claim.experiment not in stored or not store.count(claim.experiment):
            out.append((claim, Verdict("not run yet", ""), None))
            continue
        spec = ExperimentSpec.from_json(store.experiment_spec(claim.experiment) or "")
        frame = claim_frame(store, claim)
        try:
            verdict = claim.judge(spec, frame)
        except (KeyError, IndexError, StopIteration, ValueError) as error:
            verdict = Verdict("incomplete", f"{type(error).__name__}: {error}")
        out.append((claim, verdict, spec))
    return out


def claim_frame(store: Store, claim: Claim) -> pd.DataFrame:
    """The stored points of a claim's experiment and of its ``extra`` ones; where two runs
    are of the same policy on the same system at the same x (a deeper experiment's longer
    run of a point), the longer one supersedes the shorter. Column ``equilibrated`` is
    false for a run the summary found still relaxing (stability ``undetermined``) and for
    a longer run that a shorter run of the same point disagrees with
    (:func:`_runs_disagree`): such points are shown, not judged."""
    names = [claim.experiment, *(name for name in claim.extra
                                 if name in set(store.experiment_names()))]
    frame = pd.concat([store.frame(name) for name in names], ignore_index=True)
    point = ["system", "policy_label", "x", "replication"]
    ordered = frame.sort_values("slots", kind="stable")
    kept = ordered.drop_duplicates(point, keep="last").sort_index()
    kept["equilibrated"] = kept.apply(_equilibrated, axis=1).astype(bool)
    kept["exact_epsilon_excess"] = exact_column(kept, _exact_table())
    # the rows of each point (a point with a missing value matches none, as == would)
    rows_of_point = ordered.groupby(point, sort=False).indices
    keys = zip(kept.index, kept[point].itertuples(index=False, name=None), strict=True)
    for index, key in keys:
        rows = rows_of_point.get(key, ())
        if len(rows) < 2:  # the point's only run
            continue
        row = kept.loc[index]
        same = ordered.iloc[rows]
        same = same[same.index != index]
        if any(_runs_disagree(shorter, row) for _, shorter in same.iterrows()):
            kept.loc[index, "equilibrated"] = False
    return kept


def _random_routing_exact(spec: ExperimentSpec, label: str) -> dict[str, dict[float, float]]:
    """``label`` → {load: exact E[ΣQ]} of weighted random routing on the spec's (first)
    system, from the committed table (:mod:`dispatchlab.report.exact_evidence`); empty
    when the table does not hold that system."""
    system = spec.systems[0]
    values = load_random_routing(Path(DEFAULT_RANDOM_ROUTING)).get(
        (str(system.servers), system.arrivals, system.service, system.dispatch))
    return {label: values} if values else {}


@cache
def _exact_table() -> dict:
    """The committed exact two-server table (:mod:`dispatchlab.report.exact_evidence`)."""
    return load_exact(Path(DEFAULT_EXACT))


def _equilibrated(row: pd.Series) -> bool:
    """A run whose summary found it stable; or a coupled run from a stationary start (only
    X = ΣQ − q relaxes: ΣQ's slow swings are q's, which is not sampled) that measured ε·E[X]
    with a CI over at least EQUILIBRATED_TAUS of X's autocorrelation times τ̂, whatever the
    trend test on ΣQ's quarter means said."""
    if row.get("stability") == "stable":
        return True
    if row.get("stability") == "unstable" or row.get("estimator") != "coupled" \
            or row.get("start") != "stationary":
        return False
    interval = (math.isfinite(numeric(row, "epsilon_excess_ci_low"))
                and math.isfinite(numeric(row, "epsilon_excess_ci_high")))
    tau = numeric(row, "autocorrelation_time")
    return interval and math.isfinite(tau) and numeric(row, "slots_run") >= EQUILIBRATED_TAUS * tau


def _runs_disagree(shorter: pd.Series, longer: pd.Series) -> bool:
    """Two runs of one point disagree beyond their CIs: on ε·E[X] where both measured it
    (else E[ΣQ]), their CIs do not overlap, or the shorter one has no CI and its value lies
    outside the longer one's CI widened to twice its half-width."""
    excess = math.isfinite(numeric(longer, "epsilon_excess"))
    value, low, high = (("epsilon_excess", "epsilon_excess_ci_low", "epsilon_excess_ci_high")
                        if excess else ("mean_total_queue", "ci_low", "ci_high"))
    l_low, l_high = numeric(longer, low), numeric(longer, high)
    if not (math.isfinite(l_low) and math.isfinite(l_high)):
        return False
    s_low, s_high = numeric(shorter, low), numeric(shorter, high)
    if math.isfinite(s_low) and math.isfinite(s_high):
        return s_high < l_low or l_high < s_low
    centre, half = (l_low + l_high) / 2, (l_high - l_low) / 2
    return abs(numeric(shorter, value) - centre) > 2 * half


def _compute_text(frame: pd.DataFrame) -> str:
    """The slots and CPU time a claim's stored points took."""
    slots = float(pd.to_numeric(frame["slots_run"], errors="coerce").sum())
    seconds = float(pd.to_numeric(frame["seconds"], errors="coerce").sum())
    return f"{len(frame)} points, {slots:.3g} slots, {seconds / 60:.1f} CPU-minutes"


def _slots_text(frame: pd.DataFrame) -> str:
    slots = sorted(set(frame["slots"].astype(int)))
    return f"{slots[0]:,}" if len(slots) == 1 else f"{slots[0]:,}–{slots[-1]:,}"


def render(store: Store, out: Path, store_label: str | None = None) -> str:
    """Write the Markdown page (and its figures next to it); return the text."""
    figure_dir = out.parent / "reproductions"
    label = store_label or store.path.as_posix()
    rows = judge_all(store)
    lines = [
        "# Reproductions",
        "",
        f"Each claim of the three papers, judged from the results store `{label}` by "
        "`make reproductions` (`dispatchlab reproductions`). Nothing on "
        "this page is typed by hand: the verdicts come from the stored points and the rules "
        "in `dispatchlab/report/reproductions.py`; a test rebuilds the page from the "
        "committed store and fails if it differs. CIs are 95 %. The heavy-traffic claims "
        "are judged on ε·E[X], X = ΣQ − q the excess over the resource-pooled queue, "
        "measured with the coupled estimator from a stationary start "
        "([statistics](statistics.md#coupled)): a policy is heavy-traffic delay optimal "
        "exactly when ε·E[X] → 0. α is the local exponent of ε·E[X] ∝ ε^α between the two "
        "smallest ε judged (α ≈ 1: E[X] stays bounded; α ≈ 0: ε·E[X] levels off). The JBT "
        "rows also judge the lab's exact two-server curves (Bernoulli, Poisson and "
        "binomial arrivals; [exact curves](statistics.md#exact-limits)). A claim holds for "
        "a policy where one curve resolves it and none contradicts it; every curve's own "
        "reading is shown.",
        "",
        "Verdicts:",
        "",
        *(f"- **{word}**: {meaning}" for word, meaning in VERDICTS.items()),
        "",
        "| claim | source | verdict | numbers | compute | rerun |",
        "|---|---|---|---|---|---|",
    ]
    drawn: dict[str, ExperimentSpec] = {}
    for claim, verdict, spec in rows:
        names = " ".join([claim.experiment, *claim.extra])
        command = f"`results/reproductions/run.sh {names}`"
        numbers = verdict.numbers.replace("|", "\\|") or "—"
        compute = "—"
        if spec is not None:
            frame = claim_frame(store, claim)
            undetermined = int((frame["stability"] == "undetermined").sum())
            compute = _compute_text(frame) + f"; slots per point {_slots_text(frame)}"
            if undetermined:
                compute += f"; {undetermined} runs judged undetermined (run longer)"
            if claim.experiment not in drawn:
                write_figures(spec, frame, figure_dir / claim.experiment, formats=("png",))
                drawn[claim.experiment] = spec
            numbers += f" ([figure](reproductions/{claim.experiment}/{claim.figure}.png))"
        lines.append(f"| {claim.statement} | {claim.paper} | **{verdict.status}** | "
                     f"{numbers} | {compute} | {command} |")
    lines += _limits_section(store)
    lines += ["", "## Figures", ""]
    for name, spec in sorted(drawn.items()):
        for figure in spec.figures:
            lines.append(f"![{name}: {figure.name}](reproductions/{name}/{figure.name}.png)")
    if not drawn:
        lines.append("None yet: run the commands above, then `make reproductions`.")
    text = "\n".join(lines) + "\n"
    guarded_io("out", out, lambda: out.parent.mkdir(parents=True, exist_ok=True))
    write_whole("out", out, lambda path: path.write_text(text, encoding="utf-8"))
    return text


def _limits_section(store: Store) -> list[str]:
    """The estimated limit of ε·E[X] of every heavy-traffic curve the claims read, with the
    Eq. (7) term at its smallest judged ε (docs/statistics.md#limits)."""
    rows, seen = [], set()
    for claim in CLAIMS:
        if claim.figure != "eps-excess" or claim.experiment not in set(store.experiment_names()):
            continue
        spec = ExperimentSpec.from_json(store.experiment_spec(claim.experiment) or "")
        frame = claim_frame(store, claim)
        curves = excess_curves(spec, frame, sorted(set(frame["policy_label"])))
        if isinstance(curves, Verdict):
            continue
        for system, label, curve, limit in curves:
            if (system, label) in seen:
                continue
            seen.add((system, label))
            estimate, judged = limit_of(curve), judged_points(curve)
            term = term_text(judged.iloc[0]).removeprefix(", Eq. (7) term ") \
                if len(judged) else ""
            at = f"{judged.iloc[0]['x']:g}" if len(judged) else "—"
            if estimate is None:
                why = "no stable point" if curve.empty else "fewer than two points"
                rows.append(f"| {system} | {label} | {why} | — | — | {at} | {term or '—'} | — |")
                continue
            check = "—" if math.isnan(estimate.fit_p) else f"{estimate.fit_p:.2g}"
            rows.append(f"| {system} | {label} | {fmt(estimate.value)} "
                        f"[{fmt(estimate.ci_low)}, {fmt(estimate.ci_high)}] | "
                        f"{estimate.value / limit:+.2%} | {check} | {at} | {term or '—'} | "
                        f"{exact_text(judged)} |")
    if not rows:
        return []
    return ["", "## Heavy-traffic limits", "",
            "lim ε·E[X] estimated from each curve's three smallest ε ≤ 0.01 with an interval "
            "(a + b·ε·r, r = JBT's threshold or 1; [statistics](statistics.md#limits)), "
            "with the share of ζ/2, the χ² p-value of the fit (— with two points), and "
            "[JBT] Eq. (7)'s term E[ΣQ(t+1)·ΣU(t)] at the smallest judged ε, which the "
            "drift identity ties to ε·E[X] ([statistics](statistics.md#drift)); for two "
            "servers with Bernoulli arrivals, the exact ε·E[X] of the slotted chain at the "
            "smallest ε the exact table reaches ([exact answers](exact.md), "
            "`results/exact/jbt_two_server.json`).", "",
            "| system | policy | lim ε·E[X] (95 % CI) | of ζ/2 | fit p | smallest ε | "
            "Eq. (7) term (95 % CI) | exact ε·E[X] |", "|---|---|---|---|---|---|---|---|",
            *rows]


#: the README's generated summary of the page lies between these two lines
README_BEGIN = "<!-- claims: generated from docs/reproductions.md by `make reproductions` -->"
README_END = "<!-- claims: end -->"


def readme_block(page: str) -> str:
    """The README's summary of the claims (claim, source, verdict), read off the page's
    verdict table: one voice for every claim."""
    rows = ["| claim | source | verdict |", "|---|---|---|"]
    table = page.split("| claim | source | verdict |", 1)[1].split("\n\n", 1)[0]
    for line in table.strip().splitlines()[2:]:  # past the header's tail and its rule
        cells = [cell.strip() for cell in line.strip("|").split(" | ")]
        rows.append(f"| {cells[0]} | {cells[1]} | {cells[2]} |")
    return "\n".join([README_BEGIN, *rows, README_END])


def update_readme(readme: Path, page: str) -> None:
    """Replace the README's block between README_BEGIN and README_END by
    :func:`readme_block` of ``page``."""
    require(readme.is_file(), "readme", f"{readme}: no such file")
    text = readme.read_text(encoding="utf-8")
    require(text.count(README_BEGIN) == 1 and text.count(README_END) == 1
            and text.index(README_BEGIN) < text.index(README_END), "readme",
            f"{readme}: needs one line {README_BEGIN!r} and, after it, one {README_END!r}")
    before, rest = text.split(README_BEGIN, 1)
    after = rest.split(README_END, 1)[1]
    write_whole("readme", readme, lambda path: path.write_text(
        before + readme_block(page) + after, encoding="utf-8"))


def write_reproductions(store: Path, out: Path, readme: Path | None = None) -> str:
    """Write the Reproductions page judged from ``store`` to ``out`` (a page that says what
    to run when the store file is missing) and, with ``readme``, the README's summary of its
    verdicts; the page's text. ``out`` is checked before the page is drawn (that takes a
    while), and every file is written whole: an interrupted page or figure is not left
    half-way. Bad input is a ValidationError (``dispatchlab reproductions``: one line,
    exit 2)."""
    require(not out.is_dir(), "out", f"cannot write {str(out)!r}: Is a directory")
    guarded_io("out", out, lambda: out.parent.mkdir(parents=True, exist_ok=True))
    page = _write_page(store, out, str(store))
    if readme is not None:
        update_readme(readme, page)
    return page


def _write_page(path: Path, out: Path, label: str) -> str:
    """:func:`render` the store at ``path`` (an empty page that says what to run when
    there is no such file)."""
    if path.exists():
        with Store(path, readonly=True) as store:
            return render(store, out, store_label=label)
    import tempfile

    with tempfile.TemporaryDirectory() as tmp, Store(Path(tmp) / "empty.sqlite") as empty:
        return render(empty, out, store_label=label)
