"""``simulate_continuous``: a continuous-time run of a dispatching policy, with its
statistics.

The model: N servers of speeds s_n; M dispatchers, each with its own renewal stream of
arrivals at rate λ/M (Poisson by default); each job brings a size X drawn from the size
law and joins at once the server its dispatcher's policy picks; the servers serve FIFO,
by processor sharing or by preemptive SRPT. The load is ρ = λ·E[X]/Σ s_n.
"""

from __future__ import annotations

import math
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from dispatchlab.continuous import engine
from dispatchlab.continuous import precision as rounds
from dispatchlab.continuous.laws import Law, parse_arrival_shape, parse_size_law
from dispatchlab.continuous.policies import policy_arrays
from dispatchlab.continuous.replicate import Settings, check_memory, run_replication
from dispatchlab.continuous.servers import DISCIPLINES
from dispatchlab.continuous.summary import detect_warmup, means, quantiles, stability_of
from dispatchlab.continuous.trace import JobTrace, load_job_trace
from dispatchlab.continuous.user_rules import workers_can_import
from dispatchlab.core.errors import INTEGER_LIMIT, refuse_unknown, require
from dispatchlab.core.pools import resolve_workers
from dispatchlab.core.precision_target import Precision
from dispatchlab.core.signals import api_stops, call_interruptibly, interrupt_saying
from dispatchlab.model.service import parse_rates
from dispatchlab.model.values import as_int, as_number, as_text
from dispatchlab.stats.estimators import Estimate

#: the policy of a run that names none
DEFAULT_POLICY = "jsq"
#: jobs per run unless asked (the first tenth is the warm-up)
DEFAULT_JOBS = 1_000_000
#: the most jobs in system a run holds before it is judged unstable (unless ``bound``)
DEFAULT_BOUND = 1_000_000
QUANTILE_LEVELS = (0.5, 0.9, 0.99)
#: the warm-up: the fixed ``warmup`` alone, or then MSER-5 on each replication
WARMUP_METHODS = ("fraction", "mser5")


@dataclass(frozen=True)
class ContinuousResult:
    """What a continuous-time run measured, over its measured jobs (after the warm-up).

    ``mean_response`` E[T] (completion − arrival), ``mean_slowdown`` E[T / (X/s)] (the
    response time over the job's own service time at its server), ``mean_in_system`` E[L]
    (the time-average number of jobs present), ``waiting_probability`` P(the job's server
    was busy when it arrived), each an :class:`~dispatchlab.stats.estimators.Estimate`
    with a 95 % confidence interval; ``response_quantiles`` {level: Estimate} of the
    response time, from histograms of 100 log-spaced bins a decade (a quantile is its
    bin's geometric middle, within ±1.2 % of the sample's), each with a 95 % interval
    (:func:`.summary.quantiles`).
    ``stability`` is the verdict on the trend of L over the measured jobs
    (:func:`dispatchlab.stats.run_stability.stability_verdict`, each replication judged,
    the worst verdict kept) or "unstable" when a run held more than ``bound`` jobs at once;
    the means of an unstable run are NaN. ``messages_per_job``: the messages LED's updates
    sent between the first and the last measured arrival, per measured job (0 for the
    full-information rules, whose information this model does not charge).
    """

    policy: str
    policy_params: dict[str, Any]
    discipline: str
    speeds: np.ndarray
    arrival_rate: float
    load: float
    sizes: str
    arrivals: str
    dispatchers: int
    jobs: int
    warmup: int
    replications: int
    seed: int
    stability: str
    stability_evidence: str
    mean_response: Estimate
    mean_slowdown: Estimate
    mean_in_system: Estimate
    waiting_probability: Estimate
    response_quantiles: dict[float, Estimate]
    messages_per_job: float
    max_in_system: int
    events: int
    seconds: float
    notes: list[str] = field(default_factory=list)
    #: a precision run's target (``precision``: relative, absolute half-width of E[T]'s
    #: 95 % CI), job budget and why it stopped ("target reached", "job budget spent …");
    #: empty for a run of a fixed number of replications
    precision_target: float | None = None
    precision_abs_target: float | None = None
    job_budget: int | None = None
    stop_reason: str = ""
    #: "fraction" or "mser5", and the measured jobs MSER-5 dropped a replication (mean)
    warmup_method: str = "fraction"
    warmup_dropped: float = 0.0
    #: each replication's block sums (engine.B_* rows × blocks of equal job counts), for
    #: paired comparisons (:mod:`.compare`)
    blocks: tuple[np.ndarray, ...] = field(default=(), repr=False, compare=False)

    @property
    def jobs_per_second(self) -> float:
        """Simulated jobs per second of wall time (all replications)."""
        return self.jobs * self.replications / self.seconds if self.seconds > 0 else math.nan


