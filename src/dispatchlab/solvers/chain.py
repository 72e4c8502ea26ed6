"""The stationary law of the slotted chain of a small system, by a truncated sparse chain.

The state is Q(t) at slot start (with ΣQ ≤ K, the truncation level), times the policy's
memory where it is finite (:class:`~dispatchlab.solvers.rules.MemoryRule`). One slot is
built exactly as the slot loop runs it (docs/model.md):

1. A_Σ(t) from its law, shared among the M dispatchers (all to one for M = 1; one
   dispatcher drawn from p for the ``batch`` split; multinomially for ``per_job``);
2. every dispatcher with arrivals, in the order m = 0, 1, …, calls ``choose`` on Q(t):
   once for all its jobs (batch dispatch) or once per job (per-job dispatch);
3. service on each server independently, Q_n(t+1) = max(Q_n(t) + A_n(t) − S_n(t), 0);
4. the end-of-slot memory update on Q(t+1).

Truncation: a transition that would end with ΣQ(t+1) > K loses the excess jobs (taken
from the longest queue); the loss rate, the mass P(ΣQ = K) at the edge and a geometric
extrapolation of the E[ΣQ] beyond K are reported. Unbounded laws (Poisson, geometric)
are cut where their tail falls below ``law_tail`` (the tail is lumped into the last
value). The transition matrix is assembled stage by stage in NumPy (states × arrivals ×
dispatch outcomes, then one server's service at a time, merging equal outcomes), the
states reachable from the empty system are kept (scipy.sparse.csgraph) and πP = π is
solved with π(0) fixed, then normalised: directly (scipy.sparse.linalg.spsolve) for a
small chain, else by GMRES with an incomplete-LU preconditioner.
"""

from __future__ import annotations

import math
import time
from collections.abc import Hashable
from dataclasses import asdict, dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np

from dispatchlab.core.errors import TooLarge, ValidationError, require
from dispatchlab.core.ram import format_bytes, peak_resident_bytes, require_memory
from dispatchlab.core.signals import call_interruptibly, interrupt_saying
from dispatchlab.solvers.laws import (
    MIN_TOLERANCE,
    arrival_pmf,
    count_splits,
    multinomial_splits,
    service_pmf,
)
from dispatchlab.solvers.progress import LONG_SOLVE_STATES, say
from dispatchlab.solvers.rules import MemoryRule

if TYPE_CHECKING:
    from dispatchlab.model.system import System

#: the largest chain solved by default (states of the truncated chain, memory included)
MAX_STATES = 400_000
#: the plain chain's size above which a two-server JIQ / JBT-r system whose slots can bring
#: several jobs goes to the multilevel solver even within ``max_states``: its per-job
#: splits make the plain chain slow (Poisson, JBT-3, ε = 0.03: 98,340 states, 119 s; the
#: multilevel solver takes seconds)
SEVERAL_JOBS_HANDOVER = 50_000
#: the default target for the mass at the truncation edge P(ΣQ = K)
EDGE_TOLERANCE = 1e-9
#: the largest dense index grid of queue vectors ((K + a_max + 1)^N entries)
MAX_GRID = 40_000_000
#: the most rows one slot's dispatch passes may make: a pass over the joint states per
#: arrival count and split of it among the dispatchers (6.7·10⁶ rows held 1.9 GB at
#: N = 2, measured; the splits of Poisson arrivals among 20 dispatchers number 10⁹)
MAX_DISPATCH_ROWS = 10_000_000
#: bytes a dispatch row costs at the peak of the chain's build, per (N + 3): its queue
#: additions, source, memory code and probability, and their copies (measured 280–300
#: bytes a row at N = 2, M = 2 and 3)
DISPATCH_ROW_BYTES = 60


