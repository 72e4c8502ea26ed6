"""``simulate(system, policy, …) -> Result``: the one entry point that runs a policy."""

from __future__ import annotations

import math
from dataclasses import replace
from typing import Any

import numpy as np

from dispatchlab.engine import loop
from dispatchlab.engine.interface import MESSAGE_KINDS
from dispatchlab.engine.raw import RawRun, default_bound, run_once
from dispatchlab.errors import ValidationError, require
from dispatchlab.model.system import System
from dispatchlab.policies.base import Policy, make_policy
from dispatchlab.result import Result
from dispatchlab.stats.estimators import (
    Estimate,
    batch_means,
    delay_quantiles,
    mser5_truncation,
    replication_estimate,
)
from dispatchlab.stats.stability import StabilityVerdict, below_lower_bound, stability_verdict
from dispatchlab.theory.bounds import heavy_traffic_limit, lower_bound_total_queue

WARMUP_FRACTION = 0.1
WARMUP_METHODS = ("fraction", "mser5")


def simulate(
    system: System,
    policy: Policy | str,
    *,
    slots: int = 1_000_000,
    warmup: int | None = None,
    seed: int = 0,
    replications: int = 1,
    warmup_method: str = "fraction",
    bound: int | None = None,
    track_delay: bool = True,
    detail: bool = True,
    policy_params: dict[str, Any] | None = None,
) -> Result:
    """Simulate ``policy`` on ``system`` for ``slots`` slots.

    Args:
        system: the validated model.
        policy: a :class:`Policy`, or a registered name (with ``policy_params``).
        slots: slots per replication.
        warmup: slots discarded before measuring (default 10 % of ``slots``).
        seed: the root seed; replication r uses ``SeedSequence(seed).spawn(R)[r]``.
        replications: independent replications; with R ≥ 2 the CI comes from their
            means, otherwise from batch means within the run.
        warmup_method: ``fraction`` (fixed warm-up) or ``mser5`` (MSER-5 truncation of
            the ΣQ series after the fixed warm-up, applied to the mean and CI of ΣQ).
        bound: ΣQ at which the run stops and is judged unstable.
        track_delay: time every job (FIFO) for the delay distribution.
        detail: measure the queue-imbalance quantities every slot.
    """
    if isinstance(policy, str):
        policy = make_policy(policy, **(policy_params or {}))
    else:
        require(not policy_params, "policy_params",
                "give parameters to make_policy, not with a Policy object")
    require(_is_int(slots) and slots >= 1, "slots", f"must be an integer ≥ 1 (got {slots!r})")
    require(warmup is None or _is_int(warmup), "warmup", f"must be an integer (got {warmup!r})")
    require(_is_int(seed) and seed >= 0, "seed", f"must be an integer ≥ 0 (got {seed!r})")
    require(_is_int(replications), "replications",
            f"must be an integer ≥ 1 (got {replications!r})")
    warmup = int(slots * WARMUP_FRACTION) if warmup is None else warmup
    require(0 <= warmup < slots, "warmup", f"must be in [0, slots) (got {warmup})")
    require(replications >= 1, "replications", f"must be ≥ 1 (got {replications})")
    require(warmup_method in WARMUP_METHODS, "warmup_method",
            f"allowed: {', '.join(WARMUP_METHODS)}")
    policy.check_system(system)
    bound = default_bound(system) if bound is None else bound
    seeds = ([np.random.SeedSequence(seed)] if replications == 1
             else np.random.SeedSequence(seed).spawn(replications))
    try:  # policies check their memory first (dispatchlab.memory); this is the backstop
        kernel = policy.kernel(system)
        runs = [run_once(system, kernel, slots=int(slots), warmup=warmup, seed=s, bound=bound,
                         track_delay=track_delay, detail=detail, policy=policy.name)
                for s in seeds]
    except MemoryError:
        raise ValidationError("memory", f"out of memory running {policy.name} on N = "
                              f"{system.n_servers} servers, M = {system.dispatchers} "
                              "dispatchers") from None
    return _summarize(system, policy, runs, seed=seed, warmup_method=warmup_method)


