"""Sweeps in a notebook: ``dispatchlab.sweep(...) -> DataFrame`` and ``dispatchlab.plot(df)``.

    >>> import dispatchlab as dl
    >>> df = dl.sweep("5x0.2,5x0.6", [dl.policies.JoinShortestQueue(), dl.policies.PowerOfD(d=2)],
    ...               load=[0.7, 0.9], replications=2, slots=20_000, dispatchers=2)
    >>> fig = dl.plot(df, x="load", y="mean_total_queue")

A point is (system, policy, load or ε); it runs ``simulate(..., replications=R)`` with a
seed derived from what the point is (the experiment layer's :class:`Point` seed), so its
numbers do not depend on the worker count or the order. Policies are objects, so a
policy the JSON specs cannot express — an LED strategy or a Π decision you compiled
yourself — sweeps like a built-in one.

Execution: a process pool of fresh workers (``core.pools``: forked from a clean fork
server, never from this process; safe in notebooks, on macOS and with threads). A policy
travels to a worker *by reference*: its class and, for a user strategy or decision, the
compiled function are named by module and qualified name and imported in the worker. A
policy defined in ``__main__`` (a notebook cell, a script) cannot be imported by a worker,
so its points run in this process; the frame's ``executor`` column says which way each
point ran.

``store=PATH`` writes each finished point to the results store (one transaction each)
and skips the points already there, so an interrupted sweep resumes; the grid is stored
as the experiment (``experiment="notebook"`` by default), so ``dispatchlab results`` and
``dispatchlab report`` find it. Ctrl-C stops the workers (it does not wait for the points
they run) and marks the run ``interrupted``.
"""

from __future__ import annotations

import math
import os
import time
from collections.abc import Iterable, Iterator, Mapping, Sequence
from concurrent.futures import as_completed
from concurrent.futures.process import BrokenProcessPool
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from dispatchlab.core.errors import refuse_unknown, require
from dispatchlab.core.pools import BROKEN_POOL, START_METHOD, process_pool, stop_pool
from dispatchlab.core.progress_display import notebook_progress
from dispatchlab.core.signals import api_stops, interrupt_saying, stops_held
from dispatchlab.engine.control import format_seconds
from dispatchlab.experiments.arguments import SweepArguments, as_list, sweep_arguments
from dispatchlab.experiments.recipes import identity_params, policy_from_recipe, policy_recipe
from dispatchlab.model.system import System
from dispatchlab.policies.base import Policy, make_policy
from dispatchlab.simulation.measures import refuse_renamed
from dispatchlab.simulation.plan import DEFAULT_SLOTS
from dispatchlab.simulation.result import Result
from dispatchlab.specs.experiment import ExperimentSpec, Point, PolicySpec, SystemSpec
from dispatchlab.specs.family import SystemFamily, family_systems

SystemLike = System | SystemSpec | str
PolicyLike = Policy | str


# -- what to sweep -----------------------------------------------------------------------------


def system_spec(system: SystemLike, dispatchers: int | None = None,
                allow_unstable: bool = False) -> SystemSpec:
    """A :class:`SystemSpec` (the system without its load) from a System, a spec or a
    server list such as ``"50x0.1,50x0.5"`` (``dispatchers``: its M, default 1; a System or
    SystemSpec has its own, and ``dispatchers`` must not contradict it). ``allow_unstable``
    lets the sweep reach ρ ≥ 1."""
    if isinstance(system, str):
        return SystemSpec(system, dispatchers=dispatchers or 1, allow_unstable=allow_unstable)
    require(isinstance(system, System | SystemSpec), "systems",
            f"expected a System, a SystemSpec or a server list such as \"50x0.1,50x0.5\" "
            f"(got {system!r})")
    require(dispatchers is None or dispatchers == system.dispatchers, "dispatchers",
            f"dispatchers={dispatchers} contradicts the given system's M = "
            f"{system.dispatchers}; dispatchers= sets M of systems given as server lists")
    if isinstance(system, SystemSpec):
        return replace(system, allow_unstable=True) if allow_unstable else system
    described = system.describe()
    spec = SystemSpec(str(described["servers"]), system.dispatchers,
                      str(described["arrivals"]), str(described["service"]), system.dispatch,
                      system.split, allow_unstable=allow_unstable or system.allow_unstable)
    require(not system.dispatcher_weights and system.arrivals.law != "trace", "systems",
            "a system with dispatcher weights or a trace cannot be swept over loads")
    require(spec.build(load=system.load) == replace(
        system, allow_unstable=spec.allow_unstable), "systems",
            f"{system!r} is not rebuilt exactly from its description")
    return spec


