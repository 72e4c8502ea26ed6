"""``simulate(system, policy, …) -> Result``: the one entry point that runs a policy."""

from __future__ import annotations

import math
from concurrent.futures import Executor
from contextlib import ExitStack
from dataclasses import dataclass, replace
from typing import Any

import numpy as np

from dispatchlab.engine import loop
from dispatchlab.engine.interface import MESSAGE_KINDS
from dispatchlab.engine.raw import RawRun, default_bound, run_once
from dispatchlab.errors import ValidationError, require
from dispatchlab.model.limits import check_run_jobs
from dispatchlab.model.system import System
from dispatchlab.parallel import map_tasks, process_pool, resolve_workers
from dispatchlab.policies.base import Policy, make_policy
from dispatchlab.result import Result
from dispatchlab.stats.estimators import (
    MIN_TAU_BATCHES,
    Estimate,
    batch_means,
    delay_quantiles,
    mser5_truncation,
    pooled_estimate,
    with_standard_error_floor,
)
from dispatchlab.stats.heavy_traffic import heavy_traffic_standard_error
from dispatchlab.stats.stability import StabilityVerdict, below_lower_bound, stability_verdict
from dispatchlab.theory.bounds import heavy_traffic_limit, lower_bound_total_queue
from dispatchlab.theory.stability import induced_threshold

WARMUP_FRACTION = 0.1
WARMUP_METHODS = ("fraction", "mser5")
# a precision run stops when its slots (all replications, warm-ups included) would pass
# this multiple of ``slots``, unless ``max_slots`` says otherwise
PRECISION_BUDGET_FACTOR = 64
# rounds of a precision run aim this much beyond the replications the t-CI says it needs
PRECISION_OVERSHOOT = 1.2
FIXED_LENGTH = "fixed run length"


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
    workers: int | None = 1,
    precision: float | None = None,
    precision_abs: float | None = None,
    max_slots: int | None = None,
    **unknown: Any,
) -> Result:
    """Simulate ``policy`` on ``system`` for ``slots`` slots.

    Args:
        system: the validated model.
        policy: a :class:`Policy`, or a registered name (with ``policy_params``).
        slots: slots per replication.
        warmup: slots discarded before measuring (default 10 % of ``slots``).
        seed: the root seed; replication r uses ``SeedSequence(seed).spawn(R)[r]``.
        replications: independent replications. One run: the CI comes from batch means
            sized by τ̂, the integrated autocorrelation time of ΣQ (none when the window is
            < 10·τ̂: "too short to say"); R ≥ 2: within- and between-run variance pooled
            (:func:`~dispatchlab.stats.estimators.pooled_estimate`; docs/statistics.md).
        warmup_method: ``fraction`` (fixed warm-up) or ``mser5`` (MSER-5 truncation of
            the ΣQ series after the fixed warm-up, applied to the mean and CI of ΣQ).
        bound: ΣQ at which the run stops and is judged unstable.
        track_delay: time every job (FIFO) for the delay distribution.
        detail: measure the queue-imbalance quantities every slot.
        workers: processes that run replications side by side (spawned: safe in Jupyter
            and on macOS); ``None`` uses every core. Replication r has the same seed
            whatever the number of workers, so the result does not depend on it.
        precision: a target relative half-width of the 95 % CI of E[ΣQ] (0.01: ± 1 %):
            replications of ``slots`` slots run in rounds (``workers`` at a time) until the
            CI is that narrow or the slot budget ``max_slots`` is spent. The result says
            the precision reached and why it stopped (``stop_reason``).
        precision_abs: the same target as an absolute half-width (with ``precision``:
            both must hold).
        max_slots: the slot budget of a precision run, warm-ups included (default
            PRECISION_BUDGET_FACTOR × ``slots``).
    """
    if unknown:
        raise ValidationError(sorted(unknown)[0], "unknown keyword of simulate; allowed: "
                              "slots, warmup, seed, replications, warmup_method, bound, "
                              "track_delay, detail, policy_params, workers, precision, "
                              "precision_abs, max_slots")
    return _execute(_plan(
        system, policy, slots=slots, warmup=warmup, seed=seed, replications=replications,
        warmup_method=warmup_method, bound=bound, track_delay=track_delay, detail=detail,
        policy_params=policy_params, precision=precision, precision_abs=precision_abs,
        max_slots=max_slots), workers)


