"""The refined mean field: the 1/N term of E[Q] per server around the fluid fixed point.

With Poisson arrivals, random, weighted-random and Po-d dispatch make the N servers of a
finite system *independent given the occupancy*: every job picks its server from the
slot-start queues alone, so by Poisson thinning the jobs of one server in a slot are
Poisson with a rate that depends on its class, its queue and the occupancy x (the
fractions of servers at each level), and services are independent. x(t) is then a
synchronous mean-field population model ([GLM19]), and

    x(t+1) = Φ_N(x(t)) + ξ(t+1),   Φ_N = Φ + φ/N + O(1/N²),   N·Cov(ξ | x) = Γ(x) + O(1/N),

Φ the fluid map (:mod:`dispatchlab.solvers.fluid`). Expanding around the fixed point x*
(x = x* + δ, A = DΦ(x*), B = D²Φ(x*)): E[δ] = A·E[δ] + ½ B:E[δδᵀ] + φ/N, and
N·E[δδᵀ] → W, the solution of the discrete Lyapunov equation W = A W Aᵀ + Γ. So

    E[x] = x* + V/N + o(1/N),   V = (I − A)⁻¹ (½ B:W + φ),

and E[Q] per server = fluid + c/N with c = Σ_j α_j Σ_{m≥1} V_{j,m} (state: the tails
s_j(m) = P(Q_j ≥ m), m ≥ 1); E[ΣQ] = N·fluid + c. φ is Po-d's sampling of d *distinct*
servers, as the engine samples: with S_k the fraction of all servers holding ≥ k jobs,
C(N·S, d)/C(N, d) = S^d − (d(d−1)/2)·(S^(d−1) − S^d)/N + O(1/N²), which moves the rate of
a server at level k by −(λ̄/N)·(d(d−1)/2)·[g(S_k) − g(S_{k+1})]/(S_k − S_{k+1}),
g(S) = S^(d−1) − S^d. Random routing is exact at every N (Φ linear, φ = 0): c = 0.

Not derived: JSQ (its rates jump where the lowest occupied level changes: Φ has no second
derivative), JIQ/JBT-r (a listed ID is taken by one job, so servers are not independent
given the occupancy), and arrival laws other than Poisson (the total's variance couples
every server). docs/fluid.md#refined.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from dispatchlab.core.errors import require
from dispatchlab.model.system import System

#: levels whose tail mass is below this (in every class) are left out of the expansion
TAIL_CUT = 1e-12
#: finite-difference steps of the Jacobian and of the second directional derivatives
JACOBIAN_STEP = 1e-6
HESSIAN_STEP = 1e-4
#: the scales of (the Jacobian's, the second derivatives') steps that c is computed at: the
#: first gives c, the others its resolution
STEP_SCALES = ((1.0, 1.0), (0.5, 1.0), (2.0, 1.0), (1.0, 0.5), (1.0, 2.0))
#: the largest rate of one server's Poisson arrivals in a slot that the expansion takes
MAX_RATE = 500.0
#: the rules with a derived 1/N term
REFINED_KINDS = ("random", "weighted", "pod")


class _TailMap:
    """One slot of the fluid map in tail coordinates s_j(m), m = 1 … K − 1, with the rates
    of finite N's first-order sampling term scaled by ``shift`` (0: the fluid map)."""

    def __init__(self, kind: str, d: int, alpha: np.ndarray, mu: np.ndarray,
                 per_server: float, services: list[np.ndarray], levels: int) -> None:
        self.kind, self.d, self.alpha, self.mu = kind, d, alpha, mu
        self.per_server, self.services, self.levels = per_server, services, levels

    def occupancy(self, x: np.ndarray) -> np.ndarray:
        tails = np.hstack([np.ones((self.alpha.size, 1)), x.reshape(self.alpha.size, -1),
                           np.zeros((self.alpha.size, 1))])
        return tails[:, :-1] - tails[:, 1:]

    def rates(self, x: np.ndarray, shift: float) -> np.ndarray:
        classes, levels = self.alpha.size, self.levels
        lam = self.per_server
        if self.kind == "random":
            return np.full((classes, levels), lam)
        if self.kind == "weighted":
            share = lam * self.mu / float(self.alpha @ self.mu)
            return np.repeat(share[:, None], levels, axis=1)
        # Po-d, written without dividing by f_k: (S_k^d − S_{k+1}^d)/(S_k − S_{k+1}) is a
        # polynomial, smooth where f_k = 0 too
        every = self.alpha @ np.hstack([np.ones((classes, 1)), x.reshape(classes, -1)])
        upper, lower = every, np.append(every[1:], 0.0)
        d = self.d
        rate = lam * _divided_power(upper, lower, d)
        if shift:
            spread = _divided_power(upper, lower, d - 1) - _divided_power(upper, lower, d)
            rate = rate - shift * lam * d * (d - 1) / 2 * spread
        return np.repeat(rate[None, :], classes, axis=0)

    def __call__(self, x: np.ndarray, shift: float = 0.0) -> np.ndarray:
        after = _slot(self.occupancy(x), self.rates(x, shift), self.services)
        return np.cumsum(after[:, ::-1], axis=1)[:, ::-1][:, 1:].ravel()

    def next_tails(self, x: np.ndarray) -> list[np.ndarray]:
        """T_j[k, m] = P(Q' ≥ m + 1 | Q = k) of a class-j server, at occupancy ``x``."""
        rates = self.rates(x, 0.0)
        out = []
        for j in range(self.alpha.size):
            one = [_slot(np.eye(self.levels)[k][None, :], rates[j:j + 1], [self.services[j]])[0]
                   for k in range(self.levels)]
            law = np.array(one)
            out.append(np.cumsum(law[:, ::-1], axis=1)[:, ::-1][:, 1:])
        return out


