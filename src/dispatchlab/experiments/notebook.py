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

Execution: a process pool started with ``spawn`` (safe in notebooks, on macOS and with
threads). A policy travels to a worker *by reference*: its class and, for a user
strategy or decision, the compiled function are named by module and qualified name and
imported in the worker. A policy defined in ``__main__`` (a notebook cell, a script)
cannot be imported by a spawned worker, so its points run in this process; the frame's
``executor`` column says which way each point ran.

``store=PATH`` writes each finished point to the results store (one transaction each)
and skips the points already there, so an interrupted sweep resumes.
"""

from __future__ import annotations

import importlib
import importlib.util
import math
import multiprocessing
import os
from collections.abc import Iterable, Mapping, Sequence
from concurrent.futures import ProcessPoolExecutor, as_completed
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from dispatchlab.core.errors import require
from dispatchlab.model.system import System
from dispatchlab.policies.base import Policy, make_policy
from dispatchlab.simulation.result import Result
from dispatchlab.specs.experiment import Point, PolicySpec, SystemSpec

SystemLike = System | SystemSpec | str
PolicyLike = Policy | str


# -- what to sweep -----------------------------------------------------------------------------


def system_spec(system: SystemLike, dispatchers: int | None = None) -> SystemSpec:
    """A :class:`SystemSpec` (the system without its load) from a System, a spec or a
    server list such as ``"50x0.1,50x0.5"``."""
    if isinstance(system, SystemSpec):
        return system
    if isinstance(system, str):
        return SystemSpec(system, dispatchers=dispatchers or 1)
    require(isinstance(system, System), "systems",
            f"expected a System, a SystemSpec or a server list (got {system!r})")
    described = system.describe()
    spec = SystemSpec(str(described["servers"]), system.dispatchers,
                      str(described["arrivals"]), str(described["service"]), system.dispatch,
                      system.split)
    require(not system.dispatcher_weights and system.arrivals.law != "trace", "systems",
            "a system with dispatcher weights or a trace cannot be swept over loads")
    require(spec.build(load=system.load) == system, "systems",
            f"{system!r} is not rebuilt exactly from its description")
    return spec


def _policy_objects(policies: PolicyLike | Iterable[PolicyLike] | Mapping[str, PolicyLike]
                    ) -> list[tuple[str, Policy]]:
    if isinstance(policies, Policy | str):
        policies = [policies]
    items = (list(policies.items()) if isinstance(policies, Mapping)
             else [(None, p) for p in policies])
    out = []
    for label, policy in items:
        if isinstance(policy, str):
            policy = make_policy(policy)
        require(isinstance(policy, Policy), "policies",
                f"expected a Policy or a registered name (got {policy!r})")
        out.append((label or repr(policy), policy))
    labels = [label for label, _ in out]
    require(len(set(labels)) == len(labels), "policies",
            f"policy labels must be distinct (got {labels}); pass a dict label → policy")
    require(bool(out), "policies", "give at least one policy")
    return out


# -- sending a policy to a worker by reference -------------------------------------------------


def _importable(module: str | None) -> bool:
    if not module or module == "__main__":
        return False
    try:
        return importlib.util.find_spec(module) is not None
    except (ImportError, ValueError):
        return False


def _function_ref(function: Any) -> dict[str, str] | None:
    """{"module", "name"} when ``function`` is reachable as module.qualname, else None."""
    module = getattr(function, "__module__", None)
    name = getattr(function, "__qualname__", None) or getattr(function, "__name__", None)
    if not (_importable(module) and name and "<locals>" not in name):
        return None
    found: Any = importlib.import_module(str(module))
    for part in str(name).split("."):
        found = getattr(found, part, None)
    return {"module": str(module), "name": str(name)} if found is function else None


def _resolve(ref: Mapping[str, str]) -> Any:
    found: Any = importlib.import_module(ref["module"])
    for part in ref["name"].split("."):
        found = getattr(found, part)
    return found


def policy_recipe(policy: Policy) -> dict[str, Any] | None:
    """How a spawned worker rebuilds ``policy``: its class and constructor arguments, with
    compiled functions named by reference; None when something lives in ``__main__`` (or is
    otherwise not importable), so the policy must run in this process."""
    from dispatchlab.policies.led.strategies import Strategy

    cls = type(policy)
    if not _importable(cls.__module__) or "<locals>" in cls.__qualname__:
        return None
    params: dict[str, Any] = {}
    for key, value in policy.constructor_params().items():
        if isinstance(value, Strategy):
            ref = _function_ref(value.function)
            if ref is None:
                return None
            params[key] = {"__function__": ref}
        elif callable(value):
            ref = _function_ref(value)
            if ref is None:
                return None
            params[key] = {"__function__": ref}
        else:
            params[key] = value
    imports = []
    decision = getattr(policy, "decision", None)  # Π: a registered decision function
    function = getattr(decision, "function", None)
    if function is not None:
        module = getattr(function, "__module__", None)
        if not _importable(module):
            return None
        imports.append(module)  # importing it registers the decision in the worker
    return {"module": cls.__module__, "class": cls.__qualname__, "params": params,
            "imports": imports}


def policy_from_recipe(recipe: Mapping[str, Any]) -> Policy:
    """The policy a :func:`policy_recipe` describes: import its modules (which registers a Π
    decision), resolve its class and function-valued parameters, and build it."""
    for module in recipe["imports"]:
        importlib.import_module(module)
    cls = _resolve({"module": recipe["module"], "name": recipe["class"]})
    params = {k: _resolve(v["__function__"]) if isinstance(v, dict) and "__function__" in v
              else v for k, v in recipe["params"].items()}
    return cls(**params)


def _identity_params(policy: Policy) -> dict[str, Any]:
    """JSON-ready parameters that identify the policy in the store (functions by name)."""
    params: dict[str, Any] = {}
    for key, value in policy.constructor_params().items():
        function = getattr(value, "function", value)
        if callable(function) or hasattr(value, "function"):
            ref = _function_ref(function)
            name = getattr(function, "__qualname__", None) or getattr(function, "__name__", "?")
            params[key] = f"{ref['module']}:{ref['name']}" if ref else f"__main__:{name}"
        elif isinstance(value, tuple):
            params[key] = list(value)
        else:
            params[key] = value
    return params


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
                    seed=int(point["seed"]), **options)


def run_task(task: _Task) -> Result:
    """Run one point in a worker (module level, so a spawned process can import it)."""
    point = Point.from_dict(task.point)
    assert task.recipe is not None
    return _run(point.build_system(), policy_from_recipe(task.recipe), task.point, task.options)


# -- the sweep ---------------------------------------------------------------------------------


def sweep(
    systems: SystemLike | Sequence[SystemLike],
    policies: PolicyLike | Iterable[PolicyLike] | Mapping[str, PolicyLike],
    *,
    load: Sequence[float] | None = None,
    epsilon: Sequence[float] | None = None,
    replications: int = 1,
    slots: int = 200_000,
    warmup: int | None = None,
    seed: int = 0,
    workers: int | None = None,
    store: str | Path | None = None,
    experiment: str = "notebook",
    dispatchers: int | None = None,
    warmup_method: str = "fraction",
    track_delay: bool = True,
):  # -> pandas.DataFrame
    """Simulate every (system, policy, load|ε) and return one DataFrame row per point.

    Args:
        systems: a System (its load is replaced), a SystemSpec, a server list such as
            ``"50x0.1,50x0.5"``, or a list of them.
        policies: Policy objects or registered names, or a dict label → policy.
        load: the loads ρ to sweep (or give ``epsilon``).
        epsilon: the values of ε = μ_Σ − λ_Σ to sweep (or give ``load``).
        replications: R independent replications per point (CI from their means if R ≥ 2).
        slots: slots per replication.
        warmup: warm-up slots per replication (default: 10 % of slots).
        seed: the root seed; each point's seed is derived from it and the point.
        workers: processes (default: all cores; 1 runs everything here).
        store: a results store file: finished points are written there and skipped
            when the sweep is run again.
        experiment: the experiment name in the store.
        dispatchers: M for systems given as server lists.
        warmup_method: ``fraction`` or ``mser5`` (see ``simulate``).
        track_delay: time every job for the delay distribution.

    Returns:
        A DataFrame with the Result fields (``Result.to_row()``), plus ``system``,
        ``policy`` (label), ``policy_name``, ``axis``, ``x``, ``load``, ``epsilon``,
        ``executor`` and ``point_key``.
    """
    import pandas as pd

    require((load is None) != (epsilon is None), "load", "give load=[…] or epsilon=[…]")
    axis = "load" if load is not None else "epsilon"
    values = [float(v) for v in (load if load is not None else epsilon)]  # type: ignore[union-attr]
    require(bool(values), axis, "give at least one value")
    require(isinstance(replications, int) and replications >= 1, "replications",
            f"must be an integer ≥ 1 (got {replications!r})")
    require(workers is None or (isinstance(workers, int) and workers >= 1), "workers",
            f"must be ≥ 1 (got {workers!r})")
    if isinstance(systems, System | SystemSpec | str):
        systems = [systems]
    specs = [system_spec(s, dispatchers) for s in systems]
    chosen = _policy_objects(policies)
    options = {"replications": replications, "warmup_method": warmup_method,
               "track_delay": track_delay}

    tasks: list[tuple[Point, Policy, dict[str, Any] | None]] = []
    for spec in specs:
        for x in values:
            built = spec.build(**{axis: x})
            for label, policy in chosen:
                policy.check_system(built)  # fail before any point runs
                policy_spec = PolicySpec(policy.name, _identity_params(policy), label)
                point = Point(experiment, spec, policy_spec, axis, x, 0, int(slots), warmup,
                              int(seed), {k: v for k, v in options.items()})
                tasks.append((point, policy, policy_recipe(policy)))

    results: dict[str, tuple[Result, str]] = {}
    db = None
    if store is not None:
        from dispatchlab.experiments.store import Store

        db = Store(store)
        for row in db.points(experiment):
            if row["result"] is not None:
                results[row["point_key"]] = (_result_from_dict(row["result"]), "stored")
    todo = [t for t in tasks if t[0].key not in results]
    run_id = db.start_run(experiment, "notebook sweep", len(todo)) if db and todo else ""
    try:
        for point, result, how in _execute(todo, options, workers):
            results[point.key] = (result, how)
            if db is not None:
                db.record(run_id, point.to_dict(), result=result.to_dict(), worker=how,
                          seconds=result.seconds)
        if db is not None and run_id:
            db.finish_run(run_id, "finished")
    finally:
        if db is not None:
            db.close()

    rows = []
    for point, policy, _ in tasks:
        result, how = results[point.key]
        row = result.to_row()
        row.update(system=point.system.name, policy=point.policy.label,
                   policy_name=policy.name, policy_label=point.policy.label, axis=axis,
                   x=point.value, executor=how, point_key=point.key)
        rows.append(row)
    frame = pd.DataFrame.from_records(rows)
    frame.attrs["axis"] = axis
    return frame


def _execute(todo: list[tuple[Point, Policy, dict[str, Any] | None]], options: dict[str, Any],
             workers: int | None):
    """Yield (point, Result, how) as points finish: portable ones on a spawn pool, the
    others (and everything when one worker is asked for) here."""
    workers = workers or os.cpu_count() or 1
    remote = [t for t in todo if t[2] is not None] if workers > 1 and len(todo) > 1 else []
    local = [t for t in todo if not any(t is r for r in remote)]
    pool = None
    pooled = ""
    futures = {}
    if remote:
        count = min(workers, len(remote))
        pooled = f"process pool (spawn, {count} workers)"
        pool = ProcessPoolExecutor(count, mp_context=multiprocessing.get_context("spawn"))
        futures = {pool.submit(run_task, _Task(point.to_dict(), recipe, options)): point
                   for point, _, recipe in remote}
    try:
        for point, policy, recipe in local:
            how = ("in-process" if recipe is not None else
                   "in-process (not importable by a spawned worker: defined in __main__ "
                   "or inside a function)")
            yield point, _run(point.build_system(), policy, point.to_dict(), options), how
        for future in as_completed(futures):
            yield futures[future], future.result(), pooled
    finally:
        if pool is not None:
            pool.shutdown(wait=True, cancel_futures=True)


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
