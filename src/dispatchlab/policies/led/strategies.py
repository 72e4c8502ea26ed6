"""LED dispatching strategies (THEORY.md §2.3): compiled rules on one dispatcher's estimates.

A dispatching strategy is a compiled function with the fixed signature
:data:`STRATEGY_SIGNATURE`::

    strategy(estimates, mu, rng, params, scratch) -> server

``estimates``  Q̃^m, the dispatcher's own local estimates (int64, length N; read only)
``mu``         service rates μ_n (float64, length N)
``rng``        the run's random state (draw with :mod:`dispatchlab.engine.rng`)
``params``     the strategy's float parameters (float64; its own layout)
``scratch``    an int64 work buffer of length N (e.g. for a sample of servers)

It returns the server that receives the dispatcher's arrivals. Decisions see only
the dispatcher's own estimates and μ, never the true queues (zero dispatching delay,
§2.1). Decorate a rule with :func:`strategy_function` and wrap it in a
:class:`Strategy` (or pass the compiled function directly) to plug it into the
``led`` policy; see ``examples/custom_led_strategy.py``.

Ties: the theory breaks ties by one random order σ_t per dispatcher and slot; each
built-in rule below makes a single pick per call with uniform ties, which gives the
same law of the chosen server (the restriction of a uniform order to any tied set
is a uniform order).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np
from numba import njit, types
from numba.core.registry import CPUDispatcher

from dispatchlab.engine.interface import compiled, lazy_function
from dispatchlab.engine.kernels import argmin_random_ties, shortest_of_row
from dispatchlab.engine.rng import sample_distinct_row, uniform
from dispatchlab.errors import ValidationError

STRATEGY_SIGNATURE = types.int64(
    types.int64[::1], types.float64[::1], types.uint64[::1], types.float64[::1],
    types.int64[::1],
)
STRATEGY_TYPE = types.FunctionType(STRATEGY_SIGNATURE)


def strategy_function(func=None, *, cache: bool = True):
    """Compile ``func`` as an LED dispatching strategy (see the module docstring).

    Usable as ``@strategy_function`` or ``@strategy_function(cache=False)``.
    """

    def compile_(f):
        # compiled with its signature on first use (engine.interface.lazy_function)
        return lazy_function(f, STRATEGY_SIGNATURE, cache=cache)

    return compile_ if func is None else compile_(func)


# -- built-in strategies ----------------------------------------------------------------------

JBA_PLAIN, JBA_WEIGHTED = 0, 1


@njit(inline="always", cache=True)
def l_jsq_pick(estimates, rng):
    """L-JSQ: σ_t(1), the smallest local estimate, ties uniform."""
    return argmin_random_ties(estimates, rng)


@njit(inline="always", cache=True)
def l_jba_pick(estimates, mu, rng, weighted):
    """L-JBA (§2.3 default): among B = {n : Q̃_n < average}, pick n with probability
    μ_n / Σ_{j∈B} μ_j; when B is empty (all estimates equal) fall back to L-JSQ.

    ``weighted`` selects the μ-weighted average Σ μ_n Q̃_n / μ_Σ as the threshold
    instead of the plain mean (1/N) Σ Q̃_n.
    """
    N = estimates.size
    total = 0.0
    norm = 0.0
    for n in range(N):
        w = mu[n] if weighted else 1.0
        total += w * estimates[n]
        norm += w
    average = total / norm
    below_rate = 0.0
    for n in range(N):
        if estimates[n] < average:
            below_rate += mu[n]
    if below_rate <= 0.0:
        return argmin_random_ties(estimates, rng)
    u = uniform(rng) * below_rate
    last = -1
    for n in range(N):
        if estimates[n] < average:
            last = n
            u -= mu[n]
            if u < 0.0:
                return n
    return last  # only reached through rounding in the last subtraction


@njit(inline="always", cache=True)
def l_pod_pick(estimates, rng, d, table, row):
    """L-Pod: d distinct servers sampled uniformly (into ``table[row, :d]``), the smallest
    local estimate among them."""
    N = estimates.size
    if d >= N:
        return argmin_random_ties(estimates, rng)
    sample_distinct_row(rng, N, d, table, row)
    return shortest_of_row(estimates, table, row, d, rng)


@strategy_function
def l_jsq(estimates, mu, rng, params, scratch):
    """L-JSQ as a plug-in strategy (no parameters)."""
    return l_jsq_pick(estimates, rng)


@strategy_function
def l_jba(estimates, mu, rng, params, scratch):
    """L-JBA as a plug-in strategy; ``params[0]`` = 1 for the μ-weighted average."""
    return l_jba_pick(estimates, mu, rng, params[0] == JBA_WEIGHTED)


@strategy_function
def l_pod(estimates, mu, rng, params, scratch):
    """L-Pod as a plug-in strategy; ``params[0]`` = d, the number of distinct choices."""
    return l_pod_pick(estimates, rng, np.int64(params[0]), scratch.reshape((1, scratch.size)),
                      0)


# -- the strategy object the policy and the theory use ----------------------------------------


@dataclass(frozen=True)
class Strategy:
    """An LED dispatching strategy: a name, its compiled rule and its float parameters.

    ``code`` identifies the built-in rules (which the ``led`` policy runs through its
    cached compiled dispatch); a user strategy has ``code = -1`` and ``function`` set to
    a rule compiled with :func:`strategy_function`.
    """

    name: str
    function: Any
    params: tuple[float, ...] = ()
    code: int = -1
    summary: str = ""
    options: dict[str, Any] = field(default_factory=dict)

    @property
    def param_array(self) -> np.ndarray:
        """The ``params`` argument of the rule (never empty)."""
        return np.array(self.params or (0.0,), dtype=np.float64)

    @property
    def builtin(self) -> bool:
        return self.code >= 0


CODE_JSQ, CODE_JBA, CODE_POD = 0, 1, 2
BUILTIN_STRATEGIES = ("jsq", "jba", "pod")
JBA_AVERAGES = ("plain", "weighted")


def builtin_strategy(name: str, *, pod_d: int = 2, jba_average: str = "plain") -> Strategy:
    """The built-in strategy ``name`` (jsq | jba | pod) with its parameters."""
    key = name.strip().lower().removeprefix("l-")
    if key == "jsq":
        return Strategy("jsq", l_jsq, (), CODE_JSQ, "L-JSQ: smallest local estimate")
    if key == "jba":
        if jba_average not in JBA_AVERAGES:
            raise ValidationError("jba_average", f"allowed: {', '.join(JBA_AVERAGES)} "
                                  f"(got {jba_average!r})")
        weighted = JBA_AVERAGES.index(jba_average)
        return Strategy("jba", l_jba, (float(weighted),), CODE_JBA,
                        "L-JBA: μ-weighted choice below the average",
                        {"jba_average": jba_average})
    if key == "pod":
        if int(pod_d) < 1:
            raise ValidationError("pod_d", f"must be ≥ 1 (got {pod_d})")
        return Strategy("pod", l_pod, (float(pod_d),), CODE_POD,
                        f"L-Pod: shortest local estimate among {pod_d} sampled",
                        {"pod_d": int(pod_d)})
    raise ValidationError("strategy", f"allowed: {', '.join(BUILTIN_STRATEGIES)}, or a "
                          f"compiled strategy function (got {name!r})")


def custom_strategy(function: Any, params: Any = (), name: str | None = None) -> Strategy:
    """Wrap a user rule compiled with :func:`strategy_function` as a :class:`Strategy`."""
    if isinstance(function, Strategy):
        return function
    if not isinstance(function, CPUDispatcher):
        raise ValidationError("strategy", "a custom strategy must be compiled with "
                              "dispatchlab.policies.led.strategy_function")
    signatures = [tuple(sig) for sig in compiled(function).signatures]
    if tuple(STRATEGY_SIGNATURE.args) not in signatures:
        raise ValidationError("strategy", "a custom strategy must have the signature "
                              "(estimates, mu, rng, params, scratch) -> server; compile it "
                              "with dispatchlab.policies.led.strategy_function")
    values = tuple(float(x) for x in np.atleast_1d(np.asarray(params, dtype=float)))
    label = name or getattr(function, "__name__", "custom")
    return Strategy(f"custom:{label}", function, values, -1, f"user strategy {label}")
