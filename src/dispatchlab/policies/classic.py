"""Classical dispatching policies on true queue lengths (docs/model.md#classical).

Every dispatcher acts on the slot-start state Q(t) with its own randomness; ties
are broken uniformly (JSQ and JSED also offer the herding options of
:mod:`dispatchlab.policies.herding`: tie rule, information lag, water-filling).
Messages: 2N per dispatch event for JSQ/JSED (N probes, N replies), 2d for
Po-d, none for the random and round-robin rules (docs/model.md#messages).
"""

from __future__ import annotations

import math
from fractions import Fraction

import numpy as np
from numba import njit

from dispatchlab.compiled.alias import alias_draw, alias_table
from dispatchlab.compiled.argmin import (
    argmin_random_ties_per_slot,
    shorter_of_two,
    shortest_of_row,
    slot_argmin_cache,
)
from dispatchlab.compiled.rng import (
    randint,
    sample_distinct_row,
    uniform,
)
from dispatchlab.core.errors import require
from dispatchlab.engine.interface import PROBE, REPLY, choose_function, no_hook
from dispatchlab.model.system import System
from dispatchlab.policies.base import Kernel, Param, Policy, register, register_preset
from dispatchlab.policies.herding import (
    TIES,
    herding_begin,
    herding_choose,
    herding_end,
    herding_layout,
)
from dispatchlab.solvers.fluid import FluidRule
from dispatchlab.solvers.rules import (
    MemoryRule,
    argmin_lowest,
    argmin_uniform,
    subset_argmin,
    uniform_subsets,
    weighted_sequences,
)
from dispatchlab.theory.stability import DispatchFractions, rank_fractions_pod

# -- memory layouts: each rule's arrays, named -----------------------------------------------


@njit(inline="always", cache=True)
def rate_alias_table(memory):
    """fp of the weighted rule: the alias table of μ (for :func:`alias_draw`)."""
    return memory.float_params


@njit(inline="always", cache=True)
def rr_cycle(memory):
    """ip of RR: the fixed dispatch cycle of servers."""
    return memory.int_params


@njit(inline="always", cache=True)
def rr_positions(memory):
    """int_state row 0 of RR: entry m is dispatcher m's position in the cycle."""
    return memory.int_state[0]


@njit(inline="always", cache=True)
def sample_size(memory):
    """ip[0] of Po-d and balanced Po-d: d, the number of servers sampled."""
    return memory.int_params[0]


@njit(inline="always", cache=True)
def compares_delays(memory):
    """ip[1] of balanced Po-d: compare Q/μ (True) or Q (False)."""
    return memory.int_params[1] == 1


@njit(inline="always", cache=True)
def total_rate(memory):
    """fp[0] of balanced Po-d: μ_Σ."""
    return memory.float_params[0]


@njit(inline="always", cache=True)
def balanced_alias_table(memory):
    """fp[1:] of balanced Po-d: the alias table of μ."""
    return memory.float_params[1:]


@njit(inline="always", cache=True)
def sed_offset(memory):
    """fp[0] of JSED: the offset c of argmin (Q_n + c)/μ_n (1 for SED, 0 for the Π member)."""
    return memory.float_params[0]


@njit(inline="always", cache=True)
def probe_all(slot, ctx):
    """Count the 2N messages of a full probe (N probes, N replies)."""
    ctx.msg[PROBE] += slot.Q.size
    ctx.msg[REPLY] += slot.Q.size


# -- the rules --------------------------------------------------------------------------------

# rows of the int memory
SAMPLE_ROW = 0  # Po-d, balanced Po-d: the sampled servers
TAKEN_ROW = 1  # balanced Po-d: taken[n] = 1 while n is in the sample
ARGMIN_ROW = 0  # JSQ, JSED: the per-slot cache of the minimisers
REJECTION_TRIES = 32  # balanced Po-d: alias draws before the scan


@choose_function
def _rand_choose(m, jobs, slot, memory, ctx):
    return randint(ctx.rng, slot.Q.size)


@choose_function
def _weighted_choose(m, jobs, slot, memory, ctx):
    return alias_draw(ctx.rng, rate_alias_table(memory))


@choose_function
def _cycle_choose(m, jobs, slot, memory, ctx):
    cycle = rr_cycle(memory)
    positions = rr_positions(memory)
    position = positions[m]
    positions[m] = position + 1 if position + 1 < cycle.size else 0
    return cycle[position]


