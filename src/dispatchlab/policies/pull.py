"""Pull-based ID-memory policies: JBT-r (docs/model.md#jbt-rule, docs/model.md#jbt-memory)
and JIQ (docs/model.md#jiq).

Both keep, at each dispatcher, a list of server IDs that reported themselves below
a threshold r (r = 1: idle servers). The memory is real, not read from Q:

* a dispatcher with arrivals takes one ID from its list (μ-weighted, uniform or the
  oldest), sends the jobs there and **removes** the ID; with an empty list it falls
  back to a random server (μ-weighted or uniform);
* at the end of each slot every server with Q_n(t+1) < r that is registered nowhere
  sends its ID (1 report message) to one dispatcher: a uniform one (JIQ-Random and
  the natural M > 1 generalisation of JBT-r, which the paper states for M = 1), or
  the one with the shortest ID list among d sampled (JIQ-SQ(d): d probes, d replies
  and the report).

With one dispatcher this keeps the memory equal to {n : Q_n(t) < r} at every slot
start. With M > 1 every server below r is listed at exactly one dispatcher, but a
listed server may be fed by another dispatcher (its fallback) and pass r while still
listed there: the lists then hold stale IDs until used. ``audit=true`` counts the slots
where the invariant of the configuration fails (M = 1: lists = {n : Q_n < r};
M > 1: {n : Q_n < r} ⊆ lists, no ID listed twice).

The M > 1 extension of JBT-r is kept as it is and is *not* proportional random routing
inside the threshold region: each dispatcher chooses μ-weighted within its own list, a
random subset, so slow servers get more than their share; with r = 10⁹ on
3 × 0.2 + 3 × 0.8 and M = 2 it is unstable at ρ = 0.9, where weighted random routing is
stable (docs/model.md#jbt-many-dispatchers, tests/policies/test_jbt_many_dispatchers.py).

Memory layout (``int_state``, width W ≥ max(capacity, M, d)):
row 0 ``reg[n]`` (dispatcher holding n, −1 if none); row 1 list heads; row 2 list
lengths; row 3 per-slot counters (dispatch calls, empty-memory calls, initialised);
row 4 the SQ(d) sample; rows 5.. one ring buffer of IDs per dispatcher.
"""

from __future__ import annotations

import math

import numpy as np
from numba import njit

from dispatchlab.compiled.alias import alias_draw, alias_table
from dispatchlab.compiled.argmin import shortest_of_row
from dispatchlab.compiled.rng import randint, sample_distinct_row, uniform
from dispatchlab.core.errors import require
from dispatchlab.engine.interface import (
    PROBE,
    REPLY,
    REPORT,
    choose_function,
    hook_function,
)
from dispatchlab.model.system import System
from dispatchlab.policies.base import Kernel, Param, Policy, register
from dispatchlab.solvers.fluid import FluidRule
from dispatchlab.solvers.rules import MemoryRule

# ip layout
IP_THRESHOLD, IP_PICK, IP_FALLBACK, IP_DESTINATION, IP_D, IP_AUDIT, IP_MASK = range(7)
PICK_WEIGHTED, PICK_UNIFORM, PICK_OLDEST = range(3)
#: the longest list a μ-weighted pick scans; a longer one is sampled by rejection (the same
#: law; a run's draws change only where a list grows past it: r ≥ 2 on many servers)
WEIGHTED_SCAN_MAX = 64
FALLBACK_WEIGHTED, FALLBACK_UNIFORM = range(2)
DESTINATION_RANDOM, DESTINATION_SQ = range(2)

# ist rows
ROW_REGISTERED, ROW_HEAD, ROW_LENGTH, ROW_SCRATCH, ROW_SAMPLE, ROW_LISTS = range(6)
SCRATCH_CALLS, SCRATCH_EMPTY, SCRATCH_READY = range(3)

# diag layout (shared by JBT and JIQ)
DIAGNOSTICS = ("dispatch_calls", "empty_memory_calls", "distance_sum", "distance_tail_slots",
               "memory_size_sum", "memory_violation_slots")
