"""Run specs: one simulation (system + policy + run settings) from a TOML file or the CLI.

A spec file has three tables, every key optional except ``[policy] name``::

    [system]
    servers = "50x0.1,50x0.5"     # service rates μ_n: COUNTxRATE list or an array of numbers
    dispatchers = 10               # M
    load = 0.95                    # ρ = λ_Σ/μ_Σ; or epsilon = 0.5 (ε = μ_Σ − λ_Σ); not both
    arrivals = "poisson"           # poisson | bernoulli | binomial:K | deterministic | trace:PATH
    service = "bernoulli"          # bernoulli | binomial:K | poisson | geometric | deterministic
    dispatch = "batch"             # batch | per-job: a dispatcher's jobs in a slot go together?
    split = "per-job"              # per-job | batch: how A_Σ(t) is shared among dispatchers
    dispatcher_weights = [...]     # p_m, one per dispatcher (default uniform)
    allow_unstable = false         # accept load ≥ 1

    [policy]
    name = "pod"
    [policy.params]
    d = 2

    [run]
    slots = 1_000_000
    warmup = 100_000               # default 10 % of slots
    warmup_method = "fraction"     # fraction | mser5
    seed = 7
    replications = 1
    track_delay = true

A trace path in a spec file is relative to the file's folder. Without ``load`` and
``epsilon`` (and without a trace) the load is :data:`DEFAULT_LOAD`. Command-line
options override the file through :meth:`RunSpec.with_overrides`.
"""

from __future__ import annotations

import tomllib
from collections.abc import Callable
from dataclasses import dataclass, field, fields, replace
from pathlib import Path
from typing import Any

from dispatchlab.errors import ValidationError, require
from dispatchlab.model.arrivals import parse_arrival_law
from dispatchlab.model.system import System
from dispatchlab.paths import guarded_io, require_readable_file
from dispatchlab.policies import Policy, make_policy
from dispatchlab.result import Result
from dispatchlab.simulate import WARMUP_METHODS, simulate

DEFAULT_SERVERS = "50x0.1,50x0.5"
DEFAULT_DISPATCHERS = 10
DEFAULT_LOAD = 0.9
SPLITS = ("per-job", "batch")
DISPATCH_MODES = ("batch", "per-job")


