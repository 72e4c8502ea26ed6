"""The spec model: a system, a policy and one run, as plain data read from TOML or options.

:class:`SystemSpec` (a system without its arrival rate) and :class:`PolicySpec` (a
registered policy, its parameters, a label) are the one description of what to simulate:
``dispatchlab run`` holds one of each in a :class:`RunSpec`; an experiment grid
(:class:`dispatchlab.specs.experiment.ExperimentSpec`) holds lists of them and sweeps the
load ρ or ε, so every system field (dispatcher weights included) can vary across a sweep.
Each spec has one converter, ``from_mapping``, for TOML tables, JSON and keyword
mappings; it names the offending field in every :class:`ValidationError`.

A run spec file has three tables, every key optional::

    [system]
    servers = "50x0.1,50x0.5"     # service rates μ_n: COUNTxRATE list or an array of numbers
    dispatchers = 10               # M
    load = 0.95                    # ρ = λ_Σ/μ_Σ; or epsilon = 0.5 (ε = μ_Σ − λ_Σ), or
                                   # beta = 1 (Halfin–Whitt: ε = β·μ_Σ/√N); one of them
    arrivals = "poisson"           # poisson | bernoulli | binomial:K | deterministic | trace:PATH
    service = "bernoulli"          # bernoulli | binomial:K | poisson | geometric | deterministic
    dispatch = "batch"             # batch | per_job: a dispatcher's jobs in a slot go together?
    split = "per_job"              # per_job | batch: how A_Σ(t) is shared among dispatchers
    dispatcher_weights = [...]     # p_m, one per dispatcher (default uniform)
    allow_unstable = false         # accept load ≥ 1

    [policy]
    name = "pod"                   # or give it with --policy
    [policy.params]
    d = 2

    [run]
    slots = 1_000_000
    warmup = 100_000               # default 10 % of slots
    warmup_method = "fraction"     # fraction | mser5
    estimator = "coupled"          # coupled (E[q] computed + E[ΣQ − q]) | plain
    start = "empty"                # empty | stationary (q(0) from the pooled queue's law)
    seed = 7
    replications = 1
    delay = "tagged"               # tagged (a sample of tagged jobs) | all | off
    imbalance = true               # the queue imbalance DQI₁, DQI₂ every slot
    per_server = false             # utilisation, idle fraction, Q_n distribution per server
    [run.per_server]               # … or with the bins of each Q_n histogram (the last:
    bins = 64                      #     Q_n ≥ bins − 1)
    [run.trajectory]               # ΣQ(t), q(t) every 1000 slots (default: none)
    every = 1000
    servers = [0, 1]               # and Q_n(t) of these servers
    [run.precision]                # replications until the 95 % CI of E[ΣQ] is ± 1 %
    rel = 0.01                     # (and/or abs = …) or max_slots are spent
    max_slots = 64_000_000

The ``[run]`` keys are :func:`dispatchlab.simulate`'s keywords, the tables its records
(:mod:`dispatchlab.simulation.measures`).

``per-job`` (the old spelling) is read as ``per_job``. A sweep's ``[[systems]]`` and
``[[policies]]`` tables take the same keys (without load/epsilon, which the grid sweeps)
plus a ``label``. A trace path in a spec file is relative to the file's folder. Without
``load`` and ``epsilon`` (and without a trace) the load is :data:`DEFAULT_LOAD`.
Command-line options override the file through :meth:`RunSpec.with_overrides`.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, fields, replace
from pathlib import Path
from typing import Any

from dispatchlab.core.convert import (
    CommandLineText,
    as_bool,
    as_choice,
    as_float,
    as_floats,
    as_int,
    as_str,
    as_table,
    check_keys,
)
from dispatchlab.core.documents import read_toml
from dispatchlab.core.errors import require
from dispatchlab.core.precision_target import Precision
from dispatchlab.model.arrivals import parse_arrival_law
from dispatchlab.model.service import parse_rates
from dispatchlab.model.system import DISPATCH_MODES, SPLITS, System
from dispatchlab.policies import Policy, make_policy
from dispatchlab.policies.base import display_name
from dispatchlab.simulation.measures import (
    DELAY_MODES,
    PerServer,
    Trajectory,
    merged,
    refuse_renamed,
)
from dispatchlab.simulation.plan import DEFAULT_SLOTS, ESTIMATORS, STARTS, WARMUP_METHODS
from dispatchlab.simulation.result import Result
from dispatchlab.simulation.run import simulate

DEFAULT_SERVERS = "50x0.1,50x0.5"
DEFAULT_DISPATCHERS = 10
DEFAULT_LOAD = 0.9
#: the keys that set the arrival rate (one of them)
RATE_KEYS = ("load", "epsilon", "beta")
#: old spellings still read (examples and scripts wrote ``per-job``)
ALIASES = {"per-job": "per_job"}
#: system fields left out of a system's identity while at these defaults, so that adding
#: them kept the store keys (and derived seeds) of every existing experiment point
IDENTITY_DEFAULTS: dict[str, Any] = {"dispatcher_weights": (), "allow_unstable": False}

_dispatch_mode = as_choice(DISPATCH_MODES, ALIASES)
_split = as_choice(SPLITS, ALIASES)


# -- the system --------------------------------------------------------------------------------


def halfin_whitt_epsilon(beta: float, mu_sum: float, n_servers: int) -> float:
    """ε = β·μ_Σ/√N, the Halfin–Whitt regime's distance from capacity (docs/model.md):
    λ_Σ = μ_Σ(1 − β/√N), so with unit rates ε = β√N. ``beta`` > 0."""
    return beta * mu_sum / math.sqrt(n_servers)


@dataclass(frozen=True)
class SystemSpec:
    """A system without its arrival rate (ρ or ε sets it: a run's ``load``, a sweep's axis).

    Attributes:
        servers: the service rates μ_n, ``"50x0.1,50x0.5"`` or a tuple of floats.
        dispatchers: M, the number of dispatchers.
        arrivals: the law of A_Σ(t) (``poisson``, ``bernoulli``, ``binomial:K``, …).
        service: the law of S_n(t) (``bernoulli``, …).
        dispatch: ``batch`` (a dispatcher's jobs of a slot go to one server, the papers')
            or ``per_job``.
        split: how A_Σ(t) is shared among dispatchers: ``per_job`` or ``batch``.
        dispatcher_weights: p_m, one per dispatcher (empty: uniform).
        allow_unstable: accept λ_Σ ≥ μ_Σ.
        label: the name in legends and tables (default: servers and M).
        family: the :class:`~dispatchlab.specs.family.SystemFamily` this system is a size
            of (its label; empty for a system of its own). Not part of the identity.
    """

    servers: str | tuple[float, ...]
    dispatchers: int = 1
    arrivals: str = "poisson"
    service: str = "bernoulli"
    dispatch: str = "batch"
    split: str = "per_job"
    dispatcher_weights: tuple[float, ...] = ()
    allow_unstable: bool = False
    label: str = ""
    family: str = ""

    def __post_init__(self) -> None:
        # one spelling whatever the input (tuples, not lists: the spec is hashable data)
        if isinstance(self.servers, list | tuple):
            object.__setattr__(self, "servers", tuple(float(x) for x in self.servers))
        object.__setattr__(self, "dispatcher_weights",
                           tuple(float(x) for x in self.dispatcher_weights))
        for name in ("dispatch", "split"):
            value = getattr(self, name)
            if isinstance(value, str):
                object.__setattr__(self, name, ALIASES.get(value.lower(), value.lower()))

    @property
    def name(self) -> str:
        if self.label:
            return self.label
        servers = (self.servers if isinstance(self.servers, str)
                   else ",".join(f"{x:g}" for x in self.servers))
        weights = (f", p=({','.join(f'{w:g}' for w in self.dispatcher_weights)})"
                   if self.dispatcher_weights else "")
        return f"{servers}, M={self.dispatchers}{weights}"

    def build(self, *, load: float | None = None, epsilon: float | None = None,
              beta: float | None = None) -> System:
        """The validated :class:`System` at load ρ, at ε, or at the Halfin–Whitt β
        (ε = β·μ_Σ/√N); none of them: a trace's own rate."""
        if beta is not None:
            require(load is None and epsilon is None, "beta", "give one of load, epsilon, beta")
            require(as_float(beta, "beta") > 0, "beta", f"β must be > 0 (got {beta!r})")
            rates = parse_rates(self.servers)
            root = math.sqrt(rates.size)
            require(beta < root or self.allow_unstable, "beta",
                    f"β must be < √N = {root:g}: λ_Σ = μ_Σ(1 − β/√N) (got {beta:g})")
            mu_sum = float(rates.sum())
            epsilon = halfin_whitt_epsilon(beta, mu_sum, rates.size)
            require(mu_sum - epsilon != mu_sum, "beta",
                    f"β = {beta:g} gives ε = {epsilon:.3g}, below the resolution of μ_Σ = "
                    f"{mu_sum:g} (λ_Σ = μ_Σ − ε rounds to μ_Σ)")
        return System.build(
            self.servers, load=load, epsilon=epsilon, arrivals=self.arrivals,
            service=self.service, dispatchers=self.dispatchers,
            dispatcher_weights=self.dispatcher_weights,
            split=_split(self.split, "split"), dispatch=_dispatch_mode(self.dispatch, "dispatch"),
            allow_unstable=self.allow_unstable)

    def identity(self) -> dict[str, Any]:
        """What defines the system: not its label or family, nor a field still at its
        default in :data:`IDENTITY_DEFAULTS`."""
        data = self.to_dict()
        data.pop("label")
        data.pop("family", None)
        for key, default in IDENTITY_DEFAULTS.items():
            if getattr(self, key) == default:
                data.pop(key)
        return data

    def to_dict(self) -> dict[str, Any]:
        data = {f.name: getattr(self, f.name) for f in fields(self)}
        if isinstance(self.servers, tuple):
            data["servers"] = list(self.servers)
        data["dispatcher_weights"] = list(self.dispatcher_weights)
        if not self.family:  # a system of its own: its record as before families
            del data["family"]
        return data

    @classmethod
    def from_mapping(cls, data: Mapping[str, Any], name: str = "system") -> SystemSpec:
        """Convert and type-check a table (``[system]``, ``[[systems]]``, JSON); errors
        name ``NAME.KEY``. Values are checked further when the system is built."""
        data = as_table(data, name)
        check_keys(data, name, SYSTEM_KEYS)
        require("servers" in data, f"{name}.servers",
                "each system needs servers (e.g. servers = \"50x0.1,50x0.5\")")
        return cls(**{key: SYSTEM_CONVERTERS[key](value, f"{name}.{key}")
                      for key, value in data.items()})

    from_dict = from_mapping


