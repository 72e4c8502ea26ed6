"""A policy sent to a worker by reference: its recipe (class and constructor
arguments, compiled functions named by module and qualified name) and the policy rebuilt
from it; and the JSON parameters that identify a policy in the results store.

A policy whose class or functions live in ``__main__`` (a notebook cell, a script) has no
recipe: a worker cannot import it, so :func:`dispatchlab.sweep` runs its points in
the calling process.
"""

from __future__ import annotations

import importlib
import importlib.util
from collections.abc import Mapping
from typing import Any

from dispatchlab.policies.base import Policy


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
    """How a worker rebuilds ``policy``: its class and constructor arguments, with
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


def identity_params(policy: Policy) -> dict[str, Any]:
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
