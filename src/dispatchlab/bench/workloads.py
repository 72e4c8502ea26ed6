"""The standard benchmark workloads and their runner (``dispatchlab bench``, ``benchmarks/``).

The five workloads of ``benchmarks/README.md`` (:data:`WORKLOADS`), and those refsim
cannot express (:data:`OWN_WORKLOADS`: SCD), timed against one of ours instead: N = 100
servers, M = 10 dispatchers, Poisson arrivals at load ρ = 0.95 split into M independent
Poisson streams, Bernoulli(μ_n) service, batch dispatch, empty queues at slot 0.

The reference
-------------
``benchmarks/refsim.c`` is the project's reference implementation of these workloads in
plain C. It is looked for at ``--refsim`` (``refsim=`` a path), then at
``$DISPATCHLAB_REFSIM``, then as ``benchmarks/refsim.c`` of the source checkout this
package runs from, and nowhere else; a path given explicitly that names no file is an
error. Without it (an installed package, or no C compiler) the benchmark runs ours only
and says why in one line (:data:`REFSIM_MISSING`).

What is measured
----------------
The yardstick ``refsim.c`` accumulates only the time-average of ΣQ and the message
count. The apples-to-apples speed (``slots_per_second``, ``speed_ratio``) is therefore
ours with per-job delay tracking and the per-slot imbalance pass off
(``simulate(..., delay="off", imbalance=False)``) and a policy's own extra measurement
off (LED's estimation error, O(MN) per sampled slot: ``lean_params``); everything else the
engine always measures (ΣQ blocks and histogram, per-server means, pooled queue, herding, …)
stays on.
``slots_per_second_full`` is the speed with every measurement on (the default of
:func:`dispatchlab.simulate`: delay quantiles from tagged jobs, ``delay_method``).
Every row names the ``processor`` (:func:`dispatchlab.bench.machine.processor`).
Speeds are timed inside the compiled loop, after a short
warm run has compiled everything; with ``repeat`` > 1 repeat i runs seed + i, and each
speed and each ratio is the median over the repeats, a ratio's parts (ours lean, refsim,
ours full) timed back to back within a repeat, so that a slow spell of the shared machine
lands on both sides of it.

A workload of :data:`OWN_WORKLOADS` has no refsim run and no reference mean (so
``reference_agrees`` is false); its ``speed_ratio_versus`` is its lean speed over that of
the workload it is timed against (``versus``, ``versus_slots_per_second``), the two run
back to back with the same seed in each repeat, the median over the repeats.

Our mean ΣQ is the stationary estimate of :func:`simulate` (10 % warm-up): with one
repeat, its batch-means 95 % CI; with several, the CI of the repeats' means as independent
replications (batch means are too narrow for the slow queues of ``wrand``).
``reference_agrees`` says whether it lies within the combined uncertainty
sqrt(half-width² + (1.96·SE_ref)²) of the README's reference mean. ``refsim_mean_total_queue``
is refsim's own time-average from slot 0 of the same-length run (no CI; a different random
stream, so it differs from ours by sampling noise and by the initial transient).
"""

from __future__ import annotations

import json
import math
import os
import shutil
import statistics
import tempfile
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

from dispatchlab.bench.machine import processor
from dispatchlab.bench.programs import json_line, run_program
from dispatchlab.core.errors import ValidationError, require

if TYPE_CHECKING:
    from dispatchlab.model.system import System

# the system (numpy), the policies, simulate and the estimators (numba, scipy) are imported
# where a benchmark runs: `dispatchlab bench --help` reads this module's constants

DISPATCHERS = 10
LOAD = 0.95
HETEROGENEOUS = "50x0.1,50x0.5"
HOMOGENEOUS = "100x0.3"
DEFAULT_SLOTS = 1_000_000
DEFAULT_SEED = 7
WARM_SLOTS = 2_000
Z_95 = 1.959963984540054
REFSIM_ENV = "DISPATCHLAB_REFSIM"
#: where the reference lives in a source checkout
REFSIM_SOURCE = Path("benchmarks") / "refsim.c"
REFSIM_HOW = f"give it with --refsim PATH or ${REFSIM_ENV} (a refsim.c or a built binary)"
#: why a benchmark ran without the reference (the ``refsim`` field of its rows)
REFSIM_MISSING = (f"refsim not available: no {REFSIM_SOURCE.as_posix()} in a source checkout "
                  f"beside this package; {REFSIM_HOW}")
