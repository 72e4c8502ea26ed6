"""One replication of a continuous-time run: its arrays set up, the event loop run in
chunks (Ctrl-C and SIGTERM between two of them), what it measured returned."""

from __future__ import annotations

from dataclasses import dataclass
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
    P_UPDATE,
    PERIODIC,
    USER,
    WEIGHTED_ROUND_ROBIN,
)
from dispatchlab.continuous.estimates import F_INTERVAL
from dispatchlab.continuous.laws import Law
from dispatchlab.continuous.servers import new_pool, new_servers
from dispatchlab.continuous.summary import SECTIONS, Replication
from dispatchlab.continuous.tournament import build_tree, tree_size
from dispatchlab.continuous.trace import JobTrace
from dispatchlab.continuous.user_rules import NO_RULE, compiled_rule
from dispatchlab.core.errors import ValidationError
from dispatchlab.core.ram import require_memory
from dispatchlab.core.signals import interruption, stops_caught

#: events per call of the compiled loop (Python checks for Ctrl-C between calls): at most
#: ~0.5 s even for LWL at N = 10⁴ (~2 µs an event)
EVENTS_PER_CHUNK = 1 << 18
#: response-time blocks a run's statistics are kept in (for batch means)
BLOCKS = 256
_NO_TRACE = (np.empty(0), np.empty(0), np.empty(0, dtype=np.int64))


@dataclass(frozen=True)
class Settings:
    """What every replication of a run shares (picklable, for a pool's workers)."""

    speeds: np.ndarray
    dispatchers: int
    discipline: int
    policy: Any  # policies.PolicyArrays
    arrival_law: Law  # each dispatcher's interarrival law (unused with a trace)
    size_law: Law
    bound: int
    trace: JobTrace | None = None
    #: "fraction" (the fixed warm-up alone) or "mser5" (then MSER-5 on each replication:
    #: summary.truncated)
    warmup_method: str = "fraction"


#: bytes a job of the pool takes: three floats, four integers and its free-list entry
POOL_BYTES_PER_JOB = 8 * 8


def check_memory(settings: Settings, processes: int) -> None:
    """Refuse, before allocating, a run whose arrays would not fit in memory: the job pool
    (``bound`` jobs) and the dispatchers' M × N matrices (LED's estimates, weighted round
    robin's credits), once per process that runs replications."""
    pool = POOL_BYTES_PER_JOB * settings.bound * processes
    require_memory("bound", pool, f"a job pool of bound = {settings.bound:,} jobs in each of "
                   f"{processes} process(es)")
    if settings.policy.code in (L_JSQ, L_POD, WEIGHTED_ROUND_ROBIN):
        matrix = 8 * settings.dispatchers * settings.speeds.size * processes
        require_memory("dispatchers", matrix, f"the M × N = {settings.dispatchers:,} × "
                       f"{settings.speeds.size:,} per-dispatcher state of "
                       f"{settings.policy.name} in each of {processes} process(es)")
    if settings.policy.code == USER:
        state = 8 * settings.dispatchers * settings.policy.state * processes
        require_memory("dispatchers", state, f"the {settings.policy.state:,} floats of state "
                       f"of each of M = {settings.dispatchers:,} dispatchers of "
                       f"{settings.policy.name} in each of {processes} process(es)")


def _first_arrivals(settings: Settings, phase_stream: np.ndarray, when: np.ndarray) -> None:
    """Each stream's first arrival: a trace's first time, or for each dispatcher a uniform
    fraction of an interarrival time (engine.draw_phase)."""
    N, law = settings.speeds.size, settings.arrival_law
    if settings.trace is not None:
        when[N] = settings.trace.times[0]
        return
    for m in range(settings.dispatchers):
        when[N + m] = engine.draw_phase(phase_stream, law.code, law.a, law.b, law.c)


