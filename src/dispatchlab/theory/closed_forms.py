"""Closed forms that validate the simulator (docs/model.md#lower-bound,
docs/model.md#single-queue, docs/model.md#random-routing).

Single queue ``q' = max(q + a − s, 0)`` (docs/model.md#single-queue) with i.i.d. arrivals
a (mean λ, variance σ_a²) and service s (mean μ, variance σ_s²), drift ε = μ − λ > 0, and
unused service ū = max(s − q − a, 0). Setting the drift of q² to zero gives the exact identity

    E[q̄] = (σ_a² + σ_s² + ε² − E[ū²]) / (2ε),      E[ū] = ε.

Random routing to N queues (docs/model.md#random-routing): each queue alone is such a
single queue, fed by A_n(t), so its mean is exact whenever its service takes values in
{0, 1}.

Every function comes as a raw-number version and, where natural, a version taking a
:class:`~dispatchlab.model.system.System`. Functions return ``inf`` for an unstable
queue (ε ≤ 0) rather than raising, so that curves can be plotted across a threshold.
"""

from __future__ import annotations

import math

import numpy as np

from dispatchlab.core.errors import ValidationError, require
from dispatchlab.model.system import System
from dispatchlab.theory.bounds import limit_arrival_variance

DISPATCH_MODES = ("batch", "per_job")

# -- one discrete-time queue (docs/model.md#single-queue) ------------------------------------------


def single_queue_mean_identity(arrival_rate: float, arrival_variance: float,
                               service_rate: float, service_variance: float,
                               unused_second_moment: float) -> float:
    """E[q̄] from the exact identity (σ_a² + σ_s² + ε² − E[ū²]) / (2ε).

    Args:
        arrival_rate: λ, the mean of a.
        arrival_variance: σ_a².
        service_rate: μ, the mean of s.
        service_variance: σ_s².
        unused_second_moment: E[ū²], the second moment of the unused service.
    """
    epsilon = service_rate - arrival_rate
    if epsilon <= 0:
        return math.inf
    return (arrival_variance + service_variance + epsilon**2 - unused_second_moment) / (
        2 * epsilon)


def kingman_bounds(arrival_rate: float, arrival_variance: float, service_rate: float,
                   service_variance: float, service_max: float) -> tuple[float, float]:
    """Kingman-type bounds (lower, upper) on E[q̄], from ε² ≤ E[ū²] ≤ s_max·ε:

    (σ_a² + σ_s² + ε² − s_max·ε)/(2ε) ≤ E[q̄] ≤ (σ_a² + σ_s²)/(2ε).

    The lower bound is clipped at 0 and is 0 when s_max (maximal service) is infinite.
    """
    epsilon = service_rate - arrival_rate
    if epsilon <= 0:
        return math.inf, math.inf
    upper = (arrival_variance + service_variance) / (2 * epsilon)
    if not math.isfinite(service_max):
        return 0.0, upper
    lower = (arrival_variance + service_variance + epsilon**2 - service_max * epsilon) / (
        2 * epsilon)
    return max(0.0, lower), upper


def bernoulli_service_mean(arrival_rate: float, arrival_variance: float,
                           service_rate: float) -> float:
    """Exact E[q̄] with Bernoulli(μ) service (or any service in {0, 1}) and any arrival law:

    E[q̄] = (σ_a² + μ(1−μ) + ε² − ε) / (2ε), because ū ∈ {0, 1} gives E[ū²] = E[ū] = ε.
    """
    return single_queue_mean_identity(arrival_rate, arrival_variance, service_rate,
                                      service_rate * (1 - service_rate),
                                      service_rate - arrival_rate)


def geo_geo_1_ratio(arrival_rate: float, service_rate: float) -> float:
    """r = λ(1−μ)/(μ(1−λ)), the geometric ratio of the Geo/Geo/1 queue length
    (Bernoulli(λ) arrivals before Bernoulli(μ) service)."""
    require(0 < arrival_rate < 1 and 0 < service_rate <= 1, "rates",
            "Geo/Geo/1 needs 0 < λ < 1 and 0 < μ ≤ 1")
    return arrival_rate * (1 - service_rate) / (service_rate * (1 - arrival_rate))


