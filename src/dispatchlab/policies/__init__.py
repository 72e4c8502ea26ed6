"""Dispatching policies.

Importing this package imports every module in it, and each module registers its
policies with :func:`register`; so adding a policy is adding one module. Every registered
policy is then importable from here by its public name (``PowerOfD``, ``LED``, the preset
factories ``LJBAPull``, ``PiJSQ``, …; see :mod:`dispatchlab.policies.api`).
"""

import importlib
import pkgutil

from dispatchlab.policies.base import (
    Kernel,
    Param,
    Policy,
    catalog,
    make_policy,
    policy_names,
    register,
    register_preset,
)

for _module in pkgutil.iter_modules(__path__):
    importlib.import_module(f"{__name__}.{_module.name}")

from dispatchlab.policies.api import public_policies  # noqa: E402

_PUBLIC = public_policies()
globals().update(_PUBLIC)

__all__ = [
    "Kernel",
    "Param",
    "Policy",
    "catalog",
    "make_policy",
    "policy_names",
    "register",
    "public_policies",
    "register_preset",
    *_PUBLIC,
]


def __getattr__(name: str):  # a policy registered after import (yours) by its public name
    found = public_policies().get(name)
    if found is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return found