def _as_servers(value: Any, name: str) -> str | tuple[float, ...]:
    if isinstance(value, str):
        return as_str(value, name)
    require(isinstance(value, list | tuple) and len(value) > 0, name,
            f"expected a string like \"50x0.1,50x0.5\" or an array of rates (got {value!r})")
    return tuple(as_float(v, name) for v in value)


def _as_label(value: Any, name: str) -> str:
    require(isinstance(value, str), name, f"expected a string (got {value!r})")
    return value


#: the converter of every system field (TOML, JSON, and the Python API's keywords)
SYSTEM_CONVERTERS: dict[str, Callable[[Any, str], Any]] = {
    "servers": _as_servers,
    "dispatchers": lambda v, n: as_int(v, n, low=1),
    "arrivals": as_str,
    "service": as_str,
    "dispatch": _dispatch_mode,
    "split": _split,
    "dispatcher_weights": as_floats,
    "allow_unstable": as_bool,
    "label": _as_label,
    "family": _as_label,
}
SYSTEM_KEYS = tuple(f.name for f in fields(SystemSpec))
assert set(SYSTEM_KEYS) == set(SYSTEM_CONVERTERS)


# -- the policy --------------------------------------------------------------------------------


@dataclass(frozen=True)
class PolicySpec:
    """A registered policy name, its parameters and a label (legends, tables)."""

    name: str
    params: Mapping[str, Any] = field(default_factory=dict)
    label: str = ""

    @property
    def display(self) -> str:
        return self.label or display_name(self.name, dict(self.params))

    def make(self) -> Policy:
        """The registered policy with its parameters (validated by the policy)."""
        return make_policy(self.name, **dict(self.params))

    def identity(self) -> dict[str, Any]:
        return {"name": self.name, "params": dict(sorted(self.params.items()))}

    def to_dict(self) -> dict[str, Any]:
        return {"name": self.name, "params": dict(self.params), "label": self.label}

    @classmethod
    def from_mapping(cls, data: Mapping[str, Any], name: str = "policy", *,
                     need_name: bool = True) -> PolicySpec:
        """Convert a ``[policy]``/``[[policies]]`` table; errors name ``NAME.KEY``
        (``need_name=False``: a run spec may leave the name to ``--policy``)."""
        data = as_table(data, name)
        check_keys(data, name, ("name", "params", "label"))
        require("name" in data or not need_name, f"{name}.name", "every policy needs a name")
        return cls(as_str(data["name"], f"{name}.name") if "name" in data else "",
                   as_table(data.get("params", {}), f"{name}.params"),
                   _as_label(data.get("label", ""), f"{name}.label"))

    from_dict = from_mapping


