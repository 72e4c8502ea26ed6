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

import math
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
    error: float = math.nan  # how far E[ΣQ] moves when the blocks move by rounding
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


def two_server_qbd(system: System, policy: Any, *, phase_limit: int = 60,
                   tolerance: float = 1e-6) -> QBDResult:
    """E[ΣQ] and E[Q_n] of a two-server system with Bernoulli arrivals and service under a
    JSQ-type policy (one dispatcher), with ``error``: how far the answer moves when the
    transition probabilities move by rounding (:data:`ROUNDING_TRIALS` solves). As ε → 0,
    1 − sp(R) ≈ ε sinks into the rounding of R and the answer with it (ε·E[ΣQ] read 0.23
    instead of 0.25 at ε = 10⁻⁸): an error above ``tolerance`` × E[ΣQ], a solve that fails
    or a probability below −``tolerance`` is refused (ValidationError)."""
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
    require(isinstance(tolerance, float | int) and 1e-12 <= tolerance < 1, "tolerance",
            f"a relative error in [1e-12, 1) (got {tolerance!r}; double precision resolves "
            "no finer)")
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
    blocks = (b_up, b_local, a0, a1, a2)
    solved = _solve(*blocks)
    # the rounding's effect: the same solve on blocks changed by a few units in the last
    # place of each probability (what their computation may already carry)
    rng = np.random.default_rng(0)
    moved = [_solve(*(_jiggled(block, rng) for block in blocks))
             for _ in range(ROUNDING_TRIALS)]
    totals = np.array([solved.mean_total_queue] + [other.mean_total_queue for other in moved])
    error = float(np.max(np.abs(totals - solved.mean_total_queue))) if np.all(
        np.isfinite(totals)) else math.inf
    value = solved.mean_total_queue
    epsilon = float(system.epsilon)
    if not (math.isfinite(value) and math.isfinite(error)):
        raise ValidationError("epsilon", (
            f"the QBD's solve breaks down at ε = {epsilon:.3g} (1 − sp(R) ≈ ε is lost in the "
            "rounding of R): use a larger ε, or simulate"))
    if error > tolerance * abs(value) or solved.smallest_probability < -tolerance:
        raise ValidationError("epsilon", (
            f"the QBD does not resolve ε = {epsilon:.3g}: its E[ΣQ] = {value:.6g} moves by "
            f"{error:.2g} ({error / abs(value):.1g} of it) when its transition probabilities "
            f"move by rounding, above the tolerance {tolerance:g} (1 − sp(R) ≈ ε nears the "
            "rounding of R); use a larger ε or tolerance, or simulate"))
    return QBDResult(name, epsilon, value, solved.mean_queues, phase_limit,
                     solved.edge_mass, solved.spectral_radius, solved.iterations,
                     solved.residual, time.perf_counter() - started, error=error)


#: perturbed solves behind a QBD result's ``error``
ROUNDING_TRIALS = 3
#: their relative change of each transition probability (a few units in the last place)
ROUNDING_SIZE = 4 * np.finfo(float).eps


def _jiggled(block: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    return block * (1 + ROUNDING_SIZE * rng.uniform(-1.0, 1.0, block.shape))


@dataclass
class _Solved:
    mean_total_queue: float
    mean_queues: list[float]
    edge_mass: float
    spectral_radius: float
    iterations: int
    residual: float
    smallest_probability: float


def _solve(b_up: np.ndarray, b_local: np.ndarray, a0: np.ndarray, a1: np.ndarray,
           a2: np.ndarray) -> _Solved:
    """The matrix-geometric solution of the QBD with boundary blocks (``b_up``, ``b_local``)
    and level blocks (``a0`` up, ``a1`` local, ``a2`` down); NaN where a solve fails."""
    phases = a1.shape[0]
    phase_limit = (phases - 1) // 2
    try:
        with np.errstate(all="ignore"):
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
            mean_level = float(np.linalg.solve((identity - r).T, above).sum())  # π₁(I−R)⁻²1
    except (np.linalg.LinAlgError, ValueError):
        nan = math.nan
        return _Solved(nan, [nan, nan], nan, nan, 0, nan, nan)
    d = np.arange(-phase_limit, phase_limit + 1)
    phase_law = pi0 + above
    mean_abs = float(phase_law @ np.abs(d))
    q1 = mean_level + float(phase_law @ np.maximum(d, 0))
    q2 = mean_level + float(phase_law @ np.maximum(-d, 0))
    edge = float(phase_law[0] + phase_law[-1])
    smallest = float(min(phase_law.min(), pi0.min()))
    return _Solved(2 * mean_level + mean_abs, [q1, q2], edge, radius, iterations, residual,
                   smallest)
