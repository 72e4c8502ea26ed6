"""The fluid (mean-field) limit of the slotted model: N → ∞ at a fixed load, per-job dispatch.

The servers fall into classes j with rates μ_j and fractions α_j of the N servers; the
state is the occupancy p_j(k), the fraction of class-j servers holding k jobs at the
start of a slot (docs/fluid.md). One slot, as the engine runs it:

1. every job of the slot picks its server from the slot-start queues Q(t) (per-job
   dispatch; no job sees the slot's earlier jobs). As N → ∞ with λ̄ = λ_Σ/N jobs per
   server and slot, the jobs one server receives are Poisson with a rate r_j(k) that
   depends on its class, its queue k and the occupancy (:class:`FluidRule`);
2. Q ← max(Q + A − S, 0), S the server's service in the slot (its law at μ_j).

The map p(t) → p(t+1) is iterated to its fixed point; E[Q] per class, per server and in
all, the mean delay (Little) and the probability that a job finds its server busy follow
from it.
"""

from __future__ import annotations

import math
import time
from dataclasses import asdict, dataclass, field
from typing import Any

import numpy as np

from dispatchlab.core.errors import require
from dispatchlab.model.system import System
from dispatchlab.solvers.laws import service_pmf

#: kinds of :class:`FluidRule`
RULE_KINDS = ("random", "weighted", "pod", "jsq", "pull")
#: which listed ID a pull policy's job takes; where it goes when its dispatcher has none
PICKS = ("uniform", "weighted", "oldest")
FALLBACKS = ("uniform", "weighted")
#: the fixed point is reached when ‖p(t+1) − p(t)‖₁ is below this
TOLERANCE = 1e-12
#: the occupancy is kept up to K jobs per server, K grown until the mass at K is below this
EDGE_MASS = 1e-13
#: the Poisson arrivals of one server in one slot are cut at this tail mass
ARRIVAL_TAIL = 1e-15
#: iterations before the solver gives up and says so
MAX_ITERATIONS = 200_000
#: the most queue levels kept: an occupancy still spreading beyond this has no fixed point
MAX_LEVELS = 1 << 16
#: the most jobs one server may receive in a slot of the map, on average
MAX_RATE = 1e4


@dataclass(frozen=True)
class FluidRule:
    """How the jobs of one slot spread over the servers as N → ∞ (docs/fluid.md#rules).

    ``random``: uniformly, r = λ̄. ``weighted``: ∝ μ, r_j = λ̄·μ_j/μ̄. ``pod``: each job
    samples ``d`` servers uniformly and joins the shortest (uniform ties), so a server
    with k jobs gets r(k) = λ̄·(s_k^d − s_{k+1}^d)/f_k, s_k the fraction of all servers
    with at least k jobs and f_k = s_k − s_{k+1}. ``jsq``: every job joins a shortest
    queue (uniform ties): the servers at the lowest occupied level k* share the slot's
    jobs, r(k*) = λ̄/f_{k*}. ``pull`` (JIQ, JBT-r): a server below ``threshold`` at a
    slot's end reports its ID; a job takes a listed ID (``pick``: uniformly, ∝ μ, or the
    oldest) and the ID leaves the list; when the lists run dry the remaining jobs go to
    random servers (``fallback``: uniform or ∝ μ) — docs/fluid.md#pull."""

    kind: str
    d: int = 1
    threshold: int = 1
    pick: str = "uniform"
    fallback: str = "uniform"

    def __post_init__(self) -> None:
        require(self.kind in RULE_KINDS, "rule", f"allowed: {', '.join(RULE_KINDS)}")
        require(self.d >= 1, "d", f"must be ≥ 1 (got {self.d})")
        require(self.threshold >= 1, "threshold", f"must be ≥ 1 (got {self.threshold})")
        require(self.pick in PICKS, "pick", f"allowed: {', '.join(PICKS)}")
        require(self.fallback in FALLBACKS, "fallback", f"allowed: {', '.join(FALLBACKS)}")
        require(self.pick != "oldest" or self.threshold == 1, "pick",
                "the oldest ID is modelled for JIQ (threshold 1) alone: above it a listed "
                "server's queue changes while it waits, so the order matters")