def geo_geo_1_distribution(arrival_rate: float, service_rate: float, size: int) -> np.ndarray:
    """P(q̄ = k) = (1−r)·r^k for k = 0 … size−2, and P(q̄ ≥ size−1) in the last entry
    (so the vector sums to 1, like ``Result.total_queue_distribution``)."""
    require(size >= 1, "size", "need at least one entry")
    r = geo_geo_1_ratio(arrival_rate, service_rate)
    require(r < 1, "rates", f"unstable Geo/Geo/1 (λ = {arrival_rate:g} ≥ μ = {service_rate:g})")
    k = np.arange(size, dtype=float)
    pmf = (1 - r) * r**k
    pmf[-1] = r ** (size - 1)
    return pmf


def geo_geo_1_mean(arrival_rate: float, service_rate: float) -> float:
    """E[q̄] = λ(1−μ)/(μ−λ) for Geo/Geo/1."""
    if service_rate <= arrival_rate:
        return math.inf
    return arrival_rate * (1 - service_rate) / (service_rate - arrival_rate)


def poisson_bernoulli_mean(arrival_rate: float, service_rate: float) -> float:
    """E[q̄] = λ(1−μ)/(μ−λ) + λ²/(2(μ−λ)) for Poisson(λ) arrivals, Bernoulli(μ) service."""
    if service_rate <= arrival_rate:
        return math.inf
    epsilon = service_rate - arrival_rate
    return arrival_rate * (1 - service_rate) / epsilon + arrival_rate**2 / (2 * epsilon)


def poisson_unit_service_mean(arrival_rate: float) -> float:
    """E[q̄] = λ²/(2(1−λ)) for Poisson(λ) arrivals and deterministic unit service (μ = 1)."""
    if arrival_rate >= 1:
        return math.inf
    return arrival_rate**2 / (2 * (1 - arrival_rate))


def heavy_traffic_exponential_mean(arrival_variance: float, service_variance: float) -> float:
    """(σ_a² + σ_s²)/2: the mean of the exponential limit law of ε·q̄ as ε ↓ 0."""
    return (arrival_variance + service_variance) / 2


#: the exact pooled-queue solve stores a band of about (2·up + down + 1)·size numbers
#: (LAPACK's banded LU); above this many it is skipped and only Kingman's bounds remain
MAX_BAND_ENTRIES = 30_000_000  # 240 MB of float64
#: distinct service rates the Poisson-binomial law is built from (one binomial each)
MAX_RATE_GROUPS = 2_000


def band_entries(pmf_size: int, offset: int, size: int) -> int:
    """Numbers stored by :func:`stationary_distribution` for these sizes (its memory / 8 B)."""
    up, down = min(pmf_size - 1 - offset, size - 1), min(offset, size - 1)
    return (2 * max(up, 0) + down + 1) * size


def stationary_distribution(increment_pmf: np.ndarray, offset: int, size: int) -> np.ndarray:
    """Stationary law of q' = max(q + x, 0) on {0, …, size−1}, numerically.

    Not a closed form but an exact computation up to truncation, for laws such as the
    pooled queue's Poisson-binomial service whose E[ū²] has no formula: a direct
    solve of πP = π, with moves beyond ``size − 1`` held at ``size − 1``. P is banded
    (a move is at most ``offset`` down and ``len(pmf) − 1 − offset`` up), so the solve is
    a banded LU in O(size·band) memory; one balance equation is replaced by π_0 = 1 and
    π normalised after, which keeps the band.

    Args:
        increment_pmf: P(x = j − offset) for j = 0, 1, …, with x = a − s.
        offset: the largest possible decrement (so x ≥ −offset).
        size: the truncation; the caller checks that the last entry's mass is negligible.
    """
    from scipy.linalg import solve_banded

    pmf = np.asarray(increment_pmf, dtype=float)
    entries = band_entries(pmf.size, offset, size)
    require(entries <= MAX_BAND_ENTRIES, "size",
            f"the exact solve needs {entries:.3g} numbers (> {MAX_BAND_ENTRIES:.3g})")
    cdf = np.cumsum(pmf)
    total = float(cdf[-1])
    up = max(min(pmf.size - 1 - offset, size - 1), 0)  # sub-diagonals of A = Pᵀ − I
    down = min(offset, size - 1)  # super-diagonals
    band = np.zeros((up + down + 1, size))  # band[down + d, i] = A[i + d, i] = P(i, i + d)
    for d in range(-down, up + 1):
        first, last = max(0, -d), min(size - 1, size - 1 - d)
        band[down + d, first:last + 1] = pmf[d + offset]
    # moves past the top are held at size − 1 (moves below 0 only enter balance equation 0,
    # which π_0 = 1 replaces)
    for i in range(max(0, size - 1 - up), size):
        d = size - 1 - i
        below = d + offset - 1
        band[down + d, i] = total - (cdf[below] if below >= 0 else 0.0)
    band[down, :] -= 1.0
    for i in range(min(down, size - 1) + 1):  # row 0 of A becomes π_0 = 1
        band[down - i, i] = 0.0
    band[down, 0] = 1.0
    rhs = np.zeros(size)
    rhs[0] = 1.0
    try:
        pi = solve_banded((up, down), band, rhs)
    except np.linalg.LinAlgError:
        raise ValidationError("size", "the truncated chain is numerically singular "
                              "(rates too small or too close to each other)") from None
    pi = np.clip(pi, 0.0, None)
    require(bool(np.all(np.isfinite(pi))) and pi.sum() > 0, "size",
            "the stationary solve lost all precision")
    return pi / pi.sum()