REFSIM_NO_COMPILER = "refsim not available: {path} found but no C compiler to build it (set CC)"
#: what a refsim run prints as its last line: a JSON object with these finite numbers
REFSIM_NUMBERS = ("slots_per_s", "mean_sum_q", "messages_per_arrival")
#: seconds a refsim run may take: this, plus a microsecond per slot (refsim runs the
#: standard workloads at 10^7 slots/s and more); ``--refsim-timeout`` overrides it
REFSIM_BASE_TIMEOUT = 60.0
#: seconds the C compiler may take to build refsim
BUILD_TIMEOUT = 300.0
#: slots of the check run that proves a refsim works before any row is printed
CHECK_SLOTS = 1000


@dataclass(frozen=True)
class Workload:
    """One standard workload and refsim's reference numbers for it (benchmarks/README.md:
    refsim's means over 6 seeds × 4·10^6 slots)."""

    name: str
    servers: str
    policy: str
    params: dict[str, Any] = field(default_factory=dict)
    reference_mean: float = math.nan  # time-average of ΣQ
    reference_se: float = math.nan  # its standard error
    reference_messages: float = math.nan  # messages per arrival
    # parameters that switch off a policy's own extra measurement in the apples-to-apples run
    lean_params: dict[str, Any] = field(default_factory=dict)
    #: a workload refsim cannot express: the name of the workload of ours it is timed
    #: against (back to back, the same seed), instead of refsim
    versus: str | None = None

    def system(self) -> System:
        from dispatchlab.model.system import System

        return System.build(self.servers, load=LOAD, dispatchers=DISPATCHERS,
                            arrivals="poisson", service="bernoulli", dispatch="batch")


WORKLOADS: tuple[Workload, ...] = (
    Workload("wrand", HETEROGENEOUS, "wrand", {}, 4281.2, 11.5, 0.0),
    Workload("jsq", HETEROGENEOUS, "jsq", {}, 360.97, 0.14, 66.11),
    Workload("pod2", HOMOGENEOUS, "pod", {"d": 2}, 636.0, 0.4, 1.322),
    Workload("led-jsq-pull", HETEROGENEOUS, "led",
             {"strategy": "jsq", "update": "pull", "p": 0.1}, 7601.9, 5.2, 0.351,
             {"measure_error": False}),
    Workload("led-pod-push", HOMOGENEOUS, "led",
             {"strategy": "pod", "update": "push", "p": 0.01, "d": 2, "pod_d": 2},
             5272.4, 4.8, 0.0141, {"measure_error": False}),
)
#: workloads refsim cannot express, each timed against one of ours (``versus``): SCD
#: ([SCD]) against JSQ, the same system, both with full information
OWN_WORKLOADS: tuple[Workload, ...] = (
    Workload("scd", HETEROGENEOUS, "scd", {}, versus="jsq"),
)
ALL_WORKLOADS = WORKLOADS + OWN_WORKLOADS
WORKLOAD_NAMES = tuple(w.name for w in ALL_WORKLOADS)

T = TypeVar("T")


def select_named(items: Sequence[T], names: Sequence[str] | None, key: Callable[[T], str],
                 field_name: str) -> list[T]:
    """The ``items`` named by ``names`` (their ``key``), in that order; all of them when
    ``names`` is empty. An unknown name is a ValidationError on ``field_name``."""
    if not names:
        return list(items)
    by_name = {key(item): item for item in items}
    for name in names:
        require(name in by_name, field_name,
                f"unknown {field_name} {name!r}; allowed: {', '.join(by_name)}")
    return [by_name[name] for name in names]


def select_workloads(names: Sequence[str] | None) -> list[Workload]:
    """The named workloads in the given order (all of them when ``names`` is empty)."""
    return select_named(ALL_WORKLOADS, names, lambda w: w.name, "workload")


