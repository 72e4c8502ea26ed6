"""Two servers, one dispatcher, pull-based ID memory (JIQ, JBT-r) in heavy traffic: the
truncated chain solved by multilevel aggregation.

With M = 1 the memory of JIQ and JBT-r at a slot start is the set {n : Q_n(t) < r} (a
listed server receives no job unless its ID is taken, and it reports again at the slot end
while Q_n < r); only the *order* of the list is extra information, for a rule that takes
the oldest ID, and only while both servers are below r. So the chain lives on the
triangle {(Q₁, Q₂) : Q₁ + Q₂ ≤ K} (plus a second copy of the states with both queues below
r for the ordered list). With Bernoulli arrivals and Bernoulli service each queue moves by
at most one per slot: every state has at most nine neighbours (ten with the ordered
copies), and the chain is a 2-D nearest-neighbour walk whose law away from the axes
(both Q_n ≥ r) is the same everywhere (proportional random routing).

The truncation is that of :mod:`dispatchlab.solvers.chain` (a job that would take ΣQ above K
is lost from the longest queue), so the two agree exactly at equal K. The chain, ~10⁷
states at ε = 10⁻³, is stored as nine or ten (target, probability) slots per state and
solved by **multiplicative multilevel aggregation** (iterative aggregation–disaggregation
applied recursively in a V-cycle): Y. Takahashi, "A lumping method for numerical
calculations of stationary distributions of Markov chains" (1975); G. Horton and S. T.
Leutenegger, "A multi-level solution algorithm for steady-state Markov chains", ACM
SIGMETRICS 1994; H. De Sterck, T. A. Manteuffel, S. F. McCormick, Q. Nguyen and J. Ruge,
"Multilevel adaptive aggregation for Markov chains, with application to web ranking",
SIAM J. Sci. Comput. 30 (2008). The aggregates are 2 × 2 blocks of the (Q₁, Q₂) grid, so
every coarse chain is again a nine-point walk; the smoother is damped Jacobi, the
coarsest chain (a few thousand states) is solved directly. Each cycle costs O(states);
the iteration stops when ‖πP − π‖₁ falls below ``residual`` (10⁻¹³ by default).

From π and the one-slot law the solver also gives the moments of the drift identity of
(ΣQ)²: E[U_Σ] (U_n(t) = max(S_n − Q_n − A_n, 0), the unused service), E[U_Σ²] and the
Eq. (7) term E[ΣQ(t+1)·ΣU(t)] of the JBT paper (X. Zhou, N. Shroff and A. Wierman,
"Asymptotically optimal load balancing in large-scale heterogeneous systems with multiple
dispatchers", 2021). With L the jobs lost at the edge, stationarity of (ΣQ)² reads
ε·E[ΣQ] = (σ_a² + σ_s² + ε² − E[U_Σ²])/2 + E[ΣQ(t+1)ΣU(t)] + E[U_Σ L] − (K + ½)E[L]
(the last two terms vanish with the truncation), and E[U_Σ] = ε + E[L].
"""

from __future__ import annotations

import math
import time
from dataclasses import asdict, dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np
from numba import njit

from dispatchlab.core.errors import TooLarge, ValidationError, require
from dispatchlab.core.ram import require_memory
from dispatchlab.core.signals import interruption, stops_caught
from dispatchlab.solvers.laws import MIN_TOLERANCE
from dispatchlab.solvers.progress import LONG_SOLVE_STATES, say, seconds_left

if TYPE_CHECKING:
    from dispatchlab.model.system import System

#: the largest chain this solver builds (states; ~10 GB at the cap, which the memory guard
#: refuses on most machines first)
MAX_STATES = 20_000_000
#: bytes the solver holds per state at its peak, the chain, its coarser levels and the
#: iterates (measured: 514 and 517 for 134,421 and 1,228,528 states), for the memory guard
BYTES_PER_STATE = 520
#: the coarsest chain, solved directly
COARSEST = 1_000
#: memory codes of the two-server ID list: (), (0,), (1,), (0, 1), (1, 0)
MEMORIES: tuple[tuple[int, ...], ...] = ((), (0,), (1,), (0, 1), (1, 0))