@dataclass(frozen=True)
class RunSpec:
    """Everything one ``dispatchlab run`` needs; validated when it is used.

    Attributes:
        servers: service rates μ_n, ``"50x0.1,50x0.5"`` or a tuple of floats.
        dispatchers: M, the number of dispatchers.
        load: ρ = λ_Σ/μ_Σ (``None`` when ``epsilon`` sets the rate, or for a trace).
        epsilon: ε = μ_Σ − λ_Σ, the heavy-traffic distance (replaces ``load``).
        arrivals, service: the laws of A_Σ(t) and S_n(t).
        dispatch: ``batch`` or ``per-job`` dispatching granularity.
        split: how arrivals are shared among dispatchers (``per-job`` or ``batch``).
        dispatcher_weights: p_m (empty: uniform).
        allow_unstable: accept λ_Σ ≥ μ_Σ.
        policy, params: the registered policy name and its parameters.
        slots, warmup, warmup_method, seed, replications, track_delay: as in
            :func:`dispatchlab.simulate`.
    """

    servers: str | tuple[float, ...] = DEFAULT_SERVERS
    dispatchers: int = DEFAULT_DISPATCHERS
    load: float | None = None
    epsilon: float | None = None
    arrivals: str = "poisson"
    service: str = "bernoulli"
    dispatch: str = "batch"
    split: str = "per-job"
    dispatcher_weights: tuple[float, ...] = ()
    allow_unstable: bool = False
    policy: str | None = None
    params: dict[str, Any] = field(default_factory=dict)
    slots: int = 1_000_000
    warmup: int | None = None
    warmup_method: str = "fraction"
    seed: int = 0
    replications: int = 1
    track_delay: bool = True

    # -- construction -------------------------------------------------------------------------

    @classmethod
    def from_toml(cls, path: str | Path) -> RunSpec:
        """Read a spec file; any problem raises :class:`ValidationError` naming the field."""
        path = require_readable_file(path, "spec", "spec file")
        try:
            data = tomllib.loads(guarded_io("spec", path, lambda: path.read_text(
                encoding="utf-8"), verb="read"))
        except UnicodeDecodeError:
            raise ValidationError("spec", f"{str(path)!r} is not UTF-8 text") from None
        except tomllib.TOMLDecodeError as error:
            raise ValidationError("spec", f"{str(path)!r} is not valid TOML: {error}") from None
        return cls.from_mapping(data, base_dir=path.parent)

    @classmethod
    def from_mapping(cls, data: dict[str, Any], base_dir: Path | None = None) -> RunSpec:
        """Build a spec from the parsed tables (``system``, ``policy``, ``run``)."""
        _check_keys(data, "", ("system", "policy", "run"))
        values: dict[str, Any] = {}
        for table, schema in _SCHEMA.items():
            section = data.get(table, {})
            require(isinstance(section, dict), table,
                    f"must be a table [{table}] (got {type(section).__name__})")
            _check_keys(section, f"{table}.", tuple(schema))
            for key, (attribute, convert) in schema.items():
                if key in section:
                    values[attribute] = convert(section[key], f"{table}.{key}")
        require("load" not in values or "epsilon" not in values, "system.load",
                "give only one of load and epsilon")
        if base_dir is not None and "arrivals" in values:
            values["arrivals"] = _resolve_trace(values["arrivals"], base_dir)
        return cls(**values)

    def with_overrides(self, **overrides: Any) -> RunSpec:
        """A copy with every override that is not ``None`` applied.

        ``params`` are merged into the spec's (an override wins); giving ``load``
        clears the file's ``epsilon`` and vice versa.
        """
        given = {k: v for k, v in overrides.items() if v is not None}
        unknown = sorted(set(given) - {f.name for f in fields(self)})
        require(not unknown, "spec", f"unknown setting {unknown[:1]}")
        require("load" not in given or "epsilon" not in given, "load",
                "give only one of --load and --epsilon")
        if "load" in given:
            given["epsilon"] = None
        elif "epsilon" in given:
            given["load"] = None
        if "params" in given:
            given["params"] = {**self.params, **given["params"]}
        return replace(self, **given)

    # -- use ----------------------------------------------------------------------------------

    def system(self) -> System:
        """The validated :class:`System` this spec describes."""
        split = _as_choice(SPLITS)(self.split, "split")
        dispatch = _as_choice(DISPATCH_MODES)(self.dispatch, "dispatch")
        is_trace = parse_arrival_law(self.arrivals)[0] == "trace"
        load, epsilon = self.load, self.epsilon
        if is_trace:
            require(load is None and epsilon is None, "load",
                    "a trace fixes its own rate; do not give load or epsilon")
        elif load is None and epsilon is None:
            load = DEFAULT_LOAD
        return System.build(
            self.servers, load=load, epsilon=epsilon, arrivals=self.arrivals,
            service=self.service, dispatchers=self.dispatchers,
            dispatcher_weights=self.dispatcher_weights, split=split.replace("-", "_"),
            dispatch=dispatch, allow_unstable=self.allow_unstable,
        )

    def make_policy(self) -> Policy:
        """The registered policy with its parameters (validated by the policy)."""
        require(bool(self.policy), "policy",
                "no policy given; use --policy NAME or [policy] name = ... in the spec")
        assert self.policy is not None
        return make_policy(self.policy, **self.params)

    def simulate(self) -> Result:
        """Validate everything, then run the simulation."""
        system = self.system()
        policy = self.make_policy()
        return simulate(system, policy, slots=self.slots, warmup=self.warmup, seed=self.seed,
                        replications=self.replications, warmup_method=self.warmup_method,
                        track_delay=self.track_delay)


# -- schema -----------------------------------------------------------------------------------


def _as_int(value: Any, name: str, low: int = 0) -> int:
    require(isinstance(value, int) and not isinstance(value, bool), name,
            f"expected an integer (got {value!r})")
    require(value >= low, name, f"must be ≥ {low} (got {value})")
    return int(value)


def _as_float(value: Any, name: str) -> float:
    require(isinstance(value, int | float) and not isinstance(value, bool), name,
            f"expected a number (got {value!r})")
    return float(value)


