"""The Reproductions page's comparison rules: which policy has the smaller E[ΣQ], judged at
every load (or system) where the curves are resolved, with one reading per policy by bands
of load, exact values standing for a curve where the lab has them, and the reading of an
instability a sampling rule cannot escape (:mod:`dispatchlab.report.reproductions` holds
the claims that use them)."""

from __future__ import annotations

import math

import pandas as pd

from dispatchlab.model.service import parse_rates
from dispatchlab.report.verdicts import (
    Verdict,
    ci_text,
    combine,
    fmt,
    missing_curves,
    summary_of,
)
from dispatchlab.specs.experiment import ExperimentSpec
from dispatchlab.theory.stability import pod_threshold


def beat(spec: ExperimentSpec, frame: pd.DataFrame, better: list[str],
            worse: str, exact: dict[str, dict[float, float]] | None = None) -> Verdict:
    """Each policy of ``better`` has a smaller E[ΣQ] than ``worse``, judged at every load
    where they were all run and every one is resolved (:func:`resolved`; an unstable
    ``worse`` against stable ``better`` counts); a load where one is not is named, not
    judged. One reading per policy, by bands of loads (:func:`_bands`), and the row's
    status: held when every policy wins at the highest load judged and loses at none;
    held in part when some (policy, load) wins and some loses; not held when none wins.
    ``exact``: label → {load: exact E[ΣQ]}, which stands for that curve's estimate there
    (the text says so, with the estimate)."""
    summary = summary_of(spec, frame, "mean_total_queue")
    missing = missing_curves(summary, [*better, worse])
    if missing:
        return missing
    summary, shown = _with_exact(summary, exact or {})

    def text(label: str, row: pd.Series) -> str:
        return shown.get((label, float(row["x"])), f"{label} {ci_text(row)}")
    loads = sorted(set.intersection(*(set(summary[summary["policy"] == p]["x"])
                                      for p in [*better, worse])))
    skipped: list[str] = []
    outcomes: dict[str, list[tuple[float, str]]] = {label: [] for label in better}
    for x in loads:
        at = summary[summary["x"] == x].set_index("policy")
        unresolved = [label for label in [*better, worse] if not resolved(at.loc[label])]
        if unresolved:
            skipped.append(f"{spec.axis} = {x:g}: " + ", ".join(
                text(label, at.loc[label]) for label in unresolved)
                + " not equilibrated (an interval below 0 or none), not judged")
            continue
        for label in better:
            outcomes[label].append((x, _outcome(at.loc[label], at.loc[worse])))
    judged = [x for x, _ in outcomes[better[0]]]
    if not judged:
        return Verdict("undecided", "; ".join(skipped) or "no common load")
    status = _comparison_status(
        [outcome for pairs in outcomes.values() for _, outcome in pairs],
        all(pairs[-1][1] == "held" for pairs in outcomes.values()))
    top = judged[-1]
    at = summary[summary["x"] == top].set_index("policy")
    texts = [text(label, at.loc[label]) + _messages(frame, label, top) for label in better]
    return Verdict(status, _readings(spec.axis, outcomes) + f"; {spec.axis} = {top:g}: "
                   + "; ".join(texts) + f" vs {text(worse, at.loc[worse])}"
                   + _messages(frame, worse, top) + "".join(f" ({note})" for note in skipped))


def _with_exact(summary: pd.DataFrame, exact: dict[str, dict[float, float]]
                ) -> tuple[pd.DataFrame, dict[tuple[str, float], str]]:
    """The summary with each exact value in place of its curve's estimate (an interval of
    width 0), and the text of each such point: the exact value, then the estimate."""
    summary = summary.copy()
    shown: dict[tuple[str, float], str] = {}
    for index, row in summary.iterrows():
        value = exact.get(row["policy"], {}).get(round(float(row["x"]), 12))
        if value is None:
            continue
        shown[(row["policy"], float(row["x"]))] = (
            f"{row['policy']} {fmt(value)} (exact; simulated {ci_text(row)})")
        summary.loc[index, ["y", "ci_low", "ci_high"]] = value
        summary.loc[index, "stable"] = True
    return summary, shown


def _comparison_status(outcomes: list[str], decided: bool) -> str:
    """A comparison's status from its outcomes at each (policy, load or system): held in
    part when some win and some lose; not held when some lose and none wins; otherwise
    held when ``decided`` (the claim's own condition: every policy wins at the highest
    load judged, or the herd grows), undecided when not."""
    if "held" in outcomes and "not held" in outcomes:
        return "held in part"
    if "not held" in outcomes:
        return "not held"
    return "held" if decided else "undecided"


def _outcome(better: pd.Series, worse: pd.Series) -> str:
    """Whether ``better`` beats ``worse`` at one load: by stability, else by disjoint CIs."""
    if better["stable"] != worse["stable"]:
        return "held" if better["stable"] else "not held"
    if better["ci_high"] < worse["ci_low"]:
        return "held"
    if worse["ci_high"] < better["ci_low"]:
        return "not held"
    return "undecided"


def _bands(axis: str, pairs: list[tuple[float, str]]) -> str:
    """One policy's outcomes along the axis as bands: "held at every load judged (0.5–0.98)",
    or "held at load 0.5–0.9, not held at 0.95–0.98"."""
    runs: list[tuple[str, float, float]] = []
    for x, outcome in pairs:
        if runs and runs[-1][0] == outcome:
            runs[-1] = (outcome, runs[-1][1], x)
        else:
            runs.append((outcome, x, x))

    def span(low: float, high: float) -> str:
        return f"{low:g}" if low == high else f"{low:g}–{high:g}"

    if len(runs) == 1:
        outcome, low, high = runs[0]
        return f"{outcome} at every {axis} judged ({span(low, high)})"
    return f"{runs[0][0]} at {axis} {span(*runs[0][1:])}, " + ", ".join(
        f"{outcome} at {span(low, high)}" for outcome, low, high in runs[1:])