def _slot(p: np.ndarray, rates: np.ndarray, services: list[np.ndarray]) -> np.ndarray:
    """One slot as :func:`dispatchlab.solvers.fluid.step` makes it (Poisson arrivals, then
    service, the mass beyond the last level kept there), written for any real rate: the
    pmf e^(−r)·r^a/a! is not cut or renormalised, so the map is smooth in r and in p, also
    where a finite difference makes them slightly negative."""
    classes, levels = p.shape
    top = float(np.max(np.abs(rates)))
    require(top <= MAX_RATE, "refined", f"a server would receive {top:.4g} jobs a slot (above "
            f"{MAX_RATE:g}, where e^(−r) underflows)")
    width = int(np.ceil(top * 3 + 40))
    out = np.zeros_like(p)
    index = np.arange(levels)
    ratios = np.arange(1, width)[:, None]
    for j in range(classes):
        r = rates[j][None, :]
        # e^(−r)·r^a/a! for a = 0 … width − 1 and every level's rate (a × levels)
        pmf = np.exp(-r) * np.vstack([np.ones_like(r), np.cumprod(r / ratios, axis=0)])
        after = np.bincount(np.minimum(index[None, :] + np.arange(width)[:, None],
                                       levels - 1).ravel(),
                            weights=(pmf * p[j][None, :]).ravel(), minlength=levels)
        for served, ps in enumerate(services[j]):
            if ps > 0:
                out[j] += ps * np.bincount(np.maximum(index - served, 0), weights=after,
                                           minlength=levels)
    return out


def _divided_power(x: np.ndarray, y: np.ndarray, d: int) -> np.ndarray:
    """(x^d − y^d)/(x − y) = Σ_{i<d} x^i·y^(d−1−i), elementwise (d ≥ 1; 0 for d = 0)."""
    return sum((x ** i) * (y ** (d - 1 - i)) for i in range(d)) if d > 0 else np.zeros_like(x)


def check_refinable(system: System, kind: str) -> None:
    """Raise ValidationError unless the 1/N term is derived for the fluid rule ``kind``
    (``solvers.fluid.RULE_KINDS``) on ``system``."""
    require(kind in REFINED_KINDS, "refined",
            "derived for rand, wrand and pod only (docs/fluid.md#refined): JSQ's map has no "
            "second derivative, and a pull policy's servers are not independent given the "
            "occupancy")
    require(system.arrivals.law == "poisson", "refined",
            f"derived for Poisson arrivals only (got {system.arrivals.law}): another total's "
            "variance couples every server")


def refine(system: System, kind: str, d: int, occupancy: np.ndarray, alpha: np.ndarray,
           mu: np.ndarray, services: list[np.ndarray]) -> tuple[float, float]:
    """(c, its resolution): c the 1/N term of E[Q] per server (≈ fluid + c/N), at the fluid
    fixed point ``occupancy`` (classes × levels, p_j(k)) of ``system`` under the fluid rule
    ``kind`` (Po-d's ``d``), its server classes (fractions ``alpha``, rates ``mu``) and
    their service laws (module docstring). The resolution is the most c moves when one of
    its two finite-difference steps is halved or doubled (:data:`STEP_SCALES`): its digits
    beyond that are the differences' error, not the expansion's (ten classes under Po-2
    at ρ = 0.9: 3.4·10⁻⁴, where two machines' linear algebra differed by 1.2·10⁻⁴). Random
    and weighted-random routing give (0, 0) at once: each server is a Poisson-fed queue at
    every N, so the fluid value is exact (:func:`expansion_terms` finds the same, slowly:
    their tails are long). The caller has checked the case (:func:`check_refinable`)
    before solving for the fixed point."""
    if kind in ("random", "weighted"):
        return 0.0, 0.0
    c, *others = expansion_terms(system, kind, d, occupancy, alpha, mu, services, STEP_SCALES)
    return c, max(abs(other - c) for other in others)