# -- one run -----------------------------------------------------------------------------------


@dataclass(frozen=True)
class RunSpec:
    """Everything one ``dispatchlab run`` needs; validated when it is used.

    Attributes:
        system: the system (default: :data:`DEFAULT_SERVERS` with M = 10).
        policy: the policy (its name may come later, from ``--policy``).
        load: ρ = λ_Σ/μ_Σ (``None`` when ``epsilon`` sets the rate, or for a trace).
        epsilon: ε = μ_Σ − λ_Σ, the heavy-traffic distance (replaces ``load``).
        beta: the Halfin–Whitt β, ε = β·μ_Σ/√N (replaces ``load``).
        slots: as in :func:`dispatchlab.simulate`, and likewise ``warmup``,
            ``warmup_method``, ``estimator``, ``start``, ``seed``, ``replications``,
            ``delay``, ``imbalance``, ``per_server``, ``trajectory`` and ``precision``.
    """

    system: SystemSpec = field(
        default_factory=lambda: SystemSpec(DEFAULT_SERVERS, dispatchers=DEFAULT_DISPATCHERS))
    policy: PolicySpec = field(default_factory=lambda: PolicySpec(""))
    load: float | None = None
    epsilon: float | None = None
    beta: float | None = None
    slots: int = DEFAULT_SLOTS
    warmup: int | None = None
    warmup_method: str = "fraction"
    estimator: str = "coupled"
    start: str = "empty"
    seed: int = 0
    replications: int = 1
    delay: str = "tagged"
    imbalance: bool = True
    per_server: PerServer | None = None
    trajectory: Trajectory | None = None
    precision: Precision | None = None

    # -- construction -------------------------------------------------------------------------

    @classmethod
    def from_toml(cls, path: str | Path) -> RunSpec:
        """Read a spec file; any problem raises :class:`ValidationError` naming the field."""
        path = Path(path)
        data = read_toml(path, "spec", "spec file")
        return cls.from_mapping(data, base_dir=path.parent)

    @classmethod
    def from_mapping(cls, data: Mapping[str, Any], base_dir: Path | None = None) -> RunSpec:
        """Build a spec from the parsed tables (``system``, ``policy``, ``run``)."""
        check_keys(data, "", ("system", "policy", "run"))
        tables = {key: as_table(data.get(key, {}), key) for key in ("system", "policy", "run")}
        system = tables["system"]
        rate = {key: as_float(system.pop(key), f"system.{key}")
                for key in RATE_KEYS if key in system}
        require(len(rate) < 2, "system.load", "give one of load, epsilon and beta")
        check_keys(system, "system", (*SYSTEM_KEYS, *RATE_KEYS))
        defaults = {"servers": DEFAULT_SERVERS, "dispatchers": DEFAULT_DISPATCHERS}
        system_spec = SystemSpec.from_mapping({**defaults, **system}, "system")
        if base_dir is not None:
            system_spec = replace(system_spec,
                                  arrivals=_resolve_trace(system_spec.arrivals, base_dir))
        run = tables["run"]
        time = run.pop("time", "slotted")
        require(time == "slotted", "run.time", f"this reader takes slotted runs (got "
                f"{time!r}; dispatchlab run reads continuous-time specs too)")
        refuse_renamed(run, "run.")
        check_keys(run, "run", tuple(RUN_CONVERTERS))
        settings = {key: RUN_CONVERTERS[key](value, f"run.{key}") for key, value in run.items()}
        policy = PolicySpec.from_mapping(tables["policy"], "policy", need_name=False)
        return cls(system=system_spec, policy=policy, **rate, **settings)

    def with_overrides(self, **overrides: Any) -> RunSpec:
        """A copy with every override that is not ``None`` applied (the command line's).

        Keys: the system fields (``servers``, ``dispatchers``, …), ``policy`` (the name),
        ``params`` (merged into the spec's; an override wins), ``load``/``epsilon``/``beta``
        (giving one clears the others), the run settings, and for ``per_server``,
        ``trajectory`` and ``precision`` a mapping of the record's fields, merged into the
        spec's record (``per_server=True``: on, with the spec's bins or the default).
        """
        given = {k: v for k, v in overrides.items() if v is not None}
        allowed = {*SYSTEM_KEYS, "policy", "params", *(f.name for f in fields(self))}
        allowed -= {"system", "label"}
        unknown = sorted(set(given) - allowed)
        require(not unknown, "spec", f"unknown setting {unknown[:1]}")
        rates = [key for key in RATE_KEYS if key in given]
        require(len(rates) < 2, "load", "give one of --load, --epsilon and --beta")
        for key in RATE_KEYS:
            if rates and key != rates[0]:
                given[key] = None
        system = {k: given.pop(k) for k in SYSTEM_KEYS if k in given}
        policy = self.policy
        if "policy" in given:
            policy = replace(policy, name=given.pop("policy"))
        if "params" in given:
            policy = replace(policy, params={**policy.params, **given.pop("params")})
        if given.get("per_server") is True:
            given["per_server"] = self.per_server or PerServer()
        for name, kind in RECORDS.items():
            if isinstance(given.get(name), Mapping):
                given[name] = merged(getattr(self, name), kind, name, given[name])
        return replace(self, system=replace(self.system, **system), policy=policy, **given)

    # -- use ----------------------------------------------------------------------------------

    def build_system(self) -> System:
        """The validated :class:`System` this spec describes."""
        load, epsilon, beta = self.load, self.epsilon, self.beta
        if parse_arrival_law(self.system.arrivals)[0] == "trace":
            require(load is None and epsilon is None and beta is None, "load",
                    "a trace fixes its own rate; do not give load, epsilon or beta")
        elif load is None and epsilon is None and beta is None:
            load = DEFAULT_LOAD
        return self.system.build(load=load, epsilon=epsilon, beta=beta)

    def make_policy(self) -> Policy:
        """The registered policy with its parameters (validated by the policy)."""
        require(bool(self.policy.name), "policy",
                "no policy given; use --policy NAME or [policy] name = ... in the spec")
        return self.policy.make()

    def settings(self) -> dict[str, Any]:
        """The run settings as :func:`simulate` takes them."""
        return {name: getattr(self, name) for name in RUN_CONVERTERS}

    def simulate(self, *, workers: int | None = None) -> Result:
        """Validate everything, then run the simulation on ``workers`` processes."""
        system = self.build_system()
        policy = self.make_policy()
        return simulate(system, policy, workers=workers, **self.settings())