def _system_specs(system: SystemLike | SystemFamily, dispatchers: int | None,
                  allow_unstable: bool) -> list[SystemSpec]:
    if not isinstance(system, SystemFamily):
        return [system_spec(system, dispatchers, allow_unstable)]
    require(dispatchers is None, "dispatchers", "a SystemFamily sets its own M "
            "(dispatchers or dispatchers_per_server)")
    specs = family_systems(system, "systems")
    return [replace(spec, allow_unstable=True) for spec in specs] if allow_unstable else specs


def _policy_objects(policies: PolicyLike | Iterable[PolicyLike] | Mapping[str, PolicyLike]
                    ) -> list[tuple[str, Policy]]:
    if isinstance(policies, Mapping):
        items = list(policies.items())
        require(bool(items), "policies", "give at least one policy")
    else:
        items = [(None, p) for p in as_list(policies, "policies", (Policy, str),
                                            "a Policy or a registered policy name")]
    out = []
    for label, policy in items:
        require(label is None or (isinstance(label, str) and bool(label.strip())), "policies",
                f"a label is non-blank text (got {label!r})")
        if isinstance(policy, str):
            policy = make_policy(policy)
        require(isinstance(policy, Policy), "policies",
                f"expected a Policy or a registered name (got {policy!r})")
        out.append((label or policy.given_name, policy))
    labels = [label for label, _ in out]
    require(len(set(labels)) == len(labels), "policies",
            f"policy labels must be distinct (got {labels}); pass a dict label → policy")
    return out


# -- the worker side ---------------------------------------------------------------------------


@dataclass(frozen=True)
class _Task:
    point: dict[str, Any]  # Point.to_dict(): the store's record of the point
    recipe: dict[str, Any] | None
    options: dict[str, Any]


def _run(system: System, policy: Policy, point: Mapping[str, Any],
         options: Mapping[str, Any]) -> Result:
    from dispatchlab.simulation.run import simulate

    return simulate(system, policy, slots=int(point["slots"]), warmup=point["warmup"],
                    seed=int(point["seed"]), workers=1, **options)  # the sweep's pool


def run_task(task: _Task) -> Result:
    """Run one point in a worker (module level, so a worker process can import it)."""
    point = Point.from_dict(task.point)
    assert task.recipe is not None
    return _run(point.build_system(), policy_from_recipe(task.recipe), task.point, task.options)


# -- the sweep ---------------------------------------------------------------------------------


