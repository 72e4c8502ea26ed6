"""Tools for testing policies and the engine: the conformance kit every policy must pass
(:mod:`~dispatchlab.testing.conformance`), the coverage study of the confidence intervals
(:mod:`~dispatchlab.testing.coverage_study`) and the known-answer fingerprint of the
engine's draws (:mod:`~dispatchlab.testing.fingerprint`).

    >>> from dispatchlab.testing import check_policy
    >>> check_policy("pod")

The kit's names load on first use (PEP 562), so that importing the coverage study for
``check coverage --help`` does not load the simulator.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from dispatchlab.testing.conformance import (
        CHECKS,
        CheckResult,
        ConformanceError,
        ConformanceReport,
        check_policy,
        run_check,
    )

__all__ = ["CHECKS", "CheckResult", "ConformanceError", "ConformanceReport", "check_policy",
           "run_check"]


def __getattr__(name: str) -> Any:
    if name not in __all__:
        raise AttributeError(f"module 'dispatchlab.testing' has no attribute {name!r}")
    value = getattr(importlib.import_module("dispatchlab.testing.conformance"), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(__all__)
