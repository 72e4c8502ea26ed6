"""The policy interface, parameter declarations and the registry.

A policy is one class: it declares its parameters once (validated here, in one
place), says what theory proves about it, and builds a
:class:`~dispatchlab.engine.interface.Kernel` — the compiled functions and initial
memory the slot loop runs. Registering it
(``@register``) makes it appear in the CLI, in ``dispatchlab policies`` and in the
conformance test suite that every policy must pass.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, replace
from typing import Any, ClassVar

import numpy as np

from dispatchlab.engine.interface import Kernel
from dispatchlab.errors import ValidationError, require
from dispatchlab.model.system import System


def _is_integral(value: Any) -> bool:
    if isinstance(value, str):
        return value.strip().lstrip("+-").isdigit()
    if isinstance(value, float):
        return value.is_integer()
    return isinstance(value, int | np.integer) and not isinstance(value, bool)


@dataclass(frozen=True)
class Param:
    """One policy parameter: its name, type, default, allowed range and meaning."""

    name: str
    kind: type
    default: Any
    doc: str
    choices: tuple[Any, ...] = ()
    low: float | None = None
    high: float | None = None
    low_open: bool = False

    def convert(self, value: Any, policy: str) -> Any:
        field_name = f"{policy}.{self.name}"
        try:
            if self.kind is bool:
                lowered = str(value).strip().lower()
                require(lowered in ("true", "false", "1", "0", "yes", "no"), field_name,
                        f"expected true or false (got {value!r})")
                converted: Any = lowered in ("true", "1", "yes")
            elif self.kind is int and not _is_integral(value):
                raise ValueError
            else:
                converted = self.kind(value)
        except (TypeError, ValueError):
            raise ValidationError(
                field_name, f"expected {self.kind.__name__} (got {value!r})") from None
        if self.choices:
            require(converted in self.choices, field_name,
                    f"allowed: {', '.join(map(str, self.choices))} (got {converted!r})")
        if self.low is not None:
            ok = converted > self.low if self.low_open else converted >= self.low
            require(ok, field_name, f"must be {'>' if self.low_open else '≥'} {self.low:g} "
                    f"(got {converted!r})")
        if self.high is not None:
            require(converted <= self.high, field_name,
                    f"must be ≤ {self.high:g} (got {converted!r})")
        return converted

    def describe(self) -> str:
        allowed = f" in {{{', '.join(map(str, self.choices))}}}" if self.choices else ""
        return f"{self.name}={self.default!r}{allowed}: {self.doc}"


class Policy:
    """Base class of every dispatching policy.

    Subclasses set ``name``, ``summary`` (what it does), ``theory`` (what the papers
    prove about it), ``parameters`` and, when they accumulate their own measures,
    ``diagnostics`` (names of the entries of the ``diag`` array); and implement
    :meth:`kernel`.
    """

    name: ClassVar[str]
    summary: ClassVar[str]
    theory: ClassVar[str] = ""
    parameters: ClassVar[tuple[Param, ...]] = ()
    diagnostics: ClassVar[tuple[str, ...]] = ()

    def __init__(self, **params: Any) -> None:
        declared = {p.name: p for p in self.parameters}
        unknown = sorted(set(params) - set(declared))
        if unknown:
            allowed = ", ".join(declared) or "none"
            raise ValidationError(
                f"{self.name}.{unknown[0]}", f"unknown parameter; {self.name} takes: {allowed}")
        self.params: dict[str, Any] = {
            p.name: p.convert(params[p.name], self.name) if p.name in params else p.default
            for p in self.parameters
        }
        self.validate_params()

    def validate_params(self) -> None:
        """Check relations between parameters (override when there are any)."""

    def check_system(self, system: System) -> None:
        """Check that the policy can run on ``system`` (e.g. d ≤ N); override as needed."""

    def kernel(self, system: System) -> Kernel:
        raise NotImplementedError

    def summarize(self, diag: np.ndarray, measured_slots: int, system: System) -> dict[str, float]:
        """Turn the accumulated ``diag`` array into named metrics (default: per-slot means)."""
        slots = max(measured_slots, 1)
        return {name: float(diag[i]) / slots for i, name in enumerate(self.diagnostics)}

    def __getattr__(self, item: str) -> Any:
        params = self.__dict__.get("params")
        if params is not None and item in params:
            return params[item]
        raise AttributeError(item)

    def __repr__(self) -> str:
        args = ", ".join(f"{k}={v!r}" for k, v in self.params.items())
        return f"{self.name}({args})"

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Policy) and (self.name, self.params) == (other.name, other.params)

    def __hash__(self) -> int:
        return hash((self.name, tuple(sorted(self.params.items()))))


@dataclass(frozen=True)
class Preset:
    """A registered name for a policy class with some parameters fixed (they define the
    preset and cannot be overridden) and some defaults changed (they can)."""

    name: str
    base: type[Policy]
    fixed: dict[str, Any]
    defaults: dict[str, Any]
    summary: str
    theory: str

    def make(self, params: dict[str, Any]) -> Policy:
        clash = sorted(set(params) & set(self.fixed))
        if clash:
            raise ValidationError(
                f"{self.name}.{clash[0]}", f"the preset fixes {clash[0]} = "
                f"{self.fixed[clash[0]]!r}; use policy {self.base.name!r} to choose it")
        return self.base(**{**self.defaults, **params, **self.fixed})

    def free_parameters(self) -> tuple[Param, ...]:
        return tuple(replace(p, default=self.defaults.get(p.name, p.default))
                     for p in self.base.parameters if p.name not in self.fixed)


_REGISTRY: dict[str, type[Policy] | Preset] = {}


def register(cls: type[Policy]) -> type[Policy]:
    """Class decorator: make a policy available by its ``name``."""
    require(cls.name not in _REGISTRY, "policy", f"{cls.name!r} is registered twice")
    _REGISTRY[cls.name] = cls
    return cls


def register_preset(name: str, base: type[Policy], summary: str, theory: str = "",
                    defaults: dict[str, Any] | None = None, **fixed: Any) -> None:
    """Register ``name`` as ``base`` with ``fixed`` parameters (a user may not override
    them) and changed ``defaults`` (a user may)."""
    require(name not in _REGISTRY, "policy", f"{name!r} is registered twice")
    _REGISTRY[name] = Preset(name, base, fixed, defaults or {}, summary, theory or base.theory)


def policy_names() -> list[str]:
    _load_builtin_policies()
    return list(_REGISTRY)


def policy_entry(name: str) -> type[Policy] | Preset:
    _load_builtin_policies()
    key = name.strip().lower()
    if key not in _REGISTRY:
        raise ValidationError("policy", f"unknown policy {name!r}; allowed: "
                              + ", ".join(_REGISTRY))
    return _REGISTRY[key]


def make_policy(name: str, **params: Any) -> Policy:
    """Create the registered policy ``name`` with ``params`` (validated)."""
    entry = policy_entry(name)
    if isinstance(entry, Preset):
        return entry.make(params)
    return entry(**params)


def catalog() -> Iterable[tuple[str, str, str, tuple[Param, ...]]]:
    """(name, summary, theory, parameters) for every registered policy and preset."""
    _load_builtin_policies()
    for name, entry in _REGISTRY.items():
        if isinstance(entry, Preset):
            yield name, entry.summary, entry.theory, entry.free_parameters()
        else:
            yield name, entry.summary, entry.theory, entry.parameters


def _load_builtin_policies() -> None:
    import dispatchlab.policies  # noqa: F401  (registers the built-in policies)
