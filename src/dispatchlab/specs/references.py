"""The functions a figure's reference line may name, and the only place such a name resolves.

A spec file or a results store names the function of a :class:`~dispatchlab.specs.figure.
ReferenceLine` as ``"module:qualname"``. That name is data: it is looked up here among the
*registered* reference functions and nothing else. Nothing is imported, and nothing is
called, because a file names it: a spec or a store someone sends you cannot run code.

Registered are

* dispatchlab's own theory functions of a system (:data:`BUILTIN`; their modules are
  imported by these constant names, on first look-up);
* every function a user's own code hands over: a ``ReferenceLine(function=f)`` built in
  Python registers ``f`` (the user ran that code), and so does
  :func:`register_reference_function`, e.g. at the top level of a module of theirs.

The seam for a front end that runs a user's module on request (an explicit option such
as ``--import MODULE``): import that module first; the functions it registers then
resolve like the built-in ones. Nothing here imports a module a file names.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from typing import Any

from dispatchlab.core.errors import ValidationError, require

ReferenceFunction = Callable[[Any], float]

#: the built-in reference functions: their name in a spec -> (dispatchlab module, attribute)
BUILTIN: dict[str, tuple[str, str]] = {
    f"{module}:{name}": (module, name)
    for module, names in (
        ("dispatchlab.theory.bounds", ("heavy_traffic_limit", "lower_bound_total_queue")),
        ("dispatchlab.theory.heavy_traffic", ("pooled_limit", "random_routing_limit")),
        ("dispatchlab.theory.closed_forms", ("pooled_queue_mean", "random_routing_constant",
                                             "weighted_random_total_mean")),
    )
    for name in names
}
#: names stores written before a function moved keep resolving (old name -> built-in name)
ALIASES: dict[str, str] = {
    "dispatchlab.experiments.catalog.classic:weighted_random_total_mean":
        "dispatchlab.theory.closed_forms:weighted_random_total_mean",
}

_REGISTERED: dict[str, ReferenceFunction] = {}

HOW_TO_REGISTER = ("a function of your own resolves once code you run registers it "
                   "(ReferenceLine(function=f) in Python, or "
                   "dispatchlab.specs.references.register_reference_function)")


def function_name(function: Any, field: str) -> str:
    """``"module:qualname"`` of a module-level function (what a spec and the store keep)."""
    require(callable(function), field, "must be a function of the system")
    path = f"{getattr(function, '__module__', '?')}:{getattr(function, '__qualname__', '?')}"
    require("<" not in path and "?" not in path, field,
            f"must be a module-level function, not a lambda or closure (got {path})")
    return path


def register_reference_function(function: ReferenceFunction) -> ReferenceFunction:
    """Make ``function`` resolvable by its ``"module:qualname"`` in specs and stores; return
    it (usable as a decorator). Registering a redefinition (a re-run notebook cell)
    replaces the entry; a built-in name cannot be taken."""
    name = function_name(function, "function")
    require(name not in BUILTIN or _builtin(name) is function, "function",
            f"{name!r} is a built-in reference function")
    _REGISTERED[name] = function
    return function


def reference_names() -> list[str]:
    """Every name a reference line may give, built-in ones first."""
    return [*BUILTIN, *sorted(set(_REGISTERED) - set(BUILTIN))]


def reference_function(name: Any, field: str) -> ReferenceFunction:
    """The registered function called ``name``; a :class:`ValidationError` on ``field``
    listing the allowed names otherwise. Looks up, never imports what ``name`` says."""
    require(isinstance(name, str), field,
            f"must name a registered reference function (got {name!r}); allowed: "
            + ", ".join(reference_names()))
    name = ALIASES.get(name, name)
    if name in BUILTIN:
        return _builtin(name)
    if name in _REGISTERED:
        return _REGISTERED[name]
    raise ValidationError(field, f"{name!r} is not a registered reference function (nothing "
                          "named in a spec or a store is imported); allowed: "
                          + ", ".join(reference_names()) + f"; {HOW_TO_REGISTER}")


def _builtin(name: str) -> ReferenceFunction:
    module, attribute = BUILTIN[name]
    return getattr(importlib.import_module(module), attribute)  # a constant, ours