def policy_available(workload: Workload) -> str | None:
    """None when the workload's policy can be built, else why not (a short reason)."""
    from dispatchlab.policies.base import make_policy

    try:
        make_policy(workload.policy, **workload.params, **workload.lean_params)
    except ValidationError as error:
        if error.field == "policy":
            return "policy not registered"
        return f"policy rejected the workload's parameters: {error}"
    return None


# --- refsim ---------------------------------------------------------------------------------

def checkout_root() -> Path | None:
    """The source checkout this package runs from (``src/dispatchlab`` beside a
    ``pyproject.toml``), or None for an installed package."""
    package = Path(__file__).resolve().parents[1]
    root = package.parents[1]
    if package.parent.name == "src" and (root / "pyproject.toml").is_file():
        return root
    return None


def find_refsim_source(explicit: Path | str | None = None) -> Path | None:
    """The reference simulator to use: ``explicit`` (``--refsim``), else
    $DISPATCHLAB_REFSIM, else ``benchmarks/refsim.c`` of the source checkout; None when
    there is none. A source or a built binary; an explicit path (argument or variable)
    that names no file is a ValidationError on ``refsim``, never a silent fallback."""
    for given, origin in ((explicit, "--refsim"), (os.environ.get(REFSIM_ENV), f"${REFSIM_ENV}")):
        if given:
            path = Path(given).expanduser().absolute()  # ./fake.sh is not looked up on PATH
            require(path.is_file(), "refsim", f"no such file: {path} (given by {origin})"
                    if not path.exists() else f"{path} is not a file (given by {origin})")
            return path
    root = checkout_root()
    if root is not None and (root / REFSIM_SOURCE).is_file():
        return root / REFSIM_SOURCE
    return None


def c_compiler() -> str | None:
    """The C compiler to build refsim with ($CC, else cc/gcc/clang on the PATH)."""
    for name in (os.environ.get("CC"), "cc", "gcc", "clang"):
        if name and shutil.which(name):
            return shutil.which(name)
    return None


def build_refsim(source: Path, directory: Path) -> Path:
    """Compile refsim.c into ``directory`` (``cc -O3 -march=native … -lm``); returns the binary."""
    compiler = c_compiler()
    require(compiler is not None, "refsim", "no C compiler found (set CC, or pass --no-refsim)")
    binary = directory / "refsim"
    command = [compiler, "-O3", "-march=native", "-o", str(binary), str(source), "-lm"]
    run_program(command, field="refsim", what=f"building {source}", timeout=BUILD_TIMEOUT)
    return binary


def refsim_binary(path: Path, directory: Path) -> Path:
    """A runnable refsim from ``path``: a C source is compiled, an executable used as it is."""
    require(path.is_file(), "refsim", f"no such file: {path}")
    if path.suffix == ".c":
        return build_refsim(path, directory)
    require(os.access(path, os.X_OK), "refsim", f"{path} is neither a .c source nor executable")
    return path


def refsim_timeout(slots: int, timeout: float | None = None) -> float:
    """Seconds a refsim run of ``slots`` may take: ``timeout`` if given, else
    :data:`REFSIM_BASE_TIMEOUT` plus a microsecond per slot."""
    return timeout if timeout is not None else REFSIM_BASE_TIMEOUT + slots * 1e-6


def run_refsim(binary: Path, workload: Workload, slots: int, seed: int,
               timeout: float | None = None) -> dict[str, Any]:
    """One refsim run: its JSON line (slots_per_s, mean_sum_q, messages_per_arrival, …);
    a failure, a hang past the timeout or other output is one ValidationError line."""
    what = f"refsim on workload {workload.name}"
    output = run_program([binary, workload.name, slots, seed], field="refsim", what=what,
                         timeout=refsim_timeout(slots, timeout))
    return json_line(output, REFSIM_NUMBERS, field="refsim", what=what)


# --- our side --------------------------------------------------------------------------------

