"""E[q], the stationary mean of the resource-pooled queue, computed rather than sampled: the
anchor of the coupled estimator E[ΣQ] = E[q] + E[X] (docs/statistics.md#coupled).

The pooled queue q(t+1) = max(q(t) + A_Σ(t) − S_Σ(t), 0), S_Σ = Σ_n S_n, is a reflected
random walk whose increments D = A_Σ − S_Σ are i.i.d. with mean −ε
(docs/model.md#pooled-queue). Its law depends on the arrival and service laws alone, not on
the policy, the dispatchers or the dispatch mode.

**Exact** (:func:`pooled_queue_mean`, method ``exact``): the stationary law on
{0, …, L} by a banded solve, closed above L by the geometric tail π_k = π_L·r^(k−L) that
every such walk has far from 0 (r = e^(−θ*), θ* > 0 the root of log E[e^(θD)] = 0; the
other terms of π decay at rates bounded away from r uniformly in ε). L is a multiple of
the width of D's law, independent of ε, so ε = 10⁻⁵ costs what ε = 0.1 costs. The
solve runs at L and 2L; ``error`` is their difference plus the solve's rounding
(``ROUNDING``; the truncation of the laws' tails at 10⁻¹⁸ is below both).

**Bounded** (method ``bounded``), where the solve would be too large (wide increment laws,
many servers): the identity E[q] = (E[D²] − E[U²])/(2ε), U the pooled queue's unused
service, with ε² ≤ E[U²] ≤ u_max·ε (E[U] = ε and U ≤ u_max = S_Σ,max − A_Σ,min): the
midpoint, and half the width as ``error``. It needs bounded service.

**Unavailable** otherwise (trace arrivals, which are not i.i.d.; unbounded service too wide
to solve; ε ≤ 0): ``value`` is NaN and ``method`` says why; the simulation then reports the
plain estimator.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np

from dispatchlab.model.system import System
from dispatchlab.theory.pmf import binom_pmf, convolve, nbinom_pmf, poisson_pmf
from dispatchlab.theory.roots import brentq

#: laws are cut where the mass beyond is below this
TAIL_MASS = 1e-18
#: the banded solve runs on L = TRUNCATION_WIDTHS × (width of D's law) states, and on 2L
#: (8, 12 and 24 widths agree to 10⁻¹² relative on single queues and N = 10 … 1000)
TRUNCATION_WIDTHS = 8
#: above this many increment values (D's support) the exact solve is skipped: its cost
#: grows as width³ (about a second at this width)
MAX_EXACT_WIDTH = 800
#: the relative rounding error of the solve, added to ``error`` (measured: ≤ 6·10⁻¹² against
#: the closed forms of single queues at ρ up to 1 − 3·10⁻⁵)
ROUNDING = 1e-10
#: distinct service rates the pooled service law is built from (one group each)
MAX_RATE_GROUPS = 2_000
#: up to this many states the solve is numpy's dense LU (≤ 25 ms; a run of ten or twenty
#: servers), above it scipy's banded LU (importing scipy.linalg costs a warm run ~0.25 s)
DENSE_SOLVE_STATES = 1_200


@dataclass(frozen=True)
class PooledMean:
    """E[q] of the pooled queue: ``value``, a half-width ``error`` within which the true
    value lies, and ``method`` (``exact``, ``bounded``, or ``unavailable: why``); for an
    exact one also its stationary law, π on {0, …, L} (``law``, normalised with the tail)
    and the tail's ratio r (π_k = π_L·r^(k−L) above L), to draw a stationary q(0) from."""

    value: float
    error: float
    method: str
    law: np.ndarray | None = field(default=None, repr=False, compare=False)
    tail_ratio: float = math.nan

    @property
    def available(self) -> bool:
        return math.isfinite(self.value)

    def sample(self, rng: np.random.Generator) -> int:
        """q drawn from the stationary law (exact results only)."""
        if self.law is None:
            raise ValueError(f"no stationary law to draw from: E[q] {self.method}")
        law, ratio = self.law, self.tail_ratio
        u = rng.random()
        head = float(law.sum())
        if u < head:
            return int(min(np.searchsorted(np.cumsum(law), u, side="right"), law.size - 1))
        # the tail L + k, k ≥ 1, with P ∝ r^k: a geometric number of steps
        return int(law.size - 1 + rng.geometric(-math.expm1(math.log(ratio))))


def _unavailable(why: str) -> PooledMean:
    return PooledMean(math.nan, math.nan, f"unavailable: {why}")