@dataclass
class FluidResult:
    """The fixed point of the fluid map and what follows from it.

    ``mean_queue_per_server`` is Σ_j α_j E[Q_j] (per class: ``mean_queue_by_class``);
    ``mean_total_queue`` is N times it, the fluid prediction of the system's E[ΣQ];
    ``mean_delay`` is E[ΣQ]/λ_Σ in slots (Little's law, ΣQ at the end of a slot, as the
    simulator's); ``wait_probability`` is the chance that a job's server holds a job at
    the start of its slot; ``tail_by_class[j][k]`` is P(Q_j ≥ k). ``residual`` is the last
    ‖p(t+1) − p(t)‖₁, ``truncation`` K the largest queue kept, ``edge_mass`` the mass at K.
    With ``refined``: ``refined_correction`` c, the 1/N term (E[Q] per server ≈ fluid +
    c/N: :mod:`dispatchlab.solvers.refined`), ``refined_resolution`` the most c moves when
    one of its two finite-difference steps is halved or doubled (its digits beyond that
    are not the method's), and ``refined_mean_total_queue`` = N·fluid + c, the refined
    prediction of the system's E[ΣQ]; otherwise all three None.
    """

    policy: str
    rule: dict[str, Any]
    classes: list[dict[str, float]]
    mean_queue_per_server: float
    mean_queue_by_class: list[float]
    mean_total_queue: float
    mean_delay: float
    wait_probability: float
    tail_by_class: list[list[float]]
    truncation: int
    edge_mass: float
    residual: float
    iterations: int
    seconds: float
    notes: list[str] = field(default_factory=list)
    refined_correction: float | None = None
    refined_resolution: float | None = None
    refined_mean_total_queue: float | None = None

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    def __repr__(self) -> str:
        return (f"FluidResult({self.policy}: E[Q] per server = "
                f"{self.mean_queue_per_server:.6g}, E[ΣQ] = {self.mean_total_queue:.6g}, "
                f"{self.iterations} iterations, residual {self.residual:.2g})")


def server_classes(system: System) -> tuple[np.ndarray, np.ndarray]:
    """(μ_j, α_j): the distinct service rates and the fraction of the servers at each."""
    rates, counts = np.unique(np.asarray(system.mu, dtype=float), return_counts=True)
    return rates, counts / counts.sum()


def arrival_rates(rule: FluidRule, p: np.ndarray, alpha: np.ndarray, mu: np.ndarray,
                  per_server: float) -> np.ndarray:
    """r_j(k), the Poisson rate of one server's arrivals in a slot, for every class j and
    queue k, at occupancy ``p`` (classes × levels); ``per_server`` is λ̄ = λ_Σ/N."""
    levels = p.shape[1]
    if rule.kind == "random":
        return np.full(p.shape, per_server)
    if rule.kind == "weighted":
        return np.repeat((per_server * mu / float(alpha @ mu))[:, None], levels, axis=1)
    exactly = alpha @ p  # f_k over all servers
    at_least = np.cumsum(exactly[::-1])[::-1]  # s_k
    rates = np.zeros(levels)
    occupied = exactly > 0
    if rule.kind == "pod":
        beyond = np.append(at_least[1:], 0.0)
        rates[occupied] = (per_server * (at_least[occupied] ** rule.d - beyond[occupied] ** rule.d)
                           / exactly[occupied])
    else:  # jsq: the lowest occupied level takes every job
        lowest = int(np.argmax(occupied))
        rates[lowest] = per_server / exactly[lowest]
    return np.repeat(rates[None, :], p.shape[0], axis=0)


def step(p: np.ndarray, rates: np.ndarray, services: list[np.ndarray]) -> np.ndarray:
    """One slot of the fluid map: Poisson(r_j(k)) arrivals, then each class's service,
    Q ← max(Q + A − S, 0); the mass pushed beyond the last level is kept at it."""
    classes, levels = p.shape
    out = np.zeros_like(p)
    top = max(float(rates.max()), 0.0)
    require(top <= MAX_RATE, "load", f"the fluid map sends {top:.3g} jobs a slot to one "
            f"server (above {MAX_RATE:g}): the occupancy left too few servers at the lowest "
            "level to take the slot's jobs")
    width = _arrival_width(top)
    jobs = np.arange(width)
    log_factorials = _log_factorials(width)[:, None]
    for j in range(classes):
        # P(A = a) for every level's own rate: a × levels
        r = rates[j][None, :]
        with np.errstate(divide="ignore", invalid="ignore"):
            log_pmf = np.where(r > 0, jobs[:, None] * np.log(np.where(r > 0, r, 1.0)) - r
                               - log_factorials, -np.inf)
        pmf = np.exp(log_pmf)
        pmf[0, rates[j] == 0] = 1.0
        pmf /= pmf.sum(axis=0, keepdims=True)
        after = np.bincount(
            np.minimum(np.arange(levels)[None, :] + jobs[:, None], levels - 1).ravel(),
            weights=(pmf * p[j][None, :]).ravel(), minlength=levels)
        served = np.zeros(levels)
        for s, ps in enumerate(services[j]):
            if ps > 0:
                served += ps * np.bincount(np.maximum(np.arange(levels) - s, 0),
                                           weights=after, minlength=levels)
        out[j] = served
    return out


