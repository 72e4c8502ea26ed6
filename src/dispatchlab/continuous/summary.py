"""What a continuous-time run's replications measured, summarised: the means with their
intervals, the response-time quantiles with theirs, and the stability verdict."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from dispatchlab.continuous import engine
from dispatchlab.stats.estimators import (
    Estimate,
    batch_means,
    mser5_truncation,
    replication_estimate,
    t_interval,
)
from dispatchlab.stats.run_stability import stability_verdict

#: the measured jobs' sections, each with its own response-time histogram: a quantile's
#: interval of one replication comes from the sections' quantiles
SECTIONS = 16


@dataclass
class Replication:
    """One replication's block sums (``engine.B_*`` rows), its response-time histograms
    (one a section of the measured jobs) and its counters."""

    blocks: np.ndarray
    histogram: np.ndarray
    counts: np.ndarray


def truncated(run: Replication) -> tuple[Replication, int]:
    """MSER-5 warm-up detection on one replication (``warmup_method="mser5"``, as in the
    slotted model: :func:`~dispatchlab.stats.estimators.mser5_truncation` on its blocks'
    mean response times): the replication less its leading sections of measured jobs up to
    the truncation point (rounded up to whole sections, so that the quantiles' histograms
    drop the same jobs) and the blocks within them; with the measured jobs it drops."""
    blocks, histogram = run.blocks, run.histogram
    n_blocks, sections = blocks.shape[1], histogram.shape[0]
    series = blocks[engine.B_RESPONSE] / np.maximum(blocks[engine.B_JOBS], 1)
    cut = mser5_truncation(series)
    if cut == 0:
        return run, 0
    dropped_sections = min(-(-cut * sections // n_blocks), sections - 1)
    dropped_blocks = dropped_sections * n_blocks // sections
    kept = Replication(np.ascontiguousarray(blocks[:, dropped_blocks:]),
                       histogram[dropped_sections:], run.counts)
    return kept, int(histogram[:dropped_sections].sum())


def detect_warmup(runs: list[Replication], method: str) -> tuple[list[Replication], float]:
    """The replications as the estimates read them: each less its MSER-5 warm-up with
    ``method`` "mser5" (:func:`truncated`), as they are with "fraction"; with the mean
    measured jobs dropped a replication."""
    if method != "mser5":
        return runs, 0.0
    cut = [truncated(run) for run in runs]
    return [run for run, _ in cut], float(np.mean([dropped for _, dropped in cut]))


def _ratio_estimate(numerators: np.ndarray, denominators: np.ndarray) -> Estimate:
    """Σ numerators / Σ denominators with a batch-means interval from the blocks' own
    ratios (blocks of equal job counts)."""
    total = float(numerators.sum() / denominators.sum())
    usable = denominators > 0
    return batch_means(numerators[usable] / denominators[usable]).shifted(total)


def means(runs: list[Replication]) -> dict[str, Estimate]:
    """E[T], E[slowdown], E[L] and P(busy at arrival): batch means over one replication's
    blocks, or Student's t over several replications' means."""
    rows = {"mean_response": (engine.B_RESPONSE, engine.B_JOBS),
            "mean_slowdown": (engine.B_SLOWDOWN, engine.B_JOBS),
            "mean_in_system": (engine.B_AREA, engine.B_TIME),
            "waiting_probability": (engine.B_BUSY, engine.B_JOBS)}
    out: dict[str, Estimate] = {}
    for name, (top, bottom) in rows.items():
        if len(runs) == 1:
            out[name] = _ratio_estimate(runs[0].blocks[top], runs[0].blocks[bottom])
        else:
            out[name] = replication_estimate(np.array(
                [run.blocks[top].sum() / run.blocks[bottom].sum() for run in runs]))
    return out


def histogram_quantile(histogram: np.ndarray, level: float) -> float:
    """The ``level`` quantile of a response-time histogram: its bin's geometric middle;
    NaN when it falls in an end bin, which also holds the times beyond the histogram's
    range (10⁻⁶ … 10¹⁰) and so cannot say where it lies."""
    total = histogram.sum()
    if total == 0:
        return float("nan")
    index = int(np.searchsorted(np.cumsum(histogram), level * total, side="left"))
    if index == 0 or index >= engine.HISTOGRAM_BINS - 1:
        return float("nan")
    return float(10 ** (engine.HISTOGRAM_LOW_EXP + (index + 0.5) / engine.HISTOGRAM_PER_DECADE))


def quantiles(runs: list[Replication], levels: tuple[float, ...]) -> dict[float, Estimate]:
    """Each response-time quantile of all measured jobs, with a 95 % interval: Student's t
    over the replications' own quantiles, or with one replication over its SECTIONS
    sections' quantiles (sectioning: consecutive stretches of jobs, nearly independent
    when each is long against the queue's memory), centred on the whole run's value and
    never narrower than the histogram bin the quantile falls in (its resolution)."""
    out: dict[float, Estimate] = {}
    pooled = np.sum([run.histogram.sum(axis=0) for run in runs], axis=0)
    for level in levels:
        point = histogram_quantile(pooled, level)
        if len(runs) > 1:
            values = np.array([histogram_quantile(run.histogram.sum(axis=0), level)
                               for run in runs])
            method = f"independent replications ({len(runs)})"
        else:
            values = np.array([histogram_quantile(section, level)
                               for section in runs[0].histogram])
            method = f"sectioning ({values.size} sections of the run)"
        if not np.isfinite(point):
            nan = float("nan")
            out[level] = Estimate(nan, nan, nan, "beyond the histogram's range (10⁻⁶ … 10¹⁰ "
                                  "time units): rescale the sizes or speeds", int(values.size))
            continue
        _, low, high = t_interval(values)
        middle = float(values.mean())
        # never narrower than the point's own bin: the histogram knows the quantile to
        # within it (replications whose quantiles all fall in one bin gave a width of 0)
        edge = 10 ** (0.5 / engine.HISTOGRAM_PER_DECADE)
        out[level] = Estimate(point, min(point + low - middle, point / edge),
                              max(point + high - middle, point * edge), method,
                              int(values.size))
    return out


def stability_of(runs: list[Replication], bound: int, measured: int) -> tuple[str, str]:
    """The worst of the replications' stability verdicts (on the trend of L over the
    measured jobs, or the bound on the jobs present), with its evidence."""
    worst = ("stable", "")
    rank = {"stable": 0, "undetermined": 1, "unstable": 2}
    for run in runs:
        if run.counts[engine.C_STATUS] == engine.FULL:
            return "unstable", f"more than bound = {bound:,} jobs were present at once"
        blocks = run.blocks
        verdict = stability_verdict(
            blocks[engine.B_AREA] / np.maximum(blocks[engine.B_TIME], 1e-300),
            max(measured // blocks.shape[1], 1), hit_bound=False, bound=bound,
            slots_run=measured, overloaded=False, quantity="L", unit="arrival")
        if rank[verdict.verdict] > rank[worst[0]]:
            worst = (verdict.verdict, verdict.evidence)
        elif not worst[1]:
            worst = (worst[0], verdict.evidence)
    return worst