def increment_pmf(arrival_pmf: np.ndarray, service_pmf: np.ndarray) -> tuple[np.ndarray, int]:
    """The pmf of x = a − s (a, s independent, pmfs on 0, 1, …) and its offset (s_max)."""
    from dispatchlab.theory.pmf import convolve  # scipy: not for --help

    service = np.asarray(service_pmf, dtype=float)
    arrival = np.asarray(arrival_pmf, dtype=float)
    return convolve(arrival, service[::-1]), service.size - 1


def poisson_binomial_pmf(probabilities: np.ndarray) -> np.ndarray:
    """The law of S_Σ = Σ_n Bernoulli(μ_n): the pooled service of Bernoulli servers,
    as the convolution of one Binomial(count, μ) per distinct rate."""
    from dispatchlab.theory.pmf import binom_pmf, convolve

    rates, counts = np.unique(np.asarray(probabilities, dtype=float), return_counts=True)
    require(rates.size <= MAX_RATE_GROUPS, "servers",
            f"the exact pooled law takes at most {MAX_RATE_GROUPS:,} distinct rates "
            f"(got {rates.size:,})")
    pmf = np.array([1.0])
    for p, count in zip(rates, counts, strict=True):
        pmf = convolve(pmf, binom_pmf(np.arange(count + 1), count, p))
    return pmf


# -- the resource-pooled queue (docs/model.md#lower-bound) -----------------------------------------


def pooled_queue_bounds(system: System) -> tuple[float, float]:
    """Kingman bounds on E[q̄] of the pooled queue (A_Σ served by S_Σ = Σ_n S_n):
    (ζ^(ε) − s_max·ε)/(2ε) ≤ E[q̄] ≤ (σ_Σ² + ν_Σ²)/(2ε), s_max = Σ_n S_max,n."""
    return kingman_bounds(system.arrival_rate, system.arrivals.variance, system.mu_sum,
                          float(np.sum(system.service_variances)),
                          float(np.sum(system.service.max_service(system.mu))))


def pooled_queue_mean(system: System, size: int | None = None) -> float:
    """E[q̄] of the pooled queue for Poisson or binomial arrivals and Bernoulli service,
    from its stationary law (numerical, exact up to a truncation checked here)."""
    require(system.service.kind == "bernoulli", "service",
            "pooled_queue_mean needs Bernoulli service")
    from dispatchlab.theory.pmf import binom_pmf, poisson_pmf

    lam = system.arrival_rate
    law = system.arrivals
    if law.law == "poisson":
        top = int(lam + 12 * math.sqrt(lam) + 20)
        arrival_pmf = poisson_pmf(np.arange(top + 1), lam)
    elif law.law in ("binomial", "bernoulli"):
        trials = law.trials if law.law == "binomial" else 1
        top = min(trials, int(lam + 12 * math.sqrt(lam) + 20))  # the mass beyond is < 1e-30
        arrival_pmf = binom_pmf(np.arange(top + 1), trials, lam / trials)
    else:
        raise ValidationError("arrivals", "pooled_queue_mean needs poisson, bernoulli or "
                              "binomial arrivals")
    if size is None:
        upper = pooled_queue_bounds(system)[1]
        require(math.isfinite(upper) and 40 * upper + 100 < 1e9, "size",
                f"the truncation 40·E[q]_upper would be {40 * upper + 100:.3g} states")
        size = int(40 * upper + 100)
    entries = band_entries(arrival_pmf.size + system.n_servers, system.n_servers, size)
    require(entries <= MAX_BAND_ENTRIES, "size",
            f"the exact solve needs {entries:.3g} numbers (> {MAX_BAND_ENTRIES:.3g})")
    pmf, offset = increment_pmf(arrival_pmf, poisson_binomial_pmf(system.mu))
    pi = stationary_distribution(pmf, offset, size)
    require(pi[-1] < 1e-9, "size", f"truncation at {size} too small (tail mass {pi[-1]:.2g})")
    return float(np.dot(np.arange(size), pi))