def _single_queue(rate: float, service: np.ndarray) -> np.ndarray:
    """The stationary law of one server with Poisson(``rate``) arrivals and ``service``'s
    law, Q ← max(Q + A − S, 0): a sparse solve of the chain truncated at K (jobs beyond K
    kept at K), K doubled until the mass at K is below EDGE_MASS."""
    from scipy import sparse
    from scipy.sparse.linalg import spsolve

    jobs = np.arange(_arrival_width(rate))
    arrivals = np.exp(jobs * math.log(rate) - rate - _log_factorials(jobs.size))
    arrivals /= arrivals.sum()
    levels = 64
    while True:
        k = np.arange(levels)
        rows, cols, values = [], [], []
        for a, pa in enumerate(arrivals):  # one band of the matrix per (arrivals, service)
            for served, ps in enumerate(service):
                if pa * ps > 0:
                    rows.append(k)
                    cols.append(np.clip(k + a - served, 0, levels - 1))
                    values.append(np.full(levels, pa * ps))
        matrix = sparse.csr_matrix((np.concatenate(values), (np.concatenate(rows),
                                                             np.concatenate(cols))),
                                   shape=(levels, levels))
        balance = (matrix.T - sparse.identity(levels)).tocsc()
        # π(0) = 1 and the other balance equations (banded: no fill-in), then normalised
        law = np.ones(levels)
        law[1:] = spsolve(balance[1:, 1:], -balance[1:, 0].toarray().ravel())
        law = np.maximum(law, 0.0)
        law /= law.sum()
        if law[-1] <= EDGE_MASS:
            return law
        require(2 * levels <= MAX_LEVELS, "load", f"one server's queue spreads beyond "
                f"{levels:,} jobs: no stationary law")
        levels *= 2


def _arrival_width(rate: float) -> int:
    """How many arrival counts 0 … a − 1 hold Poisson(rate) up to ARRIVAL_TAIL."""
    if rate <= 0:
        return 1
    term = cumulative = math.exp(-rate)
    count = 1
    while (1.0 - cumulative > ARRIVAL_TAIL and term > 0) or count <= rate:
        term *= rate / count
        cumulative += term
        count += 1
    return count + 1


def _log_factorials(width: int) -> np.ndarray:
    return np.array([math.lgamma(a + 1) for a in range(width)])


def _solve_state_free(rule: FluidRule, alpha: np.ndarray, mu: np.ndarray, per_server: float,
                      services: list[np.ndarray]) -> tuple[np.ndarray, int, float, list[str]]:
    """State-free rates: each class is one Poisson-fed queue, solved directly; the residual
    is one slot of the map applied to the answer."""
    rates = arrival_rates(rule, np.ones((mu.size, 1)), alpha, mu, per_server)[:, 0]
    laws = [_single_queue(float(r), service) for r, service in zip(rates, services, strict=True)]
    width = max(law.size for law in laws)
    p = np.array([np.pad(law, (0, width - law.size)) for law in laws])
    after = step(p, np.repeat(rates[:, None], width, axis=1), services)
    return p, 0, float(np.abs(after - p).sum(axis=1) @ alpha), []


def _iterate(advance: Any, start: np.ndarray, weights: np.ndarray, tolerance: float,
             max_iterations: int) -> tuple[np.ndarray, int, float, list[str]]:
    """``advance`` (one slot of the map) iterated from ``start`` until ‖p(t+1) − p(t)‖₁ ≤
    ``tolerance`` with the mass at the last level below EDGE_MASS (the levels doubled every
    50 slots while it is not), or ``max_iterations`` (said in the notes); rows of p are
    weighted by ``weights`` (the classes' fractions)."""
    p = start
    iterations = 0
    while True:
        nxt = advance(p)
        iterations += 1
        residual = float(np.abs(nxt - p).sum(axis=1) @ weights)
        p = nxt
        edge = float(p[:, -1] @ weights)
        if edge > EDGE_MASS and iterations % 50 == 0:  # room for the tail
            require(2 * p.shape[1] <= MAX_LEVELS, "load",
                    f"the occupancy still spreads beyond {p.shape[1]:,} jobs per server after "
                    f"{iterations:,} slots: no fixed point (the load is beyond what the "
                    "policy carries)")
            p = np.pad(p, ((0, 0), (0, p.shape[1])))
        if residual <= tolerance and edge <= EDGE_MASS:
            return p, iterations, residual, []
        if iterations >= max_iterations:
            return p, iterations, residual, [
                f"stopped after {iterations:,} iterations, residual {residual:.2g} above the "
                f"tolerance {tolerance:g}"]


