"""Turn the raw runs of one configuration into a :class:`Result`: estimates with their CIs,
the stability verdict and the theory's context (ζ/2, the lower bound, Π's threshold)."""

from __future__ import annotations

import math
from dataclasses import replace
from typing import TYPE_CHECKING, Any

import numpy as np

from dispatchlab.core.errors import ValidationError
from dispatchlab.engine import layout, observe
from dispatchlab.engine.interface import MESSAGE_KINDS
from dispatchlab.engine.raw import RawRun, Totals
from dispatchlab.model.system import System
from dispatchlab.policies.base import Policy
from dispatchlab.simulation.result import Result
from dispatchlab.stats.estimators import (
    MIN_TAU_BATCHES,
    Estimate,
    batch_means,
    delay_quantiles,
    mser5_truncation,
    pooled_estimate,
    t_interval,
    with_standard_error_floor,
    within_support,
)
from dispatchlab.stats.quantiles import quantile_intervals
from dispatchlab.stats.run_stability import StabilityVerdict, below_lower_bound, stability_verdict
from dispatchlab.stats.standard_error_floor import (
    heavy_traffic_relaxation,
    heavy_traffic_standard_error,
)
from dispatchlab.theory.bounds import heavy_traffic_limit, lower_bound_total_queue
from dispatchlab.theory.pooled_queue import PooledMean, pooled_queue_of
from dispatchlab.theory.stability import induced_threshold

if TYPE_CHECKING:
    from dispatchlab.simulation.plan import Plan

FIXED_LENGTH = "fixed run length"


def _total_queue_estimate(run: RawRun, warmup_method: str,
                          rates: tuple[np.ndarray, np.ndarray] | None = None
                          ) -> tuple[Estimate, int]:
    """Mean ΣQ of one run after warm-up, with its CI and the warm-up used.

    The CI is batch means sized by τ̂ (:func:`batch_means`), its SE floored by the
    heavy-traffic model SE from the run's per-server mean queues when the per-server
    service and arrival rates (μ_n, λ_n) are known (``rates``; docs/statistics.md).
    """
    blocks = run.block_means()
    first = _first_block(run, warmup_method)
    measured = blocks[first:]
    if warmup_method == "fraction":
        estimate, warmup = batch_means(measured).shifted(run.mean_total_queue), run.warmup
    else:
        estimate, warmup = batch_means(measured), first * run.block_length
    if rates is not None and run.measured_slots > 0:
        floor = heavy_traffic_standard_error(
            run.queue_sum / run.measured_slots, rates[0], rates[1],
            measured.size * run.block_length)
        estimate = with_standard_error_floor(estimate, floor, "heavy-traffic model SE")
    return estimate, warmup


def _excess_floor(run: RawRun, rates: tuple[np.ndarray, np.ndarray], slots: int) -> float:
    """A floor on SE(X̄) from the heavy-traffic model SEs of ΣQ̄ and of the pooled q̄.

    ΣQ̄ = X̄ + q̄ on the same draws, so sd(X̄) ≥ sd(ΣQ̄) − sd(q̄) (the triangle inequality
    for standard deviations); each sd is replaced by its model SE
    (:func:`heavy_traffic_standard_error`), the pooled queue's as one server of rate μ_Σ fed
    at λ_Σ. Under a state-independent routing the servers' queues are nearly independent
    and X carries almost all of ΣQ's slow variance, which X's own batch means, like ΣQ's,
    underestimate near saturation (docs/statistics.md#coupled)."""
    mu, arrivals = rates
    total = heavy_traffic_standard_error(run.queue_sum / run.measured_slots, mu, arrivals,
                                         slots)
    pooled = heavy_traffic_standard_error(
        np.array([run.mean_total_queue - run.mean_excess]), np.array([mu.sum()]),
        np.array([arrivals.sum()]), slots)
    return max(total - pooled, 0.0)


