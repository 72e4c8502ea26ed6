"""Experiment specs: a validated grid of points, serialisable to JSON and readable from TOML.

An experiment is the grid

    systems × policies × (loads ρ | epsilons ε | betas β) × replications

with a slot budget (a number, or a :class:`SlotsRule` such as "c/ε² slots" for
heavy-traffic sweeps), a warm-up, a root seed and the figures to draw. Each cell of
the grid is a :class:`Point`; a point's seed is derived from a hash of its identity
and the root seed, never from its position, so a point gives the same numbers
whatever grid it sits in, whatever executor runs it and in whatever order.

The systems and policies are the run spec's :class:`~dispatchlab.specs.run.SystemSpec` and
:class:`~dispatchlab.specs.run.PolicySpec` (one model and one converter for ``dispatchlab
run`` and for sweeps: any system field, dispatcher weights included, can differ between
the systems of a grid); the figures are :mod:`dispatchlab.specs.figure`. A sweep file's
``[[families]]`` (:class:`~dispatchlab.specs.family.SystemFamily`: server classes in
fixed shares at several sizes N) expand into one system per N, so that a grid sweeps
the load, ε or the Halfin–Whitt β (ε = β·μ_Σ/√N) at every N.

Everything here is plain data (frozen dataclasses). ``ExperimentSpec.to_dict()`` /
``ExperimentSpec.from_dict()`` round-trip through JSON (what the store keeps), and
``ExperimentSpec.from_toml(path)`` reads the TOML form of ``examples/sweep.toml``.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field, fields, replace
from pathlib import Path
from typing import Any

import numpy as np

from dispatchlab.core.convert import as_float, as_table, check_keys
from dispatchlab.core.documents import loads_json, read_toml
from dispatchlab.core.errors import INTEGER_LIMIT, require
from dispatchlab.model.system import System
from dispatchlab.simulation.measures import refuse_renamed
from dispatchlab.simulation.plan import DEFAULT_SLOTS, plan_run
from dispatchlab.specs.family import SystemFamily, family_systems
from dispatchlab.specs.figure import JOBS_WAITING, SERVERS, FigureSpec
from dispatchlab.specs.run import PolicySpec, SystemSpec

SLOTS_RULE_PER = ("epsilon", "load")
SIMULATE_OPTIONS = ("warmup_method", "estimator", "start", "delay", "imbalance", "bound",
                    "replications")
MIN_SLOTS = 100


def stored_options(options: Mapping[str, Any]) -> dict[str, Any]:
    """A stored point's or grid's options in today's names: before the measurement
    vocabulary (:mod:`dispatchlab.simulation.measures`) ``detail`` meant ``imbalance`` and
    ``track_delay = false`` meant ``delay = "off"`` (``true``: the default)."""
    current = dict(options)
    if "detail" in current:
        current["imbalance"] = current.pop("detail")
    if "track_delay" in current and not current.pop("track_delay"):
        current["delay"] = "off"
    return current


def identity_options(options: Mapping[str, Any]) -> dict[str, Any]:
    """The options as a point's key and seed spell them: in the names they had when the
    committed stores were made (see :func:`stored_options`), so that every stored point
    keeps its key and its numbers."""
    spelled = dict(options)
    if "imbalance" in spelled:
        spelled["detail"] = spelled.pop("imbalance")
    if spelled.get("delay") == "off":
        del spelled["delay"]
        spelled["track_delay"] = False
    return dict(sorted(spelled.items()))


def _integer(value: Any) -> bool:
    """An int that is not a bool (``seed = true`` in a TOML file is not seed 1)."""
    return isinstance(value, int | np.integer) and not isinstance(value, bool)


def check_name(name: Any, field: str = "name") -> str:
    """An experiment's name: it names the store's rows and the report's folder, so it is
    printable text, not blank, without ``/`` or ``\\``, and not ``.`` or ``..``."""
    require(isinstance(name, str), field, f"expected a string (got {name!r})")
    bad = next((c for c in name if c in "/\\" or not c.isprintable()), None)
    require(bool(name.strip()) and bad is None and name.strip() not in (".", ".."), field,
            "an experiment name is printable text without / or \\ (it names the report's "
            f"folder), not blank, . or ..; e.g. my-sweep (got {name!r})")
    return name


def _canonical_json(value: Any) -> str:
    return json.dumps(value, sort_keys=True, separators=(",", ":"), allow_nan=False)


def identity_key(identity: Mapping[str, Any], root_seed: int) -> str:
    """A grid point's key in the store: the hex SHA-256 of its identity and root seed."""
    text = _canonical_json({"identity": identity, "root_seed": root_seed})
    return hashlib.sha256(text.encode()).hexdigest()