def simulate_each(system: System, policies: list[Policy | str], *, workers: int | None = None,
                  **settings: Any) -> list[Result]:
    """``[simulate(system, p, **settings) for p in policies]`` with every replication of
    every policy on one pool of ``workers`` processes (default: every core).

    Each result is identical to its own sequential :func:`simulate` call. Precision
    targets (``precision``, ``precision_abs``) run policy after policy, each on the pool.
    """
    plans = [_plan(system, policy, **settings) for policy in policies]
    if any(plan.target is not None for plan in plans):
        return [_execute(plan, workers) for plan in plans]
    items = [(plan.task, index) for plan in plans for index in plan.indices]
    raw = map_tasks(_run_indexed, items, workers=workers)
    results, start = [], 0
    for plan in plans:
        runs = raw[start:start + len(plan.indices)]
        start += len(plan.indices)
        results.append(_summarize(plan.task.system, plan.task.policy, runs,
                                  seed=plan.task.seed, warmup_method=plan.warmup_method))
    return results


@dataclass(frozen=True)
class _Plan:
    """A validated simulation: its replications and, for a precision run, the target."""

    task: Replication
    indices: list[int | None]  # the replications of a fixed-length run
    warmup_method: str
    target: Target | None
    budget: int


def _plan(system: System, policy: Policy | str, *, slots: int = 1_000_000,
          warmup: int | None = None, seed: int = 0, replications: int = 1,
          warmup_method: str = "fraction", bound: int | None = None, track_delay: bool = True,
          detail: bool = True, policy_params: dict[str, Any] | None = None,
          precision: float | None = None, precision_abs: float | None = None,
          max_slots: int | None = None) -> _Plan:
    """Validate the arguments of :func:`simulate` (ValidationError on bad input)."""
    require(isinstance(system, System), "system",
            f"expected a System (System.build(...)), got {type(system).__name__}")
    require(policy_params is None or isinstance(policy_params, dict), "policy_params",
            f"expected a dict of parameter: value (got {type(policy_params).__name__})")
    if isinstance(policy, str):
        policy = make_policy(policy, **(policy_params or {}))
    else:
        require(isinstance(policy, Policy), "policy", "expected a registered policy name or a "
                f"Policy (got {policy!r})")
        require(not policy_params, "policy_params",
                "give parameters to make_policy, not with a Policy object")
    require(_is_int(slots) and slots >= 1, "slots", f"must be an integer ≥ 1 (got {slots!r})")
    check_run_jobs(system.arrival_rate, system.mu_sum, int(slots))
    require(warmup is None or _is_int(warmup), "warmup", f"must be an integer (got {warmup!r})")
    require(_is_int(seed) and seed >= 0, "seed", f"must be an integer ≥ 0 (got {seed!r})")
    require(_is_int(replications), "replications",
            f"must be an integer ≥ 1 (got {replications!r})")
    warmup = int(slots * WARMUP_FRACTION) if warmup is None else warmup
    require(0 <= warmup < slots, "warmup", f"must be in [0, slots) (got {warmup})")
    require(replications >= 1, "replications", f"must be ≥ 1 (got {replications})")
    require(bound is None or (_is_int(bound) and bound >= 1), "bound",
            f"must be an integer ≥ 1 (got {bound!r})")
    for name, flag in (("track_delay", track_delay), ("detail", detail)):
        require(isinstance(flag, bool), name, f"expected True or False (got {flag!r})")
    require(isinstance(warmup_method, str) and warmup_method in WARMUP_METHODS, "warmup_method",
            f"allowed: {', '.join(WARMUP_METHODS)}")
    for name, value in (("precision", precision), ("precision_abs", precision_abs)):
        require(value is None or (isinstance(value, int | float) and not isinstance(value, bool)
                                  and math.isfinite(value) and value > 0),
                name, f"must be a number > 0 (got {value!r})")
    require(max_slots is None or (_is_int(max_slots) and max_slots >= slots), "max_slots",
            f"must be an integer ≥ slots = {slots} (got {max_slots!r})")
    policy.check_system(system)
    try:  # policies check their memory first (dispatchlab.memory); this is the backstop
        policy.kernel(system)  # validates the policy's parameters against the system here
    except MemoryError:
        raise _out_of_memory(system, policy) from None
    task = Replication(system, policy, int(slots), int(warmup), int(seed),
                       default_bound(system) if bound is None else int(bound),
                       bool(track_delay), bool(detail))
    if precision is None and precision_abs is None:
        require(max_slots is None, "max_slots", "a slot budget needs a precision target")
        indices: list[int | None] = list(range(replications)) if replications > 1 else [None]
        return _Plan(task, indices, warmup_method, None, int(slots) * replications)
    budget = PRECISION_BUDGET_FACTOR * int(slots) if max_slots is None else int(max_slots)
    require(budget // int(slots) >= 2, "max_slots", f"the budget {budget} slots does not "
            f"cover two replications of {slots} slots")
    return _Plan(task, list(range(max(replications, 2))), warmup_method,
                 Target(precision, precision_abs), budget)