def _first_block(run: RawRun, warmup_method: str) -> int:
    """The first measured block: after the fixed warm-up, and for ``mser5`` after MSER-5's
    truncation of the ΣQ series on top of it (≥ 10 %, docs/model.md#measurement)."""
    first = -(-run.warmup // run.block_length)
    if warmup_method == "mser5":
        first += mser5_truncation(run.block_means()[first:])
    return first


def _excess_estimate(run: RawRun, warmup_method: str, servers: int,
                     rates: tuple[np.ndarray, np.ndarray] | None = None) -> Estimate:
    """Mean X = ΣQ − q of one run after its warm-up (the same first block as ΣQ's), with a
    batch-means CI sized by X's own τ̂, its SE floored by :func:`_excess_floor` when the
    per-server rates are known (``rates``, as for ΣQ). On one server X ≡ 0 on every path:
    the exact interval [0, 0]. On several, a run in which X never left 0 has no interval:
    a short or lightly loaded run proves nothing about the rare slots where it does (a
    1-slot run had reported E[X] = 0 [0, 0] and so E[ΣQ] to 10⁻¹⁰)."""
    measured = run.excess_block_means()[_first_block(run, warmup_method):]
    if servers == 1:
        return Estimate(0.0, 0.0, 0.0, "exact: X = ΣQ − q = 0 on one server",
                        int(measured.size), standard_error=0.0)
    if not measured.any():
        return Estimate(0.0, math.nan, math.nan, "none observed: X = 0 in every measured "
                        "slot, too few to say", int(measured.size))
    estimate = batch_means(measured)
    if warmup_method == "fraction":
        estimate = estimate.shifted(run.mean_excess)
    if rates is not None and run.measured_slots > 0:
        floor = _excess_floor(run, rates, measured.size * run.block_length)
        estimate = with_standard_error_floor(estimate, floor,
                                             "heavy-traffic model SE of ΣQ − q")
    return estimate


def _queue_unused_estimate(run: RawRun, warmup_method: str, servers: int) -> Estimate:
    """[JBT] Eq. (7)'s term E[ΣQ(t+1)·ΣU(t)] of one run after its warm-up (the same first
    block as X's), with a batch-means CI. On one server it is 0 in every slot (U > 0 only
    when the queue empties), exactly; on several, a run in which it never left 0 has no
    interval (too short to say)."""
    measured = run.queue_unused_block_means()[_first_block(run, warmup_method):]
    if servers == 1:
        return Estimate(0.0, 0.0, 0.0, "exact: Q(t+1)·U(t) = 0 on one server",
                        int(measured.size), standard_error=0.0)
    if measured.size and not measured.any():
        return Estimate(0.0, math.nan, math.nan, "none observed: too short to say",
                        int(measured.size))
    estimate = batch_means(measured)
    if warmup_method == "fraction":
        mean = run.moments[layout.SUM_QU] / max(run.measured_slots, 1)
        estimate = estimate.shifted(float(mean))
    return estimate


def coupled_total_queue(excess: Estimate, pooled: PooledMean) -> Estimate:
    """E[ΣQ] = E[q] + E[X]: X's interval shifted by E[q] and widened by E[q]'s error."""
    return replace(excess, mean=excess.mean + pooled.value,
                   ci_low=excess.ci_low + pooled.value - pooled.error,
                   ci_high=excess.ci_high + pooled.value + pooled.error,
                   method=f"coupled: E[q] {pooled.method} + X by {excess.method}")


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
                      block_length: int, coupled: bool = False,
                      stationary_start: bool = False,
                      server_relaxation: float = math.nan) -> StabilityVerdict:
    """Downgrade a "stable" verdict to "undetermined" when the run cannot support it.

    Four checks that a trend test alone misses near ρ = 1: the CI lies entirely below the
    proven lower bound on E[ΣQ] (docs/model.md#lower-bound); the measured window is shorter than
    RELAXATION_FACTOR × ζ/ε², the relaxation time of the resource-pooled queue; it is
    shorter than RELAXATION_FACTOR × ``server_relaxation``, the slowest server's own
    heavy-traffic relaxation time where the routing fixes each server's arrival rate
    (:func:`heavy_traffic_relaxation`: under random routing each queue relaxes on its own,
    far more slowly than the pooled one); or it is shorter than MIN_TAU_BATCHES batches of
    5 τ̂, the series' own integrated autocorrelation time (each run's batch means then said
    "too short to say").
    With the ``coupled`` estimator τ̂ is X's (``per_run``: X's estimates); after a
    ``stationary_start`` too, q(t) is stationary from slot 0 and E[q] is not sampled, so
    the pooled queue's relaxation time no longer bounds the run (X's τ̂ still does). It
    does bound a coupled run from an empty start (X's law depends on the level of q) and
    every plain one (the time average of ΣQ carries q's slow fluctuations).
    """
    bound = lower_bound_total_queue(system)
    if math.isfinite(bound) and estimate.ci_high < bound:
        return replace(verdict, verdict="undetermined", evidence=verdict.evidence + (
            f"; but the CI lies below the lower bound {bound:.4g} on E[ΣQ]: run longer"))
    relaxation = 2 * heavy_traffic_limit(system) / system.epsilon**2
    if not (coupled and stationary_start) and measured_slots < RELAXATION_FACTOR * relaxation:
        return replace(verdict, verdict="undetermined", evidence=verdict.evidence + (
            f"; but {measured_slots} measured slots < {RELAXATION_FACTOR}·ζ/ε² = "
            f"{RELAXATION_FACTOR * relaxation:.3g} (the pooled queue's relaxation time): "
            "run longer, or start from its stationary law (start='stationary')"))
    if math.isfinite(server_relaxation) and \
            measured_slots < RELAXATION_FACTOR * server_relaxation:
        return replace(verdict, verdict="undetermined", evidence=verdict.evidence + (
            f"; but {measured_slots} measured slots < {RELAXATION_FACTOR}·4·q̄_n/(μ_n − λ_n) = "
            f"{RELAXATION_FACTOR * server_relaxation:.3g} (the slowest server's relaxation "
            "time under this state-independent routing): run longer"))
    if all(run.too_short for run in per_run):
        tau = max(run.autocorrelation_time for run in per_run) * block_length
        return replace(verdict, verdict="undetermined", evidence=verdict.evidence + (
            f"; but the measured window is shorter than {MIN_TAU_BATCHES} batches of 5·τ̂ "
            f"(τ̂ = {tau:.3g} slots, the integrated autocorrelation time of "
            f"{'X = ΣQ − q' if coupled else 'ΣQ'}): too short "
            "to say, run longer"))
    return verdict