@choose_function
def _jsq_choose(m, jobs, slot, memory, ctx):
    probe_all(slot, ctx)
    # every dispatcher of slot t sees the same Q(t): the minimisers are found once per slot
    return argmin_random_ties_per_slot(slot.Q, slot.t, memory.int_state, ARGMIN_ROW, ctx.rng)


@njit(inline="always", cache=True)
def scaled_argmin_per_slot(Q, offset, mu, t, cache, row, rng):
    """argmin_n (Q_n + offset)/μ_n with uniform ties, on the slot-start Q(t) that every call
    of slot t sees: the minimisers are listed once per slot in ``cache[row]`` = (slot,
    number of ties, their indices…) (the layout of
    :func:`~dispatchlab.compiled.argmin.slot_argmin_cache`); each call draws one of them."""
    if cache[row, 0] != t:
        best = (Q[0] + offset) / mu[0]
        for n in range(1, Q.size):
            best = min(best, (Q[n] + offset) / mu[n])
        ties = 0
        for n in range(Q.size):
            cache[row, 2 + ties] = n  # store always, advance on a tie: no branch
            ties += (Q[n] + offset) / mu[n] == best
        cache[row, 0] = t
        cache[row, 1] = ties
    ties = cache[row, 1]
    return cache[row, 2 + (randint(rng, ties) if ties > 1 else 0)]


@choose_function
def _jsed_choose(m, jobs, slot, memory, ctx):
    probe_all(slot, ctx)
    # the same Q(t) for every call of slot t (per job too): minimisers listed once per slot
    return scaled_argmin_per_slot(slot.Q, sed_offset(memory), slot.mu, slot.t, memory.int_state,
                                  ARGMIN_ROW, ctx.rng)


@choose_function
def _pod_choose(m, jobs, slot, memory, ctx):
    d = sample_size(memory)
    Q = slot.Q
    if d == 2:
        ctx.msg[PROBE] += 2
        ctx.msg[REPLY] += 2
        return shorter_of_two(Q, ctx.rng)
    sample_distinct_row(ctx.rng, Q.size, d, memory.int_state, SAMPLE_ROW)
    ctx.msg[PROBE] += d
    ctx.msg[REPLY] += d
    return shortest_of_row(Q, memory.int_state, SAMPLE_ROW, d, ctx.rng)


@choose_function
def _balanced_pod_choose(m, jobs, slot, memory, ctx):
    # d distinct servers drawn one after another with probability ∝ μ among those left
    d = sample_size(memory)
    by_delay = compares_delays(memory)
    Q = slot.Q
    mu = slot.mu
    rng = ctx.rng
    sample = memory.int_state[SAMPLE_ROW]
    taken = memory.int_state[TAKEN_ROW]
    total = total_rate(memory)
    table = balanced_alias_table(memory)
    remaining = total
    for i in range(d):
        # a draw ∝ μ over all servers, rejected while taken, is a draw ∝ μ among those
        # left: O(1) expected while they keep a quarter of μ_Σ; else (or after
        # REJECTION_TRIES misses, which leaves the law exact) the O(N) scan
        chosen = -1
        if remaining >= 0.25 * total:
            for _ in range(REJECTION_TRIES):
                candidate = alias_draw(rng, table)
                if taken[candidate] == 0:
                    chosen = candidate
                    break
        if chosen < 0:
            u = uniform(rng) * remaining
            for n in range(Q.size):
                if taken[n] == 0:
                    chosen = n
                    u -= mu[n]
                    if u < 0.0:
                        break
        sample[i] = chosen
        taken[chosen] = 1
        remaining -= mu[chosen]
    ctx.msg[PROBE] += d
    ctx.msg[REPLY] += d
    best = sample[0]
    count = 1
    for i in range(d):
        taken[sample[i]] = 0
        if i == 0:
            continue
        c = sample[i]
        lhs = Q[c] / mu[c] if by_delay else Q[c] * 1.0
        rhs = Q[best] / mu[best] if by_delay else Q[best] * 1.0
        if lhs < rhs:
            best = c
            count = 1
        elif lhs == rhs:
            count += 1
            if randint(rng, count) == 0:
                best = c
    return best


def _d_param(doc: str = "number of distinct servers sampled per dispatch") -> Param:
    return Param("d", int, 2, doc, low=1)


def _check_d(policy: Policy, system: System) -> None:
    require(policy.params["d"] <= system.n_servers, f"{policy.name}.d",
            f"d must be between 1 and N = {system.n_servers} (got {policy.params['d']})")