def _trim(pmf: np.ndarray, first: int) -> tuple[np.ndarray, int]:
    """``pmf`` on first, first + 1, … without the tails of mass below TAIL_MASS."""
    pmf = np.clip(np.asarray(pmf, dtype=float), 0.0, None)
    cdf = np.cumsum(pmf)
    total = cdf[-1]
    low = int(np.searchsorted(cdf, TAIL_MASS * total, side="right"))
    high = int(np.searchsorted(cdf, total * (1 - TAIL_MASS), side="left"))
    high = max(low, min(high, pmf.size - 1))
    kept = pmf[low:high + 1]
    return kept / kept.sum(), first + low


def _poisson_top(lam: float) -> int:
    """A value beyond which Poisson(λ) has mass below TAIL_MASS/10."""
    return int(lam + 14 * math.sqrt(lam) + 45)


def _binomial_top(trials: int, p: float) -> int:
    """A value beyond which Binomial(K, p) has mass below TAIL_MASS/10 (or K)."""
    mean = trials * p
    return int(min(trials, mean + 14 * math.sqrt(mean * (1 - p)) + 45))


def _too_wide(system: System) -> bool:
    """Whether D's law certainly spans more than MAX_EXACT_WIDTH values: checked before any
    pmf is built (a law of 10¹⁷ values must not be allocated). Each law's trimmed support
    spans at least ~15 standard deviations."""
    spread = math.sqrt(system.arrivals.variance) + math.sqrt(
        float(np.sum(system.service_variances)))
    return not math.isfinite(spread) or 15 * spread > MAX_EXACT_WIDTH


def arrival_pmf(system: System) -> tuple[np.ndarray, int] | None:
    """The law of A_Σ as (pmf, first value); None for a trace."""
    law, lam = system.arrivals.law, float(system.arrival_rate)
    if law == "poisson":
        return _trim(poisson_pmf(np.arange(_poisson_top(lam) + 1), lam), 0)
    if law == "bernoulli":
        return np.array([1 - lam, lam]), 0
    if law == "binomial":
        trials = system.arrivals.trials
        top = _binomial_top(trials, lam / trials)
        return _trim(binom_pmf(np.arange(top + 1), trials, lam / trials), 0)
    if law == "deterministic":
        return np.ones(1), int(round(lam))
    return None


def service_pmf(system: System) -> tuple[np.ndarray, int] | str:
    """The law of S_Σ = Σ_n S_n as (pmf, first value), or why it is not built."""
    kind = system.service.kind
    mu = np.asarray(system.mu, dtype=float)
    if kind == "deterministic":
        return np.ones(1), int(round(mu.sum()))
    if kind == "poisson":
        total = float(mu.sum())
        return _trim(poisson_pmf(np.arange(_poisson_top(total) + 1), total), 0)
    rates, counts = np.unique(mu, return_counts=True)
    if rates.size > MAX_RATE_GROUPS:
        return f"more than {MAX_RATE_GROUPS:,} distinct service rates"
    pmf, first = np.ones(1), 0
    for rate, count in zip(rates, counts, strict=True):
        if kind == "bernoulli":
            group = binom_pmf(np.arange(count + 1), count, rate)
        elif kind == "binomial":
            trials = int(count) * system.service.trials
            p = rate / system.service.trials
            group = binom_pmf(np.arange(_binomial_top(trials, p) + 1), trials, p)
        else:  # geometric on {0, 1, …} with mean μ: a sum of ``count`` is negative binomial
            p = 1.0 / (1.0 + rate)
            mean, sd = count * rate, math.sqrt(count * rate * (1 + rate))
            top = int(mean + 14 * sd + 45 / p)  # the geometric tail: (1 − p)^k < 10⁻¹⁹
            group = nbinom_pmf(np.arange(top + 1), count, p)
        group, low = _trim(group, 0)
        pmf, first = _trim(convolve(pmf, group), first + low)
    return pmf, first


def _expm1_minus_identity(x: np.ndarray) -> np.ndarray:
    """e^x − 1 − x, without the cancellation of its two terms for small |x| (a series below
    10⁻², where its next term is below 10⁻¹⁴ of the sum)."""
    small = np.abs(x) < 1e-2
    xs = np.where(small, x, 0.0)
    series = xs * xs / 2 * (1 + xs / 3 * (1 + xs / 4 * (1 + xs / 5 * (1 + xs / 6))))
    return np.where(small, series, np.expm1(np.minimum(x, 700.0)) - x)