@dataclass
class MultilevelResult:
    """The stationary law of a two-server JIQ / JBT-r system (see :func:`solve_two_server`)."""

    policy: str
    epsilon: float  # ε = μ_Σ − λ_Σ
    threshold: int  # r
    mean_total_queue: float  # E[ΣQ]
    mean_queues: list[float]  # E[Q_n]
    mean_unused: float  # E[U_Σ] (= ε + loss rate)
    mean_unused_square: float  # E[U_Σ²]
    cross_term: float  # E[ΣQ(t+1)·ΣU(t)], Eq. (7) of the JBT paper
    unused_loss: float  # E[U_Σ·L], L the jobs lost at the edge (the identity's loss term)
    truncation: int  # K: ΣQ ≤ K
    edge_mass: float  # P(ΣQ = K)
    truncation_error: float  # the E[ΣQ] beyond K, extrapolated geometrically
    loss_rate: float  # jobs per slot lost at the truncation edge
    residual: float  # ‖πP − π‖₁
    cycles: int  # V-cycles
    states: int
    seconds: float
    total_queue_distribution: list[float] = field(default_factory=list, repr=False)
    method: str = "truncated chain, multilevel aggregation (2x2 blocks, W-cycles, Anderson)"

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    def __repr__(self) -> str:
        return (f"MultilevelResult({self.policy}: E[ΣQ]={self.mean_total_queue:.10g}, "
                f"K={self.truncation}, edge={self.edge_mass:.2g}, residual="
                f"{self.residual:.2g}, states={self.states:,}, {self.seconds:.1f} s)")


# -- the rule's law, tabulated from its MemoryRule -----------------------------------------


def _code(memory: tuple[int, ...], ordered: bool) -> int:
    memory = tuple(memory) if ordered else tuple(sorted(memory))
    return MEMORIES.index(memory)


def rule_tables(rule: Any) -> tuple[np.ndarray, ...]:
    """The dispatch and update laws of a two-server ID-memory rule (an object with the
    :class:`~dispatchlab.solvers.rules.MemoryRule` interface and ``r``, ``ordered``), as
    arrays: dispatch (prob, target, memory after) [code, branch] and update (prob, new
    memory) [memory after, below pattern, branch]; branches with prob 0 are padding."""
    ordered = bool(getattr(rule, "ordered", False))
    d_p, d_t, d_a = np.zeros((5, 2)), np.zeros((5, 2), np.int64), np.zeros((5, 2), np.int64)
    u_p, u_m = np.zeros((5, 4, 2)), np.zeros((5, 4, 2), np.int64)
    one = np.zeros((1, 2), np.int64)
    for code, memory in enumerate(MEMORIES):
        if not ordered and code == 4:
            continue
        branches = rule.dispatch(memory, one, 0, 1)
        require(len(branches) <= 2, "policy", "the multilevel solver needs at most two "
                "dispatch branches")
        for b, (p, target, after) in enumerate(branches):
            d_p[code, b], d_t[code, b] = float(p[0]), int(np.asarray(target)[0])
            d_a[code, b] = _code(after if not isinstance(after, list) else after[0], ordered)
        for pattern in range(4):
            q_next = np.array([[0 if pattern & 1 else rule.r, 0 if pattern & 2 else rule.r]],
                              np.int64)
            updates = rule.update(memory, q_next)
            require(len(updates) <= 2, "policy", "the multilevel solver needs at most two "
                    "update branches")
            for b, (p, new) in enumerate(updates):
                u_p[code, pattern, b] = float(p[0])
                u_m[code, pattern, b] = _code(new if not isinstance(new, list) else new[0],
                                              ordered)
    return d_p, d_t, d_a, u_p, u_m


# -- the chain, nine or ten slots a state --------------------------------------------------


@njit(cache=True)
def _index(q1, q2, code, k, r, ordered):
    base = q1 * (k + 1) - q1 * (q1 - 1) // 2 + q2
    if ordered and code == 4:
        total = (k + 1) * (k + 2) // 2
        return total + q1 * r + q2
    return base


