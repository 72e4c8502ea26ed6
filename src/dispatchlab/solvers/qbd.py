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
Models", 1981), with the boundary solved directly.

The mass above level 0 and E[L] are not taken from (I − R)⁻¹ = Σ R^k: as ε → 0 the
spectral radius of R tends to 1 and (I − R)⁻¹ amplifies the rounding of R by 1/ε (the
answer had lost all precision by ε = 10⁻⁸). Instead, with A = A₀ + A₁ + A₂ the phase chain
above the boundary (stationary law θ) and h the solution of its Poisson equation
(I − A)h = (A₀ − A₂)1 − δ1, the function f(L, d) = L + h_d drifts by exactly δ at every
level L ≥ 1, where δ = θ(A₀ − A₂)1 = (λ − μ₁ − μ₂ − θ·loss)/2 is the level's drift (ΣQ =
2L + |d| drifts by λ − μ_Σ = −ε, less the jobs lost at the phase cut): the model's ε enters
exactly (its numbers summed with ``math.fsum``), not as a difference of probabilities, and
the rounded blocks are moved by rounding-sized amounts to have that drift
(:func:`_with_exact_drift`). Stationarity of E[f] gives the mass above
the boundary, Σ_{L≥1} π_L 1 = −π₀b/δ (b: f's drift at level 0), and stationarity of E[f²]
gives E[L] = −(S·σ² + π₀·(2h∘b + τ))/(2δ) − S·h, with S = Σ_{L≥1} π_L (its shape from
S(I − A) = π₀B₀₁ − π₁A₂) and σ², τ the second moments of f's steps above and at the
boundary. Every quantity but δ is O(1) and well conditioned: μ = (0.5, 0.5) keeps 11
digits to ε = 10⁻¹⁵, μ = (0.3, 0.6) 8 at ε = 10⁻¹⁰ (docs/exact.md). E[ΣQ] = 2E[L] + E[|d|].
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
        with np.errstate(all="ignore"):
            inverse = np.linalg.inv(identity - u)
            up = inverse @ (up @ up)
            down = inverse @ (down @ down)
            step = t @ down
        if not np.all(np.isfinite(step)):
            # near null recurrence (ε → 0) the doublings, run on past what double precision
            # resolves, can overflow: G is what the finite ones made
            return g, iteration - 1
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
    epsilon: float  # μ₁ + μ₂ − λ_Σ of the model's numbers, summed exactly
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
            ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """(up, local, down) transition blocks from ``level`` (phase i: d = i − D), and the
    expected jobs lost at the phase cut from each phase."""
    limit = (phases - 1) // 2
    mu = np.asarray(system.rates, dtype=float)
    lam = system.arrival_rate
    d = np.arange(-limit, limit + 1)
    q = np.column_stack([level + np.maximum(d, 0), level + np.maximum(-d, 0)])
    p = np.asarray(probabilities(q, mu), dtype=float)
    blocks = np.zeros((3, phases, phases))
    loss = np.zeros(phases)
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
                    loss += weight * p1 * p2 * ((x[:, 0] - x1) + (x[:, 1] - x2))
    return blocks[0], blocks[1], blocks[2], loss


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
    b_up, b_local, _, _ = _blocks(system, probabilities, 0, phases)
    a0, a1, a2, loss = _blocks(system, probabilities, 1, phases)
    c0, c1, c2, _ = _blocks(system, probabilities, 2, phases)
    if not (np.allclose(a0, c0, atol=0) and np.allclose(a1, c1, atol=0)
            and np.allclose(a2, c2, atol=0)):
        raise ValidationError("policy", f"{name} is not a JSQ-type rule on this system (its "
                              "choice depends on the level, not only on Q1 − Q2): use the "
                              "truncated chain")
    # ε = μ₁ + μ₂ − λ_Σ of the model's own numbers, summed exactly (System.epsilon subtracts
    # from the rounded μ_Σ, which can be an ulp off: 10⁻⁴ of ε at ε = 10⁻¹²)
    epsilon = math.fsum([*(float(rate) for rate in system.rates), -float(system.arrival_rate)])

    def solve(blocks: tuple[np.ndarray, ...], stochastic_g: bool = False) -> _Solved:
        b_up, b_local, a0, a1, a2 = blocks
        a0, a1, a2 = _with_exact_drift(a0, a1, a2, loss, -epsilon)
        return _solve(b_up, b_local, a0, a1, a2, epsilon=epsilon, loss=loss,
                      stochastic_g=stochastic_g)

    blocks = (b_up, b_local, a0, a1, a2)
    solved = solve(blocks)
    # the rounding's effect: the same solve on blocks changed by a few units in the last
    # place of each probability (what their computation may already carry), and with G's
    # rows scaled to sum to 1
    rng = np.random.default_rng(0)
    moved = [solve(tuple(_jiggled(block, rng) for block in blocks))
             for _ in range(ROUNDING_TRIALS)] + [solve(blocks, stochastic_g=True)]
    totals = np.array([solved.mean_total_queue] + [other.mean_total_queue for other in moved])
    error = ERROR_FACTOR * float(np.max(np.abs(totals - solved.mean_total_queue))) if np.all(
        np.isfinite(totals)) else math.inf
    value = solved.mean_total_queue
    if not (math.isfinite(value) and math.isfinite(error)):
        raise ValidationError("epsilon", (
            f"the QBD's solve breaks down at ε = {epsilon:.3g}: use a larger ε, or "
            "simulate"))
    if error > tolerance * abs(value) or solved.smallest_probability < -tolerance:
        raise ValidationError("epsilon", (
            f"the QBD does not resolve ε = {epsilon:.3g}: its E[ΣQ] = {value:.6g} moves by "
            f"{error:.2g} ({error / abs(value):.1g} of it) when its transition probabilities "
            f"move by rounding, above the tolerance {tolerance:g}; use a larger ε or "
            "tolerance, or simulate"))
    return QBDResult(name, epsilon, value, solved.mean_queues, phase_limit,
                     solved.edge_mass, solved.spectral_radius, solved.iterations,
                     solved.residual, time.perf_counter() - started, error=error)


def _with_exact_drift(a0: np.ndarray, a1: np.ndarray, a2: np.ndarray, loss: np.ndarray,
                      drift: float) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(A₀, A₁, A₂) moved by rounding-sized amounts so that from every phase i above the
    boundary the probabilities sum to 1 and ΣQ's increment has the model's mean ``drift``
    − loss_i. Each probability is a product of λ, μ₁, μ₂ and their complements, rounded:
    rows came out up to 7·10⁻¹⁷ above 1 and the increments' means 4·10⁻¹⁷ off (0.2 + 0.8
    servers), errors of 10⁻⁷ in the level's drift at ε = 10⁻⁹. Per row, the two smallest
    transitions (above :data:`LEAST_MOVED`) with different ΣQ steps take the correction:
    small entries, so that it is not lost in their own rounding."""
    phases = a1.shape[0]
    limit = (phases - 1) // 2
    size = np.abs(np.arange(-limit, limit + 1))
    moved = size[None, :] - size[:, None]  # |d_j| − |d_i|: ΣQ's step, less the level's
    rows = np.concatenate([a0, a1, a2], axis=1)  # a copy
    steps = np.concatenate([moved + 2, moved, moved - 2], axis=1)
    for i in range(phases):
        row, step = rows[i], steps[i]
        # sums taken exactly (math.fsum; a probability times 3 is rounded once)
        missing = 1.0 - math.fsum(row)
        off = (drift - loss[i]) - math.fsum(row * step)
        usable = np.flatnonzero(row > LEAST_MOVED)
        order = usable[np.argsort(row[usable])]
        first = order[0] if order.size else None
        second = next((j for j in order if step[j] != step[first]), None) if order.size else None
        if second is None:
            continue  # (no two transitions to share it: the row keeps its rounding)
        y = (off - step[first] * missing) / (step[second] - step[first])
        row[first] += missing - y
        row[second] += y
    return rows[:, :phases], rows[:, phases:2 * phases], rows[:, 2 * phases:]


#: the smallest transition probability a rounding correction is put on (a millionth of it
#: at most is moved)
LEAST_MOVED = 1e-9


#: a QBD result's ``error``: this many times the largest move of its perturbed solves (the
#: error against 0.25/ε·… closed forms was up to twice that move, on 0.3 + 0.6 servers)
ERROR_FACTOR = 3
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
           a2: np.ndarray, *, epsilon: float, loss: np.ndarray,
           stochastic_g: bool = False) -> _Solved:
    """The stationary law of the QBD with boundary blocks (``b_up``, ``b_local``) and level
    blocks (``a0`` up, ``a1`` local, ``a2`` down) whose ΣQ drifts by −``epsilon`` less
    ``loss`` (per phase) above the boundary, by the drift identities of the module's
    docstring; NaN where a solve fails. ``stochastic_g``: G's rows scaled to sum to 1
    (as they do exactly for a recurrent QBD; near ε = 0 the reduction leaves them short
    by its rounding), to see how much the answer depends on that."""
    phases = a1.shape[0]
    phase_limit = (phases - 1) // 2
    identity = np.eye(phases)
    ones = np.ones(phases)
    try:
        with np.errstate(all="ignore"):
            g, iterations = logarithmic_reduction(a0, a1, a2)
            if stochastic_g:
                g = g / g.sum(axis=1, keepdims=True)
            residual = float(np.max(np.abs(g - a2 - a1 @ g - a0 @ g @ g)))
            r = a0 @ np.linalg.inv(identity - a1 - a0 @ g)
            radius = float(np.max(np.abs(np.linalg.eigvals(r))))
            to_first = b_up @ np.linalg.inv(identity - a1 - r @ a2)  # π₁ = π₀ B₀₁ N
            # π₀ (up to its scale): π₀ = π₀ K, K = B₀₀ + B₀₁ N A₂ (stochastic)
            k = b_local + to_first @ a2
            pi0 = _left_null_vector(k - identity)
            pi1 = pi0 @ to_first
            # the phase chain above the boundary, its law θ and f = L + h_d
            chain = a0 + a1 + a2
            fundamental = np.linalg.inv(identity - chain + np.outer(ones, ones) / phases)
            theta = ones @ fundamental / phases  # θ(I − A + 11ᵀ/n) = 1ᵀ/n
            delta = (-epsilon - float(theta @ loss)) / 2
            if not delta < 0:
                raise ValueError("the level does not drift down")
            centred = np.linalg.inv(identity - chain + np.outer(ones, theta))
            h = centred @ ((a0 - a2) @ ones - delta)
            b = (b_up @ ones) + (b_up + b_local) @ h - h  # f's drift at level 0
            # S = Σ_{L≥1} π_L: its shape from S(I − A) = π₀B₀₁ − π₁A₂, its mass −π₀b/δ
            shape = (pi0 @ b_up - pi1 @ a2) @ centred  # (its entries sum to 0)
            mass = -float(pi0 @ b) / delta
            above = shape + mass * theta
            scale = float(pi0.sum() + above.sum())
            pi0, above = pi0 / scale, above / scale
            step = h[None, :] - h[:, None]  # h_j − h_i
            sigma2 = ((a0 * (step + 1) ** 2).sum(axis=1) + (a1 * step**2).sum(axis=1)
                      + (a2 * (step - 1) ** 2).sum(axis=1))
            tau = (b_up * (step + 1) ** 2).sum(axis=1) + (b_local * step**2).sum(axis=1)
            mean_level = (-(float(above @ sigma2) + float(pi0 @ (2 * h * b + tau)))
                          / (2 * delta) - float(above @ h))
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


def _left_null_vector(matrix: np.ndarray) -> np.ndarray:
    """x with x·matrix = 0 and Σx = 1, for ``matrix`` = K − I of an irreducible stochastic
    K (one equation replaced by the normalisation)."""
    system = matrix.T.copy()
    system[0] = 1.0
    rhs = np.zeros(matrix.shape[0])
    rhs[0] = 1.0
    return np.linalg.solve(system, rhs)
