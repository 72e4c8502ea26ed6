"""Dispatching preference Δ, tilt and δ-tilt of LED strategies (docs/model.md#led-tilt).

For one dispatcher with estimates Q̃ and a tie-broken sorting order σ
(Q̃_σ(1) ≤ … ≤ Q̃_σ(N)), the dispatching preference is

    Δ_n = P_σ(n) − μ_σ(n)/μ_Σ ,   n = 1..N,   Σ_n Δ_n = 0,

the extra probability, over μ-weighted random routing, that the server with the
n-th smallest estimate receives the dispatcher's jobs. A strategy is *tilted* when
some prefix of ranks has Δ ≥ 0 and the rest Δ ≤ 0 (the proof of [LED] Thm 1 uses the
weaker partial-sum condition Σ_{n≤j} Δ_n ≥ 0, also checked), and *δ-tilted* when,
moreover, Δ₁ ≥ δ and Δ_N ≤ −δ in every state.

The strategy is any object with the capabilities of :class:`TiltStrategy` (the LED
policy's :class:`~dispatchlab.policies.led.strategies.Strategy` has them; this module
never imports the policies). Δ is exact when the strategy declares its dispatch
probabilities (L-JSQ, L-JBA, L-Pod; ties broken by σ as in the theory) and estimated by
Monte Carlo with its compiled rule otherwise (ties within the estimates
are then ordered most favourably: by decreasing estimated β_n). :func:`check_tilt`
searches estimate vectors — the all-equal state with every choice of σ(1), two-level
vectors over adversarial orderings (slow servers first, fast first, each server first)
and random vectors with ties — and reports the worst case it finds.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass, field
from typing import Any, Protocol

import numpy as np
from numba import types

from dispatchlab.compiled.lazy import compiled, lazy_function
from dispatchlab.compiled.rng import make_rng_state
from dispatchlab.compiled.signatures import STRATEGY_TYPE
from dispatchlab.core.errors import require

EXACT_TOLERANCE = 1e-12
MONTE_CARLO_SAMPLES = 20_000
MONTE_CARLO_SIGMAS = 4.0


class TiltStrategy(Protocol):
    """What the tilt check needs of a dispatching strategy.

    ``function`` is its rule (compiled with
    :data:`~dispatchlab.compiled.signatures.STRATEGY_SIGNATURE`), ``param_array``
    the rule's ``params``; ``exact_probabilities`` gives P_n for estimates Q̃, rates μ and
    tie order σ, or None (then P_n is estimated by Monte Carlo with ``function``);
    ``delta`` the δ quoted by the theory (or None); ``tilt_notes`` remarks to print.
    """

    name: str
    function: Any

    @property
    def param_array(self) -> np.ndarray: ...

    def exact_probabilities(self, estimates: np.ndarray, mu: np.ndarray,
                            order: np.ndarray) -> np.ndarray | None: ...

    def delta(self, mu: np.ndarray) -> float | None: ...

    def tilt_notes(self, mu: np.ndarray) -> list[str]: ...


# -- Δ for one state ---------------------------------------------------------------------------


def sorting_order(estimates: np.ndarray, tie_break: np.ndarray | None = None) -> np.ndarray:
    """σ: servers by increasing estimate, ties by ``tie_break`` rank (default: by index)."""
    estimates = np.asarray(estimates)
    ties = np.arange(estimates.size) if tie_break is None else np.asarray(tie_break)
    return np.lexsort((ties, estimates))


def _count_choices_py(strategy, estimates, mu, rng, params, scratch, samples, counts):
    work = estimates.copy()
    for _ in range(samples):
        for n in range(work.size):
            work[n] = estimates[n]
        counts[strategy(work, mu, rng, params, scratch)] += 1


_count_choices = lazy_function(_count_choices_py, types.void(
    STRATEGY_TYPE, types.int64[::1], types.float64[::1], types.uint64[::1], types.float64[::1],
    types.int64[::1], types.int64, types.int64[::1]))


def monte_carlo_dispatch_probabilities(strategy: TiltStrategy, estimates: np.ndarray,
                                       mu: np.ndarray, *, samples: int = MONTE_CARLO_SAMPLES,
                                       seed: int = 0) -> np.ndarray:
    """P_n estimated by running the compiled rule ``samples`` times on ``estimates``."""
    counts = np.zeros(mu.size, np.int64)
    count_choices = compiled(_count_choices, only=True)
    count_choices(compiled(strategy.function), np.ascontiguousarray(estimates, dtype=np.int64),
                  np.ascontiguousarray(mu, dtype=np.float64), make_rng_state(seed),
                  strategy.param_array, np.zeros(mu.size, np.int64), int(samples), counts)
    require(counts.min() >= 0 and counts.sum() == samples, "strategy",
            "the strategy returned a server outside 0..N−1")
    return counts / samples


def preference(strategy: TiltStrategy, estimates: Any, mu: Any,
               order: np.ndarray | None = None, *, samples: int = MONTE_CARLO_SAMPLES,
               seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """Δ (by rank) of ``strategy`` in the state ``estimates``, and the order σ used.

    A strategy with exact probabilities: ties broken by ``order`` (default: by server
    index). Otherwise Monte Carlo over ``samples`` calls; ties ordered most favourably.
    """
    estimates = np.asarray(estimates, dtype=np.int64)
    mu = np.asarray(mu, dtype=float)
    require(estimates.shape == mu.shape, "estimates", "need one estimate per server")
    tie_order = sorting_order(estimates) if order is None else np.asarray(order)
    probabilities = strategy.exact_probabilities(estimates, mu, tie_order)
    if probabilities is not None:
        order = tie_order
    else:
        probabilities = monte_carlo_dispatch_probabilities(strategy, estimates, mu,
                                                           samples=samples, seed=seed)
        beta = probabilities - mu / mu.sum()
        order = np.lexsort((-beta, estimates))
    return probabilities[order] - mu[order] / mu.sum(), order


def is_tilted(delta: np.ndarray, tolerance: float | np.ndarray = EXACT_TOLERANCE) -> bool:
    """Sign pattern: Δ_n ≥ 0 on a prefix of ranks and Δ_n ≤ 0 after it."""
    tolerance = np.broadcast_to(tolerance, delta.shape)
    negative = np.flatnonzero(delta < -tolerance)
    if negative.size == 0:
        return True
    return not bool(np.any(delta[negative[0]:] > tolerance[negative[0]:]))


def partial_sums_hold(delta: np.ndarray, tolerance: float = EXACT_TOLERANCE) -> bool:
    """Σ_{n≤j} Δ_n ≥ 0 for all j (what Eq. (15) of the proof needs)."""
    return bool(np.all(np.cumsum(delta) >= -tolerance))


# -- worst-case search ---------------------------------------------------------------------------


@dataclass
class Case:
    """One searched state: estimates, the order σ, and Δ by rank."""

    estimates: list[int]
    order: list[int]
    delta: list[float]
    label: str


@dataclass
class TiltReport:
    """Verdict of :func:`check_tilt` over the searched states."""

    strategy: str
    servers: list[float]
    method: str  # exact | monte-carlo
    cases: int
    tilted: bool
    partial_sums_hold: bool
    delta_tilted: bool
    delta: float  # the largest δ the searched states allow (0 when not δ-tilted)
    min_delta_1: float  # min over states of Δ₁
    min_minus_delta_n: float  # min over states of −Δ_N
    delta_theory: float | None  # δ quoted in docs/model.md#led-strategies (None when none applies)
    max_abs_delta_sum: float  # |Σ_n Δ_n|, 0 up to rounding (or sampling)
    worst_case: Case
    failing_case: Case | None = None
    notes: list[str] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def _orders(mu: np.ndarray, rng: np.random.Generator,
            random_orders: int) -> list[tuple[str, np.ndarray]]:
    """Adversarial and random permutations of the servers."""
    n = mu.size
    ascending = np.argsort(mu, kind="stable")
    descending = ascending[::-1].copy()
    orders = [("slow first", ascending), ("fast first", descending)]
    # each distinct rate first, followed by the others fast-to-slow (slowest last) and
    # slow-to-fast: the extremes of Δ₁ and Δ_N for threshold rules
    for value in np.unique(mu):
        lead = int(np.flatnonzero(mu == value)[0])
        rest_desc = descending[descending != lead]
        rest_asc = ascending[ascending != lead]
        orders.append((f"server {lead} first, rest fast first", np.r_[lead, rest_desc]))
        orders.append((f"server {lead} first, rest slow first", np.r_[lead, rest_asc]))
    alternate = np.empty(n, np.int64)
    alternate[0::2] = ascending[: (n + 1) // 2]
    alternate[1::2] = descending[: n // 2]
    orders.append(("alternating slow/fast", alternate))
    for i in range(random_orders):
        orders.append((f"random order {i}", rng.permutation(n)))
    return orders


def _states(mu: np.ndarray, *, random_orders: int, random_vectors: int, max_levels: int,
            seed: int):
    """(label, estimates, order) triples to search."""
    rng = np.random.default_rng(seed)
    n = mu.size
    orders = _orders(mu, rng, random_orders)
    for label, order in orders:
        yield f"all equal, {label}", np.zeros(n, np.int64), order
    # two-level vectors: the first k servers of an order at 0, the others at 1
    ks = range(1, n) if n <= max_levels else np.unique(np.linspace(1, n - 1, max_levels,
                                                                 dtype=int))
    for label, order in orders:
        for k in ks:
            estimates = np.ones(n, np.int64)
            estimates[order[:k]] = 0
            tie_rank = np.empty(n, np.int64)
            tie_rank[order] = np.arange(n)
            yield f"two-level k={k}, {label}", estimates, sorting_order(estimates, tie_rank)
    for i in range(random_vectors):
        high = int(rng.choice([2, 4, 50]))
        estimates = rng.integers(0, high, n).astype(np.int64)
        yield f"random vector {i}", estimates, sorting_order(estimates, rng.permutation(n))


def check_tilt(strategy: TiltStrategy, mu: Any, *, random_orders: int = 8,
               random_vectors: int = 200, max_levels: int = 60,
               samples: int = MONTE_CARLO_SAMPLES, seed: int = 0) -> TiltReport:
    """Search estimate vectors for the worst Δ₁, the worst −Δ_N and any tilt violation."""
    require(isinstance(seed, int) and seed >= 0, "seed", f"must be an integer ≥ 0 (got {seed!r})")
    mu = np.asarray(mu, dtype=float)
    require(mu.ndim == 1 and mu.size >= 1 and bool(np.all(mu > 0)), "servers",
            "need N ≥ 1 positive service rates")
    exact = strategy.exact_probabilities(np.zeros(mu.size, np.int64), mu,
                                         np.arange(mu.size)) is not None
    if not exact:  # Monte Carlo: fewer states, each costs `samples` calls
        random_orders, random_vectors, max_levels = min(random_orders, 2), min(
            random_vectors, 30), min(max_levels, 12)
    min_d1, min_dn = math.inf, math.inf
    worst: Case | None = None
    worst_value = math.inf
    failing: Case | None = None
    tilted = sums_ok = True
    max_sum = 0.0
    cases = 0
    for label, estimates, order in _states(mu, random_orders=random_orders,
                                           random_vectors=random_vectors,
                                           max_levels=max_levels, seed=seed):
        delta, used = preference(strategy, estimates, mu, order, samples=samples,
                                 seed=seed + cases)
        cases += 1
        if exact:
            tolerance: float | np.ndarray = EXACT_TOLERANCE
            sum_tolerance = EXACT_TOLERANCE
        else:
            p = np.clip(delta + mu[used] / mu.sum(), 0.0, 1.0)
            tolerance = MONTE_CARLO_SIGMAS * np.sqrt(np.maximum(p * (1 - p), 1.0 / samples)
                                                     / samples)
            sum_tolerance = float(np.sum(tolerance))
        max_sum = max(max_sum, abs(float(delta.sum())))
        case = Case(estimates.tolist(), [int(i) for i in used], delta.tolist(), label)
        ok_sign = is_tilted(delta, tolerance)
        ok_sums = partial_sums_hold(delta, sum_tolerance)
        if (not ok_sign or not ok_sums) and failing is None:
            failing = case
        tilted &= ok_sign
        sums_ok &= ok_sums
        min_d1 = min(min_d1, float(delta[0]))
        min_dn = min(min_dn, float(-delta[-1]))
        value = min(float(delta[0]), float(-delta[-1]))
        if value < worst_value:
            worst_value, worst = value, case
    bound = min(min_d1, min_dn)
    threshold = EXACT_TOLERANCE if exact else 1.0 / math.sqrt(samples)
    delta_tilted = tilted and bound > threshold
    notes = []
    if not exact:
        notes.append(f"Monte Carlo: {samples} calls per state; sign tests allow "
                     f"{MONTE_CARLO_SIGMAS:g} standard errors; tied servers are ranked most "
                     "favourably, and a rule that randomises among ties is credited with the "
                     "tie-averaged probability (so δ is conservative in tied states)")
    notes.extend(strategy.tilt_notes(mu))
    assert worst is not None
    return TiltReport(
        strategy=strategy.name, servers=mu.tolist(), method="exact" if exact else "monte-carlo",
        cases=cases, tilted=tilted, partial_sums_hold=sums_ok, delta_tilted=delta_tilted,
        delta=bound if delta_tilted else 0.0, min_delta_1=min_d1, min_minus_delta_n=min_dn,
        delta_theory=strategy.delta(mu) if exact else None, max_abs_delta_sum=max_sum,
        worst_case=worst if failing is None else failing, failing_case=failing, notes=notes,
    )