@dataclass
class ExactResult:
    """The stationary law of a small system under a policy (see :func:`solve`)."""

    policy: str
    mean_total_queue: float  # E[ΣQ]
    mean_queues: list[float]  # E[Q_n]
    total_queue_distribution: list[float]  # P(ΣQ = k), k = 0..K
    truncation: int  # K: ΣQ ≤ K
    edge_mass: float  # P(ΣQ = K)
    truncation_error: float  # the E[ΣQ] beyond K, extrapolated geometrically
    loss_rate: float  # jobs per slot lost at the truncation edge
    states: int  # states of the chain kept (reachable from the empty system)
    memory_values: int  # values of the policy's memory (1: a state-only rule)
    law_tail: float  # mass of the arrival and service laws lumped at their cut
    seconds: float
    method: str = "truncated sparse chain (SuperLU, or ILU-preconditioned GMRES)"
    notes: list[str] = field(default_factory=list)
    #: solver-specific figures (the multilevel solver: residual ‖πP − π‖₁, cycles, E[U_Σ],
    #: E[U_Σ²], the Eq. (7) term E[ΣQ(t+1)·ΣU(t)])
    extras: dict[str, float] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    def __repr__(self) -> str:
        return (f"ExactResult({self.policy}: E[ΣQ]={self.mean_total_queue:.10g}, K="
                f"{self.truncation}, edge={self.edge_mass:.2g}, states={self.states:,}, "
                f"{self.seconds:.2f} s)")


class _StateOnly(MemoryRule):
    """A state-only rule seen as a rule with one memory value."""

    states = (None,)
    initial = None

    def __init__(self, probabilities: Any, mu: np.ndarray) -> None:
        self.probabilities = probabilities
        self.mu = mu

    def dispatch(self, memory: Hashable, q: np.ndarray, m: int, jobs: int) -> list:
        p = np.asarray(self.probabilities(q, self.mu), dtype=float)
        return [(p[:, n], np.full(q.shape[0], n), None) for n in range(q.shape[1])
                if np.any(p[:, n] > 0)]


def exact_rule(policy: Any, system: System) -> tuple[MemoryRule, bool]:
    """The policy's exact law (a memory rule, and whether one draw is shared per slot), or
    a ValidationError "no exact solution: simulate"."""
    name = getattr(policy, "name", type(policy).__name__)
    memory = getattr(policy, "exact_memory", None)
    if memory is not None:
        rule = memory(system)
        if rule is not None:
            return rule, False
    probabilities = getattr(policy, "dispatch_probabilities", None)
    mu = np.asarray(system.rates, dtype=float)
    if probabilities is not None and probabilities(np.zeros((1, mu.size), np.int64),
                                                   mu) is not None:
        shared = getattr(policy, "dispatch_shared", None)
        return _StateOnly(probabilities, mu), bool(shared()) if shared else False
    raise ValidationError("policy", f"no exact solution for {name} with these settings on "
                          f"this system (it declares no exact dispatch law): simulate")


def queue_vectors(n: int, k: int) -> np.ndarray:
    """Every q ∈ ℕ^n with Σq ≤ k, as rows (lexicographic)."""
    if n == 1:
        return np.arange(k + 1, dtype=np.int64).reshape(-1, 1)
    parts = []
    for first in range(k + 1):
        rest = queue_vectors(n - 1, k - first)
        parts.append(np.column_stack([np.full(rest.shape[0], first, np.int64), rest]))
    return np.concatenate(parts)


def count_states(n: int, k: int) -> int:
    """#{q ∈ ℕ^n : Σq ≤ k} = C(k + n, n)."""
    return math.comb(k + n, n)


def _count(value: int) -> str:
    """An exact count with thousands separators, or 3 significant digits past 10¹²."""
    return f"{value:,}" if value < 10**12 else f"{value:.3g}"


def _aggregate(key: np.ndarray, prob: np.ndarray, *columns: np.ndarray):
    """Merge entries with equal ``key``: summed probabilities, the first row of columns."""
    unique, first, inverse = np.unique(key, return_index=True, return_inverse=True)
    summed = np.bincount(inverse, weights=prob, minlength=unique.size)
    return (summed, *(c[first] for c in columns))


