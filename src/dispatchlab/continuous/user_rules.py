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
import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from numba import cfunc

from dispatchlab.compiled.lazy import AbsentStep
from dispatchlab.compiled.signature_types import F64, F64_VEC, I64, I64_VEC, U64_VEC
from dispatchlab.core.errors import ValidationError, require

#: rule(m, size, counts, speeds, params, state, rng) → the server of the job
RULE_SIGNATURE = I64(I64, F64, I64_VEC, F64_VEC, F64_VEC, F64_VEC, U64_VEC)
#: what a run of a built-in rule passes the event loop (never called)
NO_RULE = AbsentStep(RULE_SIGNATURE, "no_rule")
#: the most floats of state a dispatcher may keep
MAX_STATE = 1 << 20


@dataclass(frozen=True)
class ContinuousRule:
    """A registered user rule: its name, function, summary, parameters (name → default,
    floats) and the floats of state each dispatcher keeps."""

    name: str
    function: Callable[..., int]
    summary: str
    params: Mapping[str, float] = field(default_factory=dict)
    state: int = 0


#: the registered user rules by name
RULES: dict[str, ContinuousRule] = {}


def register_continuous_rule(name: str, function: Callable[..., int], summary: str = "", *,
                             params: Mapping[str, float] | None = None,
                             state: int = 0) -> ContinuousRule:
    """Register ``function`` as the continuous-time policy ``name`` (see the module's
    docstring for what it is called with); ``params``: its parameters and their defaults
    (floats, given as ``policy_params`` and ``--set``); ``state``: the floats of state each
    dispatcher keeps. Registering a name again replaces the rule (a reloaded module)."""
    from dispatchlab.continuous.policies import ALIASES, POLICIES

    require(isinstance(name, str) and name.strip() == name and name.isprintable()
            and bool(name) and "," not in name, "name",
            f"a rule's name is printable text without spaces at its ends or commas "
            f"(got {name!r})")
    key = name.lower()
    require(key not in POLICIES and key not in ALIASES, "name",
            f"{name!r} is a built-in continuous-time policy; choose another name")
    require(callable(function) and hasattr(function, "__code__"), "function",
            f"expected a plain Python function (got {function!r})")
    require(function.__code__.co_argcount == 7, "function",
            "a rule takes (m, size, counts, speeds, params, state, rng) "
            f"(got {function.__code__.co_argcount} arguments)")
    defaults = dict(params or {})
    for key_name, value in defaults.items():
        require(isinstance(key_name, str) and key_name.isidentifier(), "params",
                f"parameter names are identifiers (got {key_name!r})")
        require(isinstance(value, int | float) and not isinstance(value, bool)
                and math.isfinite(value), f"params.{key_name}",
                f"a default is a finite number (got {value!r})")
    require(isinstance(state, int) and not isinstance(state, bool) and 0 <= state <= MAX_STATE,
            "state", f"the floats of state a dispatcher keeps: 0 … {MAX_STATE:,} (got {state!r})")
    rule = ContinuousRule(key, function, str(summary), defaults, state)
    RULES[key] = rule
    return rule


def rule_params(rule: ContinuousRule, given: Mapping[str, Any]) -> tuple[dict[str, float],
                                                                          np.ndarray]:
    """The rule's parameters (defaults filled, each a finite number) and their array."""
    from dispatchlab.continuous.policies import from_command_line_number

    for key in given:
        require(key in rule.params, f"policy_params.{key}",
                f"{rule.name} takes {', '.join(rule.params) or 'no parameters'}")
    values: dict[str, float] = {}
    for key, default in rule.params.items():
        value = from_command_line_number(key, given.get(key, default))
        require(isinstance(value, int | float) and not isinstance(value, bool)
                and math.isfinite(value), f"policy_params.{key}",
                f"expected a finite number (got {value!r})")
        values[key] = float(value)
    return values, np.array(list(values.values()) or [0.0])


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