#: the converter of every run setting (TOML, JSON, and the Python API's keywords)
RUN_CONVERTERS: dict[str, Callable[[Any, str], Any]] = {
    "slots": lambda v, n: as_int(v, n, low=1),
    "warmup": as_int,
    "warmup_method": as_choice(WARMUP_METHODS),
    "estimator": as_choice(ESTIMATORS),
    "start": as_choice(STARTS),
    "seed": as_int,
    "replications": lambda v, n: as_int(v, n, low=1),
    "delay": as_choice(DELAY_MODES),
    "imbalance": as_bool,
    "per_server": PerServer.from_table,
    "trajectory": Trajectory.from_table,
    "precision": Precision.from_table,
}
#: the run settings that are records, and their types
RECORDS: dict[str, type] = {"per_server": PerServer, "trajectory": Trajectory,
                            "precision": Precision}


def _resolve_trace(arrivals: str, base_dir: Path) -> str:
    """Make a relative ``trace:PATH`` relative to the spec file's folder."""
    law, _, path = arrivals.partition(":")
    if law.strip().lower() != "trace" or not path or Path(path).is_absolute():
        return arrivals
    return f"trace:{base_dir / path}"


def parse_assignments(items: list[str] | None, field_name: str = "set") -> dict[str, str]:
    """``["d=2", "by_delay=true"]`` → ``{"d": "2", "by_delay": "true"}``, each value a
    :class:`~dispatchlab.core.convert.CommandLineText` that the policy's declared parameter
    type parses (any other string is refused as a number)."""
    params: dict[str, str] = {}
    for item in items or []:
        key, sep, value = item.partition("=")
        require(bool(sep) and bool(key.strip()) and bool(value.strip()), field_name,
                f"expected KEY=VALUE (got {item!r})")
        require(key.strip() not in params, f"{field_name}.{key.strip()}",
                f"given twice ({key.strip()}={params.get(key.strip())} and {item.strip()}); "
                "give each parameter once")
        params[key.strip()] = CommandLineText(value.strip())
    return params