def identity_seed(identity: Mapping[str, Any], root_seed: int, bits: int) -> int:
    """A grid point's seed: SeedSequence(entropy=[root seed, 128 bits of
    sha256(identity)]) → a ``bits``-bit integer (the same wherever the point sits)."""
    digest = hashlib.sha256(_canonical_json(identity).encode()).digest()
    sequence = np.random.SeedSequence(
        entropy=[int(root_seed), int.from_bytes(digest[:16], "little")])
    return int(sequence.generate_state(1, np.uint64)[0] >> np.uint64(64 - bits))


# -- per-point slot budgets --------------------------------------------------------------------


@dataclass(frozen=True)
class SlotsRule:
    """A slot budget that depends on the point: ``coefficient / x**power``, clipped.

    With ``per="epsilon"``, x = ε (heavy traffic: ``SlotsRule(2e4, power=2)`` gives
    2·10⁴/ε² slots); with ``per="load"``, x = 1 − ρ. The resolved number is stored
    with each point, so the store never depends on the rule.
    """

    coefficient: float
    power: float = 2.0
    per: str = "epsilon"
    minimum: int = 10_000
    maximum: int = 10**9

    def resolve(self, epsilon: float, load: float) -> int:
        x = epsilon if self.per == "epsilon" else 1.0 - load
        value = self.coefficient / x**self.power
        return int(min(max(round(value), self.minimum), self.maximum))

    def scaled(self, factor: float) -> SlotsRule:
        return replace(self, coefficient=self.coefficient * factor,
                       minimum=max(MIN_SLOTS, int(self.minimum * factor)),
                       maximum=max(MIN_SLOTS, int(self.maximum * factor)))

    def validate(self, name: str) -> None:
        require(self.per in SLOTS_RULE_PER, f"{name}.per",
                f"allowed: {', '.join(SLOTS_RULE_PER)} (got {self.per!r})")
        require(as_float(self.coefficient, f"{name}.coefficient") > 0,
                f"{name}.coefficient", f"must be > 0 (got {self.coefficient!r})")
        as_float(self.power, f"{name}.power")
        require(isinstance(self.minimum, int) and self.minimum >= 1, f"{name}.minimum",
                f"must be an integer ≥ 1 (got {self.minimum!r})")
        require(isinstance(self.maximum, int) and self.maximum >= self.minimum,
                f"{name}.maximum", f"must be an integer ≥ minimum (got {self.maximum!r})")

    def to_dict(self) -> dict[str, Any]:
        return {"rule": "power", **{f.name: getattr(self, f.name) for f in fields(self)}}

    @classmethod
    def from_dict(cls, data: Mapping[str, Any], name: str) -> SlotsRule:
        data = {k: v for k, v in data.items() if k != "rule"}
        check_keys(data, name, tuple(f.name for f in fields(cls)))
        return cls(**data)


SlotsLike = int | SlotsRule
#: warm-up: ``None`` (simulate's default, 10 %), a fraction in [0, 1) of the point's slots,
#: an absolute number of slots (int), or a :class:`SlotsRule`
WarmupLike = int | float | SlotsRule | None