def _simulate(workload: Workload, system: System, slots: int, seed: int, *, full: bool):
    from dispatchlab.simulation.run import simulate

    params = dict(workload.params) if full else {**workload.params, **workload.lean_params}
    # the plain estimator: the reference program reports plain time averages of ΣQ
    return simulate(system, workload.policy, policy_params=params, slots=slots, seed=seed,
                    delay="tagged" if full else "off", imbalance=full, estimator="plain")


def warm_up(workload: Workload) -> None:
    """Compile (or load from the cache) everything a workload runs, in both measurement modes."""
    system = workload.system()
    for full in (False, True):
        _simulate(workload, system, WARM_SLOTS, 1, full=full)


def reference_agreement(workload: Workload, mean: float, ci_low: float, ci_high: float) -> bool:
    """Whether our mean is within the combined 95 % uncertainty of the reference mean."""
    if not all(math.isfinite(x) for x in (mean, ci_low, ci_high, workload.reference_mean)):
        return False
    half_width = (ci_high - ci_low) / 2
    tolerance = math.hypot(half_width, Z_95 * workload.reference_se)
    return abs(mean - workload.reference_mean) <= tolerance


def run_workload(workload: Workload, *, slots: int, seed: int, refsim: Path | None = None,
                 repeat: int = 1, refsim_timeout: float | None = None) -> dict[str, Any]:
    """Benchmark one workload: one dict (a JSON line) with speeds, means and the comparison."""
    row: dict[str, Any] = {"name": workload.name, "policy": workload.policy,
                           "params": dict(workload.params), "servers": workload.servers,
                           "slots": slots, "seed": seed, "repeat": repeat,
                           "processor": processor()}
    missing = policy_available(workload)
    if missing is not None:
        row["skipped"] = missing
        return row
    system = workload.system()
    warm_up(workload)
    versus = (select_named(ALL_WORKLOADS, [workload.versus], lambda w: w.name, "workload")[0]
              if workload.versus else None)
    if versus is not None:
        warm_up(versus)
        refsim = None  # refsim cannot express it: timed against ours
    speeds, full_speeds, ref_speeds, ratios, full_ratios, means = [], [], [], [], [], []
    versus_speeds, versus_ratios = [], []
    result = full = ref = None
    for index in range(repeat):
        result = _simulate(workload, system, slots, seed + index, full=False)
        speeds.append(result.slots_per_second)
        means.append(result.mean_total_queue)
        if versus is not None:
            other = _simulate(versus, versus.system(), slots, seed + index, full=False)
            versus_speeds.append(other.slots_per_second)
            versus_ratios.append(speeds[-1] / versus_speeds[-1])
        if refsim is not None:
            ref = run_refsim(refsim, workload, slots, seed + index, refsim_timeout)
            ref_speeds.append(float(ref["slots_per_s"]))
            ratios.append(speeds[-1] / ref_speeds[-1])
        full = _simulate(workload, system, slots, seed + index, full=True)
        full_speeds.append(full.slots_per_second)
        if ref_speeds:
            full_ratios.append(full_speeds[-1] / ref_speeds[-1])
    assert result is not None and full is not None
    import numpy as np

    from dispatchlab.stats.estimators import Estimate, replication_estimate

    # with repeats (seeds seed, seed+1, …) the CI of ΣQ comes from independent replications
    estimate = (replication_estimate(np.array(means)) if repeat > 1 else
                Estimate(result.mean_total_queue, result.ci_low, result.ci_high,
                         result.ci_method, 1))
    speed = statistics.median(speeds)
    row.update(
        slots_per_second=speed,
        jobs_per_second=speed * result.jobs_arrived / result.slots_run,
        slots_per_second_full=statistics.median(full_speeds),
        mean_total_queue=estimate.mean, ci_low=estimate.ci_low, ci_high=estimate.ci_high,
        ci_method=estimate.method, stability=result.stability,
        messages_per_arrival=result.messages_per_arrival,
        mean_delay_measured=full.mean_delay_measured, delay_p99=full.delay_p99,
        delay_method=full.delay_method,
        reference_mean_total_queue=workload.reference_mean,
        reference_se=workload.reference_se,
        reference_messages_per_arrival=workload.reference_messages,
        reference_agrees=reference_agreement(workload, estimate.mean, estimate.ci_low,
                                             estimate.ci_high),
    )
    if versus is not None:
        row.update(versus=versus.name, versus_slots_per_second=statistics.median(versus_speeds),
                   speed_ratio_versus=statistics.median(versus_ratios))
    if ref is not None:
        ref_speed = statistics.median(ref_speeds)
        row.update(
            refsim_slots_per_second=ref_speed,
            speed_ratio=statistics.median(ratios),
            speed_ratio_full=statistics.median(full_ratios),
            refsim_mean_total_queue=float(ref["mean_sum_q"]),
            refsim_messages_per_arrival=float(ref["messages_per_arrival"]),
        )
    return row