@register
class RandomRouting(Policy):
    """RAND, registered as ``rand``: a uniformly random server per dispatch, P(n) = 1/N.

    A Π member with a_l = 1/N ([Π]; docs/model.md#random-routing,
    docs/model.md#pi-members); no messages."""

    name = "rand"
    summary = "RAND: each dispatch goes to a uniformly random server; no messages."
    theory = ("Stable iff λ_Σ/N < μ_min (docs/model.md#random-routing; [Π] Eq. (3), "
              "docs/model.md#pi-stability); never heavy-traffic optimal for N ≥ 2.")

    def kernel(self, system: System) -> Kernel:
        return Kernel(_rand_choose)

    def fluid_rule(self, system: System) -> FluidRule:
        """Its N → ∞ limit (``dispatchlab.fluid``): every server r = λ̄."""
        return FluidRule("random")

    def dispatch_fractions(self, mu: np.ndarray) -> DispatchFractions:
        """Π member with a_l = 1/N (docs/model.md#pi-members)."""
        return DispatchFractions("rank", np.full(mu.size, 1.0 / mu.size))

    def dispatch_probabilities(self, q: np.ndarray, mu: np.ndarray) -> np.ndarray:
        """Exact law of one call (``dispatchlab.exact``): uniform."""
        return np.full(np.shape(q), 1.0 / np.shape(q)[1])


@register
class WeightedRandomRouting(Policy):
    """Weighted RAND, registered as ``wrand``: server n with probability μ_n/μ_Σ.

    Throughput optimal, a Π member with a_l(η) = μ_η(l)/μ_Σ ([Π];
    docs/model.md#random-routing); no messages."""

    name = "wrand"
    summary = "Weighted RAND: server n with probability μ_n/μ_Σ; no messages."
    theory = ("Throughput optimal; exact means in docs/model.md#random-routing; ε·E[ΣQ] tends "
              "to the random-routing constant, above ζ/2 (the reference Δ ≡ 0 of LED, "
              "docs/model.md#led-tilt).")

    def kernel(self, system: System) -> Kernel:
        return Kernel(_weighted_choose, float_params=alias_table(system.mu))

    def fluid_rule(self, system: System) -> FluidRule:
        """Its N → ∞ limit (``dispatchlab.fluid``): r_j = λ̄·μ_j/μ̄."""
        return FluidRule("weighted")

    def dispatch_fractions(self, mu: np.ndarray) -> DispatchFractions:
        """Π member with a_l(η) = μ_η(l)/μ_Σ (docs/model.md#pi-members)."""
        return DispatchFractions("server", mu / mu.sum())

    def dispatch_probabilities(self, q: np.ndarray, mu: np.ndarray) -> np.ndarray:
        """Exact law of one call (``dispatchlab.exact``): μ_n/μ_Σ."""
        return np.tile(mu / mu.sum(), (np.shape(q)[0], 1))