def take_probabilities(rule: FluidRule, alpha: np.ndarray, mu: np.ndarray,
                       listed: np.ndarray, per_server: float) -> np.ndarray:
    """τ_j: the chance that a listed class-j server's ID is taken in a slot, when λ̄ jobs a
    server take IDs from the lists holding I = Σ α_j L_j (``listed`` = L_j). Uniform (and
    the oldest: the same for JIQ, whose listed servers are idle and unchanged while they
    wait): min(1, λ̄/I). ∝ μ, one ID after another without replacement: 1 − e^(−c·μ_j)
    with Σ α_j L_j (1 − e^(−c·μ_j)) = λ̄ (successive sampling in a large population)."""
    held = float(alpha @ listed)
    if held <= per_server:
        return np.ones(mu.size)
    if rule.pick != "weighted":
        return np.full(mu.size, per_server / held)

    def taken(c: float) -> float:
        return float(alpha @ (listed * -np.expm1(-c * mu)))

    low, high = 0.0, 1.0
    while taken(high) < per_server:
        high *= 2
    for _ in range(200):  # bisection to a relative 1e-15
        middle = (low + high) / 2
        low, high = (middle, high) if taken(middle) < per_server else (low, middle)
        if high - low <= 1e-15 * high:
            break
    return -np.expm1(-high * mu)


def fallback_rates(rule: FluidRule, alpha: np.ndarray, mu: np.ndarray, held: float,
                   per_server: float) -> np.ndarray:
    """f_j, the Poisson rate of fallback jobs to one class-j server: the λ̄ − I jobs a server
    that found no listed ID (I = ``held``), spread uniformly or ∝ μ."""
    weights = mu / float(alpha @ mu) if rule.fallback == "weighted" else np.ones(mu.size)
    return max(per_server - held, 0.0) * weights


def _pull_step(p: np.ndarray, rule: FluidRule, alpha: np.ndarray, mu: np.ndarray,
               per_server: float, services: list[np.ndarray]) -> np.ndarray:
    """One slot of a pull policy's map; rows 0 … J − 1 are the unlisted servers of each
    class, rows J … 2J − 1 the listed ones: taken IDs get one job and leave the list, every
    server gets Poisson fallback jobs at f_j = max(λ̄ − I, 0)·w_j, service, then the
    unlisted servers below the threshold report (are listed)."""
    classes, levels = mu.size, p.shape[1]
    unlisted, listed = p[:classes], p[classes:]
    take = take_probabilities(rule, alpha, mu, listed.sum(axis=1), per_server)
    fallback = fallback_rates(rule, alpha, mu, float(alpha @ listed.sum(axis=1)), per_server)
    taken = listed * take[:, None]
    moved = np.zeros_like(taken)  # one job each
    moved[:, 1:] = taken[:, :-1]
    moved[:, -1] += taken[:, -1]
    rates = np.repeat(fallback[:, None], levels, axis=1)
    out_unlisted = step(unlisted + moved, rates, services)
    out_listed = step(listed - taken, rates, services)
    below = min(rule.threshold, levels)
    out_listed[:, :below] += out_unlisted[:, :below]
    out_unlisted[:, :below] = 0.0
    return np.vstack([out_unlisted, out_listed])


def _empty(classes: int) -> np.ndarray:
    p = np.zeros((classes, 64))
    p[:, 0] = 1.0
    return p