def _execute(plan: _Plan, workers: int | None) -> Result:
    if plan.target is None:
        runs = run_replications(plan.task, plan.indices, workers)
        return _summarize(plan.task.system, plan.task.policy, runs, seed=plan.task.seed,
                          warmup_method=plan.warmup_method)
    return _to_precision(plan.task, len(plan.indices), workers, plan.warmup_method,
                         plan.target, plan.budget)


@dataclass(frozen=True)
class Replication:
    """What one worker needs to run replications of one configuration (picklable)."""

    system: System
    policy: Policy
    slots: int
    warmup: int
    seed: int
    bound: int
    track_delay: bool
    detail: bool

    def seed_sequence(self, index: int | None) -> np.random.SeedSequence:
        """Replication ``index``'s seed: ``SeedSequence(seed).spawn(R)[index]``, and the root
        ``SeedSequence(seed)`` for a single run (``None``)."""
        if index is None:
            return np.random.SeedSequence(self.seed)
        return np.random.SeedSequence(self.seed, spawn_key=(index,))

    def run(self, index: int | None) -> RawRun:
        try:
            return run_once(self.system, self.policy.kernel(self.system), slots=self.slots,
                            warmup=self.warmup, seed=self.seed_sequence(index),
                            bound=self.bound, track_delay=self.track_delay,
                            detail=self.detail, policy=self.policy.name)
        except MemoryError:
            raise _out_of_memory(self.system, self.policy) from None


def _out_of_memory(system: System, policy: Policy) -> ValidationError:
    return ValidationError("memory", f"out of memory running {policy.name} on N = "
                           f"{system.n_servers} servers, M = {system.dispatchers} dispatchers")


def _run_indexed(item: tuple[Replication, int | None]) -> RawRun:
    task, index = item
    return task.run(index)


def run_replications(task: Replication, indices: Any, workers: int | None = 1,
                     pool: Executor | None = None) -> list[RawRun]:
    """The raw runs of replications ``indices`` (``None``: the single root-seeded run), in
    order, on ``workers`` processes (or ``pool``); each is bit-identical to its sequential
    run."""
    return map_tasks(_run_indexed, [(task, index) for index in indices], workers=workers,
                     pool=pool)


@dataclass(frozen=True)
class Target:
    """A precision target: relative and/or absolute half-width of the 95 % CI of E[ΣQ]."""

    relative: float | None
    absolute: float | None

    def half_width(self, mean: float) -> float:
        """The half-width that meets every given target at this mean."""
        widths = [self.absolute] if self.absolute is not None else []
        if self.relative is not None:
            widths.append(self.relative * abs(mean))
        return min(widths)

    def met(self, estimate_mean: float, half_width: float) -> bool:
        return math.isfinite(half_width) and half_width <= self.half_width(estimate_mean)


