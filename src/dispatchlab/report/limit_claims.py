"""The heavy-traffic claims: lim ε·E[X] estimated from each curve
(:func:`dispatchlab.stats.limit_fits.estimate_limit`) and judged as a limit — "→ 0", "> 0",
one limit below another — beside [JBT] Eq. (7)'s term, and [Π] Theorem 4.4's collapse
(docs/statistics.md#limits, docs/statistics.md#drift)."""

from __future__ import annotations

import math
from collections.abc import Callable
from functools import cache
from itertools import pairwise

import pandas as pd

from dispatchlab.report.exact_limits import (
    ExactCurve,
    exact_persisting,
    exact_vanishing,
    load_exact_curves,
)
from dispatchlab.report.verdicts import (
    LIMIT_TOLERANCE,
    Verdict,
    ci_text,
    combine,
    fmt,
    missing_curves,
    summary_of,
)
from dispatchlab.specs.experiment import ExperimentSpec
from dispatchlab.stats.limit_fits import LimitEstimate, estimate_limit


def excess_curves(spec: ExperimentSpec, frame: pd.DataFrame, labels: list[str]
                   ) -> list[tuple[str, str, pd.DataFrame, float]] | Verdict:
    """(system, label, rows of ε·E[X] by x, ζ/2) per curve: the stable points with a value,
    each with its ``equilibrated`` mark (``reproductions.claim_frame``), JBT's threshold
    (``scale``), the exact value where one is known (``exact``) and the Eq. (7) term
    (``term_y``, ``term_ci_low``, ``term_ci_high``)."""
    summary = summary_of(spec, frame, "epsilon_excess")
    missing = missing_curves(summary, labels)
    if missing:
        return missing
    term = summary_of(spec, frame, "idle_while_busy").set_index(["system", "policy", "x"])
    by_point = frame.groupby(["system", "policy_label", "x"])
    settled = by_point["equilibrated"].all()
    threshold, exact = (by_point[column].first() if column in frame else pd.Series(dtype=float)
                        for column in ("diag.threshold", "exact_epsilon_excess"))
    limits = frame.groupby("system")["heavy_traffic_limit"].first().to_dict()
    curves = []
    for system in sorted(set(summary["system"])):
        for label in labels:
            rows = summary[(summary["system"] == system) & (summary["policy"] == label)]
            if rows.empty:  # not run on this system (or left out by the claim)
                continue
            curve = rows[rows["stable"] & rows["y"].notna()].sort_values("x").copy()
            keys = [(system, label, x) for x in curve["x"]]
            curve["equilibrated"] = [bool(settled.get(key, True)) for key in keys]
            curve["scale"] = [_threshold(threshold.get(key, math.nan)) for key in keys]
            curve["exact"] = [float(exact.get(key, math.nan)) for key in keys]
            for column in ("y", "ci_low", "ci_high"):
                curve[f"term_{column}"] = [term[column].get(key, math.nan) for key in keys]
            curves.append((system, label, curve, float(limits[system])))
    return curves


def _threshold(value: object) -> float:
    """JBT-r's threshold r of a point (1 for every other policy): the scale of its finite-ε
    term in the limit's fit (:func:`~dispatchlab.stats.limit_fits.estimate_limit`)."""
    count = pd.to_numeric(value, errors="coerce")
    return float(count) if pd.notna(count) and count >= 1 else 1.0


def has_interval(curve: pd.DataFrame) -> pd.Series:
    """Rows of ``curve`` whose CI is finite on both sides and within the support of ε·E[X]
    (≥ 0; an interval reaching below it, stored before runs dropped such intervals, rests
    on too few batches to say anything) at an ε inside the model (> 0)."""
    return (curve["ci_low"].map(math.isfinite) & curve["ci_high"].map(math.isfinite)
            & (curve["ci_low"] >= 0) & (curve["x"] > 0))


def judged_points(curve: pd.DataFrame) -> pd.DataFrame:
    """The points a limit is estimated from: equilibrated, with a finite CI."""
    return curve[curve["equilibrated"] & has_interval(curve)]


