"""The scaling benchmark (``dispatchlab bench --scaling``, ``benchmarks/scaling.py``).

How the cost per job of every policy family grows with the number of servers N and of
dispatchers M: for each family and each (N, M) of the grid, one run of about ``jobs``
arrivals (at least ``MEASURED_MIN_SLOTS`` slots) on N servers (half at μ = 0.2, half at
μ = 0.6), Poisson arrivals at load ρ = 0.9, Bernoulli service, empty start; the time is
taken inside the compiled loop after a compile run, with delay tracking and the
imbalance pass off (the policy's own cost, as in the apples-to-apples bench) and every
policy parameter at its default. The figure is ns per job = CPU seconds / jobs arrived
(the difference between that run and a 20-slot probe, see :func:`time_cell`).

Two summaries come with the table: cost(M = 100)/cost(M = 1) at N = 10⁴ for every family
(target: ≤ 2 since issue 26; ≤ 3 before), and ``pi-jsq``/``jsq`` at every (N, M) (target: ≤ 2).
Absolute figures move with the machine's load; compare ratios from one run. With
``repeat`` > 1 every cell is measured that many times, the cells of one N in rounds (all
its M, then all its M again), so that the two costs of a ratio are measured back to back:
the table shows per-cell medians and a ratio is the median of the per-round ratios (on a
shared machine the cost of M = 100, out of cache, moved by ±30–50 % within minutes).
"""

from __future__ import annotations

import gc
import math
import statistics
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

from dispatchlab.bench.workloads import select_named
from dispatchlab.core.errors import require
from dispatchlab.model.system import System
from dispatchlab.simulation.run import simulate

SCALING_SERVERS = (100, 1_000, 10_000, 100_000)
SCALING_DISPATCHERS = (1, 10, 100)
QUICK_SERVERS = (100, 1_000)
QUICK_DISPATCHERS = (1, 10)
SCALING_JOBS = 10_000_000  # ≥ 0.05 s of policy work per cell: above the per-call noise
QUICK_JOBS = 20_000
MIN_SLOTS = 20
#: the measured run is at least this long, so that it dwarfs the probe it is compared to
#: (at N = 10⁵ 2·10⁶ jobs are only 56 slots: a difference of two near-equal CPU times)
MEASURED_MIN_SLOTS = 10 * MIN_SLOTS
CELL_BUDGET_SECONDS = 20.0  # a cell runs at most about this long (CPU seconds)
LOAD = 0.9
SEED = 11
RATIO_SERVERS = 10_000  # where cost(M = max)/cost(M = 1) is read
#: the largest N and M a grid may ask for, ten times the default grid's (a cell whose memory
#: does not fit, LED's M·N estimates at 10⁶ × 1000: 16 GB, is refused by the policy's own
#: guard, core.ram)
MAX_SERVERS = 1_000_000
MAX_DISPATCHERS = 1_000


@dataclass(frozen=True)
class Family:
    """One policy family of the scaling grid: a label, the policy, its parameters and the
    dispatch mode (``batch``: the papers' model; ``per_job``: one ``choose`` per job)."""

    label: str
    policy: str
    params: dict[str, Any] = field(default_factory=dict)
    dispatch: str = "batch"


FAMILIES: tuple[Family, ...] = (
    Family("rand", "rand"),
    Family("wrand", "wrand"),
    Family("wrand/per-job", "wrand", dispatch="per_job"),
    Family("rr", "rr"),
    Family("jsq", "jsq"),
    Family("jsed", "jsed"),
    Family("jsed/per-job", "jsed", dispatch="per_job"),
    Family("pod2", "pod"),
    Family("balanced-pod", "balanced-pod"),
    Family("balanced-pod/per-job", "balanced-pod", dispatch="per_job"),
    Family("pi-jsq", "pi-jsq"),
    Family("pi-jsed", "pi-jsed"),
    Family("periodic-jsq", "periodic-jsq"),
    Family("pi-pod", "pi-pod"),
    Family("periodic-pod", "periodic-pod"),
    Family("pi-wrand", "pi-wrand"),
    Family("kslq", "kslq"),
    Family("l-jsq-push", "l-jsq-push"),
    Family("l-jsq-pull", "l-jsq-pull"),
    Family("lsq", "lsq"),
    Family("l-jba-push", "l-jba-push"),
    Family("l-pod-push", "l-pod-push"),
    Family("jiq", "jiq"),
    Family("jbt", "jbt"),
    Family("persistent-idle", "persistent-idle"),
    Family("jid", "jid"),
    Family("sujsq", "sujsq"),
    Family("aujsq", "aujsq"),
)
#: families the committed scaling evidence (results/bench/) does not hold yet: run only
#: when named (``--family scd``), so that the default grid stays the evidence's
NEW_FAMILIES: tuple[Family, ...] = (
    Family("scd", "scd"),
    Family("scd/per-job", "scd", dispatch="per_job"),
)
FAMILY_LABELS = tuple(f.label for f in FAMILIES + NEW_FAMILIES)


