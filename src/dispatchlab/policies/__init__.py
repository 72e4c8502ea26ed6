"""Dispatching policies. Importing this package registers every built-in policy."""

from dispatchlab.policies import classic  # noqa: F401
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