def _tail_exponent(pmf: np.ndarray, low: int, epsilon: float) -> float:
    """θ* > 0 with E[e^(θ*D)] = 1, D on low, low + 1, … with law ``pmf`` and E[D] = −ε.

    E[e^(θD)] − 1 = −θε + E[e^(θD) − 1 − θD]: the model's own drift −ε enters exactly, not
    as the mean of ``pmf`` (whose entries carry rounding of about 10⁻¹⁶ each: as ε → 0 that
    error, over ε, became the relative error of θ* and so of E[q], 10⁻⁶ at ε = 10⁻¹⁰), and
    the rest has no cancellation. The root is that of the quotient by θ, −ε + E[…]/θ."""
    values = np.arange(low, low + pmf.size, dtype=float)

    def excess(theta: float) -> float:  # (E[e^(θD)] − 1)/θ
        # capped exponents: far beyond the root the sign is all that matters (no inf·0)
        return -epsilon + float(np.dot(pmf, _expm1_minus_identity(theta * values))) / theta

    second = float(np.dot(pmf, values**2))
    guess = 2 * epsilon / max(second, 1e-300)
    lo, hi = guess * 1e-3, guess
    while excess(hi) < 0:
        hi *= 2
    return brentq(excess, lo, hi, xtol=1e-300, rtol=4 * np.finfo(float).eps, maxiter=500)


def _solve_banded(up: int, down: int, band: np.ndarray, rhs: np.ndarray) -> np.ndarray:
    """x with A·x = rhs, A given by its diagonals as scipy.linalg.solve_banded takes them
    (``band[down + d, i] = A[i + d, i]``): LU with partial pivoting either way."""
    size = rhs.size
    if size > DENSE_SOLVE_STATES:
        from scipy.linalg import solve_banded

        return solve_banded((up, down), band, rhs)
    dense = np.zeros((size, size))
    for d in range(-down, up + 1):
        columns = np.arange(max(0, -d), min(size, size - d))
        dense[columns + d, columns] = band[down + d, columns]
    return np.linalg.solve(dense, rhs)


def _closed_solve(pmf: np.ndarray, low: int, size: int, theta: float
                  ) -> tuple[float, float, np.ndarray]:
    """(E[q], E[U], π on {0, …, L}) from the stationary law on {0, …, size − 1} closed by
    the geometric tail π_k = π_L·e^(−θ(k−L)) above L = size − 1 (:func:`_solve_banded`);
    π is normalised with the tail's mass."""
    offset = -low  # the largest decrement
    up = pmf.size - 1 - offset  # sub-diagonals of A = Pᵀ − I (moves up)
    down = offset  # super-diagonals (moves down)
    last = size - 1
    band = np.zeros((up + down + 1, size))  # band[down + d, i] = A[i + d, i] = P(i → i + d)
    for d in range(-down, up + 1):
        first, stop = max(0, -d), min(size - 1, size - 1 - d)
        if first <= stop:
            band[down + d, first:stop + 1] = pmf[d + offset]
    # the tail above L moves down into the top rows: A[k, L] += Σ_{i>L} r^(i−L)·P(i → k)
    ratio = math.exp(-theta)
    for k in range(max(1, last - offset + 1), last + 1):
        steps = np.arange(1, k + offset - last + 1)  # i = L + steps, k − i ≥ −offset
        band[down + (k - last), last] += float(np.dot(ratio**steps,
                                                      pmf[k - last - steps + offset]))
    band[down, :] -= 1.0
    for i in range(min(down, last) + 1):  # row 0 of A becomes π_0 = 1
        band[down - i, i] = 0.0
    band[down, 0] = 1.0
    rhs = np.zeros(size)
    rhs[0] = 1.0
    pi = _solve_banded(up, down, band, rhs)
    one_minus = -math.expm1(-theta)  # 1 − r, without the cancellation
    tail_mass = pi[last] * ratio / one_minus
    tail_first = pi[last] * (last * ratio / one_minus + ratio / one_minus**2)
    states = np.arange(size, dtype=float)
    mass = float(pi.sum()) + tail_mass
    mean = (float(np.dot(states, pi)) + tail_first) / mass
    # E[U] = Σ_q π_q·E[(−(q + D))⁺]: a check of the solve (it must equal ε)
    values = np.arange(low, low + pmf.size)
    unused = 0.0
    for q in range(min(size, offset + 1)):
        below = values + q < 0
        unused += pi[q] * float(np.dot(pmf[below], -(values[below] + q)))
    return mean, unused / mass, pi / mass