def _to_precision(task: Replication, first: int, workers: int | None, warmup_method: str,
                  target: Target, budget: int) -> Result:
    """Replications in rounds until the CI meets ``target`` or the slot budget is spent.

    Each round sizes itself from the current half-width h: about R·(h/h*)² replications
    reach h* (the half-width shrinks as 1/√R), PRECISION_OVERSHOOT beyond, rounded up to
    whole rounds of ``workers`` (the first round too); replication r always has the same
    seed, so a precision run's result is that of ``simulate(…, replications=R)`` for the R
    it stopped at (R may depend on the number of workers, as rounds are whole).
    """
    per_round = resolve_workers(workers, budget // task.slots)
    with ExitStack() as stack:
        pool = stack.enter_context(process_pool(per_round)) if per_round > 1 else None
        return _rounds(task, first, per_round, pool, warmup_method, target, budget)


def _rounds(task: Replication, first: int, per_round: int, pool: Executor | None,
            warmup_method: str, target: Target, budget: int) -> Result:
    affordable = budget // task.slots
    count = min(max(first, per_round), affordable)
    runs = run_replications(task, range(count), 1, pool)
    while True:
        result = _summarize(task.system, task.policy, runs, seed=task.seed,
                            warmup_method=warmup_method)
        half = (result.ci_high - result.ci_low) / 2
        if result.stability == "unstable":
            reason = "unstable: no mean to estimate"
        elif target.met(result.mean_total_queue, half):
            reason = "target reached"
        elif count >= affordable:
            reason = f"slot budget spent ({count * task.slots} of {budget} slots)"
        else:
            reason = ""
        if reason:
            return replace(result, stop_reason=reason, precision_target=target.relative,
                           precision_abs_target=target.absolute, slot_budget=budget)
        if math.isfinite(half) and half > 0:
            wanted = math.ceil(count * (half / target.half_width(result.mean_total_queue)) ** 2
                               * PRECISION_OVERSHOOT)
        else:
            wanted = 2 * count
        more = max(wanted - count, 1)
        more = min(-(-more // per_round) * per_round, affordable - count)
        runs += run_replications(task, range(count, count + more), 1, pool)
        count += more


def _is_int(value: object) -> bool:
    return isinstance(value, int | np.integer) and not isinstance(value, bool)


def _total_queue_estimate(run: RawRun, warmup_method: str,
                          rates: tuple[np.ndarray, np.ndarray] | None = None
                          ) -> tuple[Estimate, int]:
    """Mean ΣQ of one run after warm-up, with its CI and the warm-up used.

    The CI is batch means sized by τ̂ (:func:`batch_means`), its SE floored by the
    heavy-traffic model SE from the run's per-server mean queues when the per-server
    service and arrival rates (μ_n, λ_n) are known (``rates``; docs/statistics.md).
    """
    blocks = run.block_means()
    first = -(-run.warmup // run.block_length)
    if warmup_method == "mser5":  # MSER-5 on top of the fixed warm-up (≥ 10 %, §1.8)
        first += mser5_truncation(blocks[first:])
    measured = blocks[first:]
    if warmup_method == "fraction":
        mean = run.moments[loop.SUM_TOTAL_QUEUE] / max(run.measured_slots, 1)
        estimate, warmup = batch_means(measured).shifted(float(mean)), run.warmup
    else:
        estimate, warmup = batch_means(measured), first * run.block_length
    if rates is not None and run.measured_slots > 0:
        floor = heavy_traffic_standard_error(
            run.queue_sum / run.measured_slots, rates[0], rates[1],
            measured.size * run.block_length)
        estimate = with_standard_error_floor(estimate, floor, "heavy-traffic model SE")
    return estimate, warmup


def server_arrival_rates(system: System, policy: Policy) -> np.ndarray | None:
    """λ_n, each server's long-run arrival rate, where the policy fixes it whatever the
    state: λ_Σ·w_n for a per-server split (weighted RAND), λ_Σ/N for an equal split by
    rank (RAND, round robin), λ_Σ on one server; ``None`` otherwise (state-dependent
    policies such as JSQ, whose split depends on the queues)."""
    if system.n_servers == 1:
        return np.array([system.arrival_rate])
    try:
        fractions = policy.dispatch_fractions(system.mu)
    except ValidationError:  # a member whose fractions are not implemented
        return None
    if fractions is None:
        return None
    values = fractions.values
    if values is None:
        return None
    values = np.asarray(values, dtype=float)
    if fractions.kind == "rank" and np.allclose(values, values[0]):
        return np.full(system.n_servers, system.arrival_rate / system.n_servers)
    if fractions.kind == "server" and values.shape == (system.n_servers,):
        return system.arrival_rate * values
    return None


RELAXATION_FACTOR = 10


def _check_run_length(verdict: StabilityVerdict, estimate: Estimate, system: System,
                      measured_slots: int, per_run: list[Estimate],
                      block_length: int) -> StabilityVerdict:
    """Downgrade a "stable" verdict to "undetermined" when the run cannot support it.

    Three checks that a trend test alone misses near ρ = 1: the CI lies entirely below the
    proven lower bound on E[ΣQ] (§5); the measured window is shorter than
    RELAXATION_FACTOR × ζ/ε², the relaxation time of the resource-pooled queue; or it is
    shorter than MIN_TAU_BATCHES batches of 5 τ̂, the series' own integrated
    autocorrelation time (each run's batch means then said "too short to say").
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
    if all(run.too_short for run in per_run):
        tau = max(run.autocorrelation_time for run in per_run) * block_length
        return replace(verdict, verdict="undetermined", evidence=verdict.evidence + (
            f"; but the measured window is shorter than {MIN_TAU_BATCHES} batches of 5·τ̂ "
            f"(τ̂ = {tau:.3g} slots, the integrated autocorrelation time of ΣQ): too short "
            "to say, run longer"))
    return verdict


def theory_stability(system: System, policy: Policy) -> tuple[str, str]:
    """What theory says of this policy's stability on ``system``, and why.

    ``unstable`` when λ_Σ ≥ μ_Σ (§1.7); for a member of framework Π (rand, wrand, rr, jsq,
    jsed, pod and the pi-* policies) the induced threshold λ̄ of Eq. (3) (§4.3–4.6):
    ``stable`` below it, ``unstable`` above it when §4.6 certifies transience; otherwise
    ``unknown``.
    """
    if system.epsilon <= 0:
        return "unstable", "λ_Σ ≥ μ_Σ"
    try:
        fractions = policy.dispatch_fractions(system.mu)
        if fractions is None:  # not a member of framework Π
            return "unknown", "no stability theory for this policy"
        region = induced_threshold(fractions, system.mu)
    except ValidationError:  # e.g. Monte Carlo fractions of a user decision need N ≤ 6
        return "unknown", "no stability theory for this policy"
    verdict = region.verdict(system.arrival_rate)
    why = f"induced threshold λ̄ = {region.threshold_rate:.6g} (ρ̄ = {region.threshold_load:.4g})"
    return {"transient": "unstable"}.get(verdict, verdict), why


def _cross_check(verdict: StabilityVerdict, theory: str, why: str) -> StabilityVerdict:
    """Name a disagreement between the simulated verdict and theory in the evidence."""
    if {verdict.verdict, theory} == {"stable", "unstable"}:
        return replace(verdict, evidence=verdict.evidence + (
            f"; DISAGREES with theory ({theory}: {why})"))
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
    arrivals = server_arrival_rates(system, policy)
    rates = None if arrivals is None else (np.asarray(system.mu, dtype=float), arrivals)
    per_run = [_total_queue_estimate(run, warmup_method, rates) for run in runs]
    estimates = [e for e, _ in per_run]
    estimate = estimates[0] if len(runs) == 1 else pooled_estimate(estimates)
    warmup_used = per_run[0][1]
    if worst.verdict == "undetermined" and (note := below_lower_bound(
            estimate.ci_high, lower_bound_total_queue(system), estimate.mean)):
        worst = replace(worst, evidence=f"{worst.evidence}; but {note}")
    if worst.verdict == "stable":
        worst = _check_run_length(worst, estimate, system, min(r.measured_slots for r in runs),
                                  estimates, runs[0].block_length)
    theory, why = theory_stability(system, policy)
    worst = _cross_check(worst, theory, why)
    tau_blocks = [e.autocorrelation_time for e in estimates if math.isfinite(
        e.autocorrelation_time)]

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
        mean_completion_time=stable_only(moments[loop.SUM_DELAY] / delayed + 1 if delayed
                                         else nan),
        total_queue_distribution=[] if unstable else _distribution(
            sum(run.queue_hist for run in runs)),
        diagnostics=policy.summarize(diag, measured, system),
        slots_run=slots_run, seconds=seconds,
        slots_per_second=slots_run / seconds if seconds > 0 else nan,
        half_width=stable_only(estimate.half_width),
        relative_half_width=stable_only(estimate.relative_half_width),
        ci_dof=float(estimate.dof),
        autocorrelation_time=(max(tau_blocks) * runs[0].block_length if tau_blocks else nan),
        stop_reason=FIXED_LENGTH,
        theory_stability=theory,
    )


def _distribution(histogram: np.ndarray) -> list[float]:
    """Normalised histogram, trimmed after its last non-empty bin."""
    nonzero = np.flatnonzero(histogram)
    if nonzero.size == 0:
        return []
    trimmed = histogram[: nonzero[-1] + 1]
    return (trimmed / trimmed.sum()).tolist()
