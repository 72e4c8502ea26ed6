"""The policy interface, parameter declarations and the registry.

A policy is one class: it declares its parameters once (validated here, in one
place), says what theory proves about it, and builds a
:class:`~dispatchlab.engine.interface.Kernel` — the compiled functions and initial
memory the slot loop runs. Registering it
(``@register``) makes it appear in the CLI, in ``dispatchlab policies`` and in the
conformance test suite that every policy must pass.
"""

from __future__ import annotations

import inspect
import math
import sys
from collections.abc import Iterable
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any, ClassVar

import numpy as np

from dispatchlab.core.convert import CommandLineText
from dispatchlab.core.errors import ValidationError, require
from dispatchlab.engine.interface import Kernel
from dispatchlab.model.system import System

if TYPE_CHECKING:
    from dispatchlab.solvers.fluid import FluidRule
    from dispatchlab.theory.stability import DispatchFractions


#: the largest integer parameter (a margin below 2^63: the kernels hold them as int64 and
#: may add to them)
INT_PARAM_LIMIT = 2**62


def _kind_name(value: Any) -> str:
    return type(value).__name__


@dataclass(frozen=True)
class Param:
    """One policy parameter: its name, type, default, allowed range and meaning.

    :meth:`convert` is the one check every value passes, from Python, a spec file or the
    command line. Only text typed on the command line (:class:`~dispatchlab.core.convert.
    CommandLineText`, what ``--set d=2`` gives) is parsed by the declared type; any other
    value must already have it: a bool is not an int, a str is not a number, 2.0 is not
    an int (nothing is converted silently). Numbers must be finite and integers at most
    :data:`INT_PARAM_LIMIT`.
    """

    name: str
    kind: type
    default: Any
    doc: str
    choices: tuple[Any, ...] = ()
    low: float | None = None
    high: float | None = None
    low_open: bool = False
    #: (other parameter, its values): this one does something only when that parameter
    #: takes one of those values (``pod_d`` only with ``strategy="pod"``); None: always
    only_with: tuple[str, tuple[Any, ...]] | None = None

    def applies(self, fixed: dict[str, Any]) -> bool:
        """Whether this parameter can do anything when the parameters ``fixed`` (those a
        preset fixes) have those values."""
        if self.only_with is None:
            return True
        other, values = self.only_with
        return other not in fixed or fixed[other] in values

    def convert(self, value: Any, policy: str) -> Any:
        """``value`` checked against the declaration (ValidationError ``POLICY.NAME``)."""
        field_name = f"{policy}.{self.name}"
        if isinstance(value, CommandLineText):
            converted = self._parse(str(value), field_name)
        else:
            converted = self._check_type(value, field_name)
        if self.choices:
            require(converted in self.choices, field_name,
                    f"allowed: {', '.join(map(str, self.choices))} (got {converted!r})")
        if self.low is not None:
            ok = converted > self.low if self.low_open else converted >= self.low
            require(ok, field_name, f"must be {'>' if self.low_open else '≥'} "
                    f"{_bound(self.low)} (got {converted!r})")
        high = self.high if self.kind is not int else min(self.high if self.high is not None
                                                          else INT_PARAM_LIMIT, INT_PARAM_LIMIT)
        if high is not None:
            require(converted <= high, field_name, f"must be ≤ {_bound(high)} (got {converted!r})")
        return converted

    def _check_type(self, value: Any, field_name: str) -> Any:
        """A Python value of the declared type, unchanged but for numpy scalars."""
        kind = self.kind.__name__
        if self.kind is bool:
            require(isinstance(value, bool | np.bool_), field_name,
                    f"expected True or False (got {value!r}, a {_kind_name(value)})")
            return bool(value)
        if self.kind is int:
            require(isinstance(value, int | np.integer) and not isinstance(value, bool),
                    field_name, f"expected an integer (got {value!r}, a {_kind_name(value)})")
            return int(value)
        if self.kind is float:
            require(isinstance(value, int | float | np.integer | np.floating)
                    and not isinstance(value, bool), field_name,
                    f"expected a number (got {value!r}, a {_kind_name(value)})")
            require(math.isfinite(float(value)), field_name,
                    f"expected a finite number (got {value!r})")
            return float(value)
        require(isinstance(value, self.kind), field_name,
                f"expected {kind} (got {value!r}, a {_kind_name(value)})")
        return value

    def _parse(self, text: str, field_name: str) -> Any:
        """Text from the command line, parsed by the declared type."""
        lowered = text.strip().lower()
        if self.kind is bool:
            require(lowered in ("true", "false", "1", "0", "yes", "no"), field_name,
                    f"expected true or false (got {text!r})")
            return lowered in ("true", "1", "yes")
        if self.kind is int:
            require(lowered.lstrip("+-").isdigit(), field_name,
                    f"expected an integer (got {text!r})")
            return int(lowered)
        if self.kind is float:
            try:
                number = float(lowered)
            except ValueError:
                raise ValidationError(field_name, f"expected a number (got {text!r})") from None
            require(math.isfinite(number), field_name,
                    f"expected a finite number (got {text!r})")
            return number
        return self._check_type(text, field_name)

    def describe(self) -> str:
        allowed = f" in {{{', '.join(map(str, self.choices))}}}" if self.choices else ""
        return f"{self.name}={self.default!r}{allowed}: {self.doc}"


