"""Two servers, one dispatcher, pull-based ID memory (JIQ, JBT-r) in heavy traffic: the
truncated chain solved by multilevel aggregation.

With M = 1 the memory of JIQ and JBT-r at a slot start is the set {n : Q_n(t) < r} (a
listed server receives no job unless its ID is taken, and it reports again at the slot end
while Q_n < r); only the *order* of the list is extra information, for a rule that takes
the oldest ID, and only while both servers are below r. So the chain lives on the
triangle {(Q₁, Q₂) : Q₁ + Q₂ ≤ K} (plus a second copy of the states with both queues below
r for the ordered list). Away from the axes and the edge (both Q_n > r, ΣQ + A_Σ ≤ K) the
law of a slot is the same everywhere (the rule's fallback split): those states share one
kernel and are not stored; the others have explicit rows (:mod:`.two_server_law`, which
also takes Poisson and binomial arrivals, in a batch or job by job). With Bernoulli
arrivals every state has at most nine neighbours (ten with the ordered copies); with
Poisson arrivals cut at a tail of 10⁻¹³, about 150.

The truncation is that of :mod:`dispatchlab.solvers.chain` (a job that would take ΣQ above K
is lost from the longest queue), so the two agree exactly at equal K. The chain, ~10⁷
states at ε = 10⁻³, is stored as nine or ten (target, probability) slots per state and
solved by **multiplicative multilevel aggregation** (iterative aggregation–disaggregation
applied recursively in a V-cycle): Y. Takahashi, "A lumping method for numerical
calculations of stationary distributions of Markov chains" (1975); G. Horton and S. T.
Leutenegger, "A multi-level solution algorithm for steady-state Markov chains", ACM
SIGMETRICS 1994; H. De Sterck, T. A. Manteuffel, S. F. McCormick, Q. Nguyen and J. Ruge,
"Multilevel adaptive aggregation for Markov chains, with application to web ranking",
SIAM J. Sci. Comput. 30 (2008). The aggregates are 2 × 2 blocks of the (Q₁, Q₂) grid (4 × 4
at the first level when a slot brings several jobs, so that the first coarse chain's rows
stay short); the smoother is damped Jacobi, the coarsest chain (a few hundred states) is
solved directly. Each cycle costs O(states); the iteration stops when ‖πP − π‖₁ falls
below ``residual`` (10⁻¹³ by default).

From π and the one-slot law the solver also gives the moments of the drift identity of
(ΣQ)²: E[U_Σ] (U_n(t) = max(S_n − Q_n − A_n, 0), the unused service), E[U_Σ²] and the
Eq. (7) term E[ΣQ(t+1)·ΣU(t)] of the JBT paper (X. Zhou, N. Shroff and A. Wierman,
"Asymptotically optimal load balancing in large-scale heterogeneous systems with multiple
dispatchers", 2021). With L the jobs lost at the edge, stationarity of (ΣQ)² reads
ε·E[ΣQ] = (σ_a² + σ_s² + ε² − E[U_Σ²])/2 + E[ΣQ(t+1)ΣU(t)] + E[U_Σ L] − K·E[L] − E[L²]/2
(the last three terms vanish with the truncation; with at most one job a slot, L ≤ 1 and
they read E[U_Σ L] − (K + ½)E[L]), and E[U_Σ] = ε + E[L].
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
from dispatchlab.solvers.laws import MIN_TOLERANCE, arrival_pmf
from dispatchlab.solvers.progress import LONG_SOLVE_STATES, say, seconds_left
from dispatchlab.solvers.two_server_law import (
    MEMORIES,
    accumulate,
    axis_law,
    build_boundary,
    dispatch_laws,
    flush_row,
    interior_factors,
    interior_kernel,
    kernel_of,
)

if TYPE_CHECKING:
    from dispatchlab.model.system import System

#: the largest chain this solver builds (states; ~10 GB at the cap, which the memory guard
#: refuses on most machines first)
MAX_STATES = 20_000_000
#: bytes the solver holds per state at its peak, the chain, its coarser levels and the
#: iterates (measured: 514 and 517 for 134,421 and 1,228,528 states with every state's row
#: stored; with the interior's one kernel, Poisson arrivals: ~300 at 2.2·10⁶ states), for
#: the memory guard
BYTES_PER_STATE = 520
#: the coarsest chain, solved directly
COARSEST = 300
#: the arrival laws the solver takes (a slot's jobs from an i.i.d. law)
ARRIVAL_LAWS = ("bernoulli", "binomial", "poisson")


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
    law_tail: float = 0.0  # the arrival law's tail mass lumped into its last value
    loss_square: float = 0.0  # E[L²] (L ≤ 1 with Bernoulli arrivals: E[L])
    total_queue_distribution: list[float] = field(default_factory=list, repr=False)
    method: str = "truncated chain, multilevel aggregation (block aggregates, W-cycles, Anderson)"

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


# -- the chain: explicit boundary rows, one kernel for the interior ------------------------


@njit(cache=True)
def _apply(indptr, indices, data, interior, c1, kernel, widths, first, second, k, x):
    """y = xP (a row vector times the chain): each boundary state along its row, each
    interior state through the kernel (row i: ΔQ₁ = i − 1; entry j: ΔQ₂ = j − 1, up to
    ``widths[i]``; on the triangle a kernel row is a run of consecutive states), or, when
    the kernel is a sum of products Σ_t first[t] ⊗ second[t], in two sweeps per term: along
    Q₂, then along Q₁ (a few dozen entries a state instead of a hundred and more)."""
    y = np.zeros(x.size)
    for s in range(x.size):
        v = x[s]
        if v == 0.0:
            continue
        if interior[s]:
            q1 = c1[s]
            for i in range(kernel.shape[0]):
                d1 = i - 1
                start = s + d1 * (k + 1) - q1 * d1 - d1 * (d1 - 1) // 2 - 1
                for j in range(widths[i]):
                    y[start + j] += v * kernel[i, j]
            continue
        for e in range(indptr[s], indptr[s + 1]):
            y[indices[e]] += v * data[e]
    if first.shape[0] == 0:
        return y
    along = np.zeros(x.size)
    for term in range(first.shape[0]):
        along[:] = 0.0
        for s in range(x.size):
            v = x[s]
            if v != 0.0 and interior[s]:
                for j in range(second.shape[1]):
                    along[s + j - 1] += v * second[term, j]
        for s in range(x.size):
            v = along[s]
            if v == 0.0:
                continue
            q1 = c1[s]
            for i in range(first.shape[1]):
                d1 = i - 1
                y[s + d1 * (k + 1) - q1 * d1 - d1 * (d1 - 1) // 2] += v * first[term, i]
    return y


@njit(cache=True)
def _jacobi(indptr, indices, data, interior, c1, kernel, widths, first, second, k, stay, x,
            omega, sweeps):
    """Damped Jacobi sweeps on π(I − P) = 0: x_j ← (1−ω)x_j + ω(xP − x_j P_jj)_j/(1 − P_jj)."""
    for _ in range(sweeps):
        y = _apply(indptr, indices, data, interior, c1, kernel, widths, first, second, k, x)
        for s in range(x.size):
            x[s] = (1.0 - omega) * x[s] + omega * (y[s] - x[s] * stay[s]) / (1.0 - stay[s])
    return x


@njit(cache=True)
def _coarsen(indptr, indices, data, interior, c1, c2, coarse_kernels, coarse_widths, block,
             row_start, x, agg, order, group_ptr, nc):
    """The aggregated chain P_c(I, J) = Σ_{i∈I} x_i Σ_{j∈J} P_ij / Σ_{i∈I} x_i (CSR), row by
    row over the aggregates (``order``: the states sorted by aggregate, ``group_ptr`` where
    each aggregate's run starts), and the aggregates' masses. An interior state's row is
    its kernel summed per aggregate (``coarse_kernels[Q₁ mod b, Q₂ mod b]``, offsets from
    −1 in aggregate coordinates; the aggregates of a grid row are consecutive from
    ``row_start``)."""
    mass = np.zeros(nc)
    count = np.zeros(nc)
    for s in range(x.size):
        mass[agg[s]] += x[s]
        count[agg[s]] += 1.0
    out_ptr = np.zeros(nc + 1, np.int64)
    out_idx = np.empty(9 * nc + 16, np.int64)
    out_val = np.empty(9 * nc + 16)
    acc = np.zeros(nc)
    touched = np.empty(nc, np.int64)
    fill = 0
    for big in range(nc):
        used = 0
        for g in range(group_ptr[big], group_ptr[big + 1]):
            s = order[g]
            # an aggregate without mass (states π leaves empty) is averaged uniformly
            weight = x[s] / mass[big] if mass[big] > 0 else 1.0 / count[big]
            if weight == 0.0:
                continue
            if interior[s]:
                p1, p2 = c1[s] % block, c2[s] % block
                a1, a2 = c1[s] // block, c2[s] // block
                ck, cw = coarse_kernels[p1, p2], coarse_widths[p1, p2]
                for i in range(ck.shape[0]):
                    start = row_start[a1 + i - 1] + a2 - 1
                    for j in range(cw[i]):
                        used = accumulate(acc, touched, used, start + j, weight * ck[i, j])
                continue
            for e in range(indptr[s], indptr[s + 1]):
                used = accumulate(acc, touched, used, agg[indices[e]], weight * data[e])
        out_idx, out_val, fill = flush_row(out_idx, out_val, fill, acc, touched, used)
        out_ptr[big + 1] = fill
    return out_ptr, out_idx[:fill].copy(), out_val[:fill].copy(), mass


@njit(cache=True)
def _stay(indptr, indices, data, interior, kernel_stay):
    out = np.zeros(interior.size)
    for s in range(interior.size):
        if interior[s]:
            out[s] = kernel_stay
            continue
        for e in range(indptr[s], indptr[s + 1]):
            if indices[e] == s:
                out[s] += data[e]
    return np.minimum(out, 1.0 - 1e-12)


def _widths(kernel: np.ndarray) -> np.ndarray:
    """Per kernel row, one past its last non-zero entry."""
    nonzero = kernel != 0
    return np.where(nonzero.any(axis=1),
                    kernel.shape[1] - np.argmax(nonzero[:, ::-1], axis=1), 0).astype(np.int64)


def _coarse_kernels(kernel: np.ndarray, block: int) -> tuple[np.ndarray, np.ndarray]:
    """For each position (Q₁ mod b, Q₂ mod b) in its aggregate, the kernel summed per
    destination aggregate: [p₁, p₂, δ₁ + 1, δ₂ + 1], and each row's width."""
    height, width = ((kernel.shape[0] - 2) // block + 3, (kernel.shape[1] - 2) // block + 3)
    out = np.zeros((block, block, height, width))
    offsets1, offsets2 = np.arange(kernel.shape[0]) - 1, np.arange(kernel.shape[1]) - 1
    for p1 in range(block):
        rows = (p1 + offsets1) // block + 1
        for p2 in range(block):
            cols = (p2 + offsets2) // block + 1
            np.add.at(out[p1, p2], (rows[:, None], cols[None, :]), kernel)
    widths = np.array([[_widths(out[p1, p2]) for p2 in range(block)] for p1 in range(block)])
    return out, widths


_NONE = np.zeros(0, np.int64)


class _Chain:
    """A level's chain: CSR rows, and (the finest level) the interior states' kernel, given
    as a sum of products ``factors`` (pairs of 1-D laws of ΔQ₁ and ΔQ₂ from −1) where it
    is one."""

    def __init__(self, indptr: np.ndarray, indices: np.ndarray, data: np.ndarray,
                 interior: np.ndarray | None = None, c1: np.ndarray = _NONE,
                 c2: np.ndarray = _NONE, kernel: np.ndarray | None = None,
                 k: int = 0, factors: list[tuple[np.ndarray, np.ndarray]] | None = None
                 ) -> None:
        self.size = indptr.size - 1
        self.rows = (indptr, indices, data)
        self.interior = np.zeros(self.size, np.bool_) if interior is None else interior
        self.c1, self.c2, self.k = c1, c2, int(k)
        self.kernel = np.zeros((1, 1)) if kernel is None else kernel
        self.widths = _widths(self.kernel)
        self.first, self.second = np.zeros((0, 1)), np.zeros((0, 1))
        if factors:
            self.widths = np.zeros_like(self.widths)  # the products instead
            self.first = np.array([u for u, _ in factors])
            self.second = np.array([v for _, v in factors])
        self._stay: np.ndarray | None = None

    def apply(self, x: np.ndarray) -> np.ndarray:
        return _apply(*self.rows, self.interior, self.c1, self.kernel, self.widths,
                      self.first, self.second, self.k, x)

    def stay(self) -> np.ndarray:
        if self._stay is None:
            inside = float(self.kernel[1, 1]) if self.kernel.shape[0] > 1 else 0.0
            self._stay = _stay(*self.rows, self.interior, inside)
        return self._stay

    def smooth(self, x: np.ndarray, omega: float, sweeps: int) -> np.ndarray:
        return _jacobi(*self.rows, self.interior, self.c1, self.kernel, self.widths,
                       self.first, self.second, self.k, self.stay(), x, omega, sweeps)

    def coarsen(self, x: np.ndarray, level: _Level) -> tuple[_Chain, np.ndarray]:
        kernels, widths = level.coarse_kernels(self.kernel)
        indptr, indices, data, mass = _coarsen(
            *self.rows, self.interior, self.c1, self.c2, kernels, widths, level.block,
            level.row_start, x, level.agg, level.order, level.group_ptr, level.nc)
        return _Chain(indptr, indices, data), mass

    def dense(self) -> np.ndarray:
        indptr, indices, data = self.rows
        matrix = np.zeros((self.size, self.size))
        rows = np.repeat(np.arange(self.size), np.diff(indptr))
        np.add.at(matrix, (rows, indices), data)
        return matrix


class _Level:
    """``block`` × ``block`` aggregates of the (Q₁, Q₂) grid."""

    def __init__(self, c1: np.ndarray, c2: np.ndarray, block: int) -> None:
        self.block = block
        key1, key2 = c1 // block, c2 // block
        keys = key1 * (int(key2.max()) + 1) + key2
        unique, agg = np.unique(keys, return_inverse=True)
        self.agg = agg.astype(np.int64)
        self.nc = unique.size
        self.order = np.argsort(self.agg, kind="stable")
        self.group_ptr = np.zeros(self.nc + 1, np.int64)
        np.cumsum(np.bincount(self.agg, minlength=self.nc), out=self.group_ptr[1:])
        self.ca1 = np.zeros(self.nc, np.int64)
        self.ca2 = np.zeros(self.nc, np.int64)
        self.ca1[self.agg], self.ca2[self.agg] = key1, key2
        # the first aggregate of each grid row (they are numbered row by row)
        self.row_start = np.searchsorted(self.ca1, np.arange(int(self.ca1.max()) + 2))
        self._kernels: tuple[np.ndarray, np.ndarray] | None = None

    def coarse_kernels(self, kernel: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        if self._kernels is None:
            self._kernels = _coarse_kernels(kernel, self.block)
        return self._kernels


def _direct(chain: _Chain) -> np.ndarray:
    """The stationary law of a small chain (dense LU, π(0) fixed, then normalised)."""
    a = chain.dense().T - np.eye(chain.size)
    a[0, :] = 1.0
    rhs = np.zeros(chain.size)
    rhs[0] = 1.0
    try:
        x = np.linalg.solve(a, rhs)
    except np.linalg.LinAlgError:
        x = np.linalg.lstsq(a, rhs, rcond=None)[0]
    x = np.maximum(x, 0.0)
    return x / x.sum()


class _Hierarchy:
    """The levels of aggregation down to :data:`COARSEST` states: ``first_block`` ×
    ``first_block`` aggregates first (4 × 4 when a slot can bring several jobs, so that the
    first coarse chain's rows stay short), then 2 × 2."""

    def __init__(self, c1: np.ndarray, c2: np.ndarray, first_block: int = 2) -> None:
        self.levels: list[_Level] = []
        block = first_block
        while c1.size > COARSEST:
            level = _Level(c1, c2, block)
            self.levels.append(level)
            c1, c2 = level.ca1, level.ca2
            block = 2

    def cycle(self, depth: int, chain: _Chain, x: np.ndarray, sweeps: int = 2,
              omega: float = 0.8, gamma: int = 3) -> np.ndarray:
        if depth == len(self.levels):
            return _direct(chain) * x.sum()
        x = chain.smooth(x, omega, sweeps)
        level = self.levels[depth]
        coarse, mass = chain.coarsen(x, level)
        y = mass.copy()
        for _ in range(gamma if depth + 1 < len(self.levels) else 1):
            y = self.cycle(depth + 1, coarse, y, sweeps, omega, gamma)
        ratio = np.where(mass > 0, y / np.where(mass > 0, mass, 1.0), 1.0)
        x = x * ratio[level.agg]
        return chain.smooth(x, omega, sweeps)


#: iterates kept by the Anderson acceleration of the cycles
WINDOW = 6


def _accelerated_step(hierarchy: _Hierarchy, chain: _Chain, x: np.ndarray,
                      history: list[tuple[np.ndarray, np.ndarray]]
                      ) -> tuple[np.ndarray, float]:
    """One cycle G(x) with Anderson acceleration (D. G. Anderson, "Iterative procedures for
    nonlinear integral equations", J. ACM 12, 1965; H. F. Walker and P. Ni, SIAM J. Numer.
    Anal. 49, 2011): x ← G(x) − ΔG·γ, γ minimising ‖f − ΔF·γ‖₂ over the last
    :data:`WINDOW` steps (f = G(x) − x); a step that does not lower ‖πP − π‖₁ falls back
    to G(x) and clears the history. Returns (x, ‖xP − x‖₁)."""
    g = hierarchy.cycle(0, chain, x.copy())
    g = np.maximum(g, 0.0)
    g /= g.sum()
    f = g - x
    plain_error = float(np.abs(chain.apply(g) - g).sum())
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
        error = float(np.abs(chain.apply(y) - y).sum())
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


def _zeta(system: System) -> float:
    """ζ = σ_a² + Σ_n μ_n(1 − μ_n): twice the pooled queue's ε·E[q] in heavy traffic."""
    mu = np.asarray(system.rates, dtype=float)
    return system.arrivals.variance + float(np.sum(mu * (1 - mu)))


def guess_truncation(system: System, tolerance: float) -> int:
    """K with P(ΣQ = K) ≈ ``tolerance`` for an exponential ΣQ of mean 1.15·ζ/(2ε) (between
    the pooled queue and random routing): K = E·log(1/(E·tol))."""
    mean = max(1.15 * _zeta(system) / (2 * system.epsilon), 2.0)
    return int(math.ceil(mean * max(math.log(1.0 / (mean * tolerance)), 3.0))) + 8


def axis_drifts(system: System, laws: np.ndarray, pa: np.ndarray, r: int
                ) -> list[tuple[float, float]]:
    """For each server n: (its interior drift E[jobs to n] − μ_n, both queues ≥ r; its
    drift with Q_n → ∞, the other queue Q_m then a chain of its own under the rule's law).
    A 2-D walk whose interior drift pushes Q_n up is ergodic only if the drift induced
    along that axis is negative (G. Fayolle, V. A. Malyshev and M. V. Menshikov, "Topics
    in the Constructive Theory of Countable Markov Chains", 1995, §3.3)."""
    mu = np.asarray(system.rates, dtype=float)
    jobs = np.arange(pa.size)
    # mean jobs to server 0 and to server 1 in the interior (the list empty)
    to_first = float(sum(pa[a] * laws[0, a, : a + 1, 0] @ jobs[: a + 1]
                         for a in range(pa.size)))
    interior_to = (to_first, float(pa @ jobs) - to_first)
    out = []
    for n in range(2):
        m = 1 - n
        interior = interior_to[n] - mu[n]
        if interior_to[m] >= mu[m]:  # Q_m itself is not positive recurrent: no induced drift
            out.append((interior, math.inf))
            continue
        size = max(4 * r, 64)
        while True:
            law, to_other = axis_law(size, r, m, pa, float(mu[m]), laws)
            if not np.all(np.isfinite(law)):
                out.append((interior, math.inf))
                break
            if law[-1] < 1e-15 or size > 10**6:
                out.append((interior, float(law @ to_other) - mu[n]))
                break
            size *= 4
    return out


def solve_two_server(system: System, rule: Any, *, name: str = "jbt",
                     truncation: int | None = None, tolerance: float = 1e-9,
                     residual: float = 1e-13, max_states: int = MAX_STATES,
                     max_cycles: int = 400, law_tail: float = 1e-13) -> MultilevelResult:
    """The stationary law of a two-server system with Bernoulli service under a
    one-dispatcher ID-memory rule (``rule``: the policy's ``exact_memory(system)``, a
    :class:`~dispatchlab.solvers.rules.MemoryRule` with ``r``), with Bernoulli, binomial
    or Poisson arrivals (the Poisson law cut where its tail falls below ``law_tail``, the
    tail lumped into the last value) dispatched in a batch or job by job.

    K grows from :func:`guess_truncation` until P(ΣQ = K) ≤ ``tolerance`` unless
    ``truncation`` fixes it. Refused (ValidationError) when the chain would exceed
    ``max_states`` or the cycles do not reach ``residual``.
    """
    started = time.perf_counter()
    require(system.n_servers == 2, "servers", f"the multilevel solver is for N = 2 servers "
            f"(got N = {system.n_servers})")
    require(system.arrivals.law in ARRIVAL_LAWS, "arrivals", "the multilevel solver "
            f"takes {', '.join(ARRIVAL_LAWS)} arrivals (got {system.arrivals.law})")
    require(system.service.kind == "bernoulli", "service",
            "the multilevel solver needs Bernoulli service (at most one job a slot)")
    require(system.dispatchers == 1, "dispatchers", "the multilevel solver is for M = 1")
    require(system.epsilon > 0, "epsilon", "an unstable system has no stationary law")
    require(MIN_TOLERANCE <= tolerance < 1, "tolerance", f"must be in [{MIN_TOLERANCE:g}, "
            f"1): a smaller edge mass is below what double precision resolves (got "
            f"{tolerance:g})")
    require(0 < residual < 1e-3, "residual", f"must be in (0, 1e-3) (got {residual:g})")
    require(0 < law_tail < 1e-3, "law_tail", f"must be in (0, 1e-3) (got {law_tail:g})")
    require(hasattr(rule, "r") and hasattr(rule, "dispatch"), "policy",
            "the multilevel solver needs an ID-memory rule (JIQ, JBT-r) with M = 1")
    d_p, d_t, d_a, u_p, u_m = rule_tables(rule)
    r, ordered = int(rule.r), bool(getattr(rule, "ordered", False))
    # K ≥ r: the smallest chain, refused before anything is computed (r = 10⁴ took 43 s to
    # be refused, r = 10⁸ held 1.8 GB)
    smallest = _states(r, r, ordered)
    require(smallest <= max_states, "r" if smallest > MAX_STATES else "max_states",
            f"the threshold r = {r:,} needs ΣQ ≤ K with K ≥ r: "
            f"at least {smallest:,} states, above max_states = {max_states:,}: no exact "
            "solution this large; simulate")
    pa, cut_tail = arrival_pmf(system.arrivals, law_tail)
    laws = dispatch_laws(pa.size - 1, system.dispatch == "per_job", d_p, d_t, d_a)
    for n, (interior, induced) in enumerate(axis_drifts(system, laws, pa, r)):
        require(not (interior >= 0 and induced >= 0), "load",
                f"{name} is unstable on this system: server {n} is overloaded away from "
                f"the axes (drift E[jobs to {n}] − μ_{n} = {interior:.4g}) and still with "
                f"the other queue's idle periods (induced drift {induced:.4g}): no "
                "stationary law")
    mu = np.asarray(system.rates, dtype=float)
    fallback = np.array([d_p[0][d_t[0] == n].sum() for n in range(2)])
    factored = interior_factors(system.dispatch == "per_job", system.arrivals.law == "poisson",
                                float(system.arrival_rate), fallback, mu, pa, law_tail)
    factors = None
    if factored is None:
        kernel = interior_kernel(pa, mu, laws)
    else:
        factors, stream_tail = factored
        kernel = kernel_of(factors)
        cut_tail = max(cut_tail, stream_tail)
    rows, cols = np.nonzero(kernel)
    reach = int((rows + cols).max()) - 2
    # away from the axes the list stays empty: the interior's one kernel
    require(bool(np.isclose(u_p[0, 0][u_m[0, 0] == 0].sum(), 1.0)), "policy",
            "the multilevel solver needs a rule whose empty list stays empty while every "
            "queue is at or above r")
    scale = max(1.15 * _zeta(system) / (2 * system.epsilon), 2.0)
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
        indptr, indices, data, c1, c2, interior, moments = build_boundary(
            k, r, ordered, pa, mu, laws, u_p, u_m, reach)
        chain = _Chain(indptr, indices, data, interior, c1, c2, kernel, k, factors)
        totals = c1 + c2
        if x_previous is None:
            x = np.exp(-totals / scale)
        else:  # the previous law, carried over by coordinates (new states start small)
            pc1, pc2, px = x_previous
            grid = np.full((k + 1, k + 1), px.min() * 1e-3)
            np.maximum.at(grid, (pc1, pc2), px)
            x = grid[c1, c2].copy()
        x /= x.sum()
        hierarchy = _Hierarchy(c1, c2, first_block=2 if pa.size <= 2 else 4)
        error, cycles = math.inf, 0
        history: list[tuple[np.ndarray, np.ndarray]] = []
        errors: list[float] = []
        cycles_started = time.perf_counter()
        with stops_caught() as stopped:  # Ctrl-C between two cycles, not inside one
            while cycles < max_cycles:
                x, error = _accelerated_step(hierarchy, chain, x, history)
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
        residual=error, cycles=cycles, states=int(x.size), law_tail=cut_tail,
        loss_square=float(m[5]),
        seconds=time.perf_counter() - started,
        total_queue_distribution=[float(v) for v in distribution])


def applies(system: System, policy: Any) -> bool:
    """Whether :func:`solve_two_server` takes this system and policy (two servers,
    Bernoulli service, M = 1, an ID-memory rule)."""
    if not (system.n_servers == 2 and system.arrivals.law in ARRIVAL_LAWS
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
