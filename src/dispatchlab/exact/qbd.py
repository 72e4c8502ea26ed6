"""Two servers in heavy traffic: the slotted chain as a quasi-birth-death process.

With Bernoulli arrivals and Bernoulli service, min(Q₁, Q₂) moves by at most one per slot,
so the chain of (level L = min(Q₁, Q₂), phase d = Q₁ − Q₂) is a discrete-time QBD: from
every level L ≥ 1 both servers are busy and the transitions do not depend on L (for a
rule whose choice depends on d alone: a *JSQ-type* rule — JSQ with its tie rules, Po-2 on
two servers, RAND, WRAND), level 0 is the boundary. The phase is cut at |d| ≤ D (the
longer queue loses a job that would pass D; P(|d| = D) is reported).

The minimal solution G of G = A₂ + A₁G + A₀G² is computed by logarithmic reduction
(G. Latouche and V. Ramaswami, "A logarithmic reduction algorithm for quasi-birth-death
processes", Journal of Applied Probability 30 (1993) 650–674; also their book
"Introduction to Matrix Analytic Methods in Stochastic Modeling", SIAM 1999, §8.4),
quadratically convergent, so that ε = 10⁻⁴ (spectral radius of R ≈ 1 − 10⁻⁴) takes some
twenty doublings; then R = A₀(I − A₁ − A₀G)⁻¹ and π_{L+1} = π_L R for L ≥ 1 (the
matrix-geometric solution, M. F. Neuts, "Matrix-Geometric Solutions in Stochastic
Models", 1981), with the boundary solved directly. E[L] = π₁(I − R)⁻²1 and
E[ΣQ] = 2E[L] + E[|d|].
"""

from __future__ import annotations

import time
from dataclasses import asdict, dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from dispatchlab.core.errors import ValidationError, require

if TYPE_CHECKING:
    from dispatchlab.model.system import System


def logarithmic_reduction(a0: np.ndarray, a1: np.ndarray, a2: np.ndarray, *,
                          tolerance: float = 1e-15, max_iterations: int = 80
                          ) -> tuple[np.ndarray, int]:
    """G, the minimal non-negative solution of G = A₂ + A₁G + A₀G² (A₀ up, A₁ local, A₂
    down one level), by the logarithmic reduction of Latouche and Ramaswami (1993), and
    the number of doublings. Stops when max |1 − G1| ≤ ``tolerance`` (G stochastic: a
    recurrent QBD) or the update of G falls below it (a transient one)."""
    identity = np.eye(a1.shape[0])
    local = np.linalg.inv(identity - a1)
    up = local @ a0
    down = local @ a2
    g = down.copy()
    t = up.copy()
    for iteration in range(1, max_iterations + 1):
        u = up @ down + down @ up
        inverse = np.linalg.inv(identity - u)
        up = inverse @ (up @ up)
        down = inverse @ (down @ down)
        step = t @ down
        g += step
        t = t @ up
        if (np.max(np.abs(1.0 - g.sum(axis=1))) <= tolerance
                or np.max(np.abs(step)) <= tolerance * 1e-3):
            return g, iteration
    return g, max_iterations