def fixed_point(system: System, rule: FluidRule, *, policy: str = "",
                tolerance: float = TOLERANCE, max_iterations: int = MAX_ITERATIONS,
                refined: bool = False) -> FluidResult:
    """The fixed point of the fluid map of ``system`` under ``rule``: solved directly for a
    state-free rule, else the map iterated from empty queues (``tolerance`` on
    ‖p(t+1) − p(t)‖₁), the truncation grown until the edge mass is below EDGE_MASS; with
    ``refined``, the 1/N term around it too. Refused for batch dispatch (a dispatcher's
    batch of order N/M jobs to one server has no fluid limit), trace arrivals and a load
    the rule cannot carry."""
    started = time.perf_counter()
    require(system.dispatch == "per_job", "dispatch",
            "the fluid limit is of per-job dispatch (a batch of a dispatcher's jobs, of order "
            "N/M, goes to one server: no limit as N → ∞); use dispatch='per-job'")
    require(system.arrivals.law != "trace", "arrivals", "a trace has no fluid limit")
    require(system.arrival_rate < system.mu_sum, "load",
            "an unstable system (λ_Σ ≥ μ_Σ) has no fixed point")
    if refined:
        from dispatchlab.solvers.refined import check_refinable

        check_refinable(system, rule.kind)
    mu, alpha = server_classes(system)
    per_server = system.arrival_rate / system.n_servers
    if rule.kind == "random":
        require(bool(np.all(per_server < mu)), "load",
                f"random routing sends λ̄ = {per_server:.4g} jobs per slot to every server, "
                f"at least the slowest class's μ = {mu.min():.4g}: it is unstable")
    services = [service_pmf(system.service, float(rate), ARRIVAL_TAIL)[0] for rate in mu]
    if rule.kind in ("random", "weighted"):
        p, iterations, residual, notes = _solve_state_free(rule, alpha, mu, per_server,
                                                           services)
    elif rule.kind == "pull":
        start = np.zeros((2 * mu.size, 64))
        start[mu.size:, 0] = 1.0  # every server idle and listed at t = 0
        rows, iterations, residual, notes = _iterate(
            lambda q: _pull_step(q, rule, alpha, mu, per_server, services), start,
            np.concatenate([alpha, alpha]), tolerance, max_iterations)
        p, listed = rows[:mu.size] + rows[mu.size:], rows[mu.size:]
        held = float(alpha @ listed.sum(axis=1))
        if rule.pick == "oldest" and held < per_server * (1 + 1e-9):
            notes.append(f"the lists run dry (I = {held:.4g} IDs a server for λ̄ = "
                         f"{per_server:.4g} jobs): the oldest ID is modelled as a uniform "
                         "one, which differs once fallback jobs make listed servers stale")
    else:
        p, iterations, residual, notes = _iterate(
            lambda q: step(q, arrival_rates(rule, q, alpha, mu, per_server), services),
            _empty(mu.size), alpha, tolerance, max_iterations)
    k = np.arange(p.shape[1])
    by_class = p @ k
    per_server_mean = float(alpha @ by_class)
    if rule.kind == "pull":
        take = take_probabilities(rule, alpha, mu, listed.sum(axis=1), per_server)
        fallback = fallback_rates(rule, alpha, mu, held, per_server)
        busy = float(alpha @ (take * listed[:, 1:].sum(axis=1)
                              + fallback * p[:, 1:].sum(axis=1)) / per_server)
    else:
        rates = arrival_rates(rule, p, alpha, mu, per_server)
        busy = float((alpha[:, None] * p[:, 1:] * rates[:, 1:]).sum() / per_server)
    tails = np.cumsum(p[:, ::-1], axis=1)[:, ::-1]
    shown = int(np.max(np.nonzero((tails * alpha[:, None]).sum(axis=0) > 1e-9)[0], initial=0)) + 1
    total = per_server_mean * system.n_servers
    correction = resolution = None
    if refined:
        from dispatchlab.solvers.refined import refine

        correction, resolution = refine(system, rule.kind, rule.d, p, alpha, mu, services)
    return FluidResult(
        policy=policy or rule.kind, rule=asdict(rule),
        classes=[{"mu": float(m), "fraction": float(a)} for m, a in zip(mu, alpha, strict=True)],
        mean_queue_per_server=per_server_mean, mean_queue_by_class=[float(v) for v in by_class],
        mean_total_queue=total, mean_delay=total / system.arrival_rate,
        wait_probability=busy, tail_by_class=[[float(v) for v in row[:shown]] for row in tails],
        truncation=int(p.shape[1] - 1), edge_mass=float(p[:, -1] @ alpha), residual=residual,
        iterations=iterations, seconds=time.perf_counter() - started, notes=notes,
        refined_correction=correction, refined_resolution=resolution,
        refined_mean_total_queue=None if correction is None else total + correction)