# -- random routing to N queues (docs/model.md#random-routing) -------------------------------------


def routing_probabilities(mu: np.ndarray, weighted: bool) -> np.ndarray:
    """p_n: 1/N for uniform RAND, μ_n/μ_Σ for weighted RAND."""
    mu = np.asarray(mu, dtype=float)
    return mu / mu.sum() if weighted else np.full(mu.size, 1.0 / mu.size)


def routed_arrival_variance(p: np.ndarray | float, arrival_rate: float, arrival_variance: float,
                            dispatch: str, concentration: float = 1.0) -> np.ndarray:
    """Var(A_n), the variance of the arrivals that random routing sends to server n.

    Args:
        p: p_n, the routing probability of server n (array or scalar).
        arrival_rate: λ_Σ.
        arrival_variance: σ_Σ² = Var A_Σ.
        dispatch: ``per_job`` (A_n | A_Σ ~ Bin(A_Σ, p_n)) or ``batch`` (each dispatcher
            sends all its jobs of a slot to one server, drawn independently).
        concentration: W, the probability that two jobs of one slot reach the same
            dispatcher: Σ_m w_m² for a multinomial split of A_Σ over M dispatchers with
            weights w_m, 1 for a single dispatcher or a whole-batch split.

    With M dispatchers in batch mode, A_n = Σ_m A^m·B_m with B_m ~ Bern(p_n) independent,
    E[(A^m)²] = w_m(1−w_m)λ + w_m²(σ² + λ²) and E[A^m A^m'] = w_m w_m'(σ² + λ² − λ)
    (multinomial split), so

        Var(A_n) = p_n[(1−W)λ + W(σ² + λ²)] + p_n²(1−W)(σ² + λ² − λ) − p_n²λ².

    W = 1 gives the single-dispatcher batch form p_n(σ² + λ²) − p_n²λ², and W → 0 the
    per-job form p_n(1−p_n)λ + p_n²σ² (docs/model.md#random-routing).
    """
    require(dispatch in DISPATCH_MODES, "dispatch", f"allowed: {', '.join(DISPATCH_MODES)}")
    require(0 <= concentration <= 1, "concentration", "W must be in [0, 1]")
    p = np.asarray(p, dtype=float)
    lam, var = arrival_rate, arrival_variance
    if dispatch == "per_job":
        return p * (1 - p) * lam + p**2 * var
    w = concentration
    second = var + lam**2
    return p * ((1 - w) * lam + w * second) + p**2 * (1 - w) * (second - lam) - p**2 * lam**2


def dispatcher_concentration(system: System) -> float:
    """W = P(two jobs of one slot reach the same dispatcher): Σ_m w_m² for the multinomial
    (``per_job``) split, 1 for one dispatcher or the whole-batch split."""
    if system.dispatchers == 1 or system.split == "batch":
        return 1.0
    return float(np.sum(system.weights**2))


def random_routing_queue_means_raw(mu: np.ndarray, p: np.ndarray, arrival_rate: float,
                                   routed_variances: np.ndarray) -> np.ndarray:
    """Exact E[Q̄_n] = (Var(A_n) + μ_n(1−μ_n) + ε_n² − ε_n)/(2ε_n) with Bernoulli(μ_n)
    service, ε_n = μ_n − p_n·λ_Σ; ``inf`` where ε_n ≤ 0."""
    mu = np.asarray(mu, dtype=float)
    out = np.empty(mu.size)
    for n in range(mu.size):
        out[n] = bernoulli_service_mean(p[n] * arrival_rate, float(routed_variances[n]), mu[n])
    return out