def _readings(axis: str, outcomes: dict[str, list[tuple[float, str]]]) -> str:
    """The per-policy readings, policies with the same bands named together."""
    grouped: dict[str, list[str]] = {}
    for label, pairs in outcomes.items():
        grouped.setdefault(_bands(axis, pairs), []).append(label)
    return "; ".join(f"{', '.join(labels)}: {bands}" for bands, labels in grouped.items())


def resolved(point: pd.Series) -> bool:
    """Whether a curve's point can be compared: judged unstable (that is the evidence), or
    stable with an interval inside the support of E[ΣQ] (ci_low ≥ 0). A t-interval from two
    short runs reached below 0 for a queue length: such a point is not equilibrated."""
    if not point["stable"]:
        return True
    low = float(point["ci_low"])
    return math.isfinite(low) and low >= 0


def beats_all(spec: ExperimentSpec, frame: pd.DataFrame, label: str, others: list[str],
               exact: dict[str, dict[float, float]] | None = None) -> Verdict:
    """``label`` has a smaller E[ΣQ] than each of ``others`` (:func:`beat` against each,
    with the ``exact`` values it has): held when it beats every one, held in part when it
    beats some and not others."""
    verdicts = [beat(spec, frame, [label], other, exact) for other in others]
    statuses = [v.status for v in verdicts]
    if set(statuses) == {"not held"}:
        status = "not held"
    elif "not held" in statuses and {"held", "held in part"} & set(statuses):
        status = "held in part"
    else:
        status = combine(statuses)
    return Verdict(status, "; ".join(f"vs {other}: {v.status} ({v.numbers})"
                                     for other, v in zip(others, verdicts, strict=True)))


def _messages(frame: pd.DataFrame, label: str, x: float) -> str:
    """A policy's messages per arrival at ``x`` (mean over its runs), as a suffix."""
    rows = frame[(frame["policy_label"] == label) & (frame["x"] == x)]
    value = float(pd.to_numeric(rows["messages_per_arrival"], errors="coerce").mean())
    return f" ({value:.3g} msg/arrival)" if math.isfinite(value) else ""


def sampling_region(frame: pd.DataFrame) -> str:
    """Why a policy that picks among d servers sampled uniformly (its ``pod_d``) is
    unstable near capacity on the frame's system: [HLM]'s bound ρ̄ (the m slowest servers
    get a job whenever all d samples fall among them), whatever it does with the samples;
    and what that says."""
    if frame.empty or "params.pod_d" not in frame:
        return ""
    d = int(frame["params.pod_d"].dropna().iloc[0])
    rates = parse_rates(str(frame["system.servers"].iloc[0]))
    bar = pod_threshold(rates, d) / float(rates.sum())
    if bar >= 1:  # the samples bound nothing below capacity
        return ""
    return (f": choosing among d = {d} servers sampled uniformly, whatever the estimates, "
            f"serves at most ρ̄ = {bar:.3g} of the capacity ([HLM]'s bound), so every "
            f"ε ≤ {1 - bar:.3g} is past the stability region — not heavy-traffic optimal "
            "because unstable near capacity. (Theorem 2's tilt is sufficient, not "
            "necessary: the lack of tilt alone would not show this.)")


def across_systems(spec: ExperimentSpec, frame: pd.DataFrame, label: str,
                    others: list[str], herd: str) -> Verdict:
    """``label`` beats each of ``others`` on every system of the experiment, in the spec's
    order (one load: ``scd-dispatchers``' M = 1, 10, 100), each by stability or disjoint
    CIs (:func:`_outcome`), and ``herd``'s E[ΣQ] grows from the first system to the last
    (CIs apart); held when both are, held in part when ``label`` wins somewhere and loses
    somewhere. ``label``'s own first and last values are shown beside ``herd``'s."""
    summary = summary_of(spec, frame, "mean_total_queue")
    missing = missing_curves(summary, [label, *others, herd])
    if missing:
        return missing
    systems = [s.label for s in spec.systems if s.label in set(summary["system"])]
    outcomes, texts = [], []
    for system in systems:
        at = summary[summary["system"] == system].set_index("policy")
        if label not in at.index:
            continue
        results = {other: _outcome(at.loc[label], at.loc[other]) for other in others
                   if other in at.index}
        outcomes += results.values()
        lost = [other for other, outcome in results.items() if outcome != "held"]
        texts.append(f"{system}: {label} {ci_text(at.loc[label])} "
                     + ("beats every one" if not lost else "does not beat "
                        + ", ".join(f"{other} {ci_text(at.loc[other])} ({results[other]})"
                                    for other in lost)))
    ends = [summary[(summary["system"] == system)].set_index("policy")
            for system in (systems[0], systems[-1])]
    grows = bool(ends[0].loc[herd]["stable"] and ends[1].loc[herd]["stable"]
                 and ends[1].loc[herd]["ci_low"] > ends[0].loc[herd]["ci_high"])
    status = _comparison_status(outcomes, set(outcomes) == {"held"} and grows)
    growth = (f"{herd} {ci_text(ends[0].loc[herd])} → {ci_text(ends[1].loc[herd])} "
              f"({'grows' if grows else 'does not grow beyond its CIs'}), {label} "
              f"{ci_text(ends[0].loc[label])} → {ci_text(ends[1].loc[label])} from "
              f"{systems[0]} to {systems[-1]}")
    return Verdict(status, f"vs {', '.join(others)}: " + "; ".join(texts) + f"; {growth}")