def theory_stability(system: System, policy: Policy) -> tuple[str, str]:
    """What theory says of this policy's stability on ``system``, and why.

    ``unstable`` when λ_Σ ≥ μ_Σ (docs/model.md#optimality); for a member of framework Π
    (rand, wrand, rr, jsq, jsed, pod and the pi-* policies) the induced threshold λ̄ of [Π]
    Eq. (3) (docs/model.md#pi-stability): ``stable`` below it, ``unstable`` above it when
    transience is certified (docs/model.md#pi-transience); otherwise ``unknown``.
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


def summarize(system: System, policy: Policy, runs: list[RawRun], *, seed: int,
              warmup_method: str, estimator: str = "coupled", start: str = "empty") -> Result:
    """The :class:`Result` of ``runs``, replications of one configuration.

    ``estimator`` picks the headline E[ΣQ]: ``coupled`` (E[q] computed + the mean of X =
    ΣQ − q; where E[q] is not exact, the plain one, with the reason in
    ``estimator_note``) or ``plain`` (the time average of ΣQ). Both are reported.
    ``start`` is the runs' Q(0) (``empty`` or ``stationary``)."""
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
    # ΣQ ≥ 0 and X = ΣQ − q ≥ 0: an interval below 0 is no evidence
    plain = within_support(estimates[0] if len(runs) == 1 else pooled_estimate(estimates))
    warmup_used = per_run[0][1]
    excess_runs = [_excess_estimate(run, warmup_method, system.n_servers, rates)
                   for run in runs]
    excess = within_support(excess_runs[0] if len(runs) == 1
                            else pooled_estimate(excess_runs))
    queue_unused_runs = [_queue_unused_estimate(run, warmup_method, system.n_servers)
                         for run in runs]
    queue_unused = (queue_unused_runs[0] if len(runs) == 1
                    else pooled_estimate(queue_unused_runs))
    pooled = pooled_queue_of(system)
    coupled = coupled_total_queue(excess, pooled) if pooled.available else None
    use_coupled = estimator == "coupled" and coupled is not None and pooled.method == "exact"
    estimate = coupled if use_coupled else plain
    note = "" if use_coupled or estimator == "plain" else f"E[q] {pooled.method}"
    if worst.verdict == "undetermined" and (warning := below_lower_bound(
            estimate.ci_high, lower_bound_total_queue(system), estimate.mean)):
        worst = replace(worst, evidence=f"{worst.evidence}; but {warning}")
    if worst.verdict == "stable":
        server_relaxation = (math.nan if rates is None else max(
            heavy_traffic_relaxation(run.queue_sum / max(run.measured_slots, 1), *rates)
            for run in runs))
        worst = _check_run_length(worst, estimate, system, min(r.measured_slots for r in runs),
                                  excess_runs if use_coupled else estimates,
                                  runs[0].block_length, coupled=use_coupled,
                                  stationary_start=start == "stationary",
                                  server_relaxation=server_relaxation)
    theory, why = theory_stability(system, policy)
    worst = _cross_check(worst, theory, why)
    tau_blocks = [e.autocorrelation_time for e in (excess_runs if use_coupled else estimates)
                  if math.isfinite(e.autocorrelation_time)]

    totals = Totals.of(runs)
    measured = max(totals.measured_slots, 1)
    arrivals = max(totals.arrivals_measured, 1)
    dispatches = max(totals.dispatch_events_measured, 1)
    messages = sum(run.messages for run in runs)
    hist = sum(run.delay_hist for run in runs)
    delayed = int(hist.sum())
    p50, p90, p99, p999 = (value if _enough_jobs(level, delayed) else math.nan
                           for level, value in zip(DELAY_QUANTILES.values(), delay_quantiles(
                               hist, tuple(DELAY_QUANTILES.values())), strict=True))
    unstable = worst.verdict == "unstable"
    window = totals.measured_slots > 0
    nan = math.nan

    def stable_only(value: float) -> float:
        return nan if unstable else float(value)

    def imbalance(total: float) -> float:  # not measured (imbalance=False): missing, not 0
        return total / measured if all(run.imbalance for run in runs) else nan

    mean_total = stable_only(estimate.mean)
    waiting, busy = ((measured_share(runs, layout.JOBS_QUEUED),
                      measured_share(runs, layout.JOBS_FOUND_BUSY))
                     if window and not unstable else ((nan, nan, nan), (nan, nan, nan)))
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
        mean_pooled_queue=totals.sum_pooled / measured,
        invariant_violations=totals.invariant_violations,
        mean_delay=stable_only(estimate.mean / system.arrival_rate),
        mean_delay_measured=stable_only(totals.sum_delay / delayed if delayed else nan),
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
        idle_while_busy=totals.sum_queue_unused / measured,
        idle_while_busy_ci_low=stable_only(queue_unused.ci_low),
        idle_while_busy_ci_high=stable_only(queue_unused.ci_high),
        mean_unused_square=totals.sum_unused_sq / measured,
        mean_pooled_unused_square=totals.sum_pooled_unused_sq / measured,
        queue_imbalance_l1=stable_only(imbalance(totals.sum_imbalance_l1)),
        queue_imbalance_l2=stable_only(imbalance(totals.sum_imbalance_l2)),
        herding_fraction=totals.herding_slots / measured if window else nan,
        waiting_probability=waiting[0], waiting_probability_ci_low=waiting[1],
        waiting_probability_ci_high=waiting[2], busy_server_probability=busy[0],
        busy_server_probability_ci_low=busy[1], busy_server_probability_ci_high=busy[2],
        arrival_rate_measured=totals.arrivals_measured / measured if window
        else nan,
        jobs_arrived=totals.arrivals,
        jobs_departed=totals.departures,
        jobs_in_system=int(sum(run.final_queues.sum() for run in runs)),
        jobs_at_start=sum(run.initial_jobs for run in runs),
        mean_completion_time=stable_only(totals.sum_delay / delayed + 1 if delayed
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
        stop_reason=stop_reason(runs),
        theory_stability=theory, start=start,
        estimator="coupled" if use_coupled else "plain", estimator_note=note,
        plain_mean_total_queue=stable_only(plain.mean),
        plain_ci_low=stable_only(plain.ci_low), plain_ci_high=stable_only(plain.ci_high),
        coupled_mean_total_queue=stable_only(coupled.mean) if coupled else nan,
        coupled_ci_low=stable_only(coupled.ci_low) if coupled else nan,
        coupled_ci_high=stable_only(coupled.ci_high) if coupled else nan,
        pooled_queue_exact=float(pooled.value), pooled_queue_error=float(pooled.error),
        pooled_queue_method=pooled.method,
        mean_excess=stable_only(excess.mean), excess_ci_low=stable_only(excess.ci_low),
        excess_ci_high=stable_only(excess.ci_high),
        epsilon_excess=stable_only(system.epsilon * excess.mean),
        epsilon_excess_ci_low=stable_only(system.epsilon * excess.ci_low),
        epsilon_excess_ci_high=stable_only(system.epsilon * excess.ci_high),
        **delay_measurement(runs, hist, unstable),
        **per_server_statistics(system, runs, unstable),
        **trajectory_fields(runs[0]),
    )


