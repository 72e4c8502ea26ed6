"""Continuous-time experiments: the grid

    systems × policies × loads ρ × replications

of event-driven runs (:func:`~dispatchlab.continuous.run.simulate_continuous`), stored,
resumed and drawn like the slotted grids (:mod:`dispatchlab.specs.experiment`): the same
store, runner, workers, Dask cluster and figures. A sweep file says which model it is:

    name = "p2c-vs-jsq"
    time = "continuous"
    loads = [0.5, 0.7, 0.9]
    jobs = 200000                 # per replication (its first tenth is the warm-up)
    replications = 4
    [[systems]]
    servers = "8x1,8x2"           # the speeds s_n
    sizes = "bpareto:1.5,1,1e6"
    discipline = "ps"
    [[policies]]
    name = "p2c"

A point's key and seed come from its identity (system, policy, load, replication, jobs,
warm-up) and the root seed, as in the slotted grids; its identity says
``"time": "continuous"``, so no continuous point can share a key with a slotted one. A
point's replication is one run of ``jobs`` jobs with its own seed; the replications of a
cell are the points of its rows, and a figure's interval is Student's t over them (one
replication: the run's own batch-means interval).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, fields, replace
from pathlib import Path
from typing import Any

import numpy as np

from dispatchlab.core.convert import as_float, as_int, as_str, as_table, check_keys
from dispatchlab.core.documents import loads_json, read_toml
from dispatchlab.core.errors import require
from dispatchlab.specs.experiment import (
    ExperimentSpec,
    check_name,
    identity_key,
    identity_seed,
)
from dispatchlab.specs.figure import CONTINUOUS_Y, FigureSpec
from dispatchlab.specs.run import PolicySpec

TIME = "continuous"
#: jobs a point runs unless the grid says
DEFAULT_JOBS = 100_000
#: runs a cell at most (a grid of 10⁸ replications must not hang listing its points)
MAX_REPLICATIONS = 100_000
#: the y quantities of a continuous point (each with ``_ci_low``/``_ci_high``)
MEASURES = CONTINUOUS_Y


@dataclass(frozen=True)
class ContinuousSystemSpec:
    """A continuous-time system without its load: the server speeds s_n, the job sizes,
    the servers' discipline, each dispatcher's interarrival shape and the dispatchers M.
    A trace is not a grid's system (it sets its own rate; run it with ``dispatchlab
    run``)."""

    servers: str
    sizes: str = "exp:1"
    discipline: str = "fifo"
    arrivals: str = "poisson"
    dispatchers: int = 1
    label: str = ""

    @property
    def name(self) -> str:
        return self.label or (f"{self.servers}, {self.sizes}, {self.discipline}"
                              + (f", M = {self.dispatchers}" if self.dispatchers != 1 else ""))

    def identity(self) -> dict[str, Any]:
        return {"time": TIME, "servers": self.servers, "sizes": self.sizes,
                "discipline": self.discipline, "arrivals": self.arrivals,
                "dispatchers": self.dispatchers}

    def run_settings(self) -> dict[str, Any]:
        """:func:`simulate_continuous`'s keywords for this system."""
        return {"servers": self.servers, "sizes": self.sizes, "discipline": self.discipline,
                "arrivals": self.arrivals, "dispatchers": self.dispatchers}

    def to_dict(self) -> dict[str, Any]:
        return {**self.identity(), "label": self.label}

    @classmethod
    def from_mapping(cls, data: Mapping[str, Any], name: str) -> ContinuousSystemSpec:
        data = as_table(data, name)
        check_keys(data, name, ("time", *(f.name for f in fields(cls))))
        require("servers" in data, f"{name}.servers", "every system needs its servers' "
                "speeds, e.g. servers = \"8x1,8x2\"")
        require(data.get("time", TIME) == TIME, f"{name}.time",
                f"a continuous-time grid's systems are continuous (got {data.get('time')!r})")
        text = {key: as_str(data[key], f"{name}.{key}") for key in
                ("servers", "sizes", "discipline", "arrivals") if key in data}
        label = data.get("label", "")
        require(isinstance(label, str) and label.isprintable(), f"{name}.label",
                f"expected printable text (got {label!r})")
        require(not text.get("arrivals", "").lower().startswith("trace:"), f"{name}.arrivals",
                "a trace sets its own arrival rate, so a grid over loads cannot use one: run "
                "it with `dispatchlab run --time continuous --arrivals trace:PATH`")
        return cls(**text, label=label.strip(),
                   dispatchers=as_int(data.get("dispatchers", 1), f"{name}.dispatchers"))

    from_dict = from_mapping


