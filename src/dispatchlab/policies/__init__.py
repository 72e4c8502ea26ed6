"""Dispatching policies.

Importing this package imports every module in it, and each module registers its
policies with :func:`register`; so adding a policy is adding one module.
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

__all__ = [
    "Kernel",
    "Param",
    "Policy",
    "catalog",
    "make_policy",
    "policy_names",
    "register",
    "register_preset",
]
