"""A user's own continuous-time dispatching rule: a plain function, compiled on first use,
registered under a name and then run, swept, stored and compared like the built-in rules.

    from dispatchlab.compiled.rng import randint
    from dispatchlab.continuous.user_rules import register_continuous_rule

    def fastest_of_two(m, size, counts, speeds, params, state, rng):
        a, b = randint(rng, counts.size), randint(rng, counts.size)
        # the fewer jobs per unit of speed; ties to the faster
        left, right = counts[a] / speeds[a], counts[b] / speeds[b]
        return a if left < right or (left == right and speeds[a] >= speeds[b]) else b

    register_continuous_rule("fastest-of-two", fastest_of_two,
                             "two servers at random, the fewer jobs per unit of speed")
    simulate_continuous("8x1,8x2", "fastest-of-two", load=0.9)

The rule is called at each arrival with the dispatcher m (0 … M−1), the job's size, the
number of jobs at each server (``counts``, full information as JSQ has it), the speeds,
its parameters (``params``: the floats of its declared ``params``, in their order) and
its dispatcher's own state row (``state``: ``state`` floats, zero at the start, kept
between its calls: a cursor, credits, its own estimates), and draws from ``rng`` (the
policy's own random stream, ``dispatchlab.compiled.rng``). It returns the server's index;
anything outside 0 … N−1 stops the run with one line naming the rule. It is compiled by
numba (nopython: numbers, arrays and the compiled helpers) to the fixed signature
:data:`RULE_SIGNATURE`, once, and cached on disk when its module can be imported again.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

from numba import cfunc

from dispatchlab.compiled.lazy import AbsentStep
from dispatchlab.compiled.signature_types import F64, F64_VEC, I64, I64_VEC, U64_VEC

# the registry lives beside the built-in rules (continuous.policies); named here too
from dispatchlab.continuous.policies import (  # noqa: F401
    RULES,
    ContinuousRule,
    register_continuous_rule,
)
from dispatchlab.core.errors import ValidationError

#: rule(m, size, counts, speeds, params, state, rng) → the server of the job
RULE_SIGNATURE = I64(I64, F64, I64_VEC, F64_VEC, F64_VEC, F64_VEC, U64_VEC)
#: what a run of a built-in rule passes the event loop (never called)
NO_RULE = AbsentStep(RULE_SIGNATURE, "no_rule")
def workers_can_import(function: Callable[..., int]) -> bool:
    """Whether a worker process can find ``function`` by reference (its module by name on
    this process's path, which spawned workers share, or the main script's file); a rule
    defined in a notebook cell, or in a file loaded without being importable, cannot be
    sent, and its replications run in this process."""
    import importlib.machinery
    import sys

    module_name = getattr(function, "__module__", None) or ""
    if module_name == "__main__":
        return bool(getattr(sys.modules.get("__main__"), "__file__", None))
    top = module_name.split(".")[0]
    try:
        return importlib.machinery.PathFinder.find_spec(top, sys.path) is not None
    except (ImportError, ValueError):
        return False


@functools.cache
def compiled_rule(function: Callable[..., int]) -> Any:
    """``function`` compiled to :data:`RULE_SIGNATURE` (a C callback the event loop calls
    as a first-class function), once a process; cached on disk when its module can be
    imported again. A function numba cannot compile is one line naming it."""
    from dispatchlab.policies.base import cache_allowed

    try:
        return cfunc(RULE_SIGNATURE, cache=cache_allowed(function))(function)
    except Exception as error:  # numba's typing errors are long: their first line
        first = str(error).strip().splitlines()[0] if str(error).strip() else repr(error)
        raise ValidationError("policy", f"the rule {function.__name__!r} does not compile "
                              f"to (m, size, counts, speeds, params, state, rng) → int: "
                              f"{first}") from None