def limit_of(curve: pd.DataFrame) -> LimitEstimate | None:
    """lim ε·E[X] of a curve from its judged points (:func:`judged_points`), or ``None``."""
    judged = judged_points(curve)
    return estimate_limit(judged["x"].to_numpy(), judged["y"].to_numpy(),
                          judged["ci_low"].to_numpy(), judged["ci_high"].to_numpy(),
                          scale=judged["scale"].to_numpy())


def term_text(row: pd.Series) -> str:
    """[JBT] Eq. (7)'s term of one point, with its CI where the run recorded its blocks."""
    value = row.get("term_y", math.nan)
    if not math.isfinite(value):
        return ""
    low, high = row.get("term_ci_low", math.nan), row.get("term_ci_high", math.nan)
    interval = (f" [{fmt(low)}, {fmt(high)}]" if math.isfinite(low) and math.isfinite(high)
                else " (no CI: run predates its per-block record)")
    return f", Eq. (7) term {fmt(value)}{interval}"


def exact_text(judged: pd.DataFrame) -> str:
    """The exact ε·E[X] at the smallest judged ε that has one, "ε = …: value" (— if none)."""
    rows = judged[judged["exact"].map(math.isfinite)] if "exact" in judged else judged.iloc[:0]
    if rows.empty:
        return "—"
    return f"{fmt(rows.iloc[0]['exact'])} (ε = {rows.iloc[0]['x']:g})"


def _excess_text(system: str, label: str, curve: pd.DataFrame, limit: float,
                 several: bool, estimate: LimitEstimate | None, reading: str) -> str:
    where = f"{system}: " if several else ""
    judged = judged_points(curve)
    small = judged.iloc[0] if len(judged) else curve.iloc[0]
    exact = small.get("exact", math.nan)
    text = (f"{where}{label} ε·E[X] = {ci_text(small)} at ε = {small['x']:g}"
            + (f" (exact {fmt(exact)})" if math.isfinite(exact) else "")
            + f"{term_text(small)}; ")
    text += (estimate.describe() + f" ({estimate.value / limit:+.1%} of ζ/2 = {fmt(limit)})"
             if estimate is not None else "no limit: fewer than two points with an interval")
    text += f": {reading}"
    for _, row in curve[~curve.index.isin(judged.index)].iterrows():
        why = ("not equilibrated (runs of this point disagree, or too short for their "
               "relaxation)" if not row["equilibrated"]
               else "ε outside the model" if not row["x"] > 0
               else "its interval reaches below 0, the least ε·E[X] can be"
               if row["ci_low"] < 0 else "too short for an interval")
        text += f" (ε = {row['x']:g}: {fmt(row['y'])}, {why}, not judged)"
    return text


#: why a limit fitted on two points judges nothing
TOO_FEW_POINTS = "too few points: a + b·ε through two points cannot be checked; run a third ε"


def vanishing(estimate: LimitEstimate, tolerance: float, rival: float = math.inf,
              error: float = 0.0) -> tuple[str, str]:
    """Heavy-traffic optimal: lim ε·E[X] = 0. Held when the limit's CI reaches down to the
    fit's model error ``error`` (:func:`model_error`; 0 without a control: the CI contains
    0) and its half-width is within ``tolerance`` (LIMIT_TOLERANCE·ζ/2) and below
    ``rival`` (a competing policy's limit, when the claim has one); not held when the
    whole CI lies above the tolerance and the fit holds; below resolution (|limit| ≤ δ)
    otherwise: a small positive intercept is what the extrapolation of a slower approach
    to 0 gives. The complement of :func:`persisting`. Never on two points (a line through
    two points cannot be checked): undecided."""
    if estimate.dof < 1:
        return "undecided", TOO_FEW_POINTS
    if not estimate.fit_holds:
        return "undecided", "the fitted form does not hold at the smallest ε"
    if estimate.ci_low > max(tolerance, error):
        return "not held", "the limit's CI lies above 5 % of ζ/2"
    if estimate.ci_high < 0:
        if -estimate.ci_low <= tolerance:  # X ≥ 0: the form is slightly off near 0
            return "below resolution", (f"the CI lies below 0 (X ≥ 0: the fitted form is "
                                        f"slightly off), |limit| ≤ {estimate.resolution:.3g}")
        return "undecided", "the limit's CI lies below 0 (X ≥ 0): the fitted form is off"
    if estimate.ci_low <= error and estimate.half_width <= min(tolerance, rival):
        return "held", ("the limit's CI contains 0 and is narrow" if estimate.ci_low <= 0
                        else f"the limit's CI reaches the model error {error:.3g} and is "
                        "narrow")
    return "below resolution", f"|limit| ≤ {estimate.resolution:.3g}"


