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

from dispatchlab.compiled.rng import make_rng_state
from dispatchlab.continuous import engine
from dispatchlab.continuous.choose import (
    L_JSQ,
    L_POD,
    LWL,
    P_D,
    P_PROBES,
    WEIGHTED_ROUND_ROBIN,
)
from dispatchlab.continuous.laws import Law, parse_arrival_shape, parse_size_law
from dispatchlab.continuous.policies import policy_arrays
from dispatchlab.continuous.servers import DISCIPLINES, new_pool, new_servers
from dispatchlab.continuous.summary import SECTIONS, Replication, means, quantiles, stability_of
from dispatchlab.continuous.tournament import build_tree, tree_size
from dispatchlab.core.errors import INTEGER_LIMIT, refuse_unknown, require
from dispatchlab.core.pools import map_tasks
from dispatchlab.core.signals import api_stops, interruption, stops_caught
from dispatchlab.model.service import parse_rates
from dispatchlab.model.values import as_int, as_number, as_text
from dispatchlab.stats.estimators import Estimate

#: jobs per run unless asked (the first tenth is the warm-up)
DEFAULT_JOBS = 1_000_000
#: the most jobs in system a run holds before it is judged unstable (unless ``bound``)
DEFAULT_BOUND = 1_000_000
#: events per call of the compiled loop (Python checks for Ctrl-C between calls): at most
#: ~0.5 s even for LWL at N = 10⁴ (~2 µs an event)
EVENTS_PER_CHUNK = 1 << 18
#: response-time blocks a run's statistics are kept in (for batch means)
BLOCKS = 256
QUANTILE_LEVELS = (0.5, 0.9, 0.99)