(D_CALLS, D_EMPTY, D_DISTANCE, D_TAIL, D_MEMORY, D_VIOLATIONS) = range(len(DIAGNOSTICS))

MAX_THRESHOLD = 2**40


# -- named access to the layout above ---------------------------------------------------------


@njit(inline="always", cache=True)
def threshold(memory):
    """r: a server reports while Q_n < r."""
    return memory.int_params[IP_THRESHOLD]


@njit(inline="always", cache=True)
def ring_mask(memory):
    """capacity − 1 of each dispatcher's ring buffer of IDs (the capacity is a power of 2)."""
    return memory.int_params[IP_MASK]


@njit(inline="always", cache=True)
def registered(memory):
    """registered[n]: the dispatcher whose list holds server n, −1 if none."""
    return memory.int_state[ROW_REGISTERED]


@njit(inline="always", cache=True)
def list_heads(memory):
    """list_heads[m]: ring-buffer index of the oldest ID of dispatcher m's list."""
    return memory.int_state[ROW_HEAD]


@njit(inline="always", cache=True)
def list_lengths(memory):
    """list_lengths[m]: how many IDs dispatcher m's list holds."""
    return memory.int_state[ROW_LENGTH]


@njit(inline="always", cache=True)
def id_list(memory, m):
    """Dispatcher m's ring buffer of server IDs."""
    return memory.int_state[ROW_LISTS + m]


@njit(inline="always", cache=True)
def largest_rate(memory):
    """μ_max, kept after the alias table of μ in the float parameters (alias_index reads
    the table's 2N entries only)."""
    return memory.float_params[memory.float_params.size - 1]


@njit(inline="always", cache=True)
def slot_counters(memory):
    """[dispatch calls this slot, calls that found an empty list, initialised flag]."""
    return memory.int_state[ROW_SCRATCH]


@njit(inline="always", cache=True)
def rejection_pick(ids, head, mask, length, mu, top, rng):
    """A position i of the ring list ``ids[(head + i) & mask]``, 0 ≤ i < length, with
    probability ∝ μ of its server: a uniform position kept with probability μ_n/``top``
    (top ≥ every μ_n), about top/mean(μ) tries, where the scan of a μ-weighted pick costs
    two passes of the list (10⁴ IDs a job for r = 2 at N = 10⁵: 0.5 s a slot)."""
    while True:
        i = randint(rng, length)
        if uniform(rng) * top < mu[ids[(head + i) & mask]]:
            return i


@njit(cache=True)
def _report(n, dispatchers, memory, ctx):
    """Server n sends its ID to one dispatcher (uniform, or SQ(d)); it joins that list."""
    rng = ctx.rng
    lengths = list_lengths(memory)
    if dispatchers == 1:
        dest = 0
    elif memory.int_params[IP_DESTINATION] == DESTINATION_SQ:
        d = memory.int_params[IP_D]
        sample_distinct_row(rng, dispatchers, d, memory.int_state, ROW_SAMPLE)
        ctx.msg[PROBE] += d
        ctx.msg[REPLY] += d
        dest = shortest_of_row(lengths, memory.int_state, ROW_SAMPLE, d, rng)
    else:
        dest = randint(rng, dispatchers)
    length = lengths[dest]
    id_list(memory, dest)[(list_heads(memory)[dest] + length) & ring_mask(memory)] = n
    lengths[dest] = length + 1
    registered(memory)[n] = dest
    ctx.msg[REPORT] += 1


@njit(cache=True)
def _audit(Q, memory, dispatchers):
    """True when the lists break the memory invariant (see the module docstring)."""
    N = Q.size
    r = threshold(memory)
    mask = ring_mask(memory)
    holder = registered(memory)
    seen = np.zeros(N, np.int64)
    for m in range(dispatchers):
        head = list_heads(memory)[m]
        ids = id_list(memory, m)
        for i in range(list_lengths(memory)[m]):
            n = ids[(head + i) & mask]
            if n < 0 or n >= N or holder[n] != m:
                return True
            seen[n] += 1
    for n in range(N):
        if seen[n] > 1 or (Q[n] < r and seen[n] == 0):
            return True
        if dispatchers == 1 and Q[n] >= r and seen[n] == 1:
            return True
        if (holder[n] >= 0) != (seen[n] == 1):
            return True
    return False