@api_stops()
def simulate_continuous(
    servers: Any,
    policy: str = DEFAULT_POLICY,
    *,
    load: float | None = None,
    rate: float | None = None,
    sizes: str | None = None,
    arrivals: str = "poisson",
    discipline: str = "fifo",
    dispatchers: int = 1,
    jobs: int | None = None,
    warmup: int | None = None,
    seed: int = 0,
    replications: int = 1,
    bound: int = DEFAULT_BOUND,
    policy_params: Mapping[str, Any] | None = None,
    workers: int | None = None,
    precision: Precision | None = None,
    warmup_method: str = "fraction",
    **unknown: Any,
) -> ContinuousResult:
    """Simulate ``policy`` dispatching jobs to ``servers`` in continuous time.

    ``servers``: the speeds s_n, as a list or ``COUNTxSPEED,…`` (``"10x1,10x2"``).
    ``load`` ρ or ``rate`` λ (one of them): λ = ρ·Σ s_n / E[X]. ``sizes``: the job-size law
    (:mod:`dispatchlab.continuous.laws`, default ``exp:1``); ``arrivals``: each
    dispatcher's interarrival shape, or ``trace:PATH`` (:mod:`.trace`: its times, and its
    sizes and dispatchers when it has them, replayed; it sets the rate, and its jobs but
    the last are the run's unless ``jobs`` asks for fewer); ``discipline``: ``fifo``,
    ``ps`` or ``srpt``. ``jobs`` jobs are simulated per replication (default 10⁶), the
    first ``warmup`` (default a tenth) unmeasured; ``warmup_method="mser5"`` then drops
    each replication's MSER-5 warm-up too, as in the slotted model (docs/continuous.md#
    measurement: it is not the default there either). The same ``seed`` gives every policy
    the same arrival times and sizes (common random numbers). Replications
    run on ``workers`` processes (default: every core the process may use), each
    bit-identical to its run in this process. ``precision``: a target for E[T]'s 95 % CI,
    ``Precision(rel=…, abs=…, max_jobs=…)``: replications (at least ``replications``) are
    added in rounds until it is met or ``max_jobs`` jobs (default 64 replications') are
    spent; the result says why it stopped (``stop_reason``).
    """
    refuse_unknown(simulate_continuous, unknown)
    plan = plan_continuous(servers, policy, load=load, rate=rate, sizes=sizes,
                           arrivals=arrivals, discipline=discipline, dispatchers=dispatchers,
                           jobs=jobs, warmup=warmup, seed=seed, replications=replications,
                           bound=bound, policy_params=policy_params, precision=precision,
                           warmup_method=warmup_method)
    settings, target, jobs, warmup = plan.settings, plan.target, plan.jobs, plan.warmup
    if workers is not None:
        workers = as_int(workers, "workers", 1, 4096)
    if plan.policy.rule is not None and not workers_can_import(plan.policy.rule):
        workers = 1  # (a rule from a notebook cell: worker processes cannot find it)
    check_memory(settings, resolve_workers(
        workers, plan.replications if target is None else target.max_jobs // jobs))
    # two jobs first, so that the speed measured below leaves out loading (or compiling)
    # the event loop; beside this thread, which a stop interrupts at once (a cold compile
    # takes ~10 s, and no chunk boundary comes before it ends)
    try:
        call_interruptibly(run_replication, (np.random.SeedSequence(0), 2, 0, settings))
    except KeyboardInterrupt as stop:
        raise interrupt_saying(stop, f"while loading the event loop ({plan.policy.name}, "
                               "continuous time)") from None
    started = time.perf_counter()
    root = np.random.SeedSequence(plan.seed)
    stop_reason = ""
    if target is None:
        runs = rounds.replications(root, plan.replications, jobs, warmup, settings, workers)
    else:
        runs, stop_reason = rounds.replications_to_precision(
            root, plan.replications, jobs, warmup, settings, target, workers)
    seconds = time.perf_counter() - started
    paired_blocks = tuple(run.blocks for run in runs)  # (the same jobs for every policy)
    runs, dropped = detect_warmup(runs, settings.warmup_method)
    stability, evidence = stability_of(runs, settings.bound, jobs - warmup - int(dropped))
    stable = stability != "unstable"
    notes = [] if stable else [f"unstable ({evidence}): the means are not reported"]
    if settings.warmup_method == "mser5":
        notes.append(f"MSER-5 dropped {dropped:,.0f} measured jobs a replication (mean) "
                     "after the fixed warm-up")
    nan = Estimate(math.nan, math.nan, math.nan, "unstable run", 0)
    estimates = means(runs) if stable else dict.fromkeys(
        ("mean_response", "mean_slowdown", "mean_in_system", "waiting_probability"), nan)
    trace = settings.trace
    return ContinuousResult(
        policy=plan.policy.name, policy_params=plan.policy.params,
        discipline=plan.discipline, speeds=settings.speeds, arrival_rate=plan.arrival_rate,
        load=plan.load,
        sizes="trace" if trace is not None and trace.sizes.size else settings.size_law.text,
        arrivals=f"trace:{trace.path}" if trace is not None else plan.arrival_shape,
        dispatchers=settings.dispatchers, jobs=jobs, warmup=warmup, replications=len(runs),
        seed=plan.seed, stability=stability, stability_evidence=evidence,
        response_quantiles=quantiles(runs, QUANTILE_LEVELS) if stable else {},
        messages_per_job=float(sum(run.counts[engine.C_MESSAGES] for run in runs))
        / ((jobs - warmup) * len(runs)),
        max_in_system=int(max(run.counts[engine.C_MAX_IN_SYSTEM] for run in runs)),
        events=int(sum(run.counts[engine.C_EVENTS] for run in runs)), seconds=seconds,
        notes=notes, blocks=paired_blocks, stop_reason=stop_reason,
        warmup_method=settings.warmup_method, warmup_dropped=dropped,
        precision_target=None if target is None else target.rel,
        precision_abs_target=None if target is None else target.abs,
        job_budget=None if target is None else target.max_jobs, **estimates)


@dataclass(frozen=True)
class ContinuousPlan:
    """A continuous-time run checked and set up, not yet run (:func:`plan_continuous`)."""

    settings: Settings
    policy: Any  # policies.PolicyArrays
    discipline: str
    arrival_shape: str
    arrival_rate: float
    load: float
    jobs: int
    warmup: int
    seed: int
    replications: int
    target: Precision | None


def plan_continuous(servers: Any, policy: str = DEFAULT_POLICY, *, load: float | None = None,
                    rate: float | None = None, sizes: str | None = None,
                    arrivals: str = "poisson", discipline: str = "fifo",
                    dispatchers: int = 1, jobs: int | None = None, warmup: int | None = None,
                    seed: int = 0, replications: int = 1, bound: int = DEFAULT_BOUND,
                    policy_params: Mapping[str, Any] | None = None,
                    precision: Precision | None = None,
                    warmup_method: str = "fraction") -> ContinuousPlan:
    """Check :func:`simulate_continuous`'s arguments (raising
    :class:`~dispatchlab.core.errors.ValidationError` naming the field) and set the run
    up, without running it: a sweep checks every point of its grid this way first."""
    speeds = parse_rates(servers)
    discipline_name = as_text(discipline, "discipline").strip().lower()
    require(discipline_name in DISCIPLINES, "discipline",
            f"unknown discipline {discipline!r}; allowed: {', '.join(DISCIPLINES)}")
    dispatchers = as_int(dispatchers, "dispatchers", 1, 1 << 20)
    trace = _trace(arrivals, dispatchers, sizes)
    size_law = parse_size_law("exp:1" if sizes is None else sizes)
    shape = parse_arrival_shape("poisson" if trace is not None else arrivals)
    if jobs is None:  # a trace's last arrival closes its window
        jobs = DEFAULT_JOBS if trace is None else trace.times.size - 1
    jobs = as_int(jobs, "jobs", 2, INTEGER_LIMIT)
    require(trace is None or jobs < trace.times.size, "jobs",
            f"the trace holds {0 if trace is None else trace.times.size:,} jobs, and its last "
            f"arrival closes the measured window: jobs must be ≤ "
            f"{0 if trace is None else trace.times.size - 1:,} (got {jobs:,})")
    warmup = jobs // 10 if warmup is None else as_int(warmup, "warmup", 0, jobs - 1)
    seed = as_int(seed, "seed", 0, INTEGER_LIMIT)
    replications = as_int(replications, "replications", 1, 100_000)
    target = None if precision is None else Precision.of(precision).check_jobs(
        jobs, replications)
    bound = as_int(bound, "bound", 1, 1 << 31)
    arrival_rate, rho = _rates(load, rate, float(speeds.sum()), size_law, trace)
    _check_clock_resolution(jobs, arrival_rate, size_law.mean / float(speeds.max()), trace,
                            "rate" if rate is not None else "load")
    policy_info = policy_arrays(policy, policy_params, speeds, size_law)
    method = as_text(warmup_method, "warmup_method").strip().lower()
    require(method in WARMUP_METHODS, "warmup_method",
            f"allowed: {', '.join(WARMUP_METHODS)} (got {warmup_method!r})")
    settings = Settings(speeds, dispatchers, DISCIPLINES[discipline_name], policy_info,
                        shape.with_mean(dispatchers / arrival_rate), size_law, bound, trace,
                        method)
    return ContinuousPlan(settings, policy_info, discipline_name, shape.text, arrival_rate,
                          rho, jobs, warmup, seed, replications, target)


#: the clock's resolution at a run's end (its horizon × 2⁻⁵²) must stay below this share of
#: a job's mean service time on the fastest server: a response time is a difference of two
#: clock readings
CLOCK_RESOLUTION = 1e-6


def _check_clock_resolution(jobs: int, arrival_rate: float, service_time: float,
                            trace: JobTrace | None, rate_field: str) -> None:
    """Refuse a run whose clock, in double precision, cannot resolve its service times:
    a tiny rate (load 1e-300: interarrival times of 1e300 swallow a service time of 1, and
    every response time read 0) or too many jobs at a low rate."""
    def horizon(count: int) -> float:
        if trace is not None:
            return float(trace.times[-1])
        return count / arrival_rate if arrival_rate > 0 else math.inf

    def resolved(count: int) -> bool:
        return horizon(count) * 2.0**-52 <= CLOCK_RESOLUTION * service_time

    field_name = "arrivals" if trace is not None else rate_field if not resolved(2) else "jobs"
    require(resolved(jobs), field_name,
            f"a run of {jobs:,} jobs at λ = {arrival_rate:.4g} lasts about "
            f"{horizon(jobs):.3g} time units, where double precision cannot resolve "
            f"{CLOCK_RESOLUTION:g} of a job's mean service time ({service_time:.3g}): "
            "ask for fewer jobs or a higher rate (or rescale time)")


def _trace(arrivals: Any, dispatchers: int, sizes: Any) -> JobTrace | None:
    """The job trace ``arrivals`` names (``trace:PATH``), checked against ``sizes``."""
    text = as_text(arrivals, "arrivals").strip()
    if not text.lower().startswith("trace:"):
        return None
    path = text[len("trace:"):].strip()
    require(bool(path), "arrivals", "trace needs a file: trace:PATH")
    trace = load_job_trace(path, dispatchers)
    require(sizes is None or not trace.sizes.size, "sizes",
            f"the trace {trace.path!r} gives every job's size: leave sizes out")
    return trace


def _rates(load: Any, rate: Any, capacity: float, sizes: Law,
           trace: JobTrace | None) -> tuple[float, float]:
    """(λ, ρ) from the load or the rate, or from the trace (which fixes both)."""
    if trace is not None:
        require(load is None and rate is None, "load" if load is not None else "rate",
                "a trace sets its own arrival rate: leave load and rate out")
        mean = float(trace.sizes.mean()) if trace.sizes.size else sizes.mean
        return trace.rate, trace.rate * mean / capacity
    require((load is None) != (rate is None), "load",
            "give exactly one of load (ρ) and rate (λ)")
    if load is not None:
        rho = as_number(load, "load")
        require(0 < rho < 1, "load", f"ρ must lie in (0, 1): at ρ ≥ 1 no policy is stable "
                                     f"(got {rho:g})")
        return rho * capacity / sizes.mean, rho
    arrival_rate = as_number(rate, "rate")
    require(arrival_rate > 0, "rate", f"λ must be > 0 (got {arrival_rate:g})")
    rho = arrival_rate * sizes.mean / capacity
    require(rho < 1, "rate", f"λ·E[X]/Σs = {rho:g} ≥ 1: no policy is stable")
    return arrival_rate, rho