@njit(cache=True)
def _build(k, r, ordered, lam, mu, d_p, d_t, d_a, u_p, u_m, slots):
    """Targets and probabilities (states × slots), the coordinates, and per state the
    expected loss, U_Σ, U_Σ² and ΣQ(t+1)·ΣU(t) of one slot."""
    base = (k + 1) * (k + 2) // 2
    extra = r * r if ordered else 0
    n = base + extra
    target = np.full((n, slots), -1, np.int32)
    prob = np.zeros((n, slots))
    c1 = np.zeros(n, np.int64)
    c2 = np.zeros(n, np.int64)
    moments = np.zeros((n, 5))  # loss L, U, U², ΣQ(t+1)ΣU, U·L
    valid = np.zeros(n, np.bool_)
    for q1 in range(k + 1):
        for q2 in range(k + 1 - q1):
            for copy in range(2):
                below = (q1 < r) and (q2 < r)
                if copy == 1 and not (ordered and below):
                    continue
                if q1 < r and q2 < r:
                    code = 3 if copy == 0 else 4
                elif q1 < r:
                    code = 1
                elif q2 < r:
                    code = 2
                else:
                    code = 0
                s = _index(q1, q2, code, k, r, ordered)
                valid[s] = True
                c1[s], c2[s] = q1, q2
                for a in range(2):
                    pa = lam if a == 1 else 1.0 - lam
                    for b in range(2 if a == 1 else 1):
                        pb = d_p[code, b] if a == 1 else 1.0
                        if pb <= 0.0:
                            continue
                        after = d_a[code, b] if a == 1 else code
                        t = d_t[code, b] if a == 1 else -1
                        for s1 in range(2):
                            p1 = mu[0] if s1 == 1 else 1.0 - mu[0]
                            for s2 in range(2):
                                p2 = mu[1] if s2 == 1 else 1.0 - mu[1]
                                a1 = 1 if t == 0 else 0
                                a2 = 1 if t == 1 else 0
                                x1 = max(q1 + a1 - s1, 0)
                                x2 = max(q2 + a2 - s2, 0)
                                u = max(s1 - q1 - a1, 0) + max(s2 - q2 - a2, 0)
                                over = x1 + x2 - k
                                if over > 0:
                                    if x1 >= x2:
                                        x1 -= 1
                                    else:
                                        x2 -= 1
                                pattern = (1 if x1 < r else 0) + (2 if x2 < r else 0)
                                w = pa * pb * p1 * p2
                                m = moments[s]
                                m[0] += w * max(over, 0)
                                m[1] += w * u
                                m[2] += w * u * u
                                m[3] += w * (x1 + x2) * u
                                m[4] += w * u * max(over, 0)
                                for e in range(2):
                                    pu = u_p[after, pattern, e]
                                    if pu <= 0.0:
                                        continue
                                    new = u_m[after, pattern, e]
                                    dest = _index(x1, x2, new, k, r, ordered)
                                    for j in range(slots):
                                        if target[s, j] == dest or target[s, j] < 0:
                                            target[s, j] = dest
                                            prob[s, j] += w * pu
                                            break
    return target, prob, c1, c2, moments, valid


# -- multilevel aggregation ---------------------------------------------------------------


@njit(cache=True)
def _apply(target, prob, x):
    """y = xP (a row vector times the chain)."""
    y = np.zeros(x.size)
    for s in range(x.size):
        v = x[s]
        if v == 0.0:
            continue
        for j in range(target.shape[1]):
            t = target[s, j]
            if t < 0:
                break
            y[t] += v * prob[s, j]
    return y


@njit(cache=True)
def _jacobi(target, prob, stay, x, omega, sweeps):
    """Damped Jacobi sweeps on π(I − P) = 0: x_j ← (1−ω)x_j + ω(xP − x_j P_jj)_j/(1 − P_jj)."""
    for _ in range(sweeps):
        y = _apply(target, prob, x)
        for s in range(x.size):
            x[s] = (1.0 - omega) * x[s] + omega * (y[s] - x[s] * stay[s]) / (1.0 - stay[s])
    return x