def _splits(system: System, total: int) -> list[tuple[float, tuple[int, ...]]]:
    m = system.dispatchers
    if m == 1:
        return [(1.0, (total,))]
    weights = np.asarray(system.dispatcher_weights or [1.0] * m, dtype=float)
    weights = weights / weights.sum()
    if system.split == "batch":
        return [(float(w), tuple(total if j == i else 0 for j in range(m)))
                for i, w in enumerate(weights) if w > 0]
    return multinomial_splits(total, weights)


class _Chain:
    """The truncated chain at one truncation level K."""

    def __init__(self, system: System, rule: MemoryRule, shared: bool, k: int,
                 law_tail: float) -> None:
        self.system, self.rule, self.shared, self.k = system, rule, shared, k
        self.n = system.n_servers
        self.mu = np.asarray(system.rates, dtype=float)
        self.arrivals, arrival_tail = arrival_pmf(system.arrivals, law_tail)
        self.services, service_tails = zip(*(service_pmf(system.service, float(x), law_tail)
                                             for x in self.mu), strict=True)
        self.law_tail = max(arrival_tail, *service_tails)
        self.a_max = self.arrivals.size - 1
        self.memory = list(rule.states)
        self.code = {value: i for i, value in enumerate(self.memory)}
        self.q = queue_vectors(self.n, k)
        self.base = k + self.a_max + 1  # the grid of pre-service vectors
        grid = float(self.base) ** self.n
        require(grid <= MAX_GRID, "truncation", f"the index grid of the chain would hold "
                f"{grid:.3g} entries ((K + a_max + 1)^N, K = {k}), above {MAX_GRID:,}: "
                "no exact solution for a system this large: simulate")
        self._require_dispatch_fits()
        self.powers = self.base ** np.arange(self.n, dtype=np.int64)
        self.lookup = np.full(int(grid), -1, np.int64)
        self.lookup[self.q @ self.powers] = np.arange(self.q.shape[0])

    def _dispatch_passes(self) -> int:
        """How many passes over the joint states one slot's dispatch makes: one per arrival
        count A_Σ ≥ 1 and split of it among the dispatchers (one per count when they share
        one draw or M = 1; M per count when a batch goes to one dispatcher; C(A_Σ + M − 1,
        M − 1) when each job picks its dispatcher)."""
        weights = self.system.dispatcher_weights
        m = sum(1 for w in weights if w > 0) if weights else self.system.dispatchers
        passes = 0
        for total, pa in enumerate(self.arrivals):
            if total == 0 or pa == 0:
                continue
            if self.shared or m == 1:
                passes += 1
            elif self.system.split == "batch":
                passes += m
            else:
                passes += count_splits(total, m)
        return passes

    def _require_dispatch_fits(self) -> None:
        """Refuse, before any work, a chain whose dispatch passes would not fit
        (MAX_DISPATCH_ROWS rows, or the memory available to a run)."""
        from dispatchlab.core.ram import require_memory

        states = self.q.shape[0] * len(self.memory)
        passes = self._dispatch_passes()
        rows = passes * states
        field = "dispatchers" if self.system.dispatchers > 1 else "truncation"
        require(rows <= MAX_DISPATCH_ROWS, field, (
            f"{self.system.dispatchers:,} dispatcher(s) sharing up to {self.a_max:,} arrivals "
            f"a slot make {_count(passes)} splits, each a pass over the {states:,} states "
            f"(K = {self.k}): {_count(rows)} rows, above {MAX_DISPATCH_ROWS:,}: no exact "
            "solution this large; simulate"))
        require_memory(field, rows * DISPATCH_ROW_BYTES * (self.n + 3),
                       "the exact chain's dispatch")

    def _codes(self, values: Any, size: int) -> np.ndarray:
        if isinstance(values, list):
            return np.array([self.code[v] for v in values], np.int64)
        return np.full(size, self.code[values], np.int64)

    def _dispatch(self, entries: dict[str, np.ndarray], m: int, jobs: int
                  ) -> dict[str, np.ndarray]:
        out: dict[str, list[np.ndarray]] = {"src": [], "code": [], "add": [], "prob": []}
        for c in np.unique(entries["code"]):
            sel = np.flatnonzero(entries["code"] == c)
            q = self.q[entries["src"][sel] % self.q.shape[0]]
            for p, target, memory in self.rule.dispatch(self.memory[c], q, m, jobs):
                keep = p > 0
                if not np.any(keep):
                    continue
                rows = sel[keep]
                add = entries["add"][rows].copy()
                add[np.arange(rows.size), np.asarray(target)[keep]] += jobs
                codes = self._codes(memory, q.shape[0])[keep]
                out["src"].append(entries["src"][rows])
                out["code"].append(codes)
                out["add"].append(add)
                out["prob"].append(entries["prob"][rows] * p[keep])
        merged = {key: np.concatenate(value) for key, value in out.items()}
        width = self.a_max + 1
        key = ((merged["src"] * len(self.memory) + merged["code"]) * width**self.n
               + merged["add"] @ (width ** np.arange(self.n, dtype=np.int64)))
        prob, src, code, add = _aggregate(key, merged["prob"], merged["src"], merged["code"],
                                          merged["add"])
        return {"src": src, "code": code, "add": add, "prob": prob}

    def _arrive_and_dispatch(self) -> dict[str, np.ndarray]:
        states = self.q.shape[0] * len(self.memory)
        joint = np.arange(states, dtype=np.int64)
        codes = joint // self.q.shape[0]
        per_job = self.system.dispatch == "per_job"
        parts: list[dict[str, np.ndarray]] = []
        for total, pa in enumerate(self.arrivals):
            if pa == 0:
                continue
            if total == 0:
                parts.append({"src": joint, "code": codes,
                              "add": np.zeros((states, self.n), np.int64),
                              "prob": np.full(states, pa)})
                continue
            if self.shared:  # one draw per slot: every call sends to the same server
                entries = {"src": joint, "code": codes,
                           "add": np.zeros((states, self.n), np.int64),
                           "prob": np.full(states, pa)}
                parts.append(self._dispatch(entries, 0, total))
                continue
            for ps, split in _splits(self.system, total):
                entries = {"src": joint, "code": codes,
                           "add": np.zeros((states, self.n), np.int64),
                           "prob": np.full(states, pa * ps)}
                for m, jobs in enumerate(split):
                    if jobs == 0:
                        continue
                    for _ in range(jobs if per_job else 1):
                        entries = self._dispatch(entries, m, 1 if per_job else jobs)
                parts.append(entries)
        return {key: np.concatenate([p[key] for p in parts]) for key in parts[0]}

    def build(self):
        """(P as CSR over joint states, the loss per source state)."""
        from scipy import sparse

        e = self._arrive_and_dispatch()
        x = self.q[e["src"] % self.q.shape[0]] + e["add"]
        src, code, prob = e["src"], e["code"], e["prob"]
        memory_count = len(self.memory)
        grid = self.base**self.n
        for server in range(self.n):
            pmf = self.services[server]
            xs, srcs, codes, probs = [], [], [], []
            for s, ps in enumerate(pmf):
                if ps == 0:
                    continue
                y = x.copy()
                y[:, server] = np.maximum(y[:, server] - s, 0)
                xs.append(y)
                srcs.append(src)
                codes.append(code)
                probs.append(prob * ps)
            x, src, code, prob = (np.concatenate(xs), np.concatenate(srcs),
                                  np.concatenate(codes), np.concatenate(probs))
            key = (src * memory_count + code) * grid + x @ self.powers
            prob, src, code, x = _aggregate(key, prob, src, code, x)
        # truncation: jobs beyond ΣQ = K are lost, from the longest queue
        over = np.maximum(x.sum(axis=1) - self.k, 0)
        states = self.q.shape[0] * memory_count
        loss = np.bincount(src, weights=prob * over, minlength=states)
        rows = np.flatnonzero(over > 0)
        while rows.size:
            longest = np.argmax(x[rows], axis=1)
            x[rows, longest] -= 1
            over[rows] -= 1
            rows = rows[over[rows] > 0]
        target_q = self.lookup[x @ self.powers]
        assert np.all(target_q >= 0)
        srcs, dests, probs = [], [], []
        for c in np.unique(code):
            sel = np.flatnonzero(code == c)
            for p, memory in self.rule.update(self.memory[c], x[sel]):
                keep = p > 0
                rows = sel[keep]
                new = self._codes(memory, sel.size)[keep]
                srcs.append(src[rows])
                dests.append(new * self.q.shape[0] + target_q[rows])
                probs.append(prob[rows] * p[keep])
        matrix = sparse.coo_matrix(
            (np.concatenate(probs), (np.concatenate(srcs), np.concatenate(dests))),
            shape=(states, states)).tocsr()
        matrix.sum_duplicates()
        return matrix, loss

    def solve(self):
        """(π over the kept joint states, their joint indices, the loss per state)."""
        from scipy import sparse
        from scipy.sparse.csgraph import breadth_first_order
        from scipy.sparse.linalg import spsolve

        matrix, loss = self.build()
        start = self.code[self.rule.initial] * self.q.shape[0]  # Q = 0, initial memory
        kept = np.sort(breadth_first_order(matrix, start, directed=True,
                                           return_predecessors=False))
        p = matrix[kept][:, kept].tocsc()
        size = kept.size
        origin = int(np.searchsorted(kept, start))
        a = (p.T - sparse.identity(size, format="csc")).tocsc()
        others = np.setdiff1d(np.arange(size), [origin])
        if size == 1:
            pi = np.ones(1)
        else:
            sub = a[others][:, others].tocsc()
            rhs = -np.asarray(a[others][:, [origin]].todense()).ravel()
            rest = call_interruptibly(_linear_solve, sub, rhs, spsolve)
            pi = np.empty(size)
            pi[origin] = 1.0
            pi[others] = rest
        pi = np.maximum(pi, 0.0)
        pi /= pi.sum()
        return pi, kept, loss[kept]


