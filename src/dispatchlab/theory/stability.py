"""Stability of framework-Π policies from their dispatch fractions ([Π] Eq. (3);
docs/model.md#pi-stability, docs/model.md#stability-thresholds).

A Π policy enters the theory only through its induced dispatch fractions a_l(η)
(docs/model.md#pi-fractions): the long-run fraction of a cycle's slots sent to the queue
ranked l-th longest when the sampled scaled order is η. Everything here is a pure function
of those fractions and the service rates μ.

Three shapes of fractions are handled (:class:`DispatchFractions`):

``rank``    a_l(η) = r_l depends on the rank l only (RAND, RR, JSQ, JSED, Po-d,
            k-SLQ-d, their periodic versions). The minimum over η of Eq. (3)
            puts the m slowest servers on top, so
            λ̄ = min_m Σ_{i≤m} μ_(i) / Σ_{l≤m} r_l   (μ ascending).
``server``  a_l(η) = w_{η(l)} depends on the server only (weighted RAND, balanced
            RR). A ratio of sums over a set is at least the smallest ratio, so
            λ̄ = min_j μ_j / w_j.
``order``   any a(η), given as a function of η; Eq. (3) is minimised by
            enumerating all η ∈ S_n (N ≤ :data:`MAX_ENUMERATION`).

Conventions: servers are indexed 0..N−1 in the system's order; a permutation η
is an integer array with η[0] the longest scaled queue and η[N−1] the shortest
(the paper's η(1) … η(n)). Rates are totals: λ_Σ = nλ.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np

from dispatchlab.core.errors import require

MAX_ENUMERATION = 8
KINDS = ("rank", "server", "order")
_TOL = 1e-9


@dataclass(frozen=True)
class DispatchFractions:
    """Induced dispatch fractions a_l(η) of a Π policy (docs/model.md#pi-fractions).

    Attributes:
        kind: ``rank``, ``server`` or ``order`` (see the module docstring).
        values: r_l by rank (longest first) for ``rank``; w_j by server for ``server``.
        of_order: η ↦ (a_1(η), …, a_N(η)) for ``order``.
        method: how the numbers were obtained (``exact`` or ``monte-carlo (…)``).
    """

    kind: str
    values: np.ndarray | None = None
    of_order: Callable[[np.ndarray], np.ndarray] | None = field(default=None, compare=False)
    method: str = "exact"

    def __post_init__(self) -> None:
        require(self.kind in KINDS, "fractions", f"kind must be one of {', '.join(KINDS)}")
        if self.kind == "order":
            require(self.of_order is not None, "fractions", "kind 'order' needs of_order")
        else:
            require(self.values is not None, "fractions", f"kind {self.kind!r} needs values")
            values = np.asarray(self.values, dtype=float)
            require(bool(np.all(values >= -_TOL)) and abs(values.sum() - 1.0) < 1e-6,
                    "fractions", f"fractions must be ≥ 0 and sum to 1 (sum {values.sum():.6g})")

    def at(self, eta: np.ndarray) -> np.ndarray:
        """a_l(η) for l = 1..N (index l−1), η[0] the longest queue."""
        eta = np.asarray(eta)
        if self.kind == "rank":
            return np.asarray(self.values, dtype=float)
        if self.kind == "server":
            return np.asarray(self.values, dtype=float)[eta]
        return np.asarray(self.of_order(eta), dtype=float)

    @property
    def rank_symmetric(self) -> bool:
        return self.kind == "rank"


@dataclass(frozen=True)
class StabilityRegion:
    """What Eq. (3) and its corollaries say about one Π policy on rates μ.

    Attributes:
        threshold_rate: λ̄, the induced threshold on the total arrival rate λ_Σ = nλ.
        threshold_load: ρ̄ = λ̄/μ_Σ.
        bottleneck: the servers (0-based) of a minimising top set, slowest first.
        bottleneck_m: its size m*.
        bottleneck_order: a minimising permutation η* (longest first).
        throughput_optimal: λ̄ = μ_Σ, i.e. the majorisation of docs/model.md#pi-throughput
            holds.
        strict_margin: min over η and m ≤ N−1 of Σ_{l≤m} μ_{η(l)}/μ_Σ − Σ_{l≤m} a_l(η);
            > 0 is the strict majorisation that [Π] Theorem 4.4 needs for heavy-traffic
            optimality (docs/model.md#pi-heavy-traffic).
        exact: λ̄ is exactly the stability threshold: the transience condition of
            docs/model.md#pi-transience holds just above it (no gap above λ̄) **and** the
            fractions a_l(η) are exact. Always False for Monte-Carlo fractions (a user
            decision), whose λ̄ is an estimate.
        estimated: the fractions were estimated by Monte Carlo (see ``method``).
        method: how the minimum was found.
    """

    threshold_rate: float
    threshold_load: float
    mu_sum: float
    bottleneck: tuple[int, ...]
    bottleneck_m: int
    bottleneck_order: tuple[int, ...]
    throughput_optimal: bool
    strict_margin: float
    exact: bool
    method: str
    estimated: bool = False

    @property
    def heavy_traffic_optimal(self) -> bool:
        """The strict majorisation hypothesis of [Π] Theorem 4.4
        (docs/model.md#pi-heavy-traffic)."""
        return self.strict_margin > _TOL

    def verdict(self, rate: float) -> str:
        """``stable`` below λ̄; above it ``transient`` when the condition of
        docs/model.md#pi-transience applies, else ``unknown``. Whatever the policy,
        λ_Σ > μ_Σ is ``transient`` (ΣQ grows at rate λ_Σ − μ_Σ) and λ_Σ = μ_Σ is
        ``unstable`` (no policy is positive recurrent there).

        λ_Σ and μ_Σ are compared exactly (both are the model's own numbers: a system at
        ρ = 1 − 5·10⁻¹⁰ is below μ_Σ), and a throughput-optimal policy is stable at every
        λ_Σ < μ_Σ; only a threshold λ̄ < μ_Σ, a sum of fractions with its rounding, is
        given a relative margin of 10⁻⁹ (within it: ``unknown``)."""
        if rate > self.mu_sum:
            return "transient"
        if rate == self.mu_sum:
            return "unstable"
        if self.throughput_optimal or rate < self.threshold_rate * (1 - _TOL):
            return "stable"
        if rate > self.threshold_rate * (1 + _TOL) and self.exact:
            return "transient"
        return "unknown"

    def to_dict(self) -> dict[str, object]:
        return {
            "threshold_rate": self.threshold_rate,
            "threshold_load": self.threshold_load,
            "mu_sum": self.mu_sum,
            "bottleneck": list(self.bottleneck),
            "bottleneck_m": self.bottleneck_m,
            "bottleneck_order": list(self.bottleneck_order),
            "throughput_optimal": self.throughput_optimal,
            "heavy_traffic_optimal": self.heavy_traffic_optimal,
            "strict_margin": self.strict_margin if math.isfinite(self.strict_margin) else None,
            "exact": self.exact,
            "estimated": self.estimated,
            "method": self.method,
        }


def _rates(mu: np.ndarray | list[float] | tuple[float, ...]) -> np.ndarray:
    rates = np.asarray(mu, dtype=float)
    require(rates.ndim == 1 and rates.size >= 1 and bool(np.all(rates > 0)), "servers",
            "need at least one service rate, all > 0")
    return rates


def _check_size(fractions: DispatchFractions, n: int) -> None:
    if fractions.kind != "order":
        require(np.asarray(fractions.values).size == n, "fractions",
                f"need {n} fractions, one per {'rank' if fractions.kind == 'rank' else 'server'}")


def all_orders(n: int) -> np.ndarray:
    """Every permutation of 0..n−1 as rows (n ≤ :data:`MAX_ENUMERATION`)."""
    require(n <= MAX_ENUMERATION, "servers",
            f"exact enumeration of S_n needs N ≤ {MAX_ENUMERATION} (got {n})")
    return np.array(list(itertools.permutations(range(n))), dtype=np.int64).reshape(-1, n)


def _fraction_table(fractions: DispatchFractions, orders: np.ndarray) -> np.ndarray:
    return np.array([fractions.at(eta) for eta in orders]).reshape(orders.shape)


def induced_threshold(fractions: DispatchFractions, mu) -> StabilityRegion:
    """λ̄ of Eq. (3) with its bottleneck, the throughput-optimality test and exactness."""
    region = _induced_threshold(fractions, mu)
    if fractions.method == "exact":
        return region
    return _replace_exact(region, False, estimated=True)  # λ̄ of Monte-Carlo fractions


def _induced_threshold(fractions: DispatchFractions, mu) -> StabilityRegion:
    rates = _rates(mu)
    n = rates.size
    _check_size(fractions, n)
    mu_sum = float(rates.sum())
    if fractions.kind == "rank":
        return _rank_threshold(np.asarray(fractions.values, float), rates, fractions.method)
    if fractions.kind == "server":
        return _server_threshold(np.asarray(fractions.values, float), rates, fractions.method)
    orders = all_orders(n)
    table = _fraction_table(fractions, orders)
    served = np.cumsum(rates[orders], axis=1)
    sent = np.cumsum(table, axis=1)
    with np.errstate(divide="ignore", invalid="ignore"):
        ratio = np.where(sent > _TOL, served / np.where(sent > _TOL, sent, 1.0), np.inf)
    best = float(ratio.min())
    k, m0 = np.unravel_index(int(np.argmin(ratio)), ratio.shape)
    margin = float((served[:, :-1] / mu_sum - sent[:, :-1]).min()) if n > 1 else math.inf
    region = StabilityRegion(
        threshold_rate=best, threshold_load=best / mu_sum, mu_sum=mu_sum,
        bottleneck=_slowest_first(orders[k, : m0 + 1], rates), bottleneck_m=int(m0 + 1),
        bottleneck_order=tuple(int(x) for x in orders[k]),
        throughput_optimal=best >= mu_sum * (1 - 1e-9), strict_margin=margin, exact=False,
        method=f"enumeration of all {orders.shape[0]} orders ({fractions.method} fractions)",
    )
    certified = transience_certificate(fractions, rates, best * (1 + 1e-6), orders=orders,
                                       table=table) is not None
    return _replace_exact(region, certified and not region.throughput_optimal)


def _replace_exact(region: StabilityRegion, exact: bool, *,
                   estimated: bool | None = None) -> StabilityRegion:
    from dataclasses import replace

    return replace(region, exact=exact,
                   estimated=region.estimated if estimated is None else estimated)


def _slowest_first(servers: np.ndarray, rates: np.ndarray) -> tuple[int, ...]:
    return tuple(int(j) for j in sorted(servers, key=lambda j: (rates[j], j)))


def _rank_threshold(r: np.ndarray, rates: np.ndarray, method: str) -> StabilityRegion:
    """Rank-symmetric shortcut: the m slowest servers on top of the order."""
    n = rates.size
    ascending = np.argsort(rates, kind="stable")
    served = np.cumsum(rates[ascending])
    sent = np.cumsum(r)
    mu_sum = float(served[-1])
    ratio = np.where(sent > _TOL, served / np.where(sent > _TOL, sent, 1.0), np.inf)
    best = float(ratio.min())
    # the largest minimising m: the union of all minimising top sets (e.g. every slowest
    # server for RAND, not just one of them)
    m0 = int(np.flatnonzero(ratio <= best * (1 + 1e-9))[-1])
    # the minimiser's order: the m slowest on top (slowest first), the rest after
    order = tuple(int(j) for j in ascending)
    margin = float((served[:-1] / mu_sum - sent[:-1]).min()) if n > 1 else math.inf
    throughput_optimal = best >= mu_sum * (1 - 1e-9)
    return StabilityRegion(
        threshold_rate=best, threshold_load=best / mu_sum, mu_sum=mu_sum,
        bottleneck=tuple(int(j) for j in ascending[: m0 + 1]), bottleneck_m=m0 + 1,
        bottleneck_order=order, throughput_optimal=throughput_optimal, strict_margin=margin,
        # condition (i) of docs/model.md#pi-transience holds for every rank-symmetric policy
        # and (ii) follows from h* < 0
        exact=not throughput_optimal, method=f"rank-symmetric shortcut ({method} fractions)",
    )


def _server_threshold(w: np.ndarray, rates: np.ndarray, method: str) -> StabilityRegion:
    """Server-fixed fractions: the minimum ratio of sums is a minimum single ratio."""
    mu_sum = float(rates.sum())
    ratio = np.where(w > _TOL, rates / np.where(w > _TOL, w, 1.0), np.inf)
    best = float(ratio.min())
    bottleneck = np.flatnonzero(ratio <= best * (1 + 1e-9))
    # strict margin over proper top sets S: Σ_S (μ_j/μ_Σ − w_j) is smallest for the set of
    # negative terms; the terms sum to 0, so with none negative they are all 0
    slack = rates / mu_sum - w
    margin = float(slack[slack < 0].sum()) if rates.size > 1 else math.inf
    order = list(_slowest_first(bottleneck, rates))
    listed = set(order)  # a set: with every server a bottleneck, a list test is O(N²)
    order += [j for j in _slowest_first(np.arange(rates.size), rates) if j not in listed]
    throughput_optimal = best >= mu_sum * (1 - 1e-9)
    return StabilityRegion(
        threshold_rate=best, threshold_load=best / mu_sum, mu_sum=mu_sum,
        bottleneck=_slowest_first(bottleneck, rates), bottleneck_m=int(bottleneck.size),
        bottleneck_order=tuple(order), throughput_optimal=throughput_optimal,
        strict_margin=margin, exact=not throughput_optimal,
        method=f"server-fixed fractions, min_j μ_j/w_j ({method})",
    )


def eq3_objective(fractions: DispatchFractions, mu, rate: float) -> tuple[float, np.ndarray,
                                                                              np.ndarray]:
    """h(η, m) = Σ_{l≤m} μ_{η(l)} − λ_Σ·Σ_{l≤m} a_l(η) for every η (rows) and m (columns),
    by enumeration; returns (h*, the orders, the h table)."""
    rates = _rates(mu)
    orders = all_orders(rates.size)
    table = _fraction_table(fractions, orders)
    h = np.cumsum(rates[orders], axis=1) - rate * np.cumsum(table, axis=1)
    return float(h.min()), orders, h


def transience_certificate(fractions: DispatchFractions, mu, rate: float, *,
                           orders: np.ndarray | None = None,
                           table: np.ndarray | None = None) -> tuple[tuple[int, ...], int] | None:
    """A minimiser (η†, m†) of [Π] Eq. (3) meeting conditions (i) and (ii) of
    docs/model.md#pi-transience at total rate λ_Σ, or None.

    (i) Σ_{l≤m†} a_l(η) is the same for every η with the same top-m† set;
    (ii) λ_Σ·Σ_{l≤m†} a_l(η†) exceeds the service rate of the m† slowest servers.
    Only meaningful when h* < 0; returns None otherwise. Exact for the ``rank`` and
    ``server`` kinds, by enumeration (N ≤ :data:`MAX_ENUMERATION`) for ``order``.
    """
    rates = _rates(mu)
    n = rates.size
    slowest = np.cumsum(np.sort(rates))
    if fractions.kind == "rank":
        region = _rank_threshold(np.asarray(fractions.values, float), rates, fractions.method)
        if rate <= region.threshold_rate * (1 + 1e-12):
            return None
        m = region.bottleneck_m
        return region.bottleneck_order, m
    if fractions.kind == "server":
        region = _server_threshold(np.asarray(fractions.values, float), rates, fractions.method)
        if rate <= region.threshold_rate * (1 + 1e-12):
            return None
        # h(S) = Σ_S (μ_j − λ w_j) is minimised by the set of negative terms
        terms = rates - rate * np.asarray(fractions.values, float)
        top = np.flatnonzero(terms < 0)
        order = list(_slowest_first(top, rates))
        order += [j for j in range(n) if j not in order]
        return tuple(order), int(top.size)
    if orders is None or table is None:
        orders = all_orders(n)
        table = _fraction_table(fractions, orders)
    sent = np.cumsum(table, axis=1)
    h = np.cumsum(rates[orders], axis=1) - rate * sent
    h_star = float(h.min())
    if h_star >= 0:
        return None
    scale = max(1.0, float(np.abs(h).max()))
    tolerance = 1e-9 * scale if fractions.method == "exact" else 1e-3 * scale
    for k, m0 in zip(*np.nonzero(h <= h_star + tolerance), strict=True):
        top = frozenset(orders[k, : m0 + 1].tolist())
        same_top = [i for i in range(orders.shape[0])
                    if frozenset(orders[i, : m0 + 1].tolist()) == top]
        values = sent[same_top, m0]
        spread_ok = float(values.max() - values.min()) <= (
            1e-9 if fractions.method == "exact" else 2e-2)
        if spread_ok and rate * sent[k, m0] > slowest[m0]:
            return tuple(int(x) for x in orders[k]), int(m0 + 1)
    return None


def majorisation_holds(fractions: DispatchFractions, mu) -> bool:
    """Σ_{l≤m} a_l(η) ≤ Σ_{l≤m} μ_{η(l)}/μ_Σ for every η and m: throughput optimality
    (docs/model.md#pi-throughput)."""
    return induced_threshold(fractions, mu).throughput_optimal


def rank_fractions_pod(n: int, d: int) -> np.ndarray:
    """Po-d by rank (longest first): a_l = C(l−1, d−1)/C(n, d) (docs/model.md#pi-members)."""
    require(1 <= d <= n, "d", f"d must be between 1 and N = {n} (got {d})")
    total = math.comb(n, d)
    return np.array([math.comb(l - 1, d - 1) / total for l in range(1, n + 1)])


def rank_fractions_kslq(n: int, d: int) -> np.ndarray:
    """k-SLQ-d by rank: 0 for the d longest, 1/(n−d) for the others (any k;
    docs/model.md#pi-members)."""
    require(0 <= d < n, "d", f"k-SLQ-d needs 0 ≤ d < N = {n} (got {d})")
    return np.array([0.0] * d + [1.0 / (n - d)] * (n - d))


def pod_threshold(mu, d: int) -> float:
    """Closed form of [HLM] (docs/model.md#stability-thresholds):
    λ_Σ* = min_m Σ_{i≤m} μ_i / (C(m,d)/C(N,d)), μ ascending."""
    rates = np.sort(_rates(mu))
    n = rates.size
    served = np.cumsum(rates)
    total = math.comb(n, d)
    return float(min(served[m - 1] / (math.comb(m, d) / total)
                     for m in range(d, n + 1)))


def kslq_throughput_optimal(mu, d: int) -> bool:
    """k-SLQ-d is throughput optimal iff (m−d)/(n−d) ≤ Σ_{i≤m} μ_i/μ_Σ for all m > d
    (docs/model.md#pi-members)."""
    rates = np.sort(_rates(mu))
    n = rates.size
    share = np.cumsum(rates) / rates.sum()
    return all((m - d) / (n - d) <= share[m - 1] + 1e-12 for m in range(d + 1, n + 1))
