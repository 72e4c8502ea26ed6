"""dispatchlab: a laboratory for dispatching policies in discrete-time parallel-server systems.

    >>> from dispatchlab import System, simulate
    >>> system = System.build("50x0.1,50x0.5", load=0.9, dispatchers=10)
    >>> result = simulate(system, "jsq", slots=100_000, seed=7)

The names below load on first use (PEP 562), so ``import dispatchlab`` (or any of its
subpackages) imports neither numba nor the policies until they are needed.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from dispatchlab.errors import ValidationError
    from dispatchlab.model import System
    from dispatchlab.policies import Policy, make_policy, policy_names
    from dispatchlab.result import Result
    from dispatchlab.simulate import simulate

__version__ = "0.1.0"

_EXPORTS = {
    "Policy": "dispatchlab.policies",
    "Result": "dispatchlab.result",
    "System": "dispatchlab.model",
    "ValidationError": "dispatchlab.errors",
    "make_policy": "dispatchlab.policies",
    "policy_names": "dispatchlab.policies",
    "simulate": "dispatchlab.simulate",
}

__all__ = [
    "Policy",
    "Result",
    "System",
    "ValidationError",
    "__version__",
    "make_policy",
    "policy_names",
    "simulate",
]


def __getattr__(name: str) -> Any:
    if name in _EXPORTS:
        value = getattr(importlib.import_module(_EXPORTS[name]), name)
        globals()[name] = value
        return value
    raise AttributeError(f"module 'dispatchlab' has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_EXPORTS))