def _check_unit_service(system: System) -> None:
    s_max = system.service.max_service(system.mu)
    require(bool(np.all(s_max == 1)), "service",
            "exact random-routing means need service in {0, 1} (bernoulli, or deterministic "
            f"with μ_n = 1); got {system.service.describe()}")


def random_routing_queue_means(system: System, weighted: bool) -> np.ndarray:
    """Exact E[Q̄_n] for RAND (``weighted=False``) or weighted RAND on ``system``
    (Bernoulli service; any arrival law, dispatch mode, M and split)."""
    _check_unit_service(system)
    p = routing_probabilities(system.mu, weighted)
    variances = routed_arrival_variance(p, system.arrival_rate, system.arrivals.variance,
                                        system.dispatch, dispatcher_concentration(system))
    return random_routing_queue_means_raw(system.mu, p, system.arrival_rate, variances)


def random_routing_total_mean(system: System, weighted: bool) -> float:
    """Exact E[Σ_n Q̄_n] for RAND or weighted RAND (``inf`` when unstable)."""
    return float(np.sum(random_routing_queue_means(system, weighted)))


def weighted_random_total_mean(system: System) -> float:
    """E[ΣQ] of weighted random routing, exact (docs/model.md#random-routing): a reference
    line of one argument, the system."""
    return random_routing_total_mean(system, weighted=True)


def random_routing_constant_raw(mu: np.ndarray, arrival_variance: float,
                                service_variances: np.ndarray, dispatch: str,
                                concentration: float = 1.0) -> float:
    """lim_{ε↓0} ε·E[ΣQ̄] for weighted RAND ("the random-routing constant").

    With p_n = μ_n/μ_Σ, ε_n = p_n·ε and λ_Σ → μ_Σ, ε/ε_n = μ_Σ/μ_n and
    ε·E[ΣQ̄] → ½·Σ_n (μ_Σ/μ_n)(Var(A_n) + ν_n²), which sums to

        ½·[(N−1)(1−W)μ_Σ + (NW + 1 − W)σ_Σ² + (N−1)W·μ_Σ² + Σ_n ν_n²·μ_Σ/μ_n]:

    W = 1 (batch, one dispatcher): ½[Nσ_Σ² + (N−1)μ_Σ² + Σ ν_n² μ_Σ/μ_n];
    per-job dispatch (W = 0): ½[σ_Σ² + (N−1)μ_Σ + Σ ν_n² μ_Σ/μ_n] (docs/model.md#random-routing).

    Args:
        mu: μ_n. arrival_variance: σ_Σ², the limit of Var A_Σ at λ_Σ = μ_Σ.
        service_variances: ν_n². dispatch: ``batch`` or ``per_job``.
        concentration: W (see :func:`routed_arrival_variance`; ignored per job).
    """
    require(dispatch in DISPATCH_MODES, "dispatch", f"allowed: {', '.join(DISPATCH_MODES)}")
    mu = np.asarray(mu, dtype=float)
    n = mu.size
    mu_sum = float(mu.sum())
    w = concentration if dispatch == "batch" else 0.0
    service_term = float(np.sum(np.asarray(service_variances) * mu_sum / mu))
    return 0.5 * ((n - 1) * (1 - w) * mu_sum + (n * w + 1 - w) * arrival_variance
                  + (n - 1) * w * mu_sum**2 + service_term)


def random_routing_constant(system: System) -> float:
    """The random-routing constant lim ε·E[ΣQ̄] of weighted RAND for ``system``'s rates,
    laws and dispatch mode (docs/model.md#random-routing); compare with ζ/2 on heavy-traffic
    plots."""
    return random_routing_constant_raw(system.mu, limit_arrival_variance(system),
                                       system.service_variances, system.dispatch,
                                       dispatcher_concentration(system))


def uniform_rand_critical_load(mu: np.ndarray) -> float:
    """ρ* = N·μ_min/μ_Σ: uniform RAND is stable iff ρ < ρ* (λ_Σ/N < μ_min)."""
    mu = np.asarray(mu, dtype=float)
    return float(mu.size * mu.min() / mu.sum())


def uniform_rand_is_stable(system: System) -> bool:
    """True iff λ_Σ/N < μ_min (docs/model.md#random-routing)."""
    return system.arrival_rate / system.n_servers < float(system.mu.min())