# -- points ------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Point:
    """One cell of the grid: (system, policy, load|ε, replication), with its budget."""

    experiment: str
    system: SystemSpec
    policy: PolicySpec
    axis: str
    value: float
    replication: int
    slots: int
    warmup: int | None
    root_seed: int
    options: Mapping[str, Any] = field(default_factory=dict)

    def identity(self) -> dict[str, Any]:
        """Everything that determines the numbers (labels and the experiment name do not)."""
        return {
            "system": self.system.identity(), "policy": self.policy.identity(),
            "axis": self.axis, "value": float(self.value), "replication": self.replication,
            "slots": self.slots, "warmup": self.warmup,
            "options": identity_options(self.options),
        }

    @property
    def key(self) -> str:
        """A stable hex digest of the identity and root seed: the point's key in the store."""
        return identity_key(self.identity(), self.root_seed)

    @property
    def seed(self) -> int:
        """SeedSequence(entropy=[root seed, 128 bits of sha256(identity)]) → a 63-bit seed."""
        return identity_seed(self.identity(), self.root_seed, bits=63)

    def build_system(self) -> System:
        return self.system.build(**{self.axis: self.value})

    def to_dict(self) -> dict[str, Any]:
        return {
            "experiment": self.experiment, "system": self.system.to_dict(),
            "policy": self.policy.to_dict(), "axis": self.axis, "value": float(self.value),
            "replication": self.replication, "slots": self.slots, "warmup": self.warmup,
            "root_seed": self.root_seed, "options": dict(self.options),
            "seed": self.seed, "key": self.key,
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Point:
        return cls(data["experiment"], SystemSpec.from_dict(data["system"]),
                   PolicySpec.from_dict(data["policy"]), data["axis"], float(data["value"]),
                   int(data["replication"]), int(data["slots"]), data["warmup"],
                   int(data["root_seed"]), stored_options(data.get("options") or {}))


# -- the experiment ----------------------------------------------------------------------------


@dataclass(frozen=True)
class ExperimentSpec:
    """A grid of simulations, its slot budget and its figures.

    Attributes:
        name: identifies the experiment in the store and the output directory.
        systems / policies: the grid's systems and policies.
        loads: the loads ρ (give one of loads, epsilons, betas).
        epsilons: the heavy-traffic parameters ε = μ_Σ − λ_Σ.
        betas: the Halfin–Whitt parameters β: ε = β·μ_Σ/√N at each system's N.
        replications: independent replications per (system, policy, x); each is a point.
        slots: slots per point: an integer or a :class:`SlotsRule`.
        warmup: see :data:`WarmupLike`.
        seed: the root seed.
        options: extra keyword arguments of ``simulate`` (warmup_method, estimator,
            start, delay, imbalance, bound).
        figures: what ``dispatchlab report`` draws.
        title / description / paper: shown in the report.
        quick_scale: factor applied to the slots by ``--quick``.
    """

    name: str
    systems: tuple[SystemSpec, ...]
    policies: tuple[PolicySpec, ...]
    loads: tuple[float, ...] = ()
    epsilons: tuple[float, ...] = ()
    betas: tuple[float, ...] = ()
    replications: int = 1
    slots: SlotsLike = DEFAULT_SLOTS
    warmup: WarmupLike = None
    seed: int = 0
    options: Mapping[str, Any] = field(default_factory=dict)
    figures: tuple[FigureSpec, ...] = ()
    title: str = ""
    description: str = ""
    paper: str = ""
    quick_scale: float = 0.02

    def __post_init__(self) -> None:
        for name in ("systems", "policies", "loads", "epsilons", "betas", "figures"):
            object.__setattr__(self, name, tuple(getattr(self, name)))

    # -- the grid -------------------------------------------------------------------------

    @property
    def axis(self) -> str:
        return "beta" if self.betas else "epsilon" if self.epsilons else "load"

    @property
    def values(self) -> tuple[float, ...]:
        return self.betas or self.epsilons or self.loads

    def points(self) -> list[Point]:
        """Every point of the grid (validates first)."""
        self.validate()
        return list(self._points())

    def _points(self) -> Iterator[Point]:
        for system in self.systems:
            for policy in self.policies:
                for value in self.values:
                    built = system.build(**{self.axis: value})
                    slots = self._resolve_slots(built)
                    warmup = self._resolve_warmup(built, slots)
                    for replication in range(self.replications):
                        yield Point(self.name, system, policy, self.axis, float(value),
                                    replication, slots, warmup, self.seed, dict(self.options))

    def _resolve_slots(self, system: System) -> int:
        if isinstance(self.slots, SlotsRule):
            return self.slots.resolve(system.epsilon, system.load)
        return int(self.slots)

    def _resolve_warmup(self, system: System, slots: int) -> int | None:
        if self.warmup is None:
            return None
        if isinstance(self.warmup, SlotsRule):
            return min(self.warmup.resolve(system.epsilon, system.load), slots - 1)
        if isinstance(self.warmup, float):
            return int(slots * self.warmup)
        return int(self.warmup)

    # -- validation -----------------------------------------------------------------------

    def validate(self) -> None:
        """Raise :class:`ValidationError` for anything that would fail later.

        Checks every policy name and parameter on every system, every load/ε, the slot
        budget and the figures, so a malformed spec fails before any point runs.
        """
        check_name(self.name, "name")
        require(len(self.systems) > 0, "systems", "the grid is empty: give at least one system")
        require(len(self.policies) > 0, "policies",
                "the grid is empty: give at least one policy")
        require(sum(map(bool, (self.loads, self.epsilons, self.betas))) <= 1, "loads",
                "give one of loads, epsilons and betas")
        require(len(self.values) > 0, "loads",
                "the grid is empty: give at least one load, epsilon or beta")
        require(_integer(self.replications) and self.replications >= 1,
                "replications", f"must be an integer ≥ 1 (got {self.replications!r})")
        require(_integer(self.seed) and 0 <= self.seed <= INTEGER_LIMIT, "seed",
                f"must be an integer in [0, 2^62] (got {self.seed!r})")
        if isinstance(self.slots, SlotsRule):
            self.slots.validate("slots")
        else:
            require(isinstance(self.slots, int | np.integer) and not isinstance(self.slots, bool)
                    and self.slots >= MIN_SLOTS, "slots",
                    f"must be an integer ≥ {MIN_SLOTS} or a slots rule (got {self.slots!r})")
        self._validate_warmup()
        refuse_renamed(self.options, "options.")
        unknown = sorted(set(self.options) - set(SIMULATE_OPTIONS))
        require(not unknown, "options",
                f"unknown {unknown}; allowed: {', '.join(SIMULATE_OPTIONS)}")
        for i, value in enumerate(self.values):
            as_float(value, f"{self.axis}s[{i}]")
        require(len(set(self.values)) == len(self.values), f"{self.axis}s",
                "values must be distinct")
        labels = [p.display for p in self.policies]
        require(len(set(labels)) == len(labels), "policies",
                f"policy labels must be distinct (got {labels})")
        identities = [_canonical_json(p.identity()) for p in self.policies]
        require(len(set(identities)) == len(identities), "policies",
                "the same policy and parameters appear twice")
        names = [s.name for s in self.systems]
        require(len(set(names)) == len(names), "systems",
                f"system labels must be distinct (got {names})")
        for i, system in enumerate(self.systems):
            require(isinstance(system, SystemSpec), f"systems[{i}]", "must be a SystemSpec")
            for value in self.values:
                built = system.build(**{self.axis: value})
                slots = self._resolve_slots(built)
                warmup = self._resolve_warmup(built, slots)
                require(warmup is None or 0 <= warmup < slots, "warmup",
                        f"must be in [0, slots) at every point (got {warmup} with {slots} slots)")
            for policy in self.policies:
                policy.make().check_system(built)
            # the options' values, by simulate's own checks (before any point runs: a bad
            # one used to fail in the first point, after the sweep had started)
            plan_run(built, "rand", slots=slots, seed=self.seed, **dict(self.options))
        for i, figure in enumerate(self.figures):
            figure.validate(f"figures[{i}]")
            require(figure.x in (self.axis, SERVERS), f"figures[{i}].x",
                    f"this experiment sweeps {self.axis}, not {figure.x} (or draw against "
                    f"{SERVERS}: N)")
            if figure.x == SERVERS:
                sizes = {system.build(**{self.axis: self.values[0]}).n_servers
                         for system in self.systems} if self.values else set()
                require(len(sizes) >= 2, f"figures[{i}].x", "a figure against servers N "
                        "needs systems of at least two sizes (a [[families]] entry with "
                        f"several sizes; got N = {sorted(sizes)})")
            if figure.y == JOBS_WAITING:
                self._require_one_bernoulli_rate(f"figures[{i}].y")
        figure_names = [f.name for f in self.figures]
        require(len(set(figure_names)) == len(figure_names), "figures",
                "figure names must be distinct")

    def _require_one_bernoulli_rate(self, field_name: str) -> None:
        """The jobs waiting per server is read from E[ΣQ] by rate balance, which needs
        Bernoulli service of one rate μ (docs/statistics.md#jobs-waiting)."""
        for system in self.systems:
            built = system.build(**{self.axis: self.values[0]})
            require(built.service.kind == "bernoulli" and min(built.rates) == max(built.rates),
                    field_name, f"{JOBS_WAITING} needs Bernoulli service of one rate μ on "
                    "every system (rate balance gives it there alone: docs/statistics.md#"
                    f"jobs-waiting); {system.name} has {built.service.kind} service at "
                    f"rates {min(built.rates):g} … {max(built.rates):g}")

    def _validate_warmup(self) -> None:
        warmup = self.warmup
        if warmup is None:
            return
        if isinstance(warmup, SlotsRule):
            warmup.validate("warmup")
        elif isinstance(warmup, float):
            require(0 <= warmup < 1, "warmup",
                    f"a fraction must be in [0, 1) (got {warmup!r})")
        else:
            require(isinstance(warmup, int) and not isinstance(warmup, bool) and warmup >= 0,
                    "warmup", f"must be slots ≥ 0, a fraction in [0, 1) or a rule "
                    f"(got {warmup!r})")

    # -- variants -------------------------------------------------------------------------

    def scaled(self, factor: float) -> ExperimentSpec:
        """The same grid with the slot budget (and absolute warm-up) multiplied by ``factor``."""
        require(as_float(factor, "scale") > 0, "scale", f"must be > 0 (got {factor!r})")
        if isinstance(self.slots, SlotsRule):
            slots: SlotsLike = self.slots.scaled(factor)
        else:
            slots = max(MIN_SLOTS, int(round(self.slots * factor)))
        warmup = self.warmup
        if isinstance(warmup, SlotsRule):
            warmup = warmup.scaled(factor)
        elif isinstance(warmup, int) and not isinstance(warmup, bool):
            warmup = int(warmup * factor)
        return replace(self, slots=slots, warmup=warmup)

    def with_slots(self, slots: int) -> ExperimentSpec:
        """The same grid with ``slots`` slots per point (warm-up 10 % unless a fraction)."""
        warmup = self.warmup if isinstance(self.warmup, float) else None
        return replace(self, slots=slots, warmup=warmup)

    # -- serialisation --------------------------------------------------------------------

    def to_dict(self) -> dict[str, Any]:
        def budget(value: Any) -> Any:
            return value.to_dict() if isinstance(value, SlotsRule) else value

        data = {
            "name": self.name, "title": self.title, "description": self.description,
            "paper": self.paper,
            "systems": [s.to_dict() for s in self.systems],
            "policies": [p.to_dict() for p in self.policies],
            "loads": list(self.loads), "epsilons": list(self.epsilons),
            "replications": self.replications, "slots": budget(self.slots),
            "warmup": budget(self.warmup), "seed": self.seed, "options": dict(self.options),
            "figures": [f.to_dict() for f in self.figures], "quick_scale": self.quick_scale,
        }
        if self.betas:  # (absent otherwise: the stored specs of earlier grids stay as they were)
            data["betas"] = list(self.betas)
        return data

    def to_json(self) -> str:
        return json.dumps(self.to_dict(), sort_keys=True, indent=1)

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> ExperimentSpec:
        """Build (without validating) from the dict form of ``to_dict`` or a TOML file."""
        data = as_table(data, "experiment")
        check_keys(data, "", (*(f.name for f in fields(cls)), "families"))
        require("name" in data, "name", "the experiment needs a name")

        def listed(key: str) -> list[Any]:
            value = data.get(key, [])
            require(isinstance(value, list | tuple), key, f"must be a list (got {value!r})")
            return list(value)

        def budget(key: str) -> Any:
            value = data.get(key)
            if isinstance(value, Mapping):
                return SlotsRule.from_dict(value, key)
            return value

        systems = [SystemSpec.from_mapping(s, f"systems[{i}]")
                   for i, s in enumerate(listed("systems"))]
        for i, table in enumerate(listed("families")):
            systems += family_systems(SystemFamily.from_mapping(table, f"families[{i}]"),
                                      f"families[{i}]")
        policies = [PolicySpec.from_mapping(p, f"policies[{i}]")
                    for i, p in enumerate(listed("policies"))]
        return cls(
            name=data["name"], systems=tuple(systems), policies=tuple(policies),
            loads=tuple(listed("loads")), epsilons=tuple(listed("epsilons")),
            betas=tuple(listed("betas")), replications=data.get("replications", 1),
            slots=budget("slots") if "slots" in data else DEFAULT_SLOTS,
            warmup=budget("warmup"), seed=data.get("seed", 0),
            options=dict(data.get("options") or {}),
            figures=tuple(FigureSpec.from_dict(f, f"figures[{i}]")
                          for i, f in enumerate(listed("figures"))),
            title=str(data.get("title", "")), description=str(data.get("description", "")),
            paper=str(data.get("paper", "")), quick_scale=float(data.get("quick_scale", 0.02)),
        )

    @classmethod
    def from_json(cls, text: str, where: str = "the spec's JSON") -> ExperimentSpec:
        """Build (without validating) from ``to_json()``'s text, e.g. a store's copy (whose
        options may have the names of an earlier version: :func:`stored_options`)."""
        spec = cls.from_dict(loads_json(text, "spec", where))
        return replace(spec, options=stored_options(spec.options))

    @classmethod
    def from_toml(cls, path: str | Path) -> ExperimentSpec:
        """Read and validate a TOML sweep file (see ``examples/sweep.toml``)."""
        spec = cls.from_dict(read_toml(path, "spec", "spec file"))
        spec.validate()
        return spec