@register
class RoundRobin(Policy):
    """RR, registered as ``rr``: each dispatcher's pointer walks a fixed cycle of servers
    (``weighted``: w_n ∝ μ_n slots per server).

    A Π member with T = N ([Π]; docs/model.md#pi-members); no messages."""

    name = "rr"
    summary = ("RR: each dispatcher keeps its own pointer and sends each dispatch to the next "
               "server of a fixed cycle; weighted=true uses a cycle with slots ∝ μ_n.")
    theory = ("Π member with T = N, a_l = 1/N: stable iff λ_Σ/N < μ_min when unweighted; "
              "not heavy-traffic optimal with random service (docs/model.md#pi-members).")
    parameters = (
        Param("weighted", bool, False, "balanced RR: server n gets w_n ∝ μ_n slots per cycle"),
        Param("resolution", int, 0, "weighted cycle: 0 = exact rational weights w_n ∝ μ_n; "
              "k > 0 = round to k slots for the fastest server (a shorter, approximate cycle)",
              low=0),
    )

    def kernel(self, system: System) -> Kernel:
        cycle = self.cycle(system.mu)
        # dispatchers start spread over the cycle rather than in lockstep
        start = (np.arange(system.dispatchers, dtype=np.int64) * cycle.size
                 // system.dispatchers).reshape(1, -1)
        return Kernel(_cycle_choose, int_params=cycle, int_state=start)

    def dispatch_fractions(self, mu: np.ndarray) -> DispatchFractions:
        """Π member with T = N: a_l = 1/N, or the weighted cycle's counts per server
        (docs/model.md#pi-members)."""
        if not self.params["weighted"]:
            return DispatchFractions("rank", np.full(mu.size, 1.0 / mu.size))
        counts = np.bincount(self.cycle(mu), minlength=mu.size)
        return DispatchFractions("server", counts / counts.sum())

    def exact_memory(self, system: System) -> MemoryRule:
        """Exact law (``dispatchlab.exact``): the memory is every dispatcher's position."""
        cycle = self.cycle(system.mu)
        start = np.arange(system.dispatchers) * cycle.size // system.dispatchers
        return CycleRule(cycle, tuple(int(x) for x in start))

    def cycle(self, mu: np.ndarray) -> np.ndarray:
        """The fixed dispatch cycle: 0..N−1, or a smooth weighted interleaving."""
        if not self.params["weighted"]:
            return np.arange(mu.size, dtype=np.int64)
        weights = _cycle_weights(mu, self.params["resolution"])
        # smooth weighted round robin (nginx-style): spreads each server's slots evenly
        total = int(weights.sum())
        current = np.zeros(mu.size)
        order = np.empty(total, np.int64)
        for i in range(total):
            current += weights
            k = int(np.argmax(current))
            order[i] = k
            current[k] -= total
        return order


MAX_EXACT_CYCLE = 100_000


class CycleRule(MemoryRule):
    """RR for the exact solver: memory = (position of dispatcher m in the cycle)_m."""

    def __init__(self, cycle: np.ndarray, start: tuple[int, ...]) -> None:
        import itertools

        self.cycle = cycle
        self.states = list(itertools.product(range(cycle.size), repeat=len(start)))
        self.initial = start

    def dispatch(self, memory, q, m, jobs):
        position = memory[m]
        after = (*memory[:m], (position + 1) % self.cycle.size, *memory[m + 1:])
        return [(np.ones(q.shape[0]), np.full(q.shape[0], self.cycle[position]), after)]


def _cycle_weights(mu: np.ndarray, resolution: int) -> np.ndarray:
    """Integer slots per cycle w_n ∝ μ_n: exact for rational rates (e.g. 3:5:7:9 for
    0.3, 0.5, 0.7, 0.9), else rounded to ``resolution`` slots for the fastest server."""
    if resolution == 0:
        ratios = [Fraction(float(x)).limit_denominator(10_000) for x in mu]
        scale = math.lcm(*(r.denominator for r in ratios))
        numerators = [int(r * scale) for r in ratios]
        common = math.gcd(*numerators)
        weights = np.array([n // common for n in numerators], dtype=float)
        if weights.sum() <= MAX_EXACT_CYCLE:
            return weights
        resolution = max(1, MAX_EXACT_CYCLE // mu.size)
    return np.maximum(1, np.round(resolution * mu / mu.max()))


def _herding_params() -> tuple[Param, ...]:
    return (
        Param("ties", str, "random", "tie rule among the minimisers: random (uniform per "
              "dispatcher), lowest (lowest index) or shared (one random order per slot, the "
              "same for every dispatcher: all pick the same server)", choices=TIES),
        Param("lag", int, 0, "k: decide on Q(t − k), queue lengths k slots old", low=0,
              high=10_000),
        Param("fill", bool, False, "water-filling (per-job dispatch): each job to the minimum "
              "of the slot-start view plus the jobs this dispatcher already sent this slot; "
              "2N messages per dispatch event"),
    )


class _HerdingOptions(Policy):
    """JSQ-type rules with the herding options of :mod:`dispatchlab.policies.herding`."""

    scaled: bool = False

    def offset(self) -> float:
        return 0.0

    @property
    def plain(self) -> bool:
        """No herding option set: the plain compiled rule runs."""
        return (self.params["ties"], self.params["lag"], self.params["fill"]) == ("random", 0,
                                                                                  False)

    def dispatch_fractions(self, mu: np.ndarray) -> DispatchFractions:
        """Π member with a = e_N: γ = 1 (JSQ) or γ = μ (JSED; the classical +1 of SED is
        outside Π, docs/model.md#pi-members)."""
        last_rank = np.zeros(mu.size)  # not an N × N eye: 80 GB at N = 10⁵
        last_rank[-1] = 1.0
        return DispatchFractions("rank", last_rank)

    def exact_scores(self, q: np.ndarray, mu: np.ndarray) -> np.ndarray:
        """The scores the rule minimises: Q, or (Q + offset)/μ (JSED)."""
        return (q + self.offset()) / mu if self.scaled else q

    def dispatch_probabilities(self, q: np.ndarray, mu: np.ndarray) -> np.ndarray | None:
        """Exact law of one call (``dispatchlab.exact``) with each tie rule; none with a
        lag or water-filling (their memory is not small)."""
        if self.params["lag"] or self.params["fill"]:
            return None
        scores = self.exact_scores(np.asarray(q), mu)
        return argmin_lowest(scores) if self.params["ties"] == "lowest" else argmin_uniform(
            scores)

    def dispatch_shared(self) -> bool:
        """ties=shared: one pick per slot for every dispatcher and call."""
        return self.params["ties"] == "shared"

    def check_system(self, system: System) -> None:
        require(not self.params["fill"] or system.dispatch == "per_job", f"{self.name}.fill",
                "water-filling places jobs one by one: it needs per-job dispatch "
                "(dispatch = per_job)")

    def herding_kernel(self, system: System) -> Kernel:
        """The kernel of the options (used for every setting but the plain one)."""
        ip, fp, ist, fst = herding_layout(system.n_servers, system.dispatchers,
                                     lag=self.params["lag"], ties=self.params["ties"],
                                     fill=self.params["fill"], scaled=self.scaled,
                                     offset=self.offset())
        lagged = self.params["lag"] > 0  # only a lag needs the hooks (the ring of past Q)
        return Kernel(herding_choose, herding_begin if lagged else no_hook,
                      herding_end if lagged else no_hook, int_params=ip, float_params=fp,
                      int_state=ist, float_state=fst)


@register
class JoinShortestQueue(_HerdingOptions):
    """JSQ, registered as ``jsq``: join the shortest queue, argmin_n Q_n(t), ties uniform.

    Heavy-traffic optimal with one dispatcher ([ES12]; docs/model.md#classical); the
    herding options (ties, lag, fill) of docs/model.md#herding; 2N messages per dispatch."""

    name = "jsq"
    summary = ("JSQ: argmin_n Q_n(t) over all servers, ties uniform; 2N messages per dispatch. "
               "Herding options: ties, lag, fill (water-filling).")
    theory = ("Throughput and heavy-traffic delay optimal with one dispatcher (ε·E[ΣQ] → ζ/2, "
              "[ES12]); herds with several dispatchers, hard with shared ties or lag ≥ 1 "
              "(docs/model.md#herding).")
    parameters = _herding_params()

    def fluid_rule(self, system: System) -> FluidRule | None:
        """Its N → ∞ limit (``dispatchlab.fluid``) with uniform ties on Q(t); none with the
        herding options (lowest-index ties have no limit, lag and fill not derived)."""
        return FluidRule("jsq") if self.plain else None

    def kernel(self, system: System) -> Kernel:
        self.check_system(system)
        if not self.plain:
            return self.herding_kernel(system)
        return Kernel(_jsq_choose, int_state=slot_argmin_cache(system.n_servers))


@register
class JoinShortestExpectedDelay(_HerdingOptions):
    """JSED, registered as ``jsed``: argmin_n (Q_n + 1)/μ_n, or Q_n/μ_n (``plus_one=false``,
    the Π member with γ = μ), ties uniform.

    The Q/μ form is heavy-traffic optimal ([Π] Theorem 4.4; docs/model.md#classical,
    docs/model.md#pi-members); herding options as JSQ; 2N messages per dispatch."""

    name = "jsed"
    summary = ("JSED: argmin_n (Q_n + 1)/μ_n (plus_one=true, classical SED) or Q_n/μ_n "
               "(the Π member, γ = μ); 2N messages per dispatch. Herding options as jsq.")
    theory = ("Throughput optimal; the Q/μ form is a strictly majorising Π policy, heavy-traffic "
              "optimal with Q_l ∝ μ_l in the limit ([Π] Theorem 4.4, "
              "docs/model.md#pi-heavy-traffic).")
    parameters = (Param("plus_one", bool, True, "use (Q+1)/μ instead of Q/μ"),
                  *_herding_params())
    scaled = True

    def offset(self) -> float:
        return 1.0 if self.params["plus_one"] else 0.0

    def kernel(self, system: System) -> Kernel:
        self.check_system(system)
        if not self.plain:
            return self.herding_kernel(system)
        return Kernel(_jsed_choose, float_params=np.array([self.offset()]),
                      int_state=slot_argmin_cache(system.n_servers))


@register
class PowerOfD(Policy):
    """Po-d, registered as ``pod``: the shortest of d distinct servers sampled uniformly,
    ties uniform.

    A Π member with a_l = C(l−1, d−1)/C(N, d) ([Mitz], [HLM];
    docs/model.md#stability-thresholds); 2d messages per dispatch."""

    name = "pod"
    summary = ("Po-d: sample d distinct servers uniformly, join the shortest (ties uniform); "
               "2d messages per dispatch.")
    theory = ("Homogeneous: throughput and HT optimal for d ≥ 2. Heterogeneous: stable iff "
              "λ_Σ·C(m,d)/C(N,d) < μ_1 + … + μ_m for all m, μ ascending ([HLM]; "
              "docs/model.md#stability-thresholds).")
    parameters = (_d_param(),)

    def check_system(self, system: System) -> None:
        _check_d(self, system)

    def fluid_rule(self, system: System) -> FluidRule:
        """Its N → ∞ limit (``dispatchlab.fluid``): d samples, the shortest, ties uniform."""
        return FluidRule("pod", self.params["d"])

    def dispatch_fractions(self, mu: np.ndarray) -> DispatchFractions:
        """Π member with a_l = C(l−1, d−1)/C(N, d) (docs/model.md#pi-members)."""
        return DispatchFractions("rank", rank_fractions_pod(mu.size, self.params["d"]))

    def dispatch_probabilities(self, q: np.ndarray, mu: np.ndarray) -> np.ndarray:
        """Exact law of one call (``dispatchlab.exact``): a uniform d-subset, its shortest
        queue, ties uniform."""
        return subset_argmin(q, *uniform_subsets(np.shape(q)[1], self.params["d"]))

    def kernel(self, system: System) -> Kernel:
        d = self.params["d"]
        return Kernel(_pod_choose, int_params=np.array([d]),
                      int_state=np.zeros((1, d), np.int64))


@register
class BalancedPowerOfD(Policy):
    """Balanced Po-d, registered as ``balanced-pod``: the shortest Q (or Q/μ, ``by_delay``)
    of d distinct servers sampled ∝ μ without replacement.

    Asymptotically optimal balanced routing ([CY12]; docs/model.md#classical); 2d messages
    per dispatch."""

    name = "balanced-pod"
    summary = ("Balanced Po-d [CY12]: sample d distinct servers with probability ∝ μ, join the "
               "shortest Q (or Q/μ with by_delay=true); 2d messages per dispatch.")
    theory = ("Asymptotically optimal balanced routing of [CY12]; throughput optimal "
              "(docs/model.md#classical).")
    pi_member_without_fractions = True
    parameters = (_d_param(), Param("by_delay", bool, False, "compare Q/μ instead of Q"))

    def check_system(self, system: System) -> None:
        _check_d(self, system)

    def dispatch_probabilities(self, q: np.ndarray, mu: np.ndarray) -> np.ndarray:
        """Exact law of one call (``dispatchlab.exact``): d servers drawn ∝ μ without
        replacement, the smallest Q (or Q/μ), ties uniform."""
        q = np.asarray(q)
        values = q / mu if self.params["by_delay"] else q * 1.0
        return subset_argmin(values, *weighted_sequences(mu, self.params["d"]))

    def kernel(self, system: System) -> Kernel:
        state = np.zeros((2, system.n_servers), np.int64)
        return Kernel(_balanced_pod_choose,
                      int_params=np.array([self.params["d"], int(self.params["by_delay"])]),
                      float_params=np.concatenate([[system.mu_sum], alias_table(system.mu)]),
                      int_state=state)


# the names load balancers give these rules, as users type them
register_preset(
    "p2c", PowerOfD,
    "P2C, the power of two choices: pod with d = 2 (its name in Envoy, Finagle, gRPC, "
    "Linkerd).", d=2)
register_preset(
    "least-request", PowerOfD,
    "Least request (Envoy's LEAST_REQUEST): pod, the fewest jobs among d sampled servers; "
    "d = 2 by default, as Envoy's choice_count (--set d=N).", defaults={"d": 2})
register_preset(
    "wrr", RoundRobin,
    "WRR, weighted round robin: rr with weighted=true (server n gets slots ∝ μ_n of each "
    "dispatcher's cycle).", weighted=True)