def scaling_system(servers: int, dispatchers: int, dispatch: str = "batch") -> System:
    """N servers, half at μ = 0.2 and half at μ = 0.6, M dispatchers, load 0.9."""
    slow = servers // 2
    rates = f"{slow}x0.2,{servers - slow}x0.6" if slow else "0.6"
    return System.build(rates, load=LOAD, dispatchers=dispatchers, arrivals="poisson",
                        service="bernoulli", dispatch=dispatch)


def select_families(labels: Sequence[str] | None) -> list[Family]:
    """The named families in the given order (all of :data:`FAMILIES` when ``labels`` is
    empty; those of :data:`NEW_FAMILIES` only by name)."""
    if not labels:
        return list(FAMILIES)
    return select_named(FAMILIES + NEW_FAMILIES, labels, lambda f: f.label, "family")


def time_cell(family: Family, servers: int, dispatchers: int, jobs: int,
              budget: float = CELL_BUDGET_SECONDS) -> dict[str, Any]:
    """One measured cell of ``family`` at (N, M): ns per job, ns per slot, slots, jobs.

    Costs are CPU seconds of this process (robust to other processes sharing the cores),
    always as the difference between a long run and a probe of ``MIN_SLOTS`` slots, which
    cancels the fixed cost of a call (building the kernel and the policy's memory, the
    statistics). The long run is about ``jobs`` jobs (at least ``MEASURED_MIN_SLOTS``
    slots) and is lengthened 4× at a time until the difference is at least the probe's
    own cost (the fixed cost's noise then no longer decides: at N = 10⁵, M = 100 building
    the memory costs more than 10⁷ jobs), unless a run would exceed ``budget`` seconds."""
    system = scaling_system(servers, dispatchers, family.dispatch)
    slots = max(MEASURED_MIN_SLOTS, math.ceil(jobs / system.arrival_rate))

    def run(length: int) -> tuple[float, int, int]:
        # no garbage collection inside a timed run: a full collection of what the cells
        # before left behind landed in one cell's measured run (wrand at N = 10⁴, M = 1
        # read ~10 ns per job in every grid, 2.5–3 alone)
        gc.collect()
        gc.disable()
        try:
            start = time.process_time()
            result = simulate(system, family.policy, policy_params=dict(family.params),
                              slots=length, warmup=0, seed=SEED, delay="off",
                              imbalance=False)
            return time.process_time() - start, result.jobs_arrived, result.slots_run
        finally:
            gc.enable()

    # the cheaper of two probes: a process's first call at a new size paid more than the
    # fixed cost (the first cell of a grid read ≈ 0 ns per job, its ratio ≈ 10⁹)
    probe = min(run(MIN_SLOTS), run(MIN_SLOTS))
    while True:
        measured = run(slots)
        ran_short = measured[2] < slots  # stopped early (the bound): longer runs would too
        if measured[0] - probe[0] >= probe[0] or 4 * measured[0] > budget or ran_short:
            break
        slots *= 4
    seconds = max(measured[0] - probe[0], 1e-9)
    arrived = max(measured[1] - probe[1], 1)
    slots_run = measured[2] - probe[2]
    return {"family": family.label, "policy": family.policy, "dispatch": family.dispatch,
            "servers": servers, "dispatchers": dispatchers, "slots": slots_run,
            "jobs": arrived, "cpu_seconds": seconds,
            "ns_per_job": 1e9 * seconds / arrived,
            "ns_per_slot": 1e9 * seconds / max(slots_run, 1)}


def warm_family(family: Family) -> None:
    """Compile (or load from the cache) what a family runs, on a tiny system."""
    simulate(scaling_system(10, 2, family.dispatch), family.policy,
             policy_params=dict(family.params), slots=50, seed=1, delay="off",
             imbalance=False)