@choose_function
def _id_memory_choose(m, jobs, slot, memory, ctx):
    rng = ctx.rng
    counters = slot_counters(memory)
    counters[SCRATCH_CALLS] += 1
    lengths = list_lengths(memory)
    length = lengths[m]
    if length == 0:
        counters[SCRATCH_EMPTY] += 1
        if memory.int_params[IP_FALLBACK] == FALLBACK_WEIGHTED:
            return alias_draw(rng, memory.float_params)  # fp: the alias table of μ
        return randint(rng, slot.Q.size)
    mask = ring_mask(memory)
    heads = list_heads(memory)
    head = heads[m]
    ids = id_list(memory, m)
    pick = memory.int_params[IP_PICK]
    mu = slot.mu
    i = 0
    if pick == PICK_UNIFORM:
        i = randint(rng, length)
    elif pick == PICK_WEIGHTED and length > WEIGHTED_SCAN_MAX:
        i = rejection_pick(ids, head, mask, length, mu, largest_rate(memory), rng)
    elif pick == PICK_WEIGHTED and length > 1:
        total = 0.0
        for k in range(length):
            total += mu[ids[(head + k) & mask]]
        u = uniform(rng) * total
        while i < length - 1:
            u -= mu[ids[(head + i) & mask]]
            if u < 0.0:
                break
            i += 1
    position = (head + i) & mask
    server = ids[position]
    if i == 0:
        heads[m] = (head + 1) & mask
    else:  # order matters only for PICK_OLDEST, which always takes i = 0
        ids[position] = ids[(head + length - 1) & mask]
    lengths[m] = length - 1
    registered(memory)[server] = -1
    return server


@hook_function(allocates=True)  # _audit's work array
def _id_memory_begin(slot, step, memory, ctx):
    Q = slot.Q
    dispatchers = step.A_m.size
    counters = slot_counters(memory)
    if counters[SCRATCH_READY] == 0:
        # the servers below the threshold at t = 0 report once, as at any later slot end
        holder = registered(memory)
        for n in range(Q.size):
            if Q[n] < threshold(memory) and holder[n] < 0:
                _report(n, dispatchers, memory, ctx)
        counters[SCRATCH_READY] = 1
    if memory.int_params[IP_AUDIT] == 1 and step.record and _audit(Q, memory, dispatchers):
        step.diag[D_VIOLATIONS] += 1.0


@hook_function
def _id_memory_end(slot, step, memory, ctx):
    Q = slot.Q
    N = Q.size
    dispatchers = step.A_m.size
    r = threshold(memory)
    holder = registered(memory)
    # reports in a random cyclic order, so that FIFO lists do not favour low indices
    n = randint(ctx.rng, N) if memory.int_params[IP_PICK] == PICK_OLDEST and N > 1 else 0
    for _ in range(N):
        if Q[n] < r and holder[n] < 0:
            _report(n, dispatchers, memory, ctx)
        n += 1
        if n == N:
            n = 0
    counters = slot_counters(memory)
    if step.record:
        diag = step.diag
        diag[D_CALLS] += counters[SCRATCH_CALLS]
        diag[D_EMPTY] += counters[SCRATCH_EMPTY]
        # d_{R^(r)}(Q(t+1)) = min(d to R_l, d to R_u), Euclidean ([JBT] Eq. (8),
        # docs/model.md#jbt-rule)
        above = 0.0
        below = 0.0
        for k in range(N):
            gap = Q[k] - r
            if gap > 0:
                above += gap * gap
            else:
                below += gap * gap
        distance = math.sqrt(min(above, below))
        diag[D_DISTANCE] += distance
        if distance >= r:
            diag[D_TAIL] += 1.0
        size = 0
        lengths = list_lengths(memory)
        for m in range(dispatchers):
            size += lengths[m]
        diag[D_MEMORY] += size
    counters[SCRATCH_CALLS] = 0
    counters[SCRATCH_EMPTY] = 0