def _as_str(value: Any, name: str) -> str:
    require(isinstance(value, str) and bool(value.strip()), name,
            f"expected a non-empty string (got {value!r})")
    return value.strip()


def _as_bool(value: Any, name: str) -> bool:
    require(isinstance(value, bool), name, f"expected true or false (got {value!r})")
    return bool(value)


def _as_servers(value: Any, name: str) -> str | tuple[float, ...]:
    if isinstance(value, str):
        return _as_str(value, name)
    require(isinstance(value, list) and len(value) > 0, name,
            f"expected a string like \"50x0.1,50x0.5\" or an array of rates (got {value!r})")
    return tuple(_as_float(v, name) for v in value)


def _as_weights(value: Any, name: str) -> tuple[float, ...]:
    require(isinstance(value, list), name, f"expected an array of numbers (got {value!r})")
    return tuple(_as_float(v, name) for v in value)


def _as_choice(allowed: tuple[str, ...]) -> Callable[[Any, str], str]:
    def convert(value: Any, name: str) -> str:
        text = _as_str(value, name).lower().replace("_", "-")
        require(text in allowed, name, f"allowed: {', '.join(allowed)} (got {value!r})")
        return text
    return convert


def _as_params(value: Any, name: str) -> dict[str, Any]:
    require(isinstance(value, dict), name,
            f"expected a table [{name}] of parameter = value (got {value!r})")
    return dict(value)


def _as_warmup_method(value: Any, name: str) -> str:
    text = _as_str(value, name).lower()
    require(text in WARMUP_METHODS, name, f"allowed: {', '.join(WARMUP_METHODS)} (got {value!r})")
    return text


_SCHEMA: dict[str, dict[str, tuple[str, Any]]] = {
    "system": {
        "servers": ("servers", _as_servers),
        "dispatchers": ("dispatchers", lambda v, n: _as_int(v, n, low=1)),
        "load": ("load", _as_float),
        "epsilon": ("epsilon", _as_float),
        "arrivals": ("arrivals", _as_str),
        "service": ("service", _as_str),
        "dispatch": ("dispatch", _as_choice(DISPATCH_MODES)),
        "split": ("split", _as_choice(SPLITS)),
        "dispatcher_weights": ("dispatcher_weights", _as_weights),
        "allow_unstable": ("allow_unstable", _as_bool),
    },
    "policy": {
        "name": ("policy", _as_str),
        "params": ("params", _as_params),
    },
    "run": {
        "slots": ("slots", lambda v, n: _as_int(v, n, low=1)),
        "warmup": ("warmup", _as_int),
        "warmup_method": ("warmup_method", _as_warmup_method),
        "seed": ("seed", _as_int),
        "replications": ("replications", lambda v, n: _as_int(v, n, low=1)),
        "track_delay": ("track_delay", _as_bool),
    },
}


def _check_keys(section: dict[str, Any], prefix: str, allowed: tuple[str, ...]) -> None:
    for key in section:
        require(key in allowed, f"{prefix}{key}",
                f"unknown key; allowed here: {', '.join(allowed)}")


def _resolve_trace(arrivals: str, base_dir: Path) -> str:
    """Make a relative ``trace:PATH`` relative to the spec file's folder."""
    law, _, path = arrivals.partition(":")
    if law.strip().lower() != "trace" or not path or Path(path).is_absolute():
        return arrivals
    return f"trace:{base_dir / path}"


def parse_assignments(items: list[str] | None, field_name: str = "set") -> dict[str, str]:
    """``["d=2", "by_delay=true"]`` → ``{"d": "2", "by_delay": "true"}`` (values converted
    later by the policy's declared parameter types)."""
    params: dict[str, str] = {}
    for item in items or []:
        key, sep, value = item.partition("=")
        require(bool(sep) and bool(key.strip()) and bool(value.strip()), field_name,
                f"expected KEY=VALUE (got {item!r})")
        require(key.strip() not in params, f"{field_name}.{key.strip()}",
                f"given twice ({key.strip()}={params.get(key.strip())} and {item.strip()}); "
                "give each parameter once")
        params[key.strip()] = value.strip()
    return params
