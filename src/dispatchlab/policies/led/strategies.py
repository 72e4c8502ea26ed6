"""LED dispatching strategies (docs/model.md#led-strategies): compiled rules on one dispatcher's
estimates.

A dispatching strategy is a compiled function with the fixed signature
:data:`STRATEGY_SIGNATURE`::

    strategy(estimates, mu, rng, params, scratch) -> server

``estimates``  Q̃^m, the dispatcher's own local estimates (int64, length N; read only)
``mu``         service rates μ_n (float64, length N)
``rng``        the run's random state (draw with :mod:`dispatchlab.compiled.rng`)
``params``     the strategy's float parameters (float64; its own layout)
``scratch``    an int64 work buffer of length N (e.g. for a sample of servers); its
               contents do not survive the call (pull updates use it between slots)

It returns the server that receives the dispatcher's arrivals. Decisions see only
the dispatcher's own estimates and μ, never the true queues (zero dispatching delay,
docs/model.md#led-estimates). Decorate a rule with :func:`strategy_function` and wrap it in a
:class:`Strategy` (or pass the compiled function directly) to plug it into the
``led`` policy; see ``examples/custom_led_strategy.py``.

Ties: the theory breaks ties by one random order σ_t per dispatcher and slot; each
built-in rule below makes a single pick per call with uniform ties, which gives the
same law of the chosen server (the restriction of a uniform order to any tied set
is a uniform order).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from numba import njit
from numba.core.registry import CPUDispatcher

from dispatchlab.compiled.alias import alias_draw, alias_index
from dispatchlab.compiled.argmin import (
    argmin_random_ties,
    pair_draws,
    shorter_of_two,
    shortest_of_row,
)
from dispatchlab.compiled.prefetch import prefetch
from dispatchlab.compiled.rng import randint, sample_distinct_row, uniform, xoshiro_step
from dispatchlab.compiled.signatures import STRATEGY_SIGNATURE
from dispatchlab.core.errors import ValidationError
from dispatchlab.engine.interface import compiled, lazy_function
from dispatchlab.policies.base import cache_allowed


def strategy_function(func=None, *, cache: bool = True):
    """Compile ``func`` as an LED dispatching strategy (see the module docstring).

    Usable as ``@strategy_function`` or ``@strategy_function(cache=False)``.
    """

    def compile_(f):
        # compiled with its signature on first use (engine.interface.lazy_function)
        return lazy_function(f, STRATEGY_SIGNATURE, cache=cache and cache_allowed(f))

    return compile_ if func is None else compile_(func)


# -- built-in strategies ----------------------------------------------------------------------

JBA_PLAIN, JBA_WEIGHTED = 0, 1


@njit(inline="always", cache=True)
def l_jsq_pick(estimates, rng):
    """L-JSQ: σ_t(1), the smallest local estimate, ties uniform."""
    return argmin_random_ties(estimates, rng)


@njit(inline="always", cache=True)
def l_jba_pick(estimates, mu, rng, weighted):
    """L-JBA (the default rule of docs/model.md#led-strategies): among
    B = {n : Q̃_n < average}, pick n with probability μ_n / Σ_{j∈B} μ_j; when B is empty
    (all estimates equal) fall back to L-JSQ.

    ``weighted`` selects the μ-weighted average Σ μ_n Q̃_n / μ_Σ as the threshold
    instead of the plain mean (1/N) Σ Q̃_n. The plain test is exact in integers:
    n ∈ B ⟺ N·Q̃_n < Σ_j Q̃_j.
    """
    N = estimates.size
    total = 0
    weighted_total = 0.0
    norm = 0.0
    if weighted:
        for n in range(N):
            weighted_total += mu[n] * estimates[n]
            norm += mu[n]
    else:
        for n in range(N):
            total += estimates[n]
    average = weighted_total / norm if weighted else 0.0
    below_rate = 0.0
    for n in range(N):
        if _below(estimates[n], N, total, average, weighted):
            below_rate += mu[n]
    if below_rate <= 0.0:
        return argmin_random_ties(estimates, rng)
    u = uniform(rng) * below_rate
    last = -1
    for n in range(N):
        if _below(estimates[n], N, total, average, weighted):
            last = n
            u -= mu[n]
            if u < 0.0:
                return n
    return last  # only reached through rounding in the last subtraction


@njit(inline="always", cache=True)
def _below(estimate, N, total, average, weighted):
    """n ∈ B: Q̃_n below the μ-weighted ``average``, or N·Q̃_n < ``total`` = Σ Q̃ (plain)."""
    if weighted:
        return estimate < average
    return N * estimate < total


#: L-JBA (plain average): alias draws ∝ μ before the scan
JBA_TRIES = 32


@njit(inline="always", cache=True)
def l_jba_pick_by_sum(estimates, total, mu, table, rng):
    """L-JBA with the plain average, given ``total`` = Σ_n Q̃_n kept up to date at every
    write and ``table``, the alias table of μ: O(1) expected per call.

    A draw ∝ μ over all servers, repeated until it falls in B = {n : N·Q̃_n < total}, is
    a draw ∝ μ within B. After JBA_TRIES misses (B holds little of μ_Σ, or is empty)
    the scan :func:`l_jba_pick` decides with fresh draws; both branches draw from the
    same law, so their mixture does too (a different random sequence from the scan's
    alone, the same law). A zero ``total`` means every estimate is 0 (a dispatcher that
    has not learnt anything yet): B is empty and L-JSQ's tie is uniform over the N servers,
    drawn at once (the scan cost O(N) per choice until the dispatcher's first update).
    """
    N = estimates.size
    if total == 0:
        return randint(rng, N)
    for _ in range(JBA_TRIES):
        n = alias_draw(rng, table)
        if N * estimates[n] < total:
            return n
    return l_jba_pick(estimates, mu, rng, False)


@njit(inline="always", cache=True)
def l_pod_pick(estimates, rng, d, table, row):
    """L-Pod: d distinct servers sampled uniformly (into ``table[row, :d]``), the smallest
    local estimate among them."""
    N = estimates.size
    if d >= N:
        return argmin_random_ties(estimates, rng)
    if d == 2:
        return shorter_of_two(estimates, rng)
    sample_distinct_row(rng, N, d, table, row)
    return shortest_of_row(estimates, table, row, d, rng)


#: dispatchers ahead whose next L-Pod comparison a choice prefetches
POD_LOOKAHEAD = 2
#: L-JBA: alias draws of the next dispatcher whose estimates a choice prefetches
JBA_LOOKAHEAD = 2


@njit(inline="always", cache=True)
def pod_pair(s0, s1, s2, s3, n):
    """The two servers :func:`~dispatchlab.compiled.argmin.shorter_of_two` compares when
    it starts from the random state (s0, s1, s2, s3) on N = ``n`` servers, and the state
    after its three draws: (first, second, s0, s1, s2, s3)."""
    first, second, s0, s1, s2, s3 = pair_draws(s0, s1, s2, s3, n)
    bits, s0, s1, s2, s3 = xoshiro_step(s0, s1, s2, s3)  # (its tie-break)
    return first, second, s0, s1, s2, s3


@njit(inline="always", cache=True)
def prefetch_next_pod_pairs(table, m, dispatchers, rng):
    """L-Pod with d = 2: prefetch the two estimates that each of dispatchers m + 1 … m +
    POD_LOOKAHEAD (rows of ``table``, N wide) will compare, the engine asking them next in
    a batch slot. Their servers are the next draws of the policy's stream
    (:func:`pod_pair`), computed on a copy of the state: the stream is left as it is. A
    hint only: when other draws come between (a dispatcher without jobs, per-job mode,
    where the caller skips it), the lines fetched are merely useless. With M rows out of
    cache (M = 100, N = 10⁴) those two loads were nine tenths of a choice's time."""
    width = table.shape[1]
    s0, s1, s2, s3 = rng[0], rng[1], rng[2], rng[3]
    for ahead in range(1, POD_LOOKAHEAD + 1):
        if m + ahead >= dispatchers:
            return
        first, second, s0, s1, s2, s3 = pod_pair(s0, s1, s2, s3, np.uint64(width))
        prefetch(table, (m + ahead) * width + first)
        prefetch(table, (m + ahead) * width + second)


@njit(inline="always", cache=True)
def alias_step(s0, s1, s2, s3, alias):
    """:func:`~dispatchlab.compiled.alias.alias_draw` from the random state (s0, s1, s2, s3):
    (its index, s0, s1, s2, s3 after the draw)."""
    bits, s0, s1, s2, s3 = xoshiro_step(s0, s1, s2, s3)
    return alias_index(bits, alias), s0, s1, s2, s3


@njit(inline="always", cache=True)
def prefetch_next_jba_draws(table, m, dispatchers, rng, alias):
    """L-JBA with the plain average: prefetch the estimates of the servers that dispatcher
    m + 1 (a row of ``table``) tests first in :func:`l_jba_pick_by_sum`, the next
    JBA_LOOKAHEAD alias draws of the policy's stream (``alias``: the table of μ), computed
    on a copy of the state (a hint, as :func:`prefetch_next_pod_pairs`; how many draws
    m + 1 itself makes is known only once it has made them, hence one dispatcher ahead)."""
    if m + 1 >= dispatchers:
        return
    width = table.shape[1]
    s0, s1, s2, s3 = rng[0], rng[1], rng[2], rng[3]
    for _ in range(JBA_LOOKAHEAD):
        server, s0, s1, s2, s3 = alias_step(s0, s1, s2, s3, alias)
        prefetch(table, (m + 1) * width + server)


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
    """An LED dispatching strategy: a name, its compiled rule, its float parameters and
    what the theory knows of it (the capabilities :mod:`dispatchlab.theory.tilt` asks for).

    ``code`` identifies the three rules that the ``led`` policy runs through its cached
    compiled dispatch (L-JSQ, L-JBA, L-Pod); any other strategy — a registered one or a
    user rule — has ``code = -1`` and runs ``function``, compiled with
    :func:`strategy_function`. The defaults of the capability methods say "nothing
    exact is known": the tilt check then estimates P_n by Monte Carlo.
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
        """Whether the ``led`` policy runs this rule through its compiled built-in dispatch."""
        return self.code >= 0

    def exact_probabilities(self, estimates: np.ndarray, mu: np.ndarray,
                            order: np.ndarray) -> np.ndarray | None:
        """P_n, the probability that the rule picks server n given the estimates Q̃, the
        rates μ and the tie order σ (``order``); None when only Monte Carlo knows it."""
        return None

    def delta(self, mu: np.ndarray) -> float | None:
        """δ of docs/model.md#led-strategies on rates μ (None when the theory quotes none)."""
        return None

    def tilt_notes(self, mu: np.ndarray) -> list[str]:
        """Remarks the tilt check should print for rates μ."""
        return []


class JSQStrategy(Strategy):
    """L-JSQ: all probability on σ(1); δ = μ_min/μ_Σ."""

    def exact_probabilities(self, estimates: np.ndarray, mu: np.ndarray,
                            order: np.ndarray) -> np.ndarray:
        probabilities = np.zeros(mu.size)
        probabilities[order[0]] = 1.0
        return probabilities

    def delta(self, mu: np.ndarray) -> float:
        return float(mu.min() / mu.sum())


class JBAStrategy(Strategy):
    """L-JBA: μ-proportional below the (plain or μ-weighted) average, else σ(1);
    δ = (μ_min/μ_Σ)²."""

    def exact_probabilities(self, estimates: np.ndarray, mu: np.ndarray,
                            order: np.ndarray) -> np.ndarray:
        probabilities = np.zeros(mu.size)
        weights = mu if self.params[0] == JBA_WEIGHTED else np.ones(mu.size)
        average = float(np.dot(weights, estimates) / weights.sum())
        below = estimates < average
        if below.any():
            probabilities[below] = mu[below] / mu[below].sum()
        else:
            probabilities[order[0]] = 1.0
        return probabilities

    def delta(self, mu: np.ndarray) -> float:
        return float(mu.min() / mu.sum()) ** 2


class PodStrategy(Strategy):
    """L-Pod: the rank-r server wins with C(N−1−r, d−1)/C(N, d); δ = 1/N when homogeneous."""

    def exact_probabilities(self, estimates: np.ndarray, mu: np.ndarray,
                            order: np.ndarray) -> np.ndarray:
        n_servers = mu.size
        d = min(int(self.params[0]), n_servers)
        # the server of rank r (0-based) wins iff it is sampled and the other d−1 samples
        # all rank after it: C(N−1−r, d−1)/C(N, d)
        winning = np.array([math.comb(n_servers - 1 - r, d - 1) for r in range(n_servers)],
                           dtype=float)
        probabilities = np.zeros(n_servers)
        probabilities[order] = winning / math.comb(n_servers, d)
        return probabilities

    def delta(self, mu: np.ndarray) -> float | None:
        return 1.0 / mu.size if np.allclose(mu, mu[0]) else None

    def tilt_notes(self, mu: np.ndarray) -> list[str]:
        if np.allclose(mu, mu[0]):
            return []
        return ["L-Pod is tilted only for homogeneous servers (docs/model.md#led-strategies)"]


# -- the registry of named strategies ----------------------------------------------------------

CODE_JSQ, CODE_JBA, CODE_POD = 0, 1, 2
JBA_AVERAGES = ("plain", "weighted")

StrategyFactory = Callable[..., Strategy]
_REGISTRY: dict[str, StrategyFactory] = {}


def register_strategy(name: str) -> Callable[[StrategyFactory], StrategyFactory]:
    """Register a factory ``(**options) -> Strategy`` under ``name`` (``strategy=name`` of
    the ``led`` policy and ``dispatchlab check tilt --strategy name``).

    The factory receives the ``led`` policy's options (``pod_d``, ``jba_average``, …) as
    keywords and ignores those it does not use. Re-registering a name replaces it (a
    re-run module).
    """

    def add(factory: StrategyFactory) -> StrategyFactory:
        _REGISTRY[name.strip().lower()] = factory
        return factory

    return add


def strategy_names() -> tuple[str, ...]:
    """The registered strategy names, in registration order (built-ins first)."""
    return tuple(_REGISTRY)


class RegisteredStrategyNames(Sequence[str]):
    """The registered names, read at each use: the ``choices`` of the ``led`` policy's
    ``strategy`` parameter, which a module imported later may extend."""

    def __getitem__(self, index):  # type: ignore[override]
        return strategy_names()[index]

    def __len__(self) -> int:
        return len(_REGISTRY)


STRATEGY_NAMES = RegisteredStrategyNames()


@register_strategy("jsq")
def _jsq(**options: Any) -> Strategy:
    return JSQStrategy("jsq", l_jsq, (), CODE_JSQ, "L-JSQ: smallest local estimate")


@register_strategy("jba")
def _jba(*, jba_average: str = "plain", **options: Any) -> Strategy:
    if jba_average not in JBA_AVERAGES:
        raise ValidationError("jba_average", f"allowed: {', '.join(JBA_AVERAGES)} "
                              f"(got {jba_average!r})")
    weighted = JBA_AVERAGES.index(jba_average)
    return JBAStrategy("jba", l_jba, (float(weighted),), CODE_JBA,
                       "L-JBA: μ-weighted choice below the average", {"jba_average": jba_average})


@register_strategy("pod")
def _pod(*, pod_d: int = 2, **options: Any) -> Strategy:
    if int(pod_d) < 1:
        raise ValidationError("pod_d", f"must be ≥ 1 (got {pod_d})")
    return PodStrategy("pod", l_pod, (float(pod_d),), CODE_POD,
                       f"L-Pod: shortest local estimate among {pod_d} sampled",
                       {"pod_d": int(pod_d)})


def builtin_strategy(name: str, *, pod_d: int = 2, jba_average: str = "plain",
                     **options: Any) -> Strategy:
    """The registered strategy ``name`` (jsq | jba | pod | a registered name) with its options."""
    key = name.strip().lower().removeprefix("l-")
    if key not in _REGISTRY:
        raise ValidationError("strategy", f"allowed: {', '.join(strategy_names())}, or a "
                              f"compiled strategy function (got {name!r})")
    return _REGISTRY[key](pod_d=pod_d, jba_average=jba_average, **options)


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


def as_strategy(strategy: Any, **options: Any) -> Strategy:
    """A registered name, a :class:`Strategy`, or a compiled user rule, as a Strategy."""
    if isinstance(strategy, Strategy):
        return strategy
    if isinstance(strategy, str):
        return builtin_strategy(strategy, **options)
    return custom_strategy(strategy)
