"""Policies as Python objects: every registered policy and preset under a public name.

``dispatchlab.policies.PowerOfD(d=2)``, ``dispatchlab.policies.LED(strategy="jba",
update="pull", p=0.05)`` — the classes themselves, whose keyword-only signature is
generated from their declared :class:`~dispatchlab.policies.base.Param` s. A preset
(``l-jba-pull``, ``pi-jsq``, …) becomes a factory (``LJBAPull(p=0.05)``) whose
signature lists the parameters it leaves free and whose result equals
``make_policy("l-jba-pull", p=0.05)``. Names are generated from the registry, so a
policy registered later (yours) gets one too: :func:`public_policies` reads the
registry each time.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable
from typing import Any

from dispatchlab.policies.base import (
    Policy,
    Preset,
    policy_entry,
    policy_names,
    preset_public_name,
)


def preset_factory(preset: Preset) -> Callable[..., Policy]:
    """A function ``Name(**free parameters) -> Policy`` for one preset."""

    def factory(**params: Any) -> Policy:
        return preset.make(params)

    public = preset_public_name(preset.name)
    factory.__name__ = factory.__qualname__ = public
    factory.__module__ = "dispatchlab.policies"
    fixed = ", ".join(f"{k}={v!r}" for k, v in preset.fixed.items())
    factory.__doc__ = (f"{preset.summary}\n\nThe preset ``{preset.name}``: "
                       f"``{preset.base.public_name}`` with {fixed or 'nothing'} fixed.\n\n"
                       f"Theory: {preset.theory}")
    factory.__signature__ = inspect.Signature(  # type: ignore[attr-defined]
        [inspect.Parameter(p.name, inspect.Parameter.KEYWORD_ONLY, default=p.default,
                           annotation=p.kind) for p in preset.free_parameters()],
        return_annotation=preset.base)
    factory.preset = preset  # type: ignore[attr-defined]
    return factory


def public_policies() -> dict[str, type[Policy] | Callable[..., Policy]]:
    """Public name → policy class or preset factory, for every registered name."""
    out: dict[str, type[Policy] | Callable[..., Policy]] = {}
    for name in policy_names():
        entry = policy_entry(name)
        if isinstance(entry, Preset):
            out[preset_public_name(name)] = preset_factory(entry)
        else:
            out[entry.public_name] = entry
    return out


def public_name_of(registered: str) -> str:
    """The public Python name of the registered policy or preset ``registered``."""
    entry = policy_entry(registered)
    return preset_public_name(entry.name) if isinstance(entry, Preset) else entry.public_name