@njit(cache=True)
def _coarsen(target, prob, x, agg, ca1, ca2, nc):
    """The aggregated chain P_c(I, J) = Σ_{i∈I} x_i Σ_{j∈J} P_ij / Σ_{i∈I} x_i on a grid of
    nine slots (coarse offsets −1, 0, 1 in each coordinate)."""
    ct = np.full((nc, 9), -1, np.int32)
    cp = np.zeros((nc, 9))
    mass = np.zeros(nc)
    count = np.zeros(nc)
    for s in range(x.size):
        mass[agg[s]] += x[s]
        count[agg[s]] += 1.0
    for s in range(x.size):
        big = agg[s]
        # an aggregate without mass (states π leaves empty) is averaged uniformly
        weight = x[s] / mass[big] if mass[big] > 0 else 1.0 / count[big]
        for j in range(target.shape[1]):
            t = target[s, j]
            if t < 0:
                break
            other = agg[t]
            slot = (ca1[other] - ca1[big] + 1) * 3 + (ca2[other] - ca2[big] + 1)
            ct[big, slot] = other
            cp[big, slot] += weight * prob[s, j]
    # compact: the used slots first (the scatter stops at the first empty slot)
    for big in range(nc):
        fill = 0
        for j in range(9):
            if ct[big, j] >= 0:
                ct[big, fill], cp[big, fill] = ct[big, j], cp[big, j]
                if fill != j:
                    ct[big, j], cp[big, j] = -1, 0.0
                fill += 1
    return ct, cp, mass


@njit(cache=True)
def _stay(target, prob):
    out = np.zeros(target.shape[0])
    for s in range(target.shape[0]):
        for j in range(target.shape[1]):
            if target[s, j] == s:
                out[s] += prob[s, j]
    return np.minimum(out, 1.0 - 1e-12)


class _Level:
    def __init__(self, c1: np.ndarray, c2: np.ndarray) -> None:
        self.c1, self.c2 = c1, c2
        key1, key2 = c1 // 2, c2 // 2
        keys = key1 * (int(key2.max()) + 1) + key2
        unique, self.agg = np.unique(keys, return_inverse=True)
        self.agg = self.agg.astype(np.int64)
        self.nc = unique.size
        self.ca1 = np.zeros(self.nc, np.int64)
        self.ca2 = np.zeros(self.nc, np.int64)
        self.ca1[self.agg], self.ca2[self.agg] = key1, key2


def _direct(target: np.ndarray, prob: np.ndarray) -> np.ndarray:
    """The stationary law of a small chain (dense LU, π(0) fixed, then normalised)."""
    n = target.shape[0]
    dense = np.zeros((n, n))
    rows = np.repeat(np.arange(n), target.shape[1])
    keep = target.ravel() >= 0
    np.add.at(dense, (rows[keep], target.ravel()[keep]), prob.ravel()[keep])
    a = dense.T - np.eye(n)
    a[0, :] = 1.0
    rhs = np.zeros(n)
    rhs[0] = 1.0
    try:
        x = np.linalg.solve(a, rhs)
    except np.linalg.LinAlgError:
        x = np.linalg.lstsq(a, rhs, rcond=None)[0]
    x = np.maximum(x, 0.0)
    return x / x.sum()


class _Hierarchy:
    """The levels of 2 × 2 aggregation down to :data:`COARSEST` states."""

    def __init__(self, c1: np.ndarray, c2: np.ndarray) -> None:
        self.levels: list[_Level] = []
        while c1.size > COARSEST:
            level = _Level(c1, c2)
            self.levels.append(level)
            c1, c2 = level.ca1, level.ca2

    def cycle(self, depth: int, target: np.ndarray, prob: np.ndarray, x: np.ndarray,
              sweeps: int = 2, omega: float = 0.8, gamma: int = 3) -> np.ndarray:
        if depth == len(self.levels):
            return _direct(target, prob) * x.sum()
        stay = _stay(target, prob)
        x = _jacobi(target, prob, stay, x, omega, sweeps)
        level = self.levels[depth]
        ct, cp, mass = _coarsen(target, prob, x, level.agg, level.ca1, level.ca2, level.nc)
        y = mass.copy()
        for _ in range(gamma if depth + 1 < len(self.levels) else 1):
            y = self.cycle(depth + 1, ct, cp, y, sweeps, omega, gamma)
        ratio = np.where(mass > 0, y / np.where(mass > 0, mass, 1.0), 1.0)
        x = x * ratio[level.agg]
        return _jacobi(target, prob, stay, x, omega, sweeps)


#: iterates kept by the Anderson acceleration of the cycles
WINDOW = 6