def pooled_queue_mean(system: System) -> PooledMean:
    """E[q] of ``system``'s pooled queue: exact, bounded, or unavailable (see the module)."""
    epsilon = float(system.epsilon)
    if not epsilon > 0:
        return _unavailable("ε ≤ 0: the pooled queue has no stationary law")
    if system.arrivals.law == "trace":
        return _unavailable("trace arrivals are not i.i.d.")
    if _too_wide(system):
        return _bounded(system, epsilon, f"the increments take more than "
                        f"{MAX_EXACT_WIDTH:,} values")
    arrivals = arrival_pmf(system)
    if arrivals is None:
        return _unavailable("trace arrivals are not i.i.d.")
    service = service_pmf(system)
    if isinstance(service, str):
        return _bounded(system, epsilon, service)
    a_pmf, a_low = arrivals
    s_pmf, s_low = service
    width = a_pmf.size + s_pmf.size - 1
    if width > MAX_EXACT_WIDTH:
        return _bounded(system, epsilon, f"the increments take {width:,} values "
                        f"(> {MAX_EXACT_WIDTH:,})")
    increments = convolve(a_pmf, s_pmf[::-1])
    increments /= increments.sum()
    low = a_low - (s_low + s_pmf.size - 1)  # min D
    if low >= 0:  # every slot brings at least the service: no reflection ever
        return _unavailable("the service never exceeds the arrivals")
    if low + increments.size - 1 <= 0:  # no slot ever adds to q: it stays at 0
        return PooledMean(0.0, 0.0, "exact", np.ones(1), 0.0)
    theta = _tail_exponent(increments, low, epsilon)
    size = max(TRUNCATION_WIDTHS * width, 64)
    coarse, _, _ = _closed_solve(increments, low, size, theta)
    fine, unused, law = _closed_solve(increments, low, 2 * size, theta)
    if not (math.isfinite(fine) and fine >= 0 and abs(unused - epsilon) < 1e-6 * epsilon
            + 1e-12):
        return _bounded(system, epsilon, "the banded solve lost precision")
    return PooledMean(fine, abs(fine - coarse) + ROUNDING * fine, "exact", law,
                      math.exp(-theta))


_CACHE: dict[str, PooledMean] = {}


def pooled_queue_of(system: System) -> PooledMean:
    """:func:`pooled_queue_mean`, computed once per system and process (a precision run
    summarises every round; a stationary start draws from the same law)."""
    key = repr((np.asarray(system.mu, dtype=float).tobytes(), system.arrivals.law,
                float(system.arrival_rate), system.arrivals.trials, system.arrivals.trace_path,
                system.service.kind, system.service.trials))
    if key not in _CACHE:
        if len(_CACHE) > 64:
            _CACHE.clear()
        _CACHE[key] = pooled_queue_mean(system)
    return _CACHE[key]


def stationary_start(system: System, rng: np.random.Generator) -> np.ndarray:
    """Initial queues with ΣQ(0) = q(0) drawn from the pooled queue's stationary law,
    spread over the servers in proportion to μ_n (largest remainders first): q(t) is then
    stationary from slot 0 and only X = ΣQ − q has a transient."""
    pooled = pooled_queue_of(system)
    total = pooled.sample(rng)
    mu = np.asarray(system.mu, dtype=float)
    share = total * mu / mu.sum()
    queues = np.floor(share).astype(np.int64)
    left = total - int(queues.sum())
    if left:
        queues[np.argsort(-(share - queues), kind="stable")[:left]] += 1
    return queues


def _bounded(system: System, epsilon: float, why: str) -> PooledMean:
    """E[q] = (E[D²] − E[U²])/(2ε) with ε² ≤ E[U²] ≤ u_max·ε (bounded service only)."""
    s_max = float(np.sum(system.service.max_service(system.mu)))
    if not math.isfinite(s_max):
        return _unavailable(f"{why}, and the service is unbounded")
    a_min = system.arrival_rate if system.arrivals.law == "deterministic" else 0.0
    u_max = max(s_max - a_min, epsilon)
    second = float(system.arrivals.variance + np.sum(system.service_variances)) + epsilon**2
    low_u2, high_u2 = epsilon**2, u_max * epsilon
    value = (second - (low_u2 + high_u2) / 2) / (2 * epsilon)
    return PooledMean(value, (high_u2 - low_u2) / (4 * epsilon), f"bounded ({why})")