@dataclass
class QBDResult:
    """E[ΣQ] of two servers from the QBD (see :func:`two_server_qbd`)."""

    policy: str
    epsilon: float
    mean_total_queue: float
    mean_queues: list[float]
    phase_limit: int  # D: |Q₁ − Q₂| ≤ D
    edge_mass: float  # P(|Q₁ − Q₂| = D)
    spectral_radius: float  # of R
    iterations: int  # doublings of the logarithmic reduction
    residual: float  # max |G − A₂ − A₁G − A₀G²|
    seconds: float
    method: str = "QBD (level min(Q1,Q2), phase Q1−Q2), logarithmic reduction"

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def _blocks(system: System, probabilities: Any, level: int, phases: int
            ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(up, local, down) transition blocks from ``level`` (phase i: d = i − D)."""
    limit = (phases - 1) // 2
    mu = np.asarray(system.rates, dtype=float)
    lam = system.arrival_rate
    d = np.arange(-limit, limit + 1)
    q = np.column_stack([level + np.maximum(d, 0), level + np.maximum(-d, 0)])
    p = np.asarray(probabilities(q, mu), dtype=float)
    blocks = np.zeros((3, phases, phases))
    for arrivals, pa in ((0, 1 - lam), (1, lam)):
        for target in (0, 1):
            weight = pa * (p[:, target] if arrivals else (0.5 if target == 0 else 0.0))
            if arrivals == 0 and target == 1:
                continue
            if arrivals == 0:
                weight = np.full(phases, pa)
            for s1, p1 in ((0, 1 - mu[0]), (1, mu[0])):
                for s2, p2 in ((0, 1 - mu[1]), (1, mu[1])):
                    x = q.copy()
                    if arrivals:
                        x[:, target] += 1
                    x = np.maximum(x - np.array([s1, s2]), 0)
                    x1 = np.minimum(x[:, 0], x[:, 1] + limit)  # the phase cut at |d| ≤ D
                    x2 = np.minimum(x[:, 1], x[:, 0] + limit)
                    move = np.minimum(x1, x2) - level  # −1, 0, +1
                    new = (x1 - x2) + limit
                    np.add.at(blocks, (1 - move, np.arange(phases), new), weight * p1 * p2)
    return blocks[0], blocks[1], blocks[2]


def two_server_qbd(system: System, policy: Any, *, phase_limit: int = 60) -> QBDResult:
    """E[ΣQ] and E[Q_n] of a two-server system with Bernoulli arrivals and service under a
    JSQ-type policy (one dispatcher), at any ε > 0 (10⁻⁴ and below)."""
    started = time.perf_counter()
    require(system.n_servers == 2, "servers", f"the QBD solution is for N = 2 servers "
            f"(got N = {system.n_servers}); use the truncated chain")
    require(system.arrivals.law == "bernoulli", "arrivals",
            "the QBD solution needs Bernoulli arrivals (at most one job a slot)")
    require(system.service.kind == "bernoulli", "service",
            "the QBD solution needs Bernoulli service (at most one job a slot)")
    require(system.dispatchers == 1, "dispatchers", "the QBD solution is for M = 1")
    require(system.epsilon > 0, "epsilon", "an unstable system has no stationary law")
    require(isinstance(phase_limit, int) and 2 <= phase_limit <= 2000, "phase_limit",
            f"D must be an integer in [2, 2000] (got {phase_limit!r})")
    name = str(getattr(policy, "name", type(policy).__name__))
    probabilities = getattr(policy, "dispatch_probabilities", None)
    shared = getattr(policy, "dispatch_shared", None)
    if probabilities is None or probabilities(np.zeros((1, 2), np.int64),
                                              np.asarray(system.rates)) is None:
        raise ValidationError("policy", f"no exact solution for {name} (no state-only "
                              "dispatch law): simulate")
    del shared  # one dispatcher: a shared draw is the same law
    phases = 2 * phase_limit + 1
    b_up, b_local, _ = _blocks(system, probabilities, 0, phases)
    a0, a1, a2 = _blocks(system, probabilities, 1, phases)
    c0, c1, c2 = _blocks(system, probabilities, 2, phases)
    if not (np.allclose(a0, c0, atol=0) and np.allclose(a1, c1, atol=0)
            and np.allclose(a2, c2, atol=0)):
        raise ValidationError("policy", f"{name} is not a JSQ-type rule on this system (its "
                              "choice depends on the level, not only on Q1 − Q2): use the "
                              "truncated chain")
    g, iterations = logarithmic_reduction(a0, a1, a2)
    residual = float(np.max(np.abs(g - a2 - a1 @ g - a0 @ g @ g)))
    identity = np.eye(phases)
    r = a0 @ np.linalg.inv(identity - a1 - a0 @ g)
    radius = float(np.max(np.abs(np.linalg.eigvals(r))))
    n = np.linalg.inv(identity - a1 - r @ a2)
    k = b_local + b_up @ n @ a2
    # π₀(K − I) = 0 with the normalisation π₀1 + π₁(I − R)⁻¹1 = 1, π₁ = π₀ B₀₁ N
    ones = np.ones(phases)
    to_first = b_up @ n
    inverse_ones = np.linalg.solve(identity - r, ones)
    system_matrix = (k - identity).T.copy()
    system_matrix[0] = ones + to_first @ inverse_ones
    rhs = np.zeros(phases)
    rhs[0] = 1.0
    pi0 = np.linalg.solve(system_matrix, rhs)
    pi1 = pi0 @ to_first
    above = np.linalg.solve((identity - r).T, pi1)  # Σ_{L≥1} π_L = π₁(I − R)⁻¹
    mean_level = float(np.linalg.solve((identity - r).T, above).sum())  # π₁(I − R)⁻²1
    d = np.arange(-phase_limit, phase_limit + 1)
    phase_law = pi0 + above
    mean_abs = float(phase_law @ np.abs(d))
    q1 = mean_level + float(phase_law @ np.maximum(d, 0))
    q2 = mean_level + float(phase_law @ np.maximum(-d, 0))
    edge = float(phase_law[0] + phase_law[-1])
    return QBDResult(name, float(system.epsilon), 2 * mean_level + mean_abs, [q1, q2],
                     phase_limit, edge, radius, iterations, residual,
                     time.perf_counter() - started)