@api_stops()
def sweep(
    systems: SystemLike | Sequence[SystemLike],
    policies: PolicyLike | Iterable[PolicyLike] | Mapping[str, PolicyLike],
    *,
    load: Sequence[float] | None = None,
    epsilon: Sequence[float] | None = None,
    beta: Sequence[float] | None = None,
    replications: int = 1,
    slots: int = DEFAULT_SLOTS,
    warmup: int | None = None,
    seed: int = 0,
    workers: int | None = None,
    store: str | Path | None = None,
    experiment: str = "notebook",
    dispatchers: int | None = None,
    allow_unstable: bool = False,
    warmup_method: str = "fraction",
    estimator: str = "coupled",
    start: str = "empty",
    delay: str = "tagged",
    imbalance: bool = True,
    **unknown: Any,
):  # -> pandas.DataFrame
    """Simulate every (system, policy, load|ε) and return one DataFrame row per point.

    Args:
        systems: a System (its load is replaced), a SystemSpec, a server list such as
            ``"50x0.1,50x0.5"``, a :class:`~dispatchlab.specs.family.SystemFamily` (one
            system per size N, the frame's ``family`` and ``system.n_servers`` columns), or
            a list of them.
        policies: Policy objects or registered names, or a dict label → policy.
        load: the loads ρ to sweep, a list (or give ``epsilon`` or ``beta``).
        epsilon: the values of ε = μ_Σ − λ_Σ to sweep, a list.
        beta: the Halfin–Whitt β to sweep, a list: ε = β·μ_Σ/√N at each system's N.
        replications: R independent replications per point (CI from their means if R ≥ 2).
        slots: slots per replication (at least 100, as in a spec file).
        warmup: warm-up slots per replication (default: 10 % of slots).
        seed: the root seed (an integer ≥ 0); each point's seed is derived from it and the
            point.
        workers: processes (default: all cores; 1 runs everything here).
        store: a results store file: finished points are written there and skipped
            when the sweep is run again; the sweep is stored as the experiment
            ``experiment`` (its latest grid), so ``dispatchlab results EXPERIMENT`` and
            ``dispatchlab report EXPERIMENT`` find it.
        experiment: the experiment name in the store.
        dispatchers: M for systems given as server lists.
        allow_unstable: accept loads ρ ≥ 1 (ε ≤ 0) for systems given as server lists
            or SystemSpecs.
        warmup_method: ``fraction`` or ``mser5`` (see ``simulate``).
        estimator: as in ``simulate``.
        start: as in ``simulate``.
        delay: how delay quantiles are measured, as in ``simulate``: ``tagged`` (the
            default), ``all`` or ``off``.
        imbalance: measure the queue imbalance, as in ``simulate``.

    Every argument is checked as the same key of a spec file is
    (:mod:`dispatchlab.experiments.arguments`): a wrong type or value raises
    :class:`~dispatchlab.core.errors.ValidationError` naming it, before any point runs.
    Ctrl-C stops the sweep within about a second (workers are stopped, not waited for);
    the points finished so far stay in the store and the run is marked ``interrupted``.

    Returns a DataFrame with the Result fields (``Result.to_row()``), plus ``system``,
    ``policy`` (label), ``policy_name``, ``axis``, ``x``, ``load``, ``epsilon``,
    ``executor`` and ``point_key``.
    """
    import pandas as pd

    refuse_renamed(unknown)
    refuse_unknown(sweep, unknown)
    args = sweep_arguments(
        load=load, epsilon=epsilon, beta=beta, replications=replications, slots=slots,
        warmup=warmup, seed=seed, workers=workers, store=store, experiment=experiment,
        dispatchers=dispatchers, allow_unstable=allow_unstable, warmup_method=warmup_method,
        delay=delay, imbalance=imbalance, estimator=estimator, start=start)
    specs = [spec for s in as_list(systems, "systems", (System, SystemSpec, SystemFamily, str),
                                   "a System, a SystemSpec, a SystemFamily or a server list")
             for spec in _system_specs(s, args.dispatchers, args.allow_unstable)]
    names = [spec.name for spec in specs]
    require(len(set(names)) == len(names), "systems", f"systems must be distinct (got {names})")
    chosen = _policy_objects(policies)

    tasks: list[tuple[Point, Policy, dict[str, Any] | None]] = []
    policy_specs = []
    for label, policy in chosen:
        policy_specs.append(PolicySpec(policy.name, identity_params(policy), label))
    for spec in specs:
        for x in args.values:
            built = spec.build(**{args.axis: x})
            for (_, policy), policy_spec in zip(chosen, policy_specs, strict=True):
                policy.check_system(built)  # fail before any point runs
                point = Point(args.experiment, spec, policy_spec, args.axis, x, 0, args.slots,
                              args.warmup, args.seed, dict(args.options))
                tasks.append((point, policy, policy_recipe(policy)))
    grid = ExperimentSpec(args.experiment, tuple(specs), tuple(policy_specs),
                          **{f"{args.axis}s": args.values}, slots=args.slots,
                          warmup=args.warmup, seed=args.seed, options=dict(args.options),
                          description="a notebook sweep (dispatchlab.sweep)")

    results = _run_grid(tasks, grid, args)
    rows = []
    for point, policy, _ in tasks:
        result, how = results[point.key]
        row = result.to_row()
        row.update(system=point.system.name, family=point.system.family,
                   policy=point.policy.label,
                   policy_name=policy.name, policy_label=point.policy.label, axis=args.axis,
                   x=point.value, executor=how, point_key=point.key)
        rows.append(row)
    frame = pd.DataFrame.from_records(rows)
    frame.attrs["axis"] = args.axis
    return frame