def persisting(estimate: LimitEstimate, tolerance: float, rival: float = math.inf,
               error: float = 0.0) -> tuple[str, str]:
    """Not heavy-traffic optimal: lim ε·E[X] > 0. Held when the limit's CI excludes 0 by
    more than the fit's model error ``error`` (:func:`model_error`) and a + b·ε fits;
    never "not held" — a finite run bounds a positive limit, it cannot refute it: below
    resolution (|limit| ≤ δ) when the CI reaches down to the model error. Never on two
    points: undecided."""
    if estimate.dof < 1:
        return "undecided", TOO_FEW_POINTS
    if not estimate.fit_holds:
        return "undecided", "the fitted form does not hold at the smallest ε"
    if estimate.ci_low > max(error, 0.0):
        return "held", ("the limit's CI excludes 0" if error <= 0 else
                        f"the limit's CI excludes 0 by more than the model error {error:.3g}")
    return "below resolution", f"|limit| ≤ {estimate.resolution:.3g}"


#: policies whose lim ε·E[X] is 0 by theorem (JSQ: [JBT] Theorem 2's r = ∞, [Π] Theorem
#: 4.4): the same fit on their curve measures how far the form's intercept strays from 0
CONTROLS = ("JSQ", "JSQ (γ = 1)")


def model_error(curves: list[tuple[str, str, pd.DataFrame, float]], system: str,
                label: str) -> tuple[float, str]:
    """The fit's model error on ``system``: the largest |endpoint| of the limit's CI fitted
    the same way to a control curve there (:data:`CONTROLS`; never ``label`` itself), and
    the text that says where it comes from; (0, "") without a checked control fit."""
    for control_system, control, curve, _ in curves:
        if control_system != system or control not in CONTROLS or control == label:
            continue
        estimate = limit_of(curve)
        if estimate is not None and estimate.dof >= 1 and estimate.fit_holds:
            return estimate.resolution, (f" ({control}'s fit on this system: "
                                         f"{estimate.describe()})")
    return 0.0, ""


def _judge_excess(spec: ExperimentSpec, frame: pd.DataFrame, labels: list[str],
                  rule: Callable[..., tuple[str, str]],
                  exact_rule: Callable[[ExactCurve, float], tuple[str, str]]) -> Verdict:
    """Each curve's lim ε·E[X] (:func:`~dispatchlab.stats.limit_fits.estimate_limit` on its
    equilibrated points with an interval) judged by ``rule(estimate, LIMIT_TOLERANCE·ζ/2,
    error=…)``, the model error of a control curve on the same system (:func:`model_error`);
    a curve with fewer than two such points is undecided. Beside them, each exact
    two-server curve of a label judged by ``exact_rule``
    (:mod:`dispatchlab.report.exact_limits`). The claim holds for a label where a curve
    resolves it while none contradicts it (:func:`shown_somewhere`: every curve's reading
    is shown), and for every label."""
    curves = excess_curves(spec, frame, labels)
    if isinstance(curves, Verdict):
        return curves
    present = set(frame["policy_label"]) if "policy_label" in frame else set()
    extra = [control for control in CONTROLS if control in present and control not in labels]
    controls = excess_curves(spec, frame, extra) if extra else []
    controls = [] if isinstance(controls, Verdict) else controls
    by_label: dict[str, list[str]] = {label: [] for label in labels}
    texts = []
    several = len({system for system, *_ in curves}) > 1
    for system, label, curve, limit in curves:
        estimate = limit_of(curve)
        error, source = model_error(curves + controls, system, label)
        status, reading = (rule(estimate, LIMIT_TOLERANCE * limit, error=error)
                           if estimate is not None else ("undecided", "cannot say"))
        reading += source
        by_label[label].append(status)
        texts.append(_excess_text(system, label, curve, limit, several, estimate, reading))
    for exact in _exact_curves(tuple(labels)):
        status, reading = exact_rule(exact, LIMIT_TOLERANCE)
        by_label[exact.label].append(status)
        texts.append(f"{exact.system}: {exact.label} {exact.describe()}: {reading}")
    return Verdict(combine([shown_somewhere(statuses) for statuses in by_label.values()]),
                   "; ".join(texts))