def policy_spec(data: Mapping[str, Any], name: str) -> PolicySpec:
    """A continuous-time policy of the grid: its name (or alias), parameters and label;
    the label defaults to the policy's own name (the slotted policies' display names do
    not cover the continuous ones)."""
    spec = PolicySpec.from_mapping(data, name)
    return spec if spec.label else replace(spec, label=_default_label(spec))


def _default_label(spec: PolicySpec) -> str:
    params = ", ".join(f"{key}={value}" for key, value in sorted(spec.params.items()))
    return f"{spec.name}({params})" if params else spec.name


@dataclass(frozen=True)
class ContinuousPoint:
    """One cell of a continuous-time grid: (system, policy, load, replication)."""

    experiment: str
    system: ContinuousSystemSpec
    policy: PolicySpec
    value: float
    replication: int
    jobs: int
    warmup: int | None
    root_seed: int
    axis: str = "load"
    time: str = TIME

    @property
    def slots(self) -> int:
        """The point's budget in the runner's progress (jobs here; slots in slotted time)."""
        return self.jobs

    def identity(self) -> dict[str, Any]:
        return {"system": self.system.identity(), "policy": self.policy.identity(),
                "axis": self.axis, "value": float(self.value),
                "replication": self.replication, "jobs": self.jobs, "warmup": self.warmup}

    @property
    def key(self) -> str:
        return identity_key(self.identity(), self.root_seed)

    @property
    def seed(self) -> int:
        """A 62-bit seed from the identity and root seed (:func:`simulate_continuous`
        takes seeds up to 2⁶²)."""
        return identity_seed(self.identity(), self.root_seed, bits=62)

    def run_settings(self) -> dict[str, Any]:
        return {**self.system.run_settings(), "policy": self.policy.name,
                "policy_params": dict(self.policy.params), "load": self.value,
                "jobs": self.jobs, "warmup": self.warmup}

    def to_dict(self) -> dict[str, Any]:
        return {"time": TIME, "experiment": self.experiment, "system": self.system.to_dict(),
                "policy": self.policy.to_dict(), "axis": self.axis,
                "value": float(self.value), "replication": self.replication,
                "slots": self.jobs, "jobs": self.jobs, "warmup": self.warmup,
                "root_seed": self.root_seed, "seed": self.seed, "key": self.key}

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> ContinuousPoint:
        return cls(data["experiment"], ContinuousSystemSpec.from_dict(data["system"], "system"),
                   PolicySpec.from_dict(data["policy"]), float(data["value"]),
                   int(data["replication"]), int(data["jobs"]), data["warmup"],
                   int(data["root_seed"]))


def run_point(data: Mapping[str, Any]) -> dict[str, Any]:
    """Run one continuous point in this process: its flat result (:func:`result_row`)."""
    from dispatchlab.continuous.run import simulate_continuous

    point = ContinuousPoint.from_dict(data)
    result = simulate_continuous(**point.run_settings(), seed=point.seed, workers=1)
    return result_row(result)