def _capacity(n_servers: int) -> int:
    """Ring-buffer capacity: a power of two ≥ N (every list holds at most N IDs)."""
    return 1 << max(0, (n_servers - 1).bit_length())


class IdMemoryRule(MemoryRule):
    """JBT-r / JIQ with one dispatcher for the exact solver (``dispatchlab.exact``): the
    memory is the dispatcher's list of IDs, ordered (oldest first) when the oldest is taken,
    else a set (a sorted tuple: the order does not change the law)."""

    def __init__(self, n: int, r: int, pick: int, fallback: int, mu: np.ndarray) -> None:
        import itertools

        self.n, self.r, self.pick, self.mu = n, r, pick, np.asarray(mu, dtype=float)
        self.ordered = pick == PICK_OLDEST
        self.fallback = (self.mu / self.mu.sum() if fallback == FALLBACK_WEIGHTED
                         else np.full(n, 1.0 / n))
        make = itertools.permutations if self.ordered else itertools.combinations
        self.states = [s for k in range(n + 1) for s in make(range(n), k)]
        self.initial = tuple(range(n))  # Q(0) = 0: every server reports, in index order

    def dispatch(self, memory, q, m, jobs):
        size = q.shape[0]
        if not memory:
            return [(np.full(size, p), np.full(size, k), memory)
                    for k, p in enumerate(self.fallback) if p > 0]
        if self.ordered:
            return [(np.ones(size), np.full(size, memory[0]), memory[1:])]
        weights = (self.mu[list(memory)] if self.pick == PICK_WEIGHTED
                   else np.ones(len(memory)))
        weights = weights / weights.sum()
        return [(np.full(size, w), np.full(size, k), memory[:i] + memory[i + 1:])
                for i, (k, w) in enumerate(zip(memory, weights, strict=True))]

    def update(self, memory, q_next):
        size = q_next.shape[0]
        below = q_next < self.r
        below[:, list(memory)] = False
        masks = below @ (1 << np.arange(self.n))
        starts = range(self.n) if self.ordered and self.n > 1 else (0,)
        branches = []
        for start in starts:
            order = [(start + j) % self.n for j in range(self.n)]
            table = {}
            for mask in np.unique(masks):
                added = tuple(k for k in order if mask >> k & 1)
                value = memory + added
                table[mask] = value if self.ordered else tuple(sorted(value))
            branches.append((np.full(size, 1.0 / len(starts)), [table[x] for x in masks]))
        return branches


class _IdMemoryPolicy(Policy):
    """Shared kernel construction and diagnostics of JBT-r and JIQ."""

    diagnostics = DIAGNOSTICS

    def exact_memory(self, system: System) -> MemoryRule | None:
        """Exact law (``dispatchlab.exact``) with one dispatcher; none for M > 1."""
        if system.dispatchers != 1:
            return None
        pick, fallback, _, _ = self._layout(system)
        return IdMemoryRule(system.n_servers, self.threshold(system), pick, fallback,
                            system.mu)

    def threshold(self, system: System) -> int:
        raise NotImplementedError

    def _layout(self, system: System) -> tuple[int, int, int, int]:
        """(pick, fallback, destination, d) codes of this policy."""
        raise NotImplementedError

    def kernel(self, system: System) -> Kernel:
        n, m = system.n_servers, system.dispatchers
        pick, fallback, destination, d = self._layout(system)
        capacity = _capacity(n)
        width = max(capacity, m, d, 3)
        state = np.zeros((ROW_LISTS + m, width), np.int64)
        state[ROW_REGISTERED, :] = -1
        state[ROW_LISTS:, :] = -1
        int_params = np.array([self.threshold(system), pick, fallback, destination, d,
                               int(self.params["audit"]), capacity - 1], np.int64)
        return Kernel(_id_memory_choose, _id_memory_begin, _id_memory_end,
                      int_params=int_params,
                      float_params=np.append(alias_table(system.mu), system.mu.max()),
                      int_state=state, n_diagnostics=len(DIAGNOSTICS))

    def summarize(self, diag: np.ndarray, measured_slots: int, system: System) -> dict[str, float]:
        slots = max(measured_slots, 1)
        calls = diag[D_CALLS]
        return {
            "threshold": float(self.threshold(system)),
            "empty_memory_fraction": float(diag[D_EMPTY] / calls) if calls else math.nan,
            "distance_to_region": float(diag[D_DISTANCE] / slots),
            "distance_tail_probability": float(diag[D_TAIL] / slots),
            "mean_memory_size": float(diag[D_MEMORY] / slots),
            "memory_violation_slots": float(diag[D_VIOLATIONS]),
        }