@cache
def _exact_curves(labels: tuple[str, ...]) -> tuple[ExactCurve, ...]:
    """The committed exact curves of ``labels`` (read once per process)."""
    return tuple(load_exact_curves(list(labels)))


def shown_somewhere(statuses: list[str]) -> str:
    """Held where one curve resolves the claim and none contradicts it: the others are
    below their resolution (a bound |limit| ≤ δ, no evidence either way) or undecided (too
    few points, a rejected fit), which says nothing against it; else the weakest."""
    if "held" in statuses and "not held" not in statuses:
        return "held"
    return combine(statuses)


def excess_vanishes(spec: ExperimentSpec, frame: pd.DataFrame, labels: list[str]) -> Verdict:
    """Heavy-traffic optimal: every curve's lim ε·E[X] is 0 (:func:`vanishing`)."""
    return _judge_excess(spec, frame, labels, vanishing, exact_vanishing)


def excess_persists(spec: ExperimentSpec, frame: pd.DataFrame, labels: list[str]) -> Verdict:
    """Not heavy-traffic optimal: lim ε·E[X] > 0 where a system resolves it
    (:func:`persisting`)."""
    return _judge_excess(spec, frame, labels, persisting, exact_persisting)


def separate(spec: ExperimentSpec, frame: pd.DataFrame, lower: str, higher: str) -> Verdict:
    """In the limit, ``lower`` ends below ``higher``: on some system ``higher``'s limit of
    ε·E[X] is resolved above 0 and above the CI of ``lower``'s (and on none the other
    way round); where ``higher``'s gap is not resolved, below resolution."""
    curves = excess_curves(spec, frame, [lower, higher])
    if isinstance(curves, Verdict):
        return curves
    by = {(system, label): curve for system, label, curve, _ in curves}
    statuses, texts = [], []
    for system in sorted({system for system, *_ in curves}):
        if (system, lower) not in by or (system, higher) not in by:
            continue
        a, b = (limit_of(by[(system, label)]) for label in (lower, higher))
        if a is None or b is None or not (a.fit_holds and b.fit_holds):
            statuses.append("undecided")
            continue
        if b.ci_low > 0 and a.ci_high < b.ci_low:
            statuses.append("held")
        elif a.ci_low > 0 and b.ci_high < a.ci_low:
            statuses.append("not held")
        else:
            statuses.append("below resolution")
        texts.append(f"{system}: {lower} {a.describe()} vs {higher} {b.describe()}: "
                     f"{statuses[-1]}")
    return Verdict(shown_somewhere(statuses), "; ".join(texts))


#: the constant thresholds the exact tables hold, by r
CONSTANT_THRESHOLDS = {"r = 1 (JIQ)": 1, "r = 2": 2, "r = 3": 3, "r = 5": 5}