def result_row(result: Any) -> dict[str, Any]:
    """A :class:`~dispatchlab.continuous.run.ContinuousResult` as the store's flat JSON
    row: each measure with ``_ci_low``/``_ci_high`` and its method, the run's shape."""
    row: dict[str, Any] = {
        "time": TIME, "policy": result.policy, "params": dict(result.policy_params),
        "discipline": result.discipline, "sizes": result.sizes, "arrivals": result.arrivals,
        "dispatchers": result.dispatchers, "servers": len(result.speeds),
        "load": result.load, "arrival_rate": result.arrival_rate, "jobs": result.jobs,
        "warmup": result.warmup, "slots_run": result.jobs, "stability": result.stability,
        "stability_evidence": result.stability_evidence,
        "messages_per_job": result.messages_per_job, "max_in_system": result.max_in_system,
        "events": result.events, "jobs_per_second": result.jobs_per_second}
    quantiles = {f"response_p{round(level * 100):d}": value
                 for level, value in result.response_quantiles.items()}
    for name in MEASURES:
        estimate = quantiles.get(name) if name.startswith("response_p") \
            else getattr(result, name)
        if estimate is None:
            continue
        row[name], row[f"{name}_ci_low"], row[f"{name}_ci_high"] = (
            _finite(estimate.mean), _finite(estimate.ci_low), _finite(estimate.ci_high))
        row[f"{name}_method"] = estimate.method
    return row


def _finite(value: float) -> float | None:
    return float(value) if np.isfinite(value) else None