def _accelerated_step(hierarchy: _Hierarchy, target: np.ndarray, prob: np.ndarray,
                      x: np.ndarray, history: list[tuple[np.ndarray, np.ndarray]]
                      ) -> tuple[np.ndarray, float]:
    """One cycle G(x) with Anderson acceleration (D. G. Anderson, "Iterative procedures for
    nonlinear integral equations", J. ACM 12, 1965; H. F. Walker and P. Ni, SIAM J. Numer.
    Anal. 49, 2011): x ← G(x) − ΔG·γ, γ minimising ‖f − ΔF·γ‖₂ over the last
    :data:`WINDOW` steps (f = G(x) − x); a step that does not lower ‖πP − π‖₁ falls back
    to G(x) and clears the history. Returns (x, ‖xP − x‖₁)."""
    g = hierarchy.cycle(0, target, prob, x.copy())
    g = np.maximum(g, 0.0)
    g /= g.sum()
    f = g - x
    plain_error = float(np.abs(_apply(target, prob, g) - g).sum())
    history.append((g, f))
    if len(history) > WINDOW + 1:
        history.pop(0)
    if len(history) < 2:
        return g, plain_error
    d_f = np.column_stack([history[i + 1][1] - history[i][1] for i in range(len(history) - 1)])
    d_g = np.column_stack([history[i + 1][0] - history[i][0] for i in range(len(history) - 1)])
    try:
        gamma = np.linalg.lstsq(d_f, f, rcond=1e-12)[0]
        y = np.maximum(g - d_g @ gamma, 0.0)
        y /= y.sum()
        error = float(np.abs(_apply(target, prob, y) - y).sum())
    except np.linalg.LinAlgError:
        error = math.inf
    if not error < plain_error:
        history.clear()
        history.append((g, f))
        return g, plain_error
    return y, error


