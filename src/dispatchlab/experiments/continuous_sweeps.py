"""``dispatchlab.sweep_continuous``: a continuous-time grid from a notebook, one DataFrame
row per point, through the same runner and store as ``dispatchlab sweep`` (so a stored
sweep resumes and ``dispatchlab report`` draws it)."""

from __future__ import annotations

import tempfile
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from dispatchlab.core.errors import refuse_unknown, require
from dispatchlab.specs.continuous_grid import (
    DEFAULT_JOBS,
    ContinuousExperimentSpec,
    ContinuousSystemSpec,
    policy_spec,
)
from dispatchlab.specs.run import PolicySpec


def _systems(servers: Any, sizes: str, discipline: str, arrivals: str,
             dispatchers: int) -> tuple[ContinuousSystemSpec, ...]:
    given = [servers] if isinstance(servers, str | ContinuousSystemSpec) else servers
    require(isinstance(given, Sequence) and len(given) > 0, "servers",
            "give the speeds as text (\"8x1,8x2\"), a ContinuousSystemSpec or a list of them "
            f"(got {servers!r})")
    out = []
    for i, item in enumerate(given):
        if isinstance(item, ContinuousSystemSpec):
            out.append(item)
            continue
        out.append(ContinuousSystemSpec.from_mapping(
            {"servers": item, "sizes": sizes, "discipline": discipline,
             "arrivals": arrivals, "dispatchers": dispatchers}, f"servers[{i}]"))
    return tuple(out)


def _policies(policies: Any) -> tuple[PolicySpec, ...]:
    if isinstance(policies, str | PolicySpec):
        policies = [policies]
    if isinstance(policies, Mapping):  # label → name or PolicySpec
        items = [(label, value) for label, value in policies.items()]
    else:
        require(isinstance(policies, Sequence) and len(policies) > 0, "policies",
                f"give a policy name, a list of them or a dict label → name (got {policies!r})")
        items = [("", value) for value in policies]
    out = []
    for i, (label, value) in enumerate(items):
        table = (value.to_dict() if isinstance(value, PolicySpec)
                 else {"name": value} if isinstance(value, str) else value)
        require(isinstance(table, Mapping), f"policies[{i}]",
                f"expected a policy name or a PolicySpec (got {value!r})")
        spec = policy_spec({**table, **({"label": label} if label else {})}, f"policies[{i}]")
        out.append(spec)
    return tuple(out)


def sweep_continuous(
    servers: Any,
    policies: Any,
    *,
    load: Sequence[float],
    sizes: str = "exp:1",
    discipline: str = "fifo",
    arrivals: str = "poisson",
    dispatchers: int = 1,
    jobs: int = DEFAULT_JOBS,
    warmup: int | None = None,
    replications: int = 1,
    seed: int = 0,
    workers: int | None = None,
    store: str | Path | None = None,
    experiment: str = "notebook-continuous",
    **unknown: Any,
):  # -> pandas.DataFrame
    """Run every (system, policy, load ρ) in continuous time and return one row per point
    (replication): E[T] (``mean_response``), the slowdown, E[L], P(server busy at
    arrival) and the response-time quantiles, each with ``_ci_low``/``_ci_high``.

    ``servers``: the speeds as text (``"8x1,8x2"``, with ``sizes``, ``discipline``,
    ``arrivals`` and ``dispatchers``), a :class:`ContinuousSystemSpec` or a list of them.
    ``policies``: a continuous-time policy name (``dispatchlab policies --time
    continuous``), a list of them, or a dict label → name. Each point is one run of
    ``jobs`` jobs (the first ``warmup``, default a tenth, unmeasured) with a seed derived
    from the root ``seed`` and the point; ``workers`` processes (default: every core).
    ``store``: a results store file, where finished points are kept (a second call
    computes only what is missing) under ``experiment``. Everything is checked before
    any point runs (:class:`~dispatchlab.core.errors.ValidationError` naming the field);
    Ctrl-C stops the sweep and keeps what finished."""
    from dispatchlab.experiments.runner import run_experiment
    from dispatchlab.experiments.store import Store

    refuse_unknown(sweep_continuous, unknown)
    require(isinstance(load, Sequence) and not isinstance(load, str), "load",
            f"give the loads as a list, e.g. [0.5, 0.9] (got {load!r})")
    spec = ContinuousExperimentSpec(
        experiment, _systems(servers, sizes, discipline, arrivals, dispatchers),
        _policies(policies), tuple(load), replications=replications, jobs=jobs,
        warmup=warmup, seed=seed, description="a notebook sweep (dispatchlab.sweep_continuous)")
    keys = [point.key for point in spec.points()]  # (validates)
    with tempfile.TemporaryDirectory(prefix="dispatchlab-sweep-") as scratch:
        path = Path(store) if store is not None else Path(scratch) / "sweep.sqlite"
        run_experiment(spec, store=path, workers=workers)
        with Store(path) as db:
            frame = db.frame(experiment)
    frame = frame[frame["point_key"].isin(keys)].reset_index(drop=True)
    frame.attrs["axis"] = "load"
    return frame