def _is_int(value: object) -> bool:
    return isinstance(value, int | np.integer) and not isinstance(value, bool)


def _total_queue_estimate(run: RawRun, warmup_method: str) -> tuple[Estimate, int]:
    """Mean ΣQ of one run after warm-up, with its batch-means CI and the warm-up used."""
    blocks = run.block_means()
    first = -(-run.warmup // run.block_length)
    if warmup_method == "mser5":  # MSER-5 on top of the fixed warm-up (≥ 10 %, §1.8)
        first += mser5_truncation(blocks[first:])
    measured = blocks[first:]
    if warmup_method == "fraction":
        mean = run.moments[loop.SUM_TOTAL_QUEUE] / max(run.measured_slots, 1)
        estimate = batch_means(measured)
        shift = mean - estimate.mean
        estimate = Estimate(mean, estimate.ci_low + shift, estimate.ci_high + shift,
                            estimate.method, estimate.samples, estimate.lag1_autocorrelation)
        return estimate, run.warmup
    return batch_means(measured), first * run.block_length


RELAXATION_FACTOR = 10


def _check_run_length(verdict: StabilityVerdict, estimate: Estimate, system: System,
                      measured_slots: int) -> StabilityVerdict:
    """Downgrade a "stable" verdict to "undetermined" when the run cannot support it.

    Two checks that a trend test alone misses near ρ = 1: the CI lies entirely below the
    proven lower bound on E[ΣQ] (§5), or the measured window is shorter than
    RELAXATION_FACTOR × ζ/ε², the relaxation time of the resource-pooled queue.
    """
    bound = lower_bound_total_queue(system)
    if math.isfinite(bound) and estimate.ci_high < bound:
        return replace(verdict, verdict="undetermined", evidence=verdict.evidence + (
            f"; but the CI lies below the lower bound {bound:.4g} on E[ΣQ]: run longer"))
    relaxation = 2 * heavy_traffic_limit(system) / system.epsilon**2
    if measured_slots < RELAXATION_FACTOR * relaxation:
        return replace(verdict, verdict="undetermined", evidence=verdict.evidence + (
            f"; but {measured_slots} measured slots < {RELAXATION_FACTOR}·ζ/ε² = "
            f"{RELAXATION_FACTOR * relaxation:.3g} (the pooled queue's relaxation time): "
            "run longer"))
    return verdict


def _pooled_relaxation(system: System) -> float:
    """RELAXATION_FACTOR × ζ/ε² (see _check_run_length); infinite when ε ≤ 0."""
    if system.epsilon <= 0:
        return math.inf
    return RELAXATION_FACTOR * 2 * heavy_traffic_limit(system) / system.epsilon**2


def _summarize(system: System, policy: Policy, runs: list[RawRun], *, seed: int,
               warmup_method: str) -> Result:
    verdicts = [
        stability_verdict(run.block_means()[-(-run.warmup // run.block_length):],
                          run.block_length, hit_bound=run.hit_bound, bound=run.bound,
                          slots_run=run.slots_run, overloaded=system.epsilon <= 0,
                          relaxation_slots=_pooled_relaxation(system))
        for run in runs
    ]
    order = {"unstable": 2, "undetermined": 1, "stable": 0}
    worst = max(verdicts, key=lambda v: order[v.verdict])
    per_run = [_total_queue_estimate(run, warmup_method) for run in runs]
    if len(runs) == 1:
        estimate, warmup_used = per_run[0]
    else:
        estimate = replication_estimate(np.array([e.mean for e, _ in per_run]))
        warmup_used = per_run[0][1]
    if worst.verdict == "undetermined" and (note := below_lower_bound(
            estimate.ci_high, lower_bound_total_queue(system))):
        worst = replace(worst, evidence=f"{worst.evidence}; but {note}")
    if worst.verdict == "stable":
        worst = _check_run_length(worst, estimate, system, min(r.measured_slots for r in runs))

    counters = sum(run.counters for run in runs)
    moments = sum(run.moments for run in runs)
    if counters[loop.MEASURED_SLOTS] == 0:  # stopped before the warm-up ended
        moments = moments * math.nan
    measured = max(int(counters[loop.MEASURED_SLOTS]), 1)
    arrivals = max(int(counters[loop.ARRIVALS_MEASURED]), 1)
    dispatches = max(int(counters[loop.DISPATCH_EVENTS_MEASURED]), 1)
    messages = sum(run.messages for run in runs)
    hist = sum(run.delay_hist for run in runs)
    delayed = int(hist.sum())
    p50, p90, p99, p999 = delay_quantiles(hist, (0.5, 0.9, 0.99, 0.999))
    unstable = worst.verdict == "unstable"
    window = counters[loop.MEASURED_SLOTS] > 0
    nan = math.nan

    def stable_only(value: float) -> float:
        return nan if unstable else float(value)

    mean_total = stable_only(estimate.mean)
    diag = sum(run.diag for run in runs)
    seconds = sum(run.seconds for run in runs)
    slots_run = sum(run.slots_run for run in runs)
    return Result(
        policy=policy.name, params=dict(policy.params), system=system.describe(),
        slots=runs[0].slots, warmup=warmup_used, seed=seed, replications=len(runs),
        mean_total_queue=mean_total,
        ci_low=stable_only(estimate.ci_low), ci_high=stable_only(estimate.ci_high),
        ci_method=estimate.method,
        mean_queues=[stable_only(x) for x in sum(run.queue_sum for run in runs) / measured],
        mean_pooled_queue=float(moments[loop.SUM_POOLED] / measured),
        invariant_violations=int(counters[loop.INVARIANT_VIOLATIONS]),
        mean_delay=stable_only(estimate.mean / system.arrival_rate),
        mean_delay_measured=stable_only(moments[loop.SUM_DELAY] / delayed if delayed else nan),
        delay_p50=stable_only(p50), delay_p90=stable_only(p90), delay_p99=stable_only(p99),
        delay_p999=stable_only(p999),
        messages_per_arrival=float(messages.sum() / arrivals) if window else nan,
        messages_per_dispatch=float(messages.sum() / dispatches) if window else nan,
        messages_by_kind={k: float(messages[i] / arrivals) if window else nan
                          for i, k in enumerate(MESSAGE_KINDS)},
        stability=worst.verdict, stability_evidence=worst.evidence,
        lower_bound_total_queue=lower_bound_total_queue(system),
        heavy_traffic_limit=heavy_traffic_limit(system),
        epsilon_total_queue=stable_only(system.epsilon * estimate.mean),
        idle_while_busy=float(moments[loop.SUM_QU] / measured),
        queue_imbalance_l1=stable_only(moments[loop.SUM_DQI1] / measured),
        queue_imbalance_l2=stable_only(moments[loop.SUM_DQI2] / measured),
        herding_fraction=float(counters[loop.HERDING_SLOTS] / measured) if window else nan,
        arrival_rate_measured=float(counters[loop.ARRIVALS_MEASURED] / measured) if window
        else nan,
        jobs_arrived=int(counters[loop.ARRIVALS]),
        jobs_departed=int(counters[loop.DEPARTURES]),
        jobs_in_system=int(sum(run.final_queues.sum() for run in runs)),
        total_queue_distribution=[] if unstable else _distribution(
            sum(run.queue_hist for run in runs)),
        diagnostics=policy.summarize(diag, measured, system),
        slots_run=slots_run, seconds=seconds,
        slots_per_second=slots_run / seconds if seconds > 0 else nan,
    )


def _distribution(histogram: np.ndarray) -> list[float]:
    """Normalised histogram, trimmed after its last non-empty bin."""
    nonzero = np.flatnonzero(histogram)
    if nonzero.size == 0:
        return []
    trimmed = histogram[: nonzero[-1] + 1]
    return (trimmed / trimmed.sum()).tolist()