#: below this many states the chain is solved directly (SuperLU); above, by GMRES with an
#: incomplete-LU preconditioner (the fill-in of a direct solve grows fast with N ≥ 3)
DIRECT_LIMIT = 4_000


def _linear_solve(matrix: Any, rhs: np.ndarray, spsolve: Any) -> np.ndarray:
    """x with A x = b: direct for small systems, else ILU-preconditioned GMRES to a
    relative residual of 1e-13 (direct again if it does not get there)."""
    from scipy.sparse.linalg import LinearOperator, gmres, spilu

    if matrix.shape[0] <= DIRECT_LIMIT:
        return spsolve(matrix, rhs)
    try:
        ilu = spilu(matrix, drop_tol=1e-5, fill_factor=10)
    except RuntimeError:
        return spsolve(matrix, rhs)
    preconditioner = LinearOperator(matrix.shape, ilu.solve)
    x, info = gmres(matrix, rhs, M=preconditioner, rtol=1e-13, atol=0.0, restart=60,
                    maxiter=100)
    residual = np.linalg.norm(matrix @ x - rhs) / max(np.linalg.norm(rhs), 1e-300)
    if info != 0 or residual > 1e-11:
        return spsolve(matrix, rhs)
    return x


def _tail_ratio(distribution: np.ndarray) -> float:
    """The geometric decay rate of P(ΣQ = k) near the edge, read a little inside it (the
    last levels are distorted by the truncation)."""
    k = distribution.size - 1
    inner, outer = max(0, k - 4 - max(4, k // 8)), max(1, k - 4)
    if outer <= inner or distribution[inner] <= 0 or distribution[outer] <= 0:
        return 0.5
    return float((distribution[outer] / distribution[inner]) ** (1.0 / (outer - inner)))


def _guess_level(system: System, tolerance: float) -> int:
    """A first truncation level: the heavy-traffic mean ζ/(2ε) and its geometric tail."""
    mu = np.asarray(system.rates, dtype=float)
    zeta = system.arrivals.variance + float(np.sum(system.service.variance(mu)))
    epsilon = max(system.epsilon, 1e-9)
    scale = max(zeta / (2 * epsilon), 0.5)
    return int(max(12, math.ceil(scale * (1 + math.log(1 / tolerance)) / 2)))


def solve(system: System, policy: Any, *, truncation: int | None = None,
          tolerance: float = EDGE_TOLERANCE, max_states: int | None = None,
          law_tail: float = 1e-13) -> ExactResult:
    """The stationary law of ``system`` under ``policy`` (an object with the capability of
    :mod:`dispatchlab.solvers.rules`).

    ``truncation`` fixes K (ΣQ ≤ K); by default K grows until P(ΣQ = K) ≤ ``tolerance``
    (at least MIN_TOLERANCE: a smaller mass is below what sums of doubles resolve). A
    fixed K that leaves more than ``tolerance`` at its edge is refused: the answer would
    be the truncated chain's, not the system's. Refused with a ValidationError when the
    chain would exceed ``max_states`` states (default MAX_STATES; where the two-server
    multilevel solver takes over, its own default unless ``max_states`` is given).
    """
    from dispatchlab.model.values import as_int, as_number

    started = time.perf_counter()
    require(system.arrival_rate < system.mu_sum, "load",
            "an unstable system (λ_Σ ≥ μ_Σ) has no stationary law")
    tolerance = as_number(tolerance, "tolerance")
    require(MIN_TOLERANCE <= tolerance < 1, "tolerance",
            f"must be in [{MIN_TOLERANCE:g}, 1): a smaller edge mass is below what double "
            f"precision resolves (got {tolerance:g})")
    given_max = max_states is not None
    max_states = as_int(max_states if given_max else MAX_STATES, "max_states", low=1)
    law_tail = as_number(law_tail, "law_tail")
    require(0 < law_tail < 1e-3, "law_tail", f"must be in (0, 1e-3) (got {law_tail:g})")
    rule, shared = exact_rule(policy, system)
    memory_values = len(rule.states)
    n = system.n_servers
    fixed = truncation is not None
    k = as_int(truncation, "truncation", low=1) if fixed else _guess_level(system, tolerance)
    notes: list[str] = []
    # the last chain solved: K, its states, seconds and the memory it added to the peak
    last: tuple[int, int, float, int] | None = None
    before = peak_resident_bytes()
    while True:
        size = count_states(n, k) * memory_values
        several = system.arrivals.law != "bernoulli" and size > SEVERAL_JOBS_HANDOVER
        if (size > max_states or several) and not fixed:
            from dispatchlab.solvers import multilevel

            if multilevel.applies(system, policy):  # two servers, JIQ / JBT-r, M = 1
                options = {"max_states": max_states} if given_max else {}
                return _from_multilevel(multilevel.solve_two_server(
                    system, rule, name=str(getattr(policy, "name", "jbt")),
                    tolerance=tolerance, law_tail=law_tail, **options), started,
                    "exceeds max_states" if size > max_states else
                    f"has over {SEVERAL_JOBS_HANDOVER:,} states with several jobs a slot")
        if size > max_states:
            raise TooLarge("truncation" if fixed else "max_states",
                           f"the state space would hold {size:,} states (ΣQ ≤ K = {k} on "
                           f"N = {n} servers × {memory_values} memory value(s)), above "
                           f"max_states = {max_states:,}: no exact solution this large; "
                           "simulate")
        if last:  # a chain that will not fit is refused before it is built
            require_memory("max_states", last[3] * size / max(last[1], 1),
                           f"the chain at K = {k:,} ({size:,} states)")
        if size >= LONG_SOLVE_STATES:
            say(f"K = {k:,}: {size:,} states, building and solving the chain"
                + (_time_estimate(size, *last) if last else "") + " …")
        begun = time.perf_counter()
        try:
            chain = _Chain(system, rule, shared, k, law_tail)
            pi, kept, loss = chain.solve()
        except KeyboardInterrupt as stop:
            raise interrupt_saying(stop, f"the chain at K = {k:,} ({size:,} states)") from None
        last = (k, size, time.perf_counter() - begun, max(peak_resident_bytes() - before, 0))
        q = chain.q[kept % chain.q.shape[0]]
        totals = q.sum(axis=1)
        distribution = np.bincount(totals, weights=pi, minlength=k + 1)
        edge = float(distribution[k])
        require(not fixed or edge <= tolerance, "truncation", (
            f"K = {k} leaves P(ΣQ = K) = {edge:.3g} at its edge, above the tolerance "
            f"{tolerance:g}: E[ΣQ] would be the truncated chain's, not the system's; raise "
            "K, or leave it out to let it grow"))
        if fixed or edge <= tolerance:
            break
        ratio = min(max(_tail_ratio(distribution), 1e-3), 0.999)
        extra = math.ceil(math.log(tolerance / edge) / math.log(ratio)) + 2
        k = min(max(k + extra, math.ceil(1.2 * k)), 2 * k)
    ratio = min(_tail_ratio(distribution), 0.999)
    beyond = edge * (k * ratio / (1 - ratio) + ratio / (1 - ratio) ** 2) if ratio > 0 else 0.0
    if chain.law_tail > 0:
        notes.append(f"unbounded laws cut at tail mass {chain.law_tail:.2g}")
    return ExactResult(
        policy=str(getattr(policy, "name", type(policy).__name__)),
        mean_total_queue=float(pi @ totals),
        mean_queues=[float(v) for v in pi @ q],
        total_queue_distribution=[float(v) for v in distribution],
        truncation=k, edge_mass=edge, truncation_error=float(beyond),
        loss_rate=float(pi @ loss), states=int(kept.size), memory_values=memory_values,
        law_tail=float(chain.law_tail), seconds=time.perf_counter() - started, notes=notes)


#: how a chain's build and solve time grows with its states (ILU-preconditioned GMRES on
#: these chains; a conservative round figure, for the estimate said before a solve); its
#: memory grows about linearly (the matrix and the factors' fill)
SOLVE_TIME_EXPONENT = 1.3


def _time_estimate(size: int, last_k: int, last_size: int, last_seconds: float,
                   last_bytes: int) -> str:
    """", about T s and B of memory (K = …: S states took t s and b)": the next solve's
    time and memory from the last's (the memory as the rise of the process's peak)."""
    ratio = size / max(last_size, 1)
    seconds = last_seconds * ratio ** SOLVE_TIME_EXPONENT
    return (f", about {seconds:,.0f} s and {format_bytes(last_bytes * ratio)} (K = "
            f"{last_k:,}: {last_size:,} states took {last_seconds:.1f} s and "
            f"{format_bytes(last_bytes)})")


def _from_multilevel(result: Any, started: float, why: str) -> ExactResult:
    """An :class:`ExactResult` from :func:`dispatchlab.solvers.multilevel.solve_two_server`."""
    return ExactResult(
        policy=result.policy, mean_total_queue=result.mean_total_queue,
        mean_queues=list(result.mean_queues),
        total_queue_distribution=list(result.total_queue_distribution),
        truncation=result.truncation, edge_mass=result.edge_mass,
        truncation_error=result.truncation_error, loss_rate=result.loss_rate,
        states=result.states, memory_values=1, law_tail=result.law_tail,
        seconds=time.perf_counter() - started, method=result.method,
        notes=[f"the plain chain {why}: two-server multilevel aggregation"],
        extras={"residual": result.residual, "cycles": float(result.cycles),
                "mean_unused": result.mean_unused,
                "mean_unused_square": result.mean_unused_square,
                "cross_term": result.cross_term, "threshold": float(result.threshold)})