def run_replication(task: tuple[np.random.SeedSequence, int, int, Settings]) -> Replication:
    """The replication of ``task`` = (its seed, jobs, warm-up, the run's settings)."""
    seed, jobs, warmup, settings = task
    arrival_stream, size_stream, policy_stream, phase_stream, update_stream = (
        make_rng_state(child) for child in seed.spawn(5))
    policy, N, M = settings.policy, settings.speeds.size, settings.dispatchers
    sf, si = new_servers(N)
    jf, ji, free = new_pool(settings.bound)
    streams = 1 if settings.trace is not None else M
    periodic = int(policy.ints[P_UPDATE]) == PERIODIC
    timer = N + streams if periodic else -1  # the broadcast's leaf, after the streams
    width = tree_size(N + streams + int(periodic))
    when = np.full(width, np.inf)
    _first_arrivals(settings, phase_stream, when)
    if periodic:
        when[timer] = policy.floats[F_INTERVAL]
    tree = np.zeros(2 * width, dtype=np.int64)
    build_tree(when, tree, width)
    empty_at = np.zeros(tree_size(N) if policy.code == LWL else 1)
    empty_at[N:] = np.inf
    empty_tree = np.zeros(2 * empty_at.size, dtype=np.int64)
    build_tree(empty_at, empty_tree, empty_at.size)
    idle = np.concatenate([np.arange(N), [N], np.arange(N)]).astype(np.int64)
    counts = np.zeros(engine.N_COUNTS, dtype=np.int64)
    clock = np.zeros(engine.N_CLOCK)
    blocks = np.zeros((engine.N_BLOCK_ROWS, min(BLOCKS, jobs - warmup)))
    histogram = np.zeros((min(SECTIONS, jobs - warmup), engine.HISTOGRAM_BINS), np.int64)
    credit = np.zeros((M, N) if policy.code == WEIGHTED_ROUND_ROBIN else (1, 1))
    cursor = np.zeros(M, dtype=np.int64)
    sample = np.zeros((1, max(int(policy.ints[P_D]), 1)), dtype=np.int64)
    estimates = np.zeros((M, N) if policy.code in (L_JSQ, L_POD) else (1, 1), np.int64)
    probed = np.zeros((1, max(int(policy.ints[P_PROBES]), 1)), dtype=np.int64)
    trace = settings.trace
    trace_arrays = (_NO_TRACE if trace is None else (trace.times, trace.sizes,
                                                        trace.dispatchers))
    laws = [np.array([law.code, law.a, law.b, law.c])
            for law in (settings.arrival_law, settings.size_law)]
    rule = compiled_rule(policy.rule) if policy.code == USER else NO_RULE
    rule_state = np.zeros((M, max(policy.state, 1)))
    with stops_caught() as stopped:  # Ctrl-C, SIGTERM: between two chunks
        while counts[engine.C_STATUS] == engine.RUNNING:
            engine.run_events(EVENTS_PER_CHUNK, settings.discipline, policy.code,
                              settings.speeds, *laws, jobs, warmup, sf, si, jf, ji, free,
                              when, tree, idle, empty_at, empty_tree, counts, clock, blocks,
                              histogram, policy.ints, policy.floats, policy.cumulative,
                              policy.cutoffs, cursor, credit, sample, estimates, probed,
                              *trace_arrays, timer, arrival_stream, size_stream,
                              policy_stream, update_stream, rule, policy.rule_params,
                              rule_state)
            if stopped():
                raise interruption(stopped(), f"at job {int(counts[engine.C_ARRIVALS]):,} "
                                   f"of {jobs:,} ({policy.name}, continuous time)")
    if counts[engine.C_STATUS] == engine.BAD_SERVER:
        raise ValidationError("policy", f"the rule {policy.name!r} returned server "
                              f"{int(counts[engine.C_BAD_SERVER]):,} for arrival "
                              f"{int(counts[engine.C_ARRIVALS]):,} (at dispatcher "
                              f"{int(counts[engine.C_BAD_DISPATCHER])}); a rule returns one "
                              f"of 0 … N − 1 = {N - 1:,}")
    return Replication(blocks, histogram, counts)