_AUDIT = Param("audit", bool, False,
               "count slots where the memory differs from {n : Q_n < r} (diagnostic, O(N)/slot)")

THRESHOLD_RULES = ("constant", "log", "poly")


@register
class JoinBelowThreshold(_IdMemoryPolicy):
    """JBT-r, registered as ``jbt``: join a remembered server below the threshold r (its ID
    removed), else a random one; servers report when they fall below r.

    r constant, ⌈K·log(1/ε)⌉ or ⌈(1/ε)^a⌉ ([JBT]; docs/model.md#jbt). [JBT] has one
    dispatcher; with M > 1 (our extension: one ID list per dispatcher, a μ-weighted choice
    within it) the rule is not proportional random routing even when r never binds, and
    can be unstable where weighted random routing is stable — a finding we keep and test
    (docs/model.md#jbt-many-dispatchers)."""

    name = "jbt"
    summary = ("JBT-r: jobs go to a remembered server below the threshold r (ID removed when "
               "used), else to a random one; servers report when they fall below r (1 message). "
               "r constant, ⌈K·log(1/ε)⌉ or ⌈(1/ε)^a⌉.")
    theory = ("Throughput optimal for every r ≥ 1 (Lemma 1). Constant r: ε·E[ΣQ] strictly "
              "between ζ/2 and random routing; r ≥ K·log(1/ε), r = o(1/ε): HT optimal (Thm 2); "
              "r = (1/ε)¹⁺ᵅ: random routing (Thm 1).")
    parameters = (
        Param("r", int, 3, "constant threshold r (threshold=constant)", low=1,
              high=MAX_THRESHOLD),
        Param("threshold", str, "constant", "threshold rule: r, ⌈K·log(1/ε)⌉ or ⌈(1/ε)^a⌉",
              choices=THRESHOLD_RULES),
        Param("K", float, 1.0, "K of r = ⌈K·log(1/ε)⌉ (threshold=log)", low=0.0, low_open=True),
        Param("a", float, 1.5, "a of r = ⌈(1/ε)^a⌉ (threshold=poly)", low=0.0, low_open=True),
        Param("weighted", bool, True,
              "μ-weighted choice in memory and in the fallback (false: uniform in both)"),
        _AUDIT,
    )

    def check_system(self, system: System) -> None:
        if self.params["threshold"] != "constant":
            require(system.epsilon > 0, "jbt.threshold",
                    f"a threshold growing with 1/ε needs ε > 0 (got ε = {system.epsilon:g})")

    def threshold(self, system: System) -> int:
        """r for this system: constant, ⌈K·log(1/ε)⌉ or ⌈(1/ε)^a⌉ (at least 1)."""
        return threshold_for(self.params["threshold"], system.epsilon, r=self.params["r"],
                             K=self.params["K"], a=self.params["a"])

    def fluid_rule(self, system: System) -> FluidRule:
        """Its N → ∞ limit (``dispatchlab.fluid``): threshold r^(ε) of the system's ε, IDs
        and the fallback ∝ μ (``weighted``) or uniform."""
        kind = "weighted" if self.params["weighted"] else "uniform"
        return FluidRule("pull", threshold=self.threshold(system), pick=kind, fallback=kind)

    def _layout(self, system: System) -> tuple[int, int, int, int]:
        weighted = self.params["weighted"]
        return ((PICK_WEIGHTED if weighted else PICK_UNIFORM),
                (FALLBACK_WEIGHTED if weighted else FALLBACK_UNIFORM), DESTINATION_RANDOM, 1)


