"""Decision functions Y(η, μ, W) of framework Π (docs/model.md#pi-components, item 3) and their
registry.

A decision function fixes the destinations of a whole dispatching cycle from the
sampled order η and the rates μ. It is compiled with :func:`decision_function`,
which gives it the fixed signature

    decide(eta, mu, int_params, float_params, rng, dest, scratch) -> None

``eta``      η as int64[N]: eta[0] is the longest scaled queue, eta[N−1] the shortest
``mu``       the service rates μ
``int_params``, ``float_params``  the decision's own integer / float parameters (built by
             the registry entry)
``rng``      the run's random state: the decision variables W_k are drawn from it
``dest``     int64[T] to fill: dest[i] is the server of slot kT + i
``scratch``  int64[N] of free working memory

so a user's decision function is a few lines of plain numba code plus one
:func:`register_decision` call, and the engine is never edited.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np
from numba import types

from dispatchlab.compiled.alias import alias_draw, alias_table
from dispatchlab.compiled.rng import randint, sample_distinct_row
from dispatchlab.core.errors import ValidationError, require
from dispatchlab.engine.interface import lazy_function
from dispatchlab.policies.base import cache_allowed, definition_site, same_definition
from dispatchlab.theory.stability import DispatchFractions

_iv = types.int64[::1]
DECISION_SIGNATURE = types.none(_iv, types.float64[::1], _iv, types.float64[::1],
                                types.uint64[::1], _iv, _iv)
DECISION_TYPE = types.FunctionType(DECISION_SIGNATURE)


def decision_function(func):
    """Declare ``func`` a Π decision function (its fixed signature compiled on first use;
    cached on disk when its module can be re-imported, see
    :func:`~dispatchlab.policies.base.cache_allowed`)."""
    return lazy_function(func, DECISION_SIGNATURE, cache=cache_allowed(func))


@decision_function
def uniform_decision(eta, mu, int_params, float_params, rng, dest, scratch):
    """RAND: every slot of the cycle to a uniformly random server (ignores η)."""
    for i in range(dest.size):
        dest[i] = randint(rng, eta.size)


@decision_function
def weighted_decision(eta, mu, int_params, float_params, rng, dest, scratch):
    """Weighted RAND: server j with probability μ_j/μ_Σ (float_params is the alias table of μ)."""
    for i in range(dest.size):
        dest[i] = alias_draw(rng, float_params)


@decision_function
def cycle_decision(eta, mu, int_params, float_params, rng, dest, scratch):
    """A fixed cycle of servers (RR, balanced RR): dest = int_params (ignores η)."""
    for i in range(dest.size):
        dest[i] = int_params[i]


@decision_function
def shortest_decision(eta, mu, int_params, float_params, rng, dest, scratch):
    """JSQ/JSED: every slot of the cycle to the shortest scaled queue η(n)."""
    shortest = eta[eta.size - 1]
    for i in range(dest.size):
        dest[i] = shortest


@decision_function
def pod_decision(eta, mu, int_params, float_params, rng, dest, scratch):
    """Po-d: per slot, d distinct uniform ranks; the one with the largest rank index wins."""
    d = int_params[0]
    sample = scratch.reshape((1, scratch.size))
    for i in range(dest.size):
        sample_distinct_row(rng, eta.size, d, sample, 0)
        best = sample[0, 0]
        for j in range(1, d):
            best = max(best, sample[0, j])
        dest[i] = eta[best]


@decision_function
def skip_longest_decision(eta, mu, int_params, float_params, rng, dest, scratch):
    """k-SLQ-d: the N−d queues outside the d longest get k slots each, shortest first,
    round robin (dest has k(N−d) slots)."""
    d = int_params[0]
    n = eta.size
    i = 0
    while i < dest.size:
        for rank in range(n - 1, d - 1, -1):
            if i < dest.size:
                dest[i] = eta[rank]
                i += 1


ParamBuilder = Callable[[dict[str, Any], np.ndarray], np.ndarray]
FractionBuilder = Callable[[dict[str, Any], np.ndarray], DispatchFractions]
CycleBuilder = Callable[[dict[str, Any], np.ndarray], int]


def _no_ints(params: dict[str, Any], mu: np.ndarray) -> np.ndarray:
    return np.zeros(1, np.int64)


def _no_floats(params: dict[str, Any], mu: np.ndarray) -> np.ndarray:
    return np.zeros(1, np.float64)


@dataclass(frozen=True)
class Decision:
    """A registered decision function and what the framework needs to know about it.

    Attributes:
        name: the value of the ``pi`` policy's ``decision`` parameter.
        function: the compiled decision function (:func:`decision_function`).
        summary: one line for the catalog.
        reads_queues: False when Y ignores η (RAND, RR, …): then no queue read happens
            and no message is counted.
        uses: which ``pi`` parameters it reads (``d``, ``k``), for validation.
        int_params / float_params: build the decision's integer / float parameters from
            (params, μ).
        cycle: its fixed cycle length T from (params, μ), or None when any T works
            (the rule is then applied to every slot of the cycle).
        fractions: exact a_l(η) from (params, μ), or None: then they are estimated by
            Monte Carlo with the compiled function (rank-symmetric if ``rank_symmetric``).
        rank_symmetric: a_l(η) depends on l only (used for user decisions without
            exact fractions; enables the rank-symmetric shortcut of
            docs/model.md#pi-stability for any N).
    """

    name: str
    function: Any
    summary: str
    reads_queues: bool = True
    uses: tuple[str, ...] = ()
    int_params: ParamBuilder = _no_ints
    float_params: ParamBuilder = _no_floats
    cycle: CycleBuilder | None = None
    fractions: FractionBuilder | None = None
    rank_symmetric: bool = False


_DECISIONS: dict[str, Decision] = {}


def register_decision(name: str, function: Any, summary: str, **options: Any) -> Decision:
    """Make ``function`` usable as ``pi`` with ``decision=name`` (see :class:`Decision`)."""
    key = name.strip().lower()
    require(bool(key), "decision", "the name of a decision function may not be empty")
    old = _DECISIONS.get(key)
    require(old is None or same_definition(old.function, function), "decision",
            f"{name!r} is already registered for {'.'.join(definition_site(old.function))}"
            if old is not None else "")
    entry = Decision(key, function, summary, **options)
    _DECISIONS[key] = entry
    return entry


def decision_entry(name: str) -> Decision:
    """The Π decision function registered as ``name`` (case and surrounding blanks ignored);
    a ValidationError listing the names if there is none (docs/model.md#pi-components)."""
    key = str(name).strip().lower()
    if key not in _DECISIONS:
        raise ValidationError("pi-framework.decision", f"unknown decision {name!r}; allowed: "
                              + ", ".join(_DECISIONS))
    return _DECISIONS[key]


def decision_names() -> list[str]:
    """The registered Π decision functions' names, in registration order."""
    return list(_DECISIONS)


# -- the built-in catalog (docs/model.md#pi-members) -----------------------------------------------

def _rr_cycle(params: dict[str, Any], mu: np.ndarray) -> np.ndarray:
    from dispatchlab.policies.classic import RoundRobin  # the classical cycle, shared

    return RoundRobin(weighted=params["decision"] == "balanced-rr",
                      resolution=params["resolution"]).cycle(mu)


def _cycle_fractions(params: dict[str, Any], mu: np.ndarray) -> DispatchFractions:
    counts = np.bincount(_rr_cycle(params, mu), minlength=mu.size)
    if np.all(counts == counts[0]):
        return DispatchFractions("rank", np.full(mu.size, 1.0 / mu.size))
    return DispatchFractions("server", counts / counts.sum())


def _all_to_last_rank(n: int) -> np.ndarray:
    """a = e_N: every slot to the shortest scaled queue (O(N) memory, not an N × N eye)."""
    fractions = np.zeros(n)
    fractions[n - 1] = 1.0
    return fractions


def _pod_fractions(params: dict[str, Any], mu: np.ndarray) -> DispatchFractions:
    from dispatchlab.theory.stability import rank_fractions_pod

    return DispatchFractions("rank", rank_fractions_pod(mu.size, params["d"]))


def _kslq_fractions(params: dict[str, Any], mu: np.ndarray) -> DispatchFractions:
    from dispatchlab.theory.stability import rank_fractions_kslq

    return DispatchFractions("rank", rank_fractions_kslq(mu.size, params["d"]))


register_decision(
    "rand", uniform_decision, "RAND: uniform random server in every slot", reads_queues=False,
    fractions=lambda p, mu: DispatchFractions("rank", np.full(mu.size, 1.0 / mu.size)))
register_decision(
    "wrand", weighted_decision, "weighted RAND: server j with probability μ_j/μ_Σ",
    reads_queues=False, float_params=lambda p, mu: alias_table(mu),
    fractions=lambda p, mu: DispatchFractions("server", mu / mu.sum()))
register_decision(
    "rr", cycle_decision, "RR: the fixed cycle 1..N (T = N)", reads_queues=False,
    uses=("resolution",), int_params=_rr_cycle, cycle=lambda p, mu: _rr_cycle(p, mu).size,
    fractions=_cycle_fractions)
register_decision(
    "balanced-rr", cycle_decision,
    "balanced RR: a smooth cycle where server j gets slots ∝ μ_j (T = its length)",
    reads_queues=False, uses=("resolution",), int_params=_rr_cycle,
    cycle=lambda p, mu: _rr_cycle(p, mu).size, fractions=_cycle_fractions)
register_decision(
    "shortest", shortest_decision,
    "join the shortest scaled queue η(n) (JSQ with γ = 1, JSED with γ = μ)",
    fractions=lambda p, mu: DispatchFractions("rank", _all_to_last_rank(mu.size)))
register_decision(
    "pod", pod_decision, "Po-d: d distinct uniform samples per slot, the shortest wins",
    uses=("d",), int_params=lambda p, mu: np.array([p["d"]], np.int64),
    fractions=_pod_fractions)
register_decision(
    "kslq", skip_longest_decision,
    "k-SLQ-d: skip the d longest; the others get k slots each (T = k(N−d))",
    uses=("d", "k"), int_params=lambda p, mu: np.array([p["d"], p["k"]], np.int64),
    cycle=lambda p, mu: p["k"] * (mu.size - p["d"]), fractions=_kslq_fractions)