def _bound(value: float) -> str:
    """A declared bound as written: ``1``, ``0.5``, ``1,099,511,627,776``."""
    if float(value).is_integer() and abs(value) >= 10_000:
        return f"{int(value):,}"
    return f"{value:g}"


class FrozenParams(dict):
    """A policy's validated parameters, read only once the policy is built."""

    def _refuse(self, *args: Any, **kwargs: Any) -> None:
        raise TypeError("a policy's parameters are frozen; use policy.with_params(...)")

    __setitem__ = __delitem__ = clear = pop = popitem = setdefault = update = _refuse  # type: ignore[assignment]

    def __reduce__(self) -> tuple[Any, ...]:
        return (FrozenParams, (dict(self),))


class _FrozenAfterInit(type):
    """Freezes a policy when its constructor (the whole subclass chain) has finished."""

    def __call__(cls, *args: Any, **kwargs: Any) -> Any:
        policy = super().__call__(*args, **kwargs)
        policy._freeze()
        return policy


def _init_signature(cls: type) -> inspect.Signature:
    """Keyword-only parameters generated from the declared ``Param``s (plus any explicit
    keyword of the subclass's ``__init__``, e.g. LED's ``strategy_params``)."""
    explicit = [p for p in inspect.signature(cls.__init__).parameters.values()
                if p.name != "self" and p.kind not in (p.VAR_KEYWORD, p.VAR_POSITIONAL)]
    declared = {p.name: p for p in cls.parameters}
    out = [inspect.Parameter(p.name, inspect.Parameter.KEYWORD_ONLY,
                             default=declared[p.name].default if p.name in declared
                             else p.default, annotation=p.annotation) for p in explicit]
    named = {p.name for p in out}
    out += [inspect.Parameter(p.name, inspect.Parameter.KEYWORD_ONLY, default=p.default,
                              annotation=p.kind) for p in cls.parameters if p.name not in named]
    return inspect.Signature(out)


#: how the words of a registered name are written in a preset's public name (others:
#: Capitalized); a class's public name is its own (``public_name``)
WORDS = {
    "l": "L", "jsq": "JSQ", "jba": "JBA", "jsed": "JSED", "pod": "Pod", "pi": "Pi",
    "rr": "RR", "lsq": "LSQ", "kslq": "KSLQ", "wrand": "WRand", "jbt": "JBT", "jiq": "JIQ",
}


def preset_public_name(name: str) -> str:
    """``l-jba-pull`` → ``LJBAPull``; ``pi-balanced-rr`` → ``PiBalancedRR``."""
    return "".join(WORDS.get(word, word.capitalize()) for word in name.split("-"))