def _run_grid(tasks: list[tuple[Point, Policy, dict[str, Any] | None]], grid: ExperimentSpec,
              args: SweepArguments) -> dict[str, tuple[Result, str]]:
    """Run the points not yet in the store (all of them without one): point key →
    (Result, how it ran). The store keeps the grid as the experiment, every finished point,
    and the run's status: ``finished``, or ``interrupted`` when anything stopped it."""
    results: dict[str, tuple[Result, str]] = {}
    if args.store is None:
        for point, result, how in _shown(_execute(tasks, args.options, args.workers),
                                         len(tasks), grid.name):
            results[point.key] = (result, how)
        return results
    from dispatchlab.experiments.store import Store

    with Store(args.store) as db:
        db.save_experiment(grid.name, grid.to_json())
        for row in db.points(grid.name):
            if row["result"] is not None:
                results[row["point_key"]] = (_result_from_dict(row["result"]), "stored")
        todo = [t for t in tasks if t[0].key not in results]
        if not todo:
            return results
        run_id = db.start_run(grid.name, "notebook sweep", len(todo))
        status = "interrupted"
        stored = 0
        try:
            for point, result, how in _shown(_execute(todo, args.options, args.workers),
                                             len(todo), grid.name):
                results[point.key] = (result, how)
                db.record(run_id, point.to_dict(), result=result.to_dict(), worker=how,
                          seconds=result.seconds)
                stored += 1
            status = "finished"
        except KeyboardInterrupt as interrupt:  # Ctrl-C, or SIGTERM/SIGHUP (api_stops)
            raise interrupt_saying(interrupt, f"{stored} point(s) of {grid.name} stored in "
                                   f"{args.store}; the same call resumes") from None
        finally:
            with stops_held():
                db.finish_run(run_id, status)
    return results


def _shown(finished: Iterator[tuple[Point, Result, str]], total: int,
           name: str) -> Iterator[tuple[Point, Result, str]]:
    """``finished`` as it comes, with a progress bar (points done of ``total``, ETA) in a
    Jupyter notebook and nothing elsewhere (:mod:`dispatchlab.core.progress_display`)."""
    show = notebook_progress()
    if show is None:
        yield from finished
        return
    started = time.perf_counter()
    show(f"sweep {name}: 0 of {total} points", 0.0)
    for done, item in enumerate(finished, start=1):
        elapsed = time.perf_counter() - started
        eta = format_seconds(elapsed * (total - done) / done)
        show(f"sweep {name}: {done} of {total} points, ETA {eta}", done / total)
        yield item
    show(f"sweep {name}: {total} points in {format_seconds(time.perf_counter() - started)}",
         1.0)


def _execute(todo: list[tuple[Point, Policy, dict[str, Any] | None]], options: dict[str, Any],
             workers: int | None):
    """Yield (point, Result, how) as points finish: portable ones on a process pool, the
    others (and everything when one worker is asked for) here. Leaving early (Ctrl-C, an
    error) stops the pool's workers instead of waiting for the points they run."""
    workers = workers or os.cpu_count() or 1
    remote = [t for t in todo if t[2] is not None] if workers > 1 and len(todo) > 1 else []
    local = [t for t in todo if not any(t is r for r in remote)]
    pool = None
    pooled = ""
    futures = {}
    finished = False
    try:
        if remote:
            count = min(workers, len(remote))
            pooled = f"process pool ({START_METHOD}, {count} workers)"
            pool = process_pool(count)
            # (a worker that dies at once breaks the pool while later points are submitted)
            futures = {pool.submit(run_task, _Task(point.to_dict(), recipe, options)): point
                       for point, _, recipe in remote}
        for point, policy, recipe in local:
            how = ("in-process" if recipe is not None else
                   "in-process (not importable by a worker: defined in __main__ "
                   "or inside a function)")
            yield point, _run(point.build_system(), policy, point.to_dict(), options), how
        for future in as_completed(futures):
            yield futures[future], future.result(), pooled
        finished = True
    except BrokenProcessPool:
        raise RuntimeError(BROKEN_POOL) from None  # (its cause says no more)
    finally:
        if pool is not None:
            if finished:
                pool.shutdown(wait=True)
            else:
                stop_pool(pool)


def _result_from_dict(data: Mapping[str, Any]) -> Result:
    """A Result from ``Result.to_dict()`` (``None`` back to ``nan``)."""
    from dataclasses import fields

    names = {f.name: f for f in fields(Result)}
    values = {}
    for key, value in data.items():
        if key not in names:
            continue
        if value is None and names[key].type in ("float", float):
            value = math.nan
        values[key] = value
    return Result(**values)