@dataclass(frozen=True)
class ContinuousResult:
    """What a continuous-time run measured, over its measured jobs (after the warm-up).

    ``mean_response`` E[T] (completion − arrival), ``mean_slowdown`` E[T / (X/s)] (the
    response time over the job's own service time at its server), ``mean_in_system`` E[L]
    (the time-average number of jobs present), ``waiting_probability`` P(the job's server
    was busy when it arrived), each an :class:`~dispatchlab.stats.estimators.Estimate`
    with a 95 % confidence interval; ``response_quantiles`` {level: value} from a
    histogram of 100 log-spaced bins a decade (a value is known to about 2.3 %).
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

    @property
    def jobs_per_second(self) -> float:
        """Simulated jobs per second of wall time (all replications)."""
        return self.jobs * self.replications / self.seconds if self.seconds > 0 else math.nan


def _check(value: Any, low: int, high: int, name: str) -> int:
    return as_int(value, name, low, high)


def _run_task(task: tuple[np.random.SeedSequence, int, int, dict[str, Any]]) -> Replication:
    """One replication from a picklable task (seed, jobs, warm-up, settings), for a pool."""
    seed, jobs, warmup, settings = task
    return _one_run(seed, jobs=jobs, warmup=warmup, **settings)


def _one_run(seed: np.random.SeedSequence, *, speeds: np.ndarray, dispatchers: int,
             discipline: int, policy: Any, arrival_law: Law, size_law: Law, jobs: int,
             warmup: int, bound: int) -> Replication:
    arrival_stream, size_stream, policy_stream, phase_stream, update_stream = (
        make_rng_state(child) for child in seed.spawn(5))
    N = speeds.size
    sf, si = new_servers(N)
    jf, ji, free = new_pool(bound)
    width = tree_size(N + dispatchers)
    when = np.full(width, np.inf)
    # each dispatcher's first arrival: at a uniform fraction of an interarrival time
    for m in range(dispatchers):
        when[N + m] = engine.draw_phase(phase_stream, arrival_law.code, arrival_law.a,
                                        arrival_law.b, arrival_law.c)
    tree = np.zeros(2 * width, dtype=np.int64)
    build_tree(when, tree, width)
    empty_at = np.zeros(tree_size(N) if policy.code == LWL else 1)
    empty_at[N:] = np.inf
    empty_tree = np.zeros(2 * empty_at.size, dtype=np.int64)
    build_tree(empty_at, empty_tree, empty_at.size)
    idle = np.zeros(2 * N + 1, dtype=np.int64)
    idle[:N] = np.arange(N)
    idle[N] = N
    idle[N + 1:] = np.arange(N)
    counts = np.zeros(engine.N_COUNTS, dtype=np.int64)
    clock = np.zeros(engine.N_CLOCK)
    blocks = np.zeros((engine.N_BLOCK_ROWS, min(BLOCKS, jobs - warmup)))
    histogram = np.zeros((min(SECTIONS, jobs - warmup), engine.HISTOGRAM_BINS), dtype=np.int64)
    credit = np.zeros((dispatchers, N) if policy.code == WEIGHTED_ROUND_ROBIN else (1, 1))
    cursor = np.zeros(dispatchers, dtype=np.int64)
    sample = np.zeros(max(int(policy.ints[P_D]), 1), dtype=np.int64)
    estimating = policy.code in (L_JSQ, L_POD)
    estimates = np.zeros((dispatchers, N) if estimating else (1, 1), dtype=np.int64)
    probed = np.zeros(max(int(policy.ints[P_PROBES]), 1), dtype=np.int64)
    arrival = np.array([arrival_law.code, arrival_law.a, arrival_law.b, arrival_law.c])
    size = np.array([size_law.code, size_law.a, size_law.b, size_law.c])
    with stops_caught() as stopped:  # Ctrl-C, SIGTERM: between two chunks
        while counts[engine.C_STATUS] == engine.RUNNING:
            engine.run_events(EVENTS_PER_CHUNK, discipline, policy.code, speeds, arrival,
                              size, jobs, warmup, sf, si, jf, ji, free, when, tree, idle,
                              empty_at, empty_tree, counts, clock, blocks, histogram,
                              policy.ints, policy.floats, policy.cumulative, policy.cutoffs,
                              cursor, credit, sample, estimates, probed, arrival_stream,
                              size_stream, policy_stream, update_stream)
            if stopped():
                raise interruption(stopped(), f"at job {int(counts[engine.C_ARRIVALS]):,} "
                                   f"of {jobs:,} ({policy.name}, continuous time)")
    return Replication(blocks, histogram, counts)


@api_stops()
def simulate_continuous(
    servers: Any,
    policy: str = "jsq",
    *,
    load: float | None = None,
    rate: float | None = None,
    sizes: str = "exp:1",
    arrivals: str = "poisson",
    discipline: str = "fifo",
    dispatchers: int = 1,
    jobs: int = DEFAULT_JOBS,
    warmup: int | None = None,
    seed: int = 0,
    replications: int = 1,
    bound: int = DEFAULT_BOUND,
    policy_params: Mapping[str, Any] | None = None,
    workers: int | None = None,
    **unknown: Any,
) -> ContinuousResult:
    """Simulate ``policy`` dispatching jobs to ``servers`` in continuous time.

    ``servers``: the speeds s_n, as a list or ``COUNTxSPEED,…`` (``"10x1,10x2"``).
    ``load`` ρ or ``rate`` λ (one of them): λ = ρ·Σ s_n / E[X]. ``sizes``: the job-size law
    (:mod:`dispatchlab.continuous.laws`); ``arrivals``: each dispatcher's interarrival
    shape; ``discipline``: ``fifo``, ``ps`` or ``srpt``. ``jobs`` jobs are simulated per
    replication, the first ``warmup`` (default a tenth) unmeasured. The same ``seed`` gives
    every policy the same arrival times and sizes (common random numbers). Replications
    run on ``workers`` processes (default: every core the process may use), each
    bit-identical to its run in this process.
    """
    refuse_unknown(simulate_continuous, unknown)
    speeds = parse_rates(servers)
    size_law = parse_size_law(sizes)
    shape = parse_arrival_shape(arrivals)
    discipline_name = as_text(discipline, "discipline").strip().lower()
    require(discipline_name in DISCIPLINES, "discipline",
            f"unknown discipline {discipline!r}; allowed: {', '.join(DISCIPLINES)}")
    dispatchers = _check(dispatchers, 1, 1 << 20, "dispatchers")
    jobs = _check(jobs, 2, INTEGER_LIMIT, "jobs")
    warmup = jobs // 10 if warmup is None else _check(warmup, 0, jobs - 1, "warmup")
    require(warmup < jobs, "warmup", f"must be < jobs = {jobs:,} (got {warmup:,})")
    seed = _check(seed, 0, INTEGER_LIMIT, "seed")
    replications = _check(replications, 1, 100_000, "replications")
    bound = _check(bound, 1, 1 << 31, "bound")
    if workers is not None:
        workers = _check(workers, 1, 4096, "workers")
    require((load is None) != (rate is None), "load",
            "give exactly one of load (ρ) and rate (λ)")
    capacity = float(speeds.sum())
    if load is not None:
        rho = as_number(load, "load")
        require(0 < rho < 1, "load", f"ρ must lie in (0, 1): at ρ ≥ 1 no policy is stable "
                                     f"(got {rho:g})")
        arrival_rate = rho * capacity / size_law.mean
    else:
        arrival_rate = as_number(rate, "rate")
        require(arrival_rate > 0, "rate", f"λ must be > 0 (got {arrival_rate:g})")
        rho = arrival_rate * size_law.mean / capacity
        require(rho < 1, "rate", f"λ·E[X]/Σs = {rho:g} ≥ 1: no policy is stable")
    policy_info = policy_arrays(policy, policy_params, speeds, size_law)
    arrival_law = shape.with_mean(dispatchers / arrival_rate)
    settings = {"speeds": speeds, "dispatchers": dispatchers, "policy": policy_info,
                "discipline": DISCIPLINES[discipline_name], "arrival_law": arrival_law,
                "size_law": size_law, "bound": bound}
    # two jobs first, so that the speed measured below leaves out loading (or compiling)
    # the event loop
    _one_run(np.random.SeedSequence(0), jobs=2, warmup=0, **settings)
    started = time.perf_counter()
    runs = map_tasks(_run_task, [(child, jobs, warmup, settings) for child
                                 in np.random.SeedSequence(seed).spawn(replications)],
                     workers=workers)
    seconds = time.perf_counter() - started
    stability, evidence = stability_of(runs, bound, jobs - warmup)
    stable = stability != "unstable"
    notes = [] if stable else [f"unstable ({evidence}): the means are not reported"]
    nan = Estimate(math.nan, math.nan, math.nan, "unstable run", 0)
    estimates = means(runs) if stable else dict.fromkeys(
        ("mean_response", "mean_slowdown", "mean_in_system", "waiting_probability"), nan)
    return ContinuousResult(
        policy=policy_info.name, policy_params=policy_info.params, discipline=discipline_name,
        speeds=speeds, arrival_rate=arrival_rate, load=rho, sizes=size_law.text,
        arrivals=shape.text, dispatchers=dispatchers, jobs=jobs, warmup=warmup,
        replications=replications, seed=seed, stability=stability,
        stability_evidence=evidence,
        response_quantiles=quantiles(runs, QUANTILE_LEVELS) if stable else {},
        messages_per_job=float(sum(run.counts[engine.C_MESSAGES] for run in runs))
        / ((jobs - warmup) * replications),
        max_in_system=int(max(run.counts[engine.C_MAX_IN_SYSTEM] for run in runs)),
        events=int(sum(run.counts[engine.C_EVENTS] for run in runs)), seconds=seconds,
        notes=notes, **estimates)