def expansion_terms(system: System, kind: str, d: int, occupancy: np.ndarray,
                    alpha: np.ndarray, mu: np.ndarray, services: list[np.ndarray],
                    scales: Sequence[tuple[float, float]] = ((1.0, 1.0),)) -> list[float]:
    """c by the expansion of the module docstring, for any refinable ``kind``: one value
    for each pair of scales of the Jacobian's and the second derivatives' steps (the
    Jacobian and what follows from it computed once for each of its own scales)."""
    from scipy.linalg import solve_discrete_lyapunov

    tails = np.cumsum(occupancy[:, ::-1], axis=1)[:, ::-1]
    kept = int(np.max(np.nonzero((tails > TAIL_CUT).any(axis=0))[0], initial=0)) + 2
    p = np.zeros((mu.size, kept))
    p[:, :min(kept, occupancy.shape[1])] = occupancy[:, :kept]
    x_star = np.cumsum(p[:, ::-1], axis=1)[:, ::-1][:, 1:].ravel()
    fluid_map = _TailMap(kind, d, alpha, mu, system.arrival_rate / system.n_servers, services,
                         kept)
    size = x_star.size
    noise = _one_slot_covariance(fluid_map, x_star, p, alpha)
    centre = fluid_map(x_star)
    weights = np.repeat(alpha, size // mu.size)
    found: dict[tuple[float, float], float] = {}
    for jacobian_scale in dict.fromkeys(j for j, _ in scales):
        step = JACOBIAN_STEP * jacobian_scale
        jacobian = np.empty((size, size))
        for i in range(size):
            e = np.zeros(size)
            e[i] = step
            jacobian[:, i] = (fluid_map(x_star + e) - fluid_map(x_star - e)) / (2 * step)
        radius = float(np.max(np.abs(np.linalg.eigvals(jacobian))))
        require(radius < 1, "refined", f"the fixed point is not stable to first order "
                f"(spectral radius of the map's Jacobian {radius:.6g} ≥ 1)")
        spread = solve_discrete_lyapunov(jacobian, noise)
        values, vectors = np.linalg.eigh((spread + spread.T) / 2)
        sampling = np.zeros(size)  # φ = ∂Φ_N/∂(1/N) at 1/N = 0
        if kind == "pod":
            sampling = (fluid_map(x_star, step) - fluid_map(x_star, -step)) / (2 * step)
        for hessian_scale in (h for j, h in scales if j == jacobian_scale):
            h = HESSIAN_STEP * hessian_scale
            curvature = np.zeros(size)
            for value, u in zip(values, vectors.T, strict=True):
                if value > 1e-14 * values.max():
                    curvature += value * (fluid_map(x_star + h * u) - 2 * centre
                                          + fluid_map(x_star - h * u)) / h ** 2
            per_level = np.linalg.solve(np.eye(size) - jacobian,
                                        curvature / 2 + sampling)  # V_{j,m}
            found[jacobian_scale, hessian_scale] = float(weights @ per_level)
    return [found[pair] for pair in scales]


def _one_slot_covariance(fluid_map: _TailMap, x_star: np.ndarray, p: np.ndarray,
                         alpha: np.ndarray) -> np.ndarray:
    """Γ = N·Cov(x(t+1) | x(t) = x*): per class j, (1/α_j)·Σ_k p_j(k)·(T_j[k, max(m, m')] −
    T_j[k, m]·T_j[k, m']), the servers being independent given x; classes independent."""
    from scipy.linalg import block_diag

    blocks = []
    for j, next_tails in enumerate(fluid_map.next_tails(x_star)):
        levels = next_tails.shape[1]
        index = np.arange(levels)
        joint = next_tails[:, np.maximum.outer(index, index)]  # T[k, max(m, m')]
        product = next_tails[:, :, None] * next_tails[:, None, :]
        blocks.append(np.tensordot(p[j], joint - product, axes=1) / alpha[j])
    return block_diag(*blocks)