class Policy(metaclass=_FrozenAfterInit):
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
    #: the class's name in ``dispatchlab.policies`` (``LEDPolicy`` → ``LED``)
    public_name: ClassVar[str] = "Policy"
    #: a member of framework Π (docs/model.md#pi-members) whose :meth:`dispatch_fractions`
    #: are not implemented
    pi_member_without_fractions: ClassVar[bool] = False

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        cls.public_name = cls.__name__.removesuffix("Policy") or cls.__name__
        cls.__signature__ = _init_signature(cls)  # what inspect.signature and help() show

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
        #: the parameters given when it was made (a preset's: those its user gave), for the
        #: label a sweep shows (``pod(d=2)``); not part of equality
        self.__dict__["_given"] = tuple(p.name for p in self.parameters if p.name in params)
        self.validate_params()

    @classmethod
    def parameters_for(cls, fixed: dict[str, Any]) -> tuple[Param, ...]:
        """The parameters that can do something when those in ``fixed`` (what a preset
        fixes) have those values: the Policies page lists these for a preset. By default
        those whose ``only_with`` allows it; override when the relation is richer."""
        return tuple(p for p in cls.parameters if p.applies(fixed))

    def validate_params(self) -> None:
        """Check relations between parameters (override when there are any)."""

    def check_system(self, system: System) -> None:
        """Check that the policy can run on ``system`` (e.g. d ≤ N); override as needed."""

    def kernel(self, system: System) -> Kernel:
        raise NotImplementedError

    def fluid_rule(self, system: System) -> FluidRule | None:
        """How the jobs of one slot spread over the servers of ``system``'s family as N → ∞
        (the fluid limit, ``dispatchlab.fluid``, docs/fluid.md); None (the default) when
        none is derived."""
        return None

    def dispatch_fractions(self, mu: np.ndarray) -> DispatchFractions | None:
        """a_l(η), the induced dispatch fractions of docs/model.md#pi-fractions on rates μ, for a
        member of framework Π; None (the default) when the Π stability theory does not apply."""
        return None

    def summarize(self, diag: np.ndarray, measured_slots: int, system: System) -> dict[str, float]:
        """Turn the accumulated ``diag`` array into named metrics (default: per-slot means)."""
        slots = max(measured_slots, 1)
        return {name: float(diag[i]) / slots for i, name in enumerate(self.diagnostics)}

    def __getattr__(self, item: str) -> Any:
        params = self.__dict__.get("params")
        if params is not None and item in params:
            return params[item]
        raise AttributeError(item)

    def _freeze(self) -> None:
        self.__dict__["params"] = FrozenParams(self.params)
        self.__dict__["_frozen"] = True

    def __setattr__(self, key: str, value: Any) -> None:
        if self.__dict__.get("_frozen"):
            raise AttributeError(f"{type(self).__name__} is immutable; use with_params(...)")
        super().__setattr__(key, value)

    def constructor_params(self) -> dict[str, Any]:
        """Keyword arguments that rebuild this policy (``type(self)(**...) == self``)."""
        return dict(self.params)

    def with_params(self, **changes: Any) -> Policy:
        """A new policy of the same class with some parameters changed (validated again).
        A policy made by a preset stays that preset unless a change touches what the
        preset fixes."""
        preset = self.__dict__.get("_preset")
        if preset is not None and not set(changes) & set(preset.fixed):
            free = {k: v for k, v in self.constructor_params().items() if k not in preset.fixed}
            return preset.make({**free, **changes})
        return type(self)(**{**self.constructor_params(), **changes})

    @property
    def given_name(self) -> str:
        """The name a user asks for it by, with the parameters given when it was made, as a
        spec's policy shows them: ``pod(d=2)``, ``jsq``, ``l-jba-pull(p=0.05)``."""
        preset = self.__dict__.get("_preset")
        given = {name: self.params[name] for name in self.__dict__.get("_given", ())}
        return display_name(preset.name if preset is not None else self.name, given)

    def __repr__(self) -> str:
        """``PowerOfD(d=3)``: the public class and the parameters that differ from defaults;
        a policy made by a preset shows the preset's factory (``PiJSQ()``,
        ``LJBAPull(p=0.05)``) and the free parameters that differ from its defaults."""
        preset = self.__dict__.get("_preset")
        if preset is not None:
            defaults = {p.name: p.default for p in preset.free_parameters()}
            args = ", ".join(f"{k}={v!r}" for k, v in self.params.items()
                             if k in defaults and defaults[k] != v)
            return f"{preset_public_name(preset.name)}({args})"
        defaults = {p.name: p.default for p in self.parameters}
        args = ", ".join(f"{k}={v!r}" for k, v in self.params.items()
                         if k not in defaults or defaults[k] != v)
        return f"{self.public_name}({args})"

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
        policy = self.base(**{**self.defaults, **params, **self.fixed})
        policy.__dict__["_preset"] = self  # for its repr; equality is by name and params
        policy.__dict__["_given"] = tuple(name for name in policy._given if name in params)
        return policy

    def free_parameters(self) -> tuple[Param, ...]:
        return tuple(replace(p, default=self.defaults.get(p.name, p.default))
                     for p in self.base.parameters if p.name not in self.fixed)


_REGISTRY: dict[str, type[Policy] | Preset] = {}