@dataclass(frozen=True)
class ContinuousExperimentSpec:
    """A grid of continuous-time runs and its figures (see the module's docstring).

    Attributes:
        name: the experiment in the store and its output folder.
        systems / policies: the grid's systems and policies (:func:`policy_spec`).
        loads: the loads ρ = λ·E[X]/Σ s_n.
        replications: runs per (system, policy, load), each a point.
        jobs: jobs per run; ``warmup`` of them unmeasured (default a tenth).
        seed: the root seed. figures: what is drawn (y: one of :data:`MEASURES`).
    """

    name: str
    systems: tuple[ContinuousSystemSpec, ...]
    policies: tuple[PolicySpec, ...]
    loads: tuple[float, ...]
    replications: int = 1
    jobs: int = DEFAULT_JOBS
    warmup: int | None = None
    seed: int = 0
    figures: tuple[FigureSpec, ...] = ()
    title: str = ""
    description: str = ""
    paper: str = ""
    time: str = TIME

    axis = "load"

    @property
    def values(self) -> tuple[float, ...]:
        return self.loads

    def points(self) -> list[ContinuousPoint]:
        """Every point of the grid (validates first)."""
        self.validate()
        return [ContinuousPoint(self.name, system, policy, float(load), replication,
                                self.jobs, self.warmup, self.seed)
                for system in self.systems for policy in self.policies
                for load in self.loads for replication in range(self.replications)]

    def validate(self) -> None:
        """Raise :class:`ValidationError` for anything that would fail later: every
        (system, policy, load) is checked as its run would check it, before any runs."""
        from dispatchlab.continuous.run import plan_continuous

        check_name(self.name)
        require(len(self.systems) > 0, "systems", "the grid is empty: give at least one system")
        require(len(self.policies) > 0, "policies",
                "the grid is empty: give at least one policy")
        require(len(self.loads) > 0, "loads", "the grid is empty: give at least one load")
        for i, load in enumerate(self.loads):
            as_float(load, f"loads[{i}]")
        require(len(set(self.loads)) == len(self.loads), "loads", "values must be distinct")
        for i, system in enumerate(self.systems):
            require(isinstance(system, ContinuousSystemSpec), f"systems[{i}]",
                    f"expected a ContinuousSystemSpec (got {system!r})")
        for i, policy in enumerate(self.policies):
            require(isinstance(policy, PolicySpec), f"policies[{i}]",
                    f"expected a PolicySpec (got {policy!r})")
        for key, low in (("replications", 1), ("seed", 0), ("jobs", 2)):
            as_int(getattr(self, key), key, low)
        require(self.replications <= MAX_REPLICATIONS, "replications",
                f"at most {MAX_REPLICATIONS:,} runs a cell (got {self.replications:,})")
        for kind, labels in (("systems", [s.name for s in self.systems]),
                             ("policies", [p.display for p in self.policies])):
            require(len(set(labels)) == len(labels), kind,
                    f"labels must be distinct (got {labels})")
        for system in self.systems:
            for policy in self.policies:
                for load in self.loads:
                    plan_continuous(**ContinuousPoint(
                        self.name, system, policy, float(load), 0, self.jobs, self.warmup,
                        self.seed).run_settings(), seed=self.seed)
        for i, figure in enumerate(self.figures):
            figure.validate(f"figures[{i}]")
            require(figure.x == "load", f"figures[{i}].x",
                    f"a continuous-time grid sweeps the load (got {figure.x!r})")
            require(figure.y in MEASURES, f"figures[{i}].y",
                    f"allowed in continuous time: {', '.join(MEASURES)} (got {figure.y!r})")
        names = [f.name for f in self.figures]
        require(len(set(names)) == len(names), "figures", "figure names must be distinct")

    def with_jobs(self, jobs: int) -> ContinuousExperimentSpec:
        """The same grid with ``jobs`` jobs per point (warm-up: a tenth)."""
        return replace(self, jobs=jobs, warmup=None)

    def scaled(self, factor: float) -> ContinuousExperimentSpec:
        require(as_float(factor, "scale") > 0, "scale", f"must be > 0 (got {factor!r})")
        return self.with_jobs(max(2, int(round(self.jobs * factor))))

    def to_dict(self) -> dict[str, Any]:
        return {"time": TIME, "name": self.name, "title": self.title,
                "description": self.description, "paper": self.paper,
                "systems": [s.to_dict() for s in self.systems],
                "policies": [p.to_dict() for p in self.policies], "loads": list(self.loads),
                "replications": self.replications, "jobs": self.jobs, "warmup": self.warmup,
                "seed": self.seed, "figures": [f.to_dict() for f in self.figures]}

    def to_json(self) -> str:
        return json.dumps(self.to_dict(), sort_keys=True, indent=1)

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> ContinuousExperimentSpec:
        """Build (without validating) from ``to_dict``'s form or a TOML file's."""
        data = as_table(data, "experiment")
        check_keys(data, "", ("time", "name", "title", "description", "paper", "systems",
                              "policies",
                              "loads", "replications", "jobs", "warmup", "seed", "figures"))
        require("name" in data, "name", "the experiment needs a name")

        def listed(key: str) -> list[Any]:
            value = data.get(key, [])
            require(isinstance(value, list | tuple), key, f"must be a list (got {value!r})")
            return list(value)

        warmup = data.get("warmup")
        figures = listed("figures") or [{"name": "response", "x": "load",
                                         "y": "mean_response", "log_y": True,
                                         "title": "Mean response time", "ylabel": "E[T]"}]
        return cls(
            name=data["name"],
            systems=tuple(ContinuousSystemSpec.from_mapping(s, f"systems[{i}]")
                          for i, s in enumerate(listed("systems"))),
            policies=tuple(policy_spec(p, f"policies[{i}]")
                           for i, p in enumerate(listed("policies"))),
            loads=tuple(listed("loads")), replications=data.get("replications", 1),
            jobs=data.get("jobs", DEFAULT_JOBS),
            warmup=None if warmup is None else as_int(warmup, "warmup", 0),
            seed=data.get("seed", 0),
            figures=tuple(FigureSpec.from_dict(f, f"figures[{i}]")
                          for i, f in enumerate(figures)),
            title=str(data.get("title", "")), description=str(data.get("description", "")),
            paper=str(data.get("paper", "")))

    @classmethod
    def from_json(cls, text: str, where: str = "the spec's JSON") -> ContinuousExperimentSpec:
        return cls.from_dict(loads_json(text, "spec", where))

    @classmethod
    def from_toml(cls, path: str | Path) -> ContinuousExperimentSpec:
        spec = cls.from_dict(read_toml(path, "spec", "spec file"))
        spec.validate()
        return spec


def is_continuous(data: Any) -> bool:
    """Whether a parsed spec or stored point (a mapping), or a spec object, is of a
    continuous-time grid."""
    if isinstance(data, Mapping):
        return data.get("time") == TIME
    return getattr(data, "time", None) == TIME


def grid_from_json(text: str, where: str) -> Any:
    """The grid a store or report keeps as JSON: a :class:`ContinuousExperimentSpec` when
    it says ``"time": "continuous"``, else an ``ExperimentSpec`` (not validated)."""
    data = loads_json(text, "spec", where)
    if is_continuous(data):
        return ContinuousExperimentSpec.from_dict(data)
    return ExperimentSpec.from_json(text, where)