def _tail(distribution: np.ndarray) -> float:
    k = distribution.size - 1
    inner, outer = max(0, k - 4 - max(4, k // 8)), max(1, k - 4)
    if outer <= inner or distribution[inner] <= 0 or distribution[outer] <= 0:
        return 0.5
    return float((distribution[outer] / distribution[inner]) ** (1.0 / (outer - inner)))


def _states(k: int, r: int, ordered: bool) -> int:
    """States of the chain truncated at ΣQ ≤ K (with an ordered list, r² more)."""
    return (k + 1) * (k + 2) // 2 + (r * r if ordered else 0)


def guess_truncation(system: System, tolerance: float) -> int:
    """K with P(ΣQ = K) ≈ ``tolerance`` for an exponential ΣQ of mean 1.15·ζ/(2ε) (between
    the pooled queue and random routing): K = E·log(1/(E·tol))."""
    mu = np.asarray(system.rates, dtype=float)
    zeta = system.arrivals.variance + float(np.sum(mu * (1 - mu)))
    mean = max(1.15 * zeta / (2 * system.epsilon), 2.0)
    return int(math.ceil(mean * max(math.log(1.0 / (mean * tolerance)), 3.0))) + 8


def axis_drifts(system: System, tables: tuple[np.ndarray, ...], r: int
                ) -> list[tuple[float, float]]:
    """For each server n: (its interior drift λ·p_n − μ_n, both queues ≥ r; its drift with
    Q_n → ∞, the other queue Q_m then a birth–death chain under the rule's law). A 2-D
    nearest-neighbour walk whose interior drift pushes Q_n up is ergodic only if the drift
    induced along that axis is negative (G. Fayolle, V. A. Malyshev and M. V. Menshikov,
    "Topics in the Constructive Theory of Countable Markov Chains", 1995, §3.3)."""
    d_p, d_t = tables[0], tables[1]
    lam, mu = float(system.arrival_rate), np.asarray(system.rates, dtype=float)
    out = []
    for n in range(2):
        m = 1 - n
        to_m = [float(d_p[c, d_t[c] == m].sum()) for c in range(3)]
        interior = lam * (1.0 - to_m[0]) - mu[n]
        size = max(4 * r, 64)
        while True:
            p_m = np.where(np.arange(size + 1) < r, to_m[1 + m], to_m[0])
            up = lam * p_m * (1 - mu[m])
            down = (1 - lam * p_m) * mu[m]
            ratios = up[:-1] / down[1:]
            if ratios[-1] >= 1.0:  # Q_m itself is not positive recurrent: no induced drift
                out.append((interior, math.inf))
                break
            # in logs: a product of r ratios above 1 overflows (r = 10⁴ had given inf/inf)
            with np.errstate(divide="ignore"):
                log_law = np.concatenate([[0.0], np.cumsum(np.log(ratios))])
            law = np.exp(log_law - log_law.max())
            if law[-1] / law.sum() < 1e-15 or size > 10**6:
                law /= law.sum()
                out.append((interior, lam * float(law @ (1 - p_m)) - mu[n]))
                break
            size *= 4
    return out


def solve_two_server(system: System, rule: Any, *, name: str = "jbt",
                     truncation: int | None = None, tolerance: float = 1e-9,
                     residual: float = 1e-13, max_states: int = MAX_STATES,
                     max_cycles: int = 400) -> MultilevelResult:
    """The stationary law of a two-server system with Bernoulli arrivals and Bernoulli
    service under a one-dispatcher ID-memory rule (``rule``: the policy's
    ``exact_memory(system)``, a :class:`~dispatchlab.solvers.rules.MemoryRule` with ``r``).

    K grows from :func:`guess_truncation` until P(ΣQ = K) ≤ ``tolerance`` unless
    ``truncation`` fixes it. Refused (ValidationError) when the chain would exceed
    ``max_states`` or the cycles do not reach ``residual``.
    """
    started = time.perf_counter()
    require(system.n_servers == 2, "servers", f"the multilevel solver is for N = 2 servers "
            f"(got N = {system.n_servers})")
    require(system.arrivals.law == "bernoulli", "arrivals",
            "the multilevel solver needs Bernoulli arrivals (at most one job a slot)")
    require(system.service.kind == "bernoulli", "service",
            "the multilevel solver needs Bernoulli service (at most one job a slot)")
    require(system.dispatchers == 1, "dispatchers", "the multilevel solver is for M = 1")
    require(system.epsilon > 0, "epsilon", "an unstable system has no stationary law")
    require(MIN_TOLERANCE <= tolerance < 1, "tolerance", f"must be in [{MIN_TOLERANCE:g}, "
            f"1): a smaller edge mass is below what double precision resolves (got "
            f"{tolerance:g})")
    require(0 < residual < 1e-3, "residual", f"must be in (0, 1e-3) (got {residual:g})")
    require(hasattr(rule, "r") and hasattr(rule, "dispatch"), "policy",
            "the multilevel solver needs an ID-memory rule (JIQ, JBT-r) with M = 1")
    tables = rule_tables(rule)
    r, ordered = int(rule.r), bool(getattr(rule, "ordered", False))
    # K ≥ r: the smallest chain, refused before anything is computed (r = 10⁴ took 43 s to
    # be refused, r = 10⁸ held 1.8 GB)
    smallest = _states(r, r, ordered)
    require(smallest <= max_states, "r" if smallest > MAX_STATES else "max_states",
            f"the threshold r = {r:,} needs ΣQ ≤ K with K ≥ r: "
            f"at least {smallest:,} states, above max_states = {max_states:,}: no exact "
            "solution this large; simulate")
    for n, (interior, induced) in enumerate(axis_drifts(system, tables, r)):
        require(not (interior >= 0 and induced >= 0), "load",
                f"{name} is unstable on this system: server {n} is overloaded away from "
                f"the axes (drift λp_{n} − μ_{n} = {interior:.4g}) and still with the other "
                f"queue's idle periods (induced drift {induced:.4g}): no stationary law")
    mu = np.asarray(system.rates, dtype=float)
    lam = float(system.arrival_rate)
    fixed = truncation is not None
    k = int(truncation) if fixed else guess_truncation(system, tolerance)
    x_previous: tuple[np.ndarray, np.ndarray, np.ndarray] | None = None
    while True:
        size = _states(k, r, ordered)
        if size > max_states:
            raise TooLarge("truncation" if fixed else "max_states",
                           f"the chain would hold {size:,} states (ΣQ ≤ K = {k}), above "
                           f"max_states = {max_states:,}: no exact solution this large; "
                           "simulate")
        require(r <= k, "truncation", f"the threshold r = {r} exceeds the truncation K = {k}")
        require_memory("max_states", size * BYTES_PER_STATE,
                       f"the multilevel chain of {size:,} states (ΣQ ≤ K = {k})")
        if size >= LONG_SOLVE_STATES:
            say(f"K = {k:,}: {size:,} states (~{size * BYTES_PER_STATE / 1e6:,.0f} MB), "
                "building the chain …")
        target, prob, c1, c2, moments, valid = _build(k, r, ordered, lam, mu, *tables,
                                                      10 if ordered else 9)
        require(bool(valid.all()), "truncation", "internal: unused state indices")
        totals = c1 + c2
        if x_previous is None:
            x = np.exp(-totals * (2 * system.epsilon / 0.6))
        else:  # the previous law, carried over by coordinates (new states start small)
            pc1, pc2, px = x_previous
            grid = np.full((k + 1, k + 1), px.min() * 1e-3)
            np.maximum.at(grid, (pc1, pc2), px)
            x = grid[c1, c2].copy()
        x /= x.sum()
        hierarchy = _Hierarchy(c1, c2)
        error, cycles = math.inf, 0
        history: list[tuple[np.ndarray, np.ndarray]] = []
        errors: list[float] = []
        cycles_started = time.perf_counter()
        with stops_caught() as stopped:  # Ctrl-C between two cycles, not inside one
            while cycles < max_cycles:
                x, error = _accelerated_step(hierarchy, target, prob, x, history)
                cycles += 1
                errors.append(error)
                left = seconds_left(errors, residual,
                                    (time.perf_counter() - cycles_started) / cycles)
                say(f"K = {k:,}, {size:,} states: cycle {cycles}, ‖πP − π‖₁ = {error:.2g} "
                    f"(target {residual:.0e})"
                    + (f", about {math.ceil(left)} s left" if math.isfinite(left) else ""))
                if stopped():
                    raise interruption(stopped(), f"the multilevel solve at cycle {cycles} "
                                       f"(K = {k}, {size:,} states)")
                if error <= residual:
                    break
        require(error <= residual, "residual", f"the multilevel cycles reached ‖πP − π‖₁ = "
                f"{error:.2g} after {cycles} cycles, above the target {residual:.2g}")
        distribution = np.bincount(totals, weights=x, minlength=k + 1)
        edge = float(distribution[k])
        if fixed or edge <= tolerance:
            break
        ratio = min(max(_tail(distribution), 1e-3), 0.999)
        extra = math.ceil(math.log(tolerance / edge) / math.log(ratio)) + 2
        x_previous = (c1, c2, x)
        k = min(max(k + extra, math.ceil(1.1 * k)), 2 * k)
    ratio = min(_tail(distribution), 0.999)
    beyond = edge * (k * ratio / (1 - ratio) + ratio / (1 - ratio) ** 2) if ratio > 0 else 0.0
    m = x @ moments
    return MultilevelResult(
        policy=name, epsilon=float(system.epsilon), threshold=r,
        mean_total_queue=float(x @ totals), mean_queues=[float(x @ c1), float(x @ c2)],
        mean_unused=float(m[1]), mean_unused_square=float(m[2]), cross_term=float(m[3]),
        unused_loss=float(m[4]),
        truncation=k, edge_mass=edge, truncation_error=float(beyond), loss_rate=float(m[0]),
        residual=error, cycles=cycles, states=int(x.size),
        seconds=time.perf_counter() - started,
        total_queue_distribution=[float(v) for v in distribution])


def applies(system: System, policy: Any) -> bool:
    """Whether :func:`solve_two_server` takes this system and policy (two servers,
    Bernoulli laws, M = 1, an ID-memory rule)."""
    if not (system.n_servers == 2 and system.arrivals.law == "bernoulli"
            and system.service.kind == "bernoulli" and system.dispatchers == 1
            and system.epsilon > 0):
        return False
    memory = getattr(policy, "exact_memory", None)
    if memory is None:
        return False
    try:
        rule = memory(system)
    except ValidationError:
        return False
    return rule is not None and hasattr(rule, "r") and hasattr(rule, "ordered")