def threshold_for(rule: str, epsilon: float, *, r: int = 3, K: float = 1.0,
                  a: float = 1.5) -> int:
    """The JBT threshold r^(ε) of a rule: ``constant`` r, ``log`` ⌈K·log(1/ε)⌉ or
    ``poly`` ⌈(1/ε)^a⌉, at least 1 and at most 2^40."""
    require(rule in THRESHOLD_RULES, "threshold", f"allowed: {', '.join(THRESHOLD_RULES)}")
    if rule == "constant":
        return int(r)
    require(epsilon > 0, "epsilon", f"a growing threshold needs ε > 0 (got {epsilon:g})")
    # in logarithms: (1/ε)^a overflows a float long before the cap (a = 1e300)
    log_value = (math.log(K) + math.log(math.log(1.0 / epsilon)) if rule == "log" and epsilon < 1
                 else a * math.log(1.0 / epsilon) if rule == "poly" else -math.inf)
    if log_value >= math.log(MAX_THRESHOLD):
        return MAX_THRESHOLD
    value = K * math.log(1.0 / epsilon) if rule == "log" else (1.0 / epsilon) ** a
    return int(min(MAX_THRESHOLD, max(1, math.ceil(value - 1e-9))))


@register
class JoinIdleQueue(_IdMemoryPolicy):
    """JIQ, registered as ``jiq``: idle servers report to one dispatcher's I-queue (uniform,
    or JIQ-SQ(d)); a dispatcher sends to an ID from it, else to a random server.

    [JIQ] (docs/model.md#jiq); with M = 1 it is JBT-r with r = 1."""

    name = "jiq"
    summary = ("JIQ: idle servers report to one dispatcher (uniform, or shortest I-queue of d "
               "sampled); a dispatcher sends to an ID from its I-queue (oldest or uniform, "
               "removed), else to a random server.")
    theory = ("With M = 1 it is JBT-r with r = 1: not HT optimal, better than random routing "
              "(Thm 1); a uniform fallback is unstable at high load on heterogeneous servers.")
    parameters = (
        Param("destination", str, "random", "where an idle report goes: uniform dispatcher "
              "(JIQ-Random) or the shortest of d sampled I-queues (JIQ-SQ(d))",
              choices=("random", "sq")),
        Param("d", int, 2, "dispatchers sampled by JIQ-SQ(d)", low=1),
        Param("removal", str, "fifo", "which ID a dispatcher takes: the oldest or a uniform one",
              choices=("fifo", "uniform")),
        Param("weighted_fallback", bool, False,
              "empty I-queue: μ-weighted random server instead of uniform"),
        _AUDIT,
    )

    def check_system(self, system: System) -> None:
        if self.params["destination"] == "sq":
            require(self.params["d"] <= system.dispatchers, "jiq.d",
                    f"JIQ-SQ(d) samples d distinct dispatchers: d must be between 1 and "
                    f"M = {system.dispatchers} (got {self.params['d']})")

    def threshold(self, system: System) -> int:
        return 1

    def fluid_rule(self, system: System) -> FluidRule:
        """Its N → ∞ limit (``dispatchlab.fluid``): threshold 1, the oldest or a uniform ID,
        a uniform or μ-weighted fallback (the destination balances the lists either way)."""
        return FluidRule("pull", threshold=1,
                         pick="oldest" if self.params["removal"] == "fifo" else "uniform",
                         fallback="weighted" if self.params["weighted_fallback"] else "uniform")

    def _layout(self, system: System) -> tuple[int, int, int, int]:
        sq = self.params["destination"] == "sq"
        return ((PICK_OLDEST if self.params["removal"] == "fifo" else PICK_UNIFORM),
                (FALLBACK_WEIGHTED if self.params["weighted_fallback"] else FALLBACK_UNIFORM),
                (DESTINATION_SQ if sq else DESTINATION_RANDOM),
                self.params["d"] if sq else 1)