def stop_reason(runs: list[RawRun]) -> str:
    """Why the runs ended: their fixed length, or where the first one that passed its
    bound stopped (the slots it ran, not those asked for)."""
    stopped = [run for run in runs if run.hit_bound]
    if not stopped:
        return FIXED_LENGTH
    run = stopped[0]
    which = "" if len(runs) == 1 else f" ({len(stopped)} of {len(runs)} replications)"
    return (f"stopped at the bound{which}: ΣQ passed {run.bound:,} after {run.slots_run:,} "
            f"of {run.slots:,} slots")


def measured_share(runs: list[RawRun], counter: int) -> tuple[float, float, float]:
    """The share of measured jobs that ``counter`` counts (layout.JOBS_QUEUED,
    layout.JOBS_FOUND_BUSY), the mean over the runs with its 95 % t-interval across them
    (R ≥ 2; one run: no interval)."""
    shares = np.array([run.counters[counter] / run.counters[layout.ARRIVALS_MEASURED]
                       for run in runs if run.counters[layout.ARRIVALS_MEASURED] > 0])
    return t_interval(shares) if shares.size else (math.nan, math.nan, math.nan)


def per_server_statistics(system: System, runs: list[RawRun], unstable: bool
                          ) -> dict[str, Any]:
    """The Result's server_* fields (docs/statistics.md#per-server) from the runs' per-server
    counts, pooled over their measured slots T: u_n = D_n/(μ_n·T) with D_n the jobs server
    n served, the idle fraction (slots ending with Q_n = 0)/T, and each histogram of Q_n
    over T (none when ``unstable``). Empty when the runs did not count them."""
    if runs[0].served.size == 0:
        return {}
    measured = sum(run.measured_slots for run in runs)
    if measured == 0:  # stopped before the warm-up ended: nothing measured
        unknown = [math.nan] * system.n_servers
        return {"server_rates": system.mu.tolist(), "server_utilisation": unknown,
                "server_idle_fraction": unknown}
    served = sum(run.served for run in runs)
    hist = sum(run.server_hist for run in runs)
    return {
        "server_rates": system.mu.tolist(),
        "server_utilisation": (served / (system.mu * measured)).tolist(),
        "server_idle_fraction": (hist[:, 0] / measured).tolist(),
        "server_queue_distributions": [] if unstable else (hist / measured).tolist(),
    }