def definition_site(obj: Any) -> tuple[str, str]:
    """(module, qualified name) where a class or function was defined: the same for the
    object a re-run notebook cell or a re-imported module defines again. A compiled
    numba function is identified by the Python function it compiles."""
    obj = getattr(obj, "py_func", obj)
    return (str(getattr(obj, "__module__", "")),
            str(getattr(obj, "__qualname__", getattr(obj, "__name__", repr(obj)))))


def same_definition(old: Any, new: Any) -> bool:
    """Whether ``new`` is ``old`` or its redefinition (same module and qualified name)."""
    return old is new or definition_site(old) == definition_site(new)


def cache_allowed(function: Any) -> bool:
    """Whether numba may cache ``function`` on disk: only when its module can be imported
    again by name. A cached entry records its module and numba imports it when loading;
    a script (``__main__``), a notebook cell or a file executed without registering its
    module would leave an entry that no later process can load."""
    module_name = getattr(function, "__module__", None)
    if not module_name or module_name == "__main__":
        return False
    module = sys.modules.get(module_name)
    spec = getattr(module, "__spec__", None)
    return spec is not None and spec.name == module_name and bool(getattr(spec, "origin", None))


def register(cls: type[Policy]) -> type[Policy]:
    """Class decorator: make a policy available by its ``name``.

    Registering the same class again (a re-run notebook cell, a re-imported module)
    replaces the entry; a different class under a taken name is an error. A name must be
    what :func:`policy_entry` looks up: lower case, without surrounding spaces (``MyRule``
    is refused; ``make_policy("MyRule")`` then finds ``myrule``).
    """
    _check_name(getattr(cls, "name", None))
    old = _REGISTRY.get(cls.name)
    require(old is None or (not isinstance(old, Preset) and same_definition(old, cls)),
            "policy", f"{cls.name!r} is already registered by {_site(old)}; choose another name")
    _REGISTRY[cls.name] = cls
    return cls


def register_preset(name: str, base: type[Policy], summary: str, theory: str = "",
                    defaults: dict[str, Any] | None = None, **fixed: Any) -> None:
    """Register ``name`` as ``base`` with ``fixed`` parameters (a user may not override
    them) and changed ``defaults`` (a user may). Registering it again with a redefinition
    of the same base class replaces it; any other entry under ``name`` is an error. The
    name must be normal, as for :func:`register`."""
    _check_name(name)
    old = _REGISTRY.get(name)
    require(old is None or (isinstance(old, Preset) and same_definition(old.base, base)),
            "policy", f"{name!r} is already registered by {_site(old)}; choose another name")
    _REGISTRY[name] = Preset(name, base, fixed, defaults or {}, summary, theory or base.theory)


def _check_name(name: Any) -> None:
    """Refuse a name that :func:`policy_entry` could never find: look-ups are by
    ``name.strip().lower()``, so a registered name must already be that."""
    require(isinstance(name, str) and name != "", "policy",
            f"a policy needs a non-empty name (a str; got {name!r})")
    require(name == name.strip().lower(), "policy",
            f"policy name {name!r} is not normal: names are looked up in lower case without "
            f"surrounding spaces; register it as {name.strip().lower()!r}")


def _site(entry: Any) -> str:
    target = entry.base if isinstance(entry, Preset) else entry
    module, qualname = definition_site(target)
    return f"{module}.{qualname}" + (" (a preset)" if isinstance(entry, Preset) else "")


def display_name(name: str, params: dict[str, Any]) -> str:
    """``pod(d=2)``: a policy's name with the parameters given to it (sorted), as legends
    and tables show it; the bare name without any."""
    if not params:
        return name
    return f"{name}({', '.join(f'{k}={v}' for k, v in sorted(params.items()))})"


def policy_names() -> list[str]:
    """The registered policy and preset names, in registration order, the built-in ones
    first (importing this module imports the package first, whose ``__init__`` imports
    every module of it, each registering its policies)."""
    return list(_REGISTRY)


def policy_entry(name: str) -> type[Policy] | Preset:
    """The policy class or preset registered as ``name`` (case and surrounding blanks
    ignored); a ValidationError listing the names if there is none."""
    require(isinstance(name, str), "policy",
            f"expected a registered policy name (got {name!r}); see policy_names()")
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
    for name, entry in _REGISTRY.items():
        if isinstance(entry, Preset):
            yield name, entry.summary, entry.theory, entry.free_parameters()
        else:
            yield name, entry.summary, entry.theory, entry.parameters