def run_bench(names: Sequence[str] | None = None, *, slots: int = DEFAULT_SLOTS,
              seed: int = DEFAULT_SEED, refsim: Path | None | bool = True, repeat: int = 1,
              on_row: Callable[[dict[str, Any]], None] | None = None,
              refsim_timeout: float | None = None) -> list[dict[str, Any]]:
    """Run the selected workloads (all by default) and return one dict per workload.

    ``refsim``: True uses :func:`find_refsim_source` (and, when it finds nothing or no C
    compiler, runs ours only with ``row["refsim"]`` saying why), False skips it, a path uses
    that source or binary. A refsim is first run once on :data:`CHECK_SLOTS` slots of the
    first workload, so that one that fails, hangs or prints something else is refused
    before any row; ``refsim_timeout``: seconds per refsim run (default
    :func:`refsim_timeout`).
    ``on_row`` is called with each row as soon as it is ready.
    """
    require(isinstance(slots, int) and slots >= 1000, "slots",
            f"must be an integer ≥ 1000 (got {slots!r})")
    require(isinstance(repeat, int) and repeat >= 1, "repeat", f"must be ≥ 1 (got {repeat!r})")
    require(isinstance(seed, int) and seed >= 0, "seed", f"must be an integer ≥ 0 (got {seed!r})")
    require(refsim_timeout is None or (isinstance(refsim_timeout, int | float)
                                       and not isinstance(refsim_timeout, bool)
                                       and 0 < refsim_timeout < math.inf), "refsim_timeout",
            f"must be a number of seconds > 0 (got {refsim_timeout!r})")
    workloads = select_workloads(names)
    rows = []
    with _refsim_for(refsim) as (binary, missing):
        if binary is not None and workloads:
            run_refsim(binary, workloads[0], CHECK_SLOTS, seed, refsim_timeout)
        for workload in workloads:
            row = run_workload(workload, slots=slots, seed=seed, refsim=binary, repeat=repeat,
                               refsim_timeout=refsim_timeout)
            if binary is None and "skipped" not in row:
                row["refsim"] = missing
            rows.append(row)
            if on_row is not None:
                on_row(row)
    return rows


@contextmanager
def _refsim_for(refsim: Path | None | bool) -> Iterator[tuple[Path | None, str]]:
    """The refsim binary to use (built in a temporary directory, removed afterwards) and,
    when there is none, why: ``off``, :data:`REFSIM_MISSING` or :data:`REFSIM_NO_COMPILER`."""
    if refsim is False or refsim is None:
        yield None, "off"
        return
    path = find_refsim_source(None if refsim is True else refsim)
    if path is None:
        yield None, REFSIM_MISSING
        return
    if refsim is True and path.suffix == ".c" and c_compiler() is None:
        yield None, REFSIM_NO_COMPILER.format(path=path)
        return
    with tempfile.TemporaryDirectory(prefix="dispatchlab-refsim-") as directory:
        yield refsim_binary(path, Path(directory)), ""


def to_json(row: dict[str, Any]) -> str:
    """One row as a JSON line; non-finite floats become null."""
    clean = {k: (None if isinstance(v, float) and not math.isfinite(v) else v)
             for k, v in row.items()}
    return json.dumps(clean, sort_keys=False)