def trajectory_fields(run: RawRun) -> dict[str, Any]:
    """The Result's trajectory_* fields from one run's trajectory rows (empty: none)."""
    rows = run.trajectory
    if rows.shape[0] == 0:
        return {}
    return {
        "trajectory_slots": rows[:, observe.POINT_SLOT].tolist(),
        "trajectory_total_queue": rows[:, observe.POINT_TOTAL].tolist(),
        "trajectory_pooled_queue": rows[:, observe.POINT_POOLED].tolist(),
        "trajectory_servers": run.trajectory_servers.tolist(),
        "trajectory_queues": rows[:, observe.POINT_SERVERS:].T.tolist(),
    }


#: the delay quantiles every result reports (``delay_p50`` …), by name and level
DELAY_QUANTILES = {"p50": 0.5, "p90": 0.9, "p99": 0.99, "p999": 0.999}
#: a quantile of level u is reported from at least TAIL_JOBS/(1 − u) timed jobs (p99.9:
#: 10,000), so that about TAIL_JOBS of them lie beyond it; from fewer it would be one of
#: the last few observations (p99.9 had been printed from 15 tagged jobs)
TAIL_JOBS = 10


def _enough_jobs(level: float, jobs: int) -> bool:
    return jobs * (1 - level) >= TAIL_JOBS


def delay_measurement(runs: list[RawRun], hist: np.ndarray, unstable: bool) -> dict[str, Any]:
    """The Result's delay_method … delay_p999_ci_high fields (docs/statistics.md#tagged-delays):
    how the runs measured delays and, for tagged jobs, each quantile's order-statistic CI."""
    method = runs[0].delay
    fields: dict[str, Any] = {"delay_method": method, "delay_jobs": int(hist.sum()),
                              "delay_tag_probability": runs[0].tag_probability
                              if method == "tagged" else math.nan}
    if method == "tagged" and not unstable:
        jobs = int(hist.sum())
        levels = tuple(DELAY_QUANTILES.values())
        for (name, level), (low, high) in zip(DELAY_QUANTILES.items(),
                                              quantile_intervals(hist, levels), strict=True):
            if not _enough_jobs(level, jobs):
                low = high = math.nan
            fields[f"delay_{name}_ci_low"], fields[f"delay_{name}_ci_high"] = low, high
    return fields


def _distribution(histogram: np.ndarray) -> list[float]:
    """Normalised histogram, trimmed after its last non-empty bin."""
    nonzero = np.flatnonzero(histogram)
    if nonzero.size == 0:
        return []
    trimmed = histogram[: nonzero[-1] + 1]
    return (trimmed / trimmed.sum()).tolist()


def summarize_plan(plan: Plan, runs: list[RawRun]) -> Result:
    """The :class:`Result` of ``runs``, replications of ``plan``'s configuration."""
    return summarize(plan.task.system, plan.task.policy, runs, seed=plan.task.seed,
                     warmup_method=plan.warmup_method, estimator=plan.estimator,
                     start=plan.task.start)