def run_scaling(families: Sequence[str] | None = None, *, quick: bool = False,
                servers: Sequence[int] | None = None, dispatchers: Sequence[int] | None = None,
                jobs: int | None = None, repeat: int = 1,
                on_cell: Callable[[dict[str, Any]], None] | None = None) -> list[dict[str, Any]]:
    """Time every selected family on the (N, M) grid ``repeat`` times; one dict per
    measurement, its ``round`` in 0 … repeat − 1 (see the module's docstring)."""
    grid_n = _grid(servers, QUICK_SERVERS if quick else SCALING_SERVERS, "servers", "N", 2,
                   MAX_SERVERS)
    grid_m = _grid(dispatchers, QUICK_DISPATCHERS if quick else SCALING_DISPATCHERS,
                   "dispatchers", "M", 1, MAX_DISPATCHERS)
    jobs = jobs or (QUICK_JOBS if quick else SCALING_JOBS)
    require(type(jobs) is int and jobs >= 1, "jobs", f"must be an integer ≥ 1 (got {jobs!r})")
    require(isinstance(repeat, int) and repeat >= 1, "repeat",
            f"must be an integer ≥ 1 (got {repeat!r})")
    cells = []
    with _older_objects_frozen():
        for family in select_families(families):
            warm_family(family)
            for n in grid_n:
                for round_ in range(repeat):
                    for m in grid_m:
                        cell = {**time_cell(family, n, m, jobs), "round": round_}
                        cells.append(cell)
                        if on_cell is not None:
                            on_cell(cell)
    return cells


@contextmanager
def _older_objects_frozen() -> Iterator[None]:
    """The objects alive on entry left out of every collection inside (``gc.freeze``), so
    that the collection before each timed run walks only what the grid made: in a process
    with a large heap (a notebook's, the test suite's) each walked all of it, 0.4 s a run
    and most of a quick grid's time. A process that froze objects itself is left as it
    is (``gc.unfreeze`` would thaw its objects too)."""
    if gc.get_freeze_count():
        yield
        return
    gc.collect()
    gc.freeze()
    try:
        yield
    finally:
        gc.unfreeze()


def _grid(values: Sequence[int] | None, default: Sequence[int], field: str, symbol: str,
          low: int, high: int) -> tuple[int, ...]:
    """The grid's values of N or M: ``default`` when ``values`` is None or empty, else each
    an integer (not a bool) in [low, high], each once."""
    require(values is None or isinstance(values, Sequence) and not isinstance(values, str),
            field, f"a list of integers (got {values!r})")
    if not values:
        return tuple(default)
    grid = tuple(values)
    require(all(type(v) is int and low <= v <= high for v in grid), field,
            f"every {symbol} must be an integer between {low} and {high:,} (got "
            f"{', '.join(map(repr, grid))})")
    require(len(set(grid)) == len(grid), field,
            f"each {symbol} once (got {', '.join(map(str, grid))})")
    return grid


def median_cells(cells: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
    """One dict per (family, N, M): the medians of its measurements (costs, slots, jobs),
    ``repeats``."""
    groups: dict[tuple[str, int, int], list[dict[str, Any]]] = {}
    for c in cells:
        groups.setdefault((c["family"], c["servers"], c["dispatchers"]), []).append(c)
    out = []
    for group in groups.values():
        cell = {k: v for k, v in group[0].items() if k != "round"}
        for key in ("ns_per_job", "ns_per_slot", "cpu_seconds", "slots", "jobs"):
            cell[key] = statistics.median(c[key] for c in group)
        out.append({**cell, "repeats": len(group)})
    return out


def _cost(cells: Sequence[dict[str, Any]]) -> dict[tuple[str, int, int], float]:
    return {(c["family"], c["servers"], c["dispatchers"]): c["ns_per_job"]
            for c in median_cells(cells)}


def dispatcher_ratios(cells: Sequence[dict[str, Any]],
                      servers: int = RATIO_SERVERS) -> dict[str, tuple[float, float, float]]:
    """cost(M = largest)/cost(M = 1) at N = ``servers`` (the largest N run when absent):
    per family the median, smallest and largest of the ratios of one round each."""
    if not cells:
        return {}
    if all(c["servers"] != servers for c in cells):
        servers = max(c["servers"] for c in cells)
    top = max(c["dispatchers"] for c in cells)
    cost = {(c["family"], c["dispatchers"], c.get("round", 0)): c["ns_per_job"]
            for c in cells if c["servers"] == servers}
    out = {}
    for family in dict.fromkeys(c["family"] for c in cells):
        ratios = [cost[(family, top, r)] / low for (f, m, r), low in cost.items()
                  if f == family and m == 1 and low and (family, top, r) in cost]
        if ratios:
            out[family] = (statistics.median(ratios), min(ratios), max(ratios))
    return out


def relative_cost(cells: Sequence[dict[str, Any]], family: str,
                  reference: str) -> dict[tuple[int, int], float]:
    """cost(family)/cost(reference) at every (N, M) where both ran."""
    cost = _cost(cells)
    return {(n, m): cost[(family, n, m)] / cost[(reference, n, m)]
            for (f, n, m) in cost if f == family and (reference, n, m) in cost}