def gap_falls_with_r(verdict: Verdict) -> Verdict:
    """[JBT] Theorem 1(1)'s gap falls with r, read on the exact two-server curves beside a
    gap verdict: on each system and arrival law, the limits of the constant thresholds
    whose gap is held there (:func:`~dispatchlab.report.exact_limits.exact_persisting`)
    in order of r. Not held where a larger r leaves a larger gap."""
    by_system: dict[str, list[tuple[int, float]]] = {}
    for curve in _exact_curves(tuple(CONSTANT_THRESHOLDS)):
        if exact_persisting(curve, LIMIT_TOLERANCE)[0] == "held":
            by_system.setdefault(curve.system, []).append(
                (CONSTANT_THRESHOLDS[curve.label], curve.line_limit))
    texts, falls = [], True
    for system, gaps in sorted(by_system.items()):
        if len(gaps) < 2:
            continue
        gaps.sort()
        here = all(later < earlier for (_, earlier), (_, later) in pairwise(gaps))
        falls &= here
        texts.append(f"{system}: " + (" > " if here else ", ").join(
            f"r = {r} {fmt(gap)}" for r, gap in gaps) + ("" if here else " (not falling)"))
    if not texts:
        return verdict
    return Verdict(verdict.status if falls else "not held",
                   verdict.numbers + "; the gap against r, where the exact curves level off "
                   "(the line through their two smallest ε at ε = 0): " + "; ".join(texts))


#: E‖P_⊥‖² counts as bounded when its last decade of ε multiplied it by at most this
COLLAPSE_GROWTH = 1.5


def with_collapse(verdict: Verdict, frame: pd.DataFrame) -> Verdict:
    """[Π] Theorem 4.4's collapse beside its heavy-traffic verdict: per policy, E‖P_⊥‖²
    (P = Q/√γ, the sampled ``diag.perp_sq``) at the smallest ε and its growth over the
    last decade of ε (bounded: ≤ COLLAPSE_GROWTH), and the literal form O = Q/γ where it
    differs (JSED with γ = μ, whose literal form grows like ε⁻²). The claim is held only
    where both parts are."""
    texts, bounded = [], True
    for label, rows in frame.groupby("policy_label", sort=True):
        by_x = rows.groupby("x")[["diag.perp_sq", "diag.perp_sq_literal"]].mean().sort_index()
        if len(by_x) < 2:
            continue
        smallest = by_x.index[0]
        decade = by_x[by_x.index >= 10 * smallest * (1 - 1e-9)]
        if decade.empty:
            continue
        growth = by_x.iloc[0] / decade.iloc[0]
        bounded &= bool(growth["diag.perp_sq"] <= COLLAPSE_GROWTH)
        text = (f"{label} E‖P_⊥‖² = {fmt(by_x.iloc[0]['diag.perp_sq'])} at ε = {smallest:g} "
                f"(×{growth['diag.perp_sq']:.3g} from ε = {decade.index[0]:g})")
        if not math.isclose(growth["diag.perp_sq_literal"], growth["diag.perp_sq"],
                            rel_tol=0.05):
            text += (f"; literal O = Q/γ: {fmt(by_x.iloc[0]['diag.perp_sq_literal'])} "
                     f"(×{growth['diag.perp_sq_literal']:.3g}: the literal form does not "
                     "hold with this γ)")
        texts.append(text)
    if not texts:
        return verdict
    status = verdict.status if bounded else "not held"
    return Verdict(status, verdict.numbers + "; collapse: " + "; ".join(texts))


def leaves_heavy_traffic(spec: ExperimentSpec, frame: pd.DataFrame,
                          labels: list[str], why_unstable: str = "") -> Verdict:
    """Not heavy-traffic optimal, shown the strong way: unstable at the smallest ε run (then
    ``why_unstable`` follows the numbers: what bounds the stability region), or ε·E[X]
    levelling off above 0 (:func:`excess_persists`)."""
    summary = summary_of(spec, frame, "epsilon_excess")
    missing = missing_curves(summary, labels)
    if missing:
        return missing
    smallest = summary["x"].min()
    at = summary[(summary["x"] == smallest) & summary["policy"].isin(labels)]
    if not at.empty and not at["stable"].any():
        unstable = sorted(set(summary[~summary["stable"] & summary["policy"].isin(labels)]["x"]))
        return Verdict("held", f"{', '.join(labels)} unstable at ε = "
                       f"{', '.join(f'{x:g}' for x in unstable)}{why_unstable}")
    return excess_persists(spec, frame, labels)
