"""Stochastically coordinated dispatching: SCD ([SCD]) and tidal water-filling ([TWF]).

Every dispatcher reads the slot-start queues Q(t), estimates the number of jobs a that
all dispatchers together place this slot, and computes the same probability vector P
over the servers; each of its jobs (per-job dispatch) or its whole batch (batch dispatch)
goes to server n with probability P_n. No dispatcher knows where the others send, yet in
expectation they fill the short queues together instead of herding onto one.

**The optimisation** ([SCD] for heterogeneous rates μ_n; [TWF] is the case μ ≡ 1). With
the a jobs routed independently by P, X ~ Multinomial(a, P) jobs join the servers, and P
minimises the expected sum of squared queue lengths, each divided by its rate::

    minimise  Σ_n E[(Q_n + X_n)²]/μ_n = const + a·Σ_n [(a − 1)·P_n² + (2Q_n + 1)·P_n]/μ_n
    over      P_n ≥ 0, Σ_n P_n = 1                                    (objective="squared")

For a non-integer a (the ``rate`` estimate) the right-hand side defines the objective
(our reading: the multinomial moments E[X_n] = aP_n, E[X_n²] = aP_n(1 − P_n) + a²P_n²
continued in a; Poisson-thinned arrivals would give a·P_n² in place of (a − 1)·P_n²).
For a > 1 it is strictly convex; its KKT conditions give a water-filling: with heights
h_n = Q_n + ½ and widths w_n = μ_n, pour the volume V = a − 1,

    level ℓ with Σ_n (w_n·ℓ − h_n)⁺ = V,   P_n = (w_n·ℓ − h_n)⁺ / V,

so the servers with h_n/w_n < ℓ receive jobs and their expected post-fill levels
(h_n + V·P_n)/w_n all equal ℓ. (The level [SCD]'s code computes first, by pouring a
onto Q_n/μ_n, only shifts the Lagrange multiplier: the solution is this one.) For a ≤ 1
the objective is linear or concave, its minimum a vertex: P is uniform on the minimisers
of (Q_n + a/2)/μ_n (with one job, M = 1: argmin (2Q_n + 1)/μ_n). On μ ≡ 1 the solution
is [TWF]'s P_n = (L − Q_n − 1/k)/(a − 1) on the k servers below the level L of a poured
onto Q (when all of them are positive).

``objective="level"`` is the plain fill of the expected arrivals: h_n = Q_n, V = a, so
that E[Q_n + X_n] = Q_n + a·P_n reaches the common level μ_n·ℓ on every receiving
server. Subtracting the expected in-slot service (h_n − μ_n) changes neither solution
(it moves every threshold h_n/w_n by the same amount under the "level" objective, and
under the "squared" one it adds −2·E[Σ_n(Q_n + X_n)] = −2(ΣQ + a), a constant), so it
is not an option.

**The estimate a** (``estimate``): ``rate``, a = λ_Σ, the mean of the system's arrival
law (one P per slot for every dispatcher; any dispatch mode); ``scaled``, a = A^m(t)/p_m,
the dispatcher's own arrivals scaled by its share (M·A^m(t) for p_m = 1/M, as [SCD]'s
code estimates it); ``conditional``, a = A^m(t) + λ_Σ·(1 − p_m), its own jobs plus the
others' mean. The last two read A^m(t), which ``choose`` sees in batch dispatch only.

**The algorithms**, O(N log N) a slot at most; every call of slot t sees the same Q(t),
so the work is shared by every dispatcher and call of the slot.

* ``estimate="rate"`` (one a for all): the level by Michelot's active-set iteration
  (:func:`level_by_active_set`): ℓ = (V + Σ_A h)/Σ_A w over an active set A, then
  A = {n : h_n/w_n < ℓ}, until A stops changing; started from the last slot's level, it
  settles in one or two passes over the N servers (each branch-free); after
  ⌈log₂ N⌉ + 4 rounds the sort below takes over. Then the running sums of V·P_n over the
  support, in server order, and each draw is a binary search over them (O(log N)).
* ``scaled``/``conditional`` (an a per dispatcher): on the first call of the slot the
  servers are sorted by the thresholds θ_n = h_n/w_n (one stable merge sort), with the
  prefix sums U_j = Σ_{i<j} w_σ(i), H_j = Σ_{i<j} h_σ(i) and the volumes
  G_j = U_j·θ_σ(j) − H_j that bring the level to the j-th threshold. A volume V wets the
  k = #{j : G_j < V} first servers, ℓ = (V + H_k)/U_k (a binary search); the cumulative
  law in sorted order is (ℓ·U_j − H_j)/V, so a draw is one uniform and a binary search:
  O(log N) per dispatcher after the slot's sort.

Messages: 2N per dispatch event (N probes, N replies), as JSQ.

Also here: ``jfsq``, join the fastest of the shortest queues (the group's baseline; the
tie rules of ``jsq``/``jsed`` cannot prefer a fast server).
"""

from __future__ import annotations

from typing import ClassVar

import numpy as np
from numba import njit

from dispatchlab.compiled.rng import randint, uniform, weighted_index
from dispatchlab.core.errors import require
from dispatchlab.engine.interface import PROBE, REPLY, choose_function
from dispatchlab.model.system import System
from dispatchlab.policies.base import Kernel, Param, Policy, register

OBJECTIVES = ("squared", "level")
OBJ_SQUARED, OBJ_LEVEL = range(2)
ESTIMATES = ("rate", "scaled", "conditional")
EST_RATE, EST_SCALED, EST_CONDITIONAL = range(3)

# ip entries
IP_OBJECTIVE, IP_ESTIMATE, IP_HOMOGENEOUS, IP_WIDTHS = range(4)
# fp: λ_Σ, then p_m of each dispatcher, then w_n and 1/w_n of each server (from ip[IP_WIDTHS])
FP_RATE, FP_SHARES = 0, 1
# ist rows: [slot of the sort, slot of the shared level, k of the shared level];
# the sorted order σ; the merge sort's buffer; per dispatcher the last slot it read Q
ROW_HEAD, ROW_ORDER, ROW_BUFFER, ROW_SEEN = range(4)
HEAD_SORTED, HEAD_LEVEL, HEAD_K = range(3)
# fst rows: the keys θ_n = h_n/w_n; U_j; H_j; G_j; the running sums of the shared law
# over its support (estimate=rate; the support's servers then in ROW_ORDER); [the last
# shared level ℓ, the warm start of the next slot's]
ROW_KEY, ROW_U, ROW_H, ROW_G, ROW_CUMULATIVE, ROW_LAST = range(6)
#: active-set rounds beyond log₂ N before the sort takes over (the bound keeps a slot
#: O(N log N); the rounds needed are few: see level_by_active_set)
ROUNDS_SLACK = 4


# -- the layout, named ------------------------------------------------------------------------


@njit(inline="always", cache=True)
def objective(memory):
    """OBJ_SQUARED ([SCD]'s objective) or OBJ_LEVEL (the fill of the expected arrivals)."""
    return memory.int_params[IP_OBJECTIVE]


@njit(inline="always", cache=True)
def estimate(memory):
    """EST_RATE, EST_SCALED or EST_CONDITIONAL: how a is estimated."""
    return memory.int_params[IP_ESTIMATE]


@njit(inline="always", cache=True)
def homogeneous(memory):
    """TWF: every width w_n = 1 (the rates are ignored)."""
    return memory.int_params[IP_HOMOGENEOUS] != 0


@njit(inline="always", cache=True)
def arrival_rate(memory):
    """λ_Σ, the mean of A_Σ(t)."""
    return memory.float_params[FP_RATE]


@njit(inline="always", cache=True)
def fixed_widths(memory, N):
    """w_n of every server: μ_n, or 1 on TWF's homogeneous servers (an array, so that the
    hot loops take no branch on TWF)."""
    start = memory.int_params[IP_WIDTHS]
    return memory.float_params[start:start + N]


@njit(inline="always", cache=True)
def inverse_widths(memory, N):
    """1/w_n of every server."""
    start = memory.int_params[IP_WIDTHS] + N
    return memory.float_params[start:start + N]


@njit(inline="always", cache=True)
def share(memory, m):
    """p_m, dispatcher m's share of the arrivals."""
    return memory.float_params[FP_SHARES + m]


# -- the solve ---------------------------------------------------------------------------------


@njit(inline="always", cache=True)
def height_offset(objective_code):
    """c of the heights h_n = Q_n + c: ½ for the squared objective, 0 for the level fill."""
    return 0.5 if objective_code == OBJ_SQUARED else 0.0


@njit(inline="always", cache=True)
def width(mu, n, flat):
    """w_n: μ_n, or 1 on TWF's homogeneous servers."""
    return 1.0 if flat else mu[n]


@njit(inline="always", cache=True)
def _merge_pass(src, dst, keys, run):
    """One pass of the bottom-up merge sort: runs of length ``run`` of ``src`` merged into
    ``dst`` (a tie keeps the left run's entry first: stable)."""
    N = src.size
    for lo in range(0, N, 2 * run):
        mid = min(lo + run, N)
        hi = min(lo + 2 * run, N)
        i, j = lo, mid
        for k in range(lo, hi):
            if j < hi and (i >= mid or keys[src[j]] < keys[src[i]]):
                dst[k] = src[j]
                j += 1
            else:
                dst[k] = src[i]
                i += 1


@njit(inline="always", cache=True)
def stable_sort(order, buffer, keys):
    """Sort ``order`` (0 … N−1 on entry) by ``keys``, ties by index: a bottom-up merge sort
    through ``buffer`` (no allocation; the order of Python's ``sorted``)."""
    N = order.size
    run = 1
    in_order = True  # where the current runs are
    while run < N:
        if in_order:
            _merge_pass(order, buffer, keys, run)
        else:
            _merge_pass(buffer, order, keys, run)
        in_order = not in_order
        run *= 2
    if not in_order:
        for n in range(N):
            order[n] = buffer[n]


@njit(inline="always", cache=True)
def prepare_fill(Q, mu, objective_code, flat, order, buffer, keys, U, H, G):
    """The thresholds θ_n = h_n/w_n in ascending order σ (``order``) and the prefix sums
    U_j = Σ_{i<j} w_σ(i), H_j = Σ_{i<j} h_σ(i), G_j = U_j·θ_σ(j) − H_j (the volume that
    brings the level to θ_σ(j)); U and H have N + 1 entries."""
    N = Q.size
    c = height_offset(objective_code)
    for n in range(N):
        keys[n] = (Q[n] + c) / width(mu, n, flat)
        order[n] = n
    stable_sort(order, buffer, keys)
    U[0] = 0.0
    H[0] = 0.0
    for j in range(N):
        n = order[j]
        G[j] = U[j] * keys[n] - H[j]
        U[j + 1] = U[j] + width(mu, n, flat)
        H[j + 1] = H[j] + (Q[n] + c)


@njit(inline="always", cache=True)
def wetted(G, volume):
    """k: how many servers (in sorted order) a volume V > 0 wets, #{j : G_j < V} (G is
    nondecreasing, G_0 = 0)."""
    lo, hi = 1, G.size  # the first j ≥ 1 with G_j ≥ V, or N
    while lo < hi:
        mid = (lo + hi) >> 1
        if G[mid] >= volume:
            hi = mid
        else:
            lo = mid + 1
    return lo


@njit(inline="always", cache=True)
def level_of(k, volume, U, H):
    """ℓ = (V + H_k)/U_k, the water level when the first k servers are wet."""
    return (volume + H[k]) / U[k]


@njit(inline="always", cache=True)
def draw_filled(k, level, volume, order, U, H, rng):
    """A server drawn from P_σ(j) = (w ℓ − h)/V, j < k: the first j with cumulative
    (ℓ·U_j − H_j)/V > u (binary search; the k-th when rounding leaves none)."""
    target = uniform(rng) * volume
    lo, hi = 1, k
    while lo < hi:
        mid = (lo + hi) >> 1
        if level * U[mid] - H[mid] > target:
            hi = mid
        else:
            lo = mid + 1
    return order[lo - 1]


@njit(inline="always", cache=True)
def vertex_draw(Q, mu, offset, flat, rng):
    """a ≤ 1 under the squared objective: a uniform minimiser of (Q_n + offset)/w_n,
    offset = a/2 (one draw only when there is a tie)."""
    N = Q.size
    best = (Q[0] + offset) / width(mu, 0, flat)
    for n in range(1, N):
        best = min(best, (Q[n] + offset) / width(mu, n, flat))
    ties = 0
    for n in range(N):
        ties += (Q[n] + offset) / width(mu, n, flat) == best
    skip = randint(rng, ties) if ties > 1 else 0
    for n in range(N):
        if (Q[n] + offset) / width(mu, n, flat) == best:
            if skip == 0:
                return n
            skip -= 1
    return 0


@njit(inline="always", cache=True)
def sums_below(Q, widths, c, keys, level):
    """(Σ w_n, Σ h_n, count) over the servers with θ_n < ℓ: branch-free, in four
    interleaved partial sums (one running sum waits on each add's latency; four keep the
    adder busy)."""
    N = Q.size
    u0 = u1 = u2 = u3 = 0.0
    h0 = h1 = h2 = h3 = 0.0
    count = 0
    end = N - N % 4
    for n in range(0, end, 4):
        i0 = keys[n] < level
        i1 = keys[n + 1] < level
        i2 = keys[n + 2] < level
        i3 = keys[n + 3] < level
        u0 += widths[n] * i0
        u1 += widths[n + 1] * i1
        u2 += widths[n + 2] * i2
        u3 += widths[n + 3] * i3
        h0 += (Q[n] + c) * i0
        h1 += (Q[n + 1] + c) * i1
        h2 += (Q[n + 2] + c) * i2
        h3 += (Q[n + 3] + c) * i3
        count += i0 + i1 + i2 + i3
    for n in range(end, N):
        inside = keys[n] < level
        u0 += widths[n] * inside
        h0 += (Q[n] + c) * inside
        count += inside
    return (u0 + u1) + (u2 + u3), (h0 + h1) + (h2 + h3), count


@njit(inline="always", cache=True)
def level_by_active_set(Q, widths, inverse, c, volume, keys, rounds, start):
    """ℓ by Michelot's active-set iteration, without a sort: ℓ = (V + Σ_A h)/Σ_A w over an
    active set A, then A = {θ_n < ℓ}, until A no longer changes. From any A ⊇ support each
    ℓ is ≥ the solution and ≤ the one before (the dropped servers never receive), so the
    last A is the support. The first A is {θ_n < start} (a warm start: the last slot's
    level; its ℓ is above the solution whether A holds the support or lies inside it),
    every server when that is empty. −1 when ``rounds`` rounds have not settled it. Fills
    ``keys`` with θ_n = h_n·(1/w_n) (``inverse``: a product vectorises, a quotient does
    not: 10 µs a slot at N = 10⁴)."""
    N = Q.size
    for n in range(N):
        keys[n] = (Q[n] + c) * inverse[n]
    U, H, count = sums_below(Q, widths, c, keys, start)
    if count == 0:
        U, H, count = sums_below(Q, widths, c, keys, np.inf)
    level = (volume + H) / U
    for _ in range(rounds):
        U, H, active = sums_below(Q, widths, c, keys, level)
        # after the first round A only shrinks (or, from a start below, only grows once):
        # the same count is the same set
        if active == count:
            return (volume + H) / U
        count = active
        level = (volume + H) / U
    return -1.0


@njit(inline="always", cache=True)
def fill_support(Q, widths, c, keys, level, support, cumulative):
    """The shared law: the k servers with θ_n < ℓ in server order (``support``) and the
    running sums of their V·P_n = (w_n ℓ − h_n)⁺ (``cumulative``, for
    :func:`~dispatchlab.compiled.rng.weighted_index`); returns k. Only the support is
    summed: a running sum is a chain of dependent adds, and the support is often a small
    part of N."""
    k = 0
    for n in range(Q.size):
        support[k] = n  # store always, advance on a member: no branch
        k += keys[n] < level
    total = 0.0
    for j in range(k):
        n = support[j]
        total += max(widths[n] * level - (Q[n] + c), 0.0)
        cumulative[j] = total
    return k


@njit(inline="always", cache=True)
def rounds_for(N):
    """The active-set rounds allowed on N servers: ⌈log₂ N⌉ + ROUNDS_SLACK."""
    rounds = ROUNDS_SLACK
    size = 1
    while size < N:
        size *= 2
        rounds += 1
    return rounds


@njit(inline="always", cache=True)
def shared_level(Q, mu, widths, inverse, code, flat, volume, order, buffer, keys, U, H, G,
                 start):
    """ℓ for a volume V > 0: by the active set from ``start``, or by the sort when that
    has not settled (``keys`` then hold θ_n = h_n/w_n)."""
    c = height_offset(code)
    level = level_by_active_set(Q, widths, inverse, c, volume, keys, rounds_for(Q.size), start)
    if level < 0.0:
        prepare_fill(Q, mu, code, flat, order, buffer, keys, U, H, G)
        level = level_of(wetted(G, volume), volume, U, H)
    return level


@njit(cache=True, error_model="numpy")
def shared_law(Q, mu, widths, inverse, code, flat, volume, order, buffer, keys, U, H, G,
               start, cumulative):
    """The slot's shared law for a volume V > 0: (ℓ, k), the support's k servers in
    ``order`` and the running sums of V·P_n over them in ``cumulative``. Compiled on its
    own, not inlined into ``choose``: inlined, its loops compiled slower inside the
    adapter's loop over the dispatchers (×2 at N = 10⁴, M = 100); ``error_model="numpy"``
    drops the zero-division branches, so that the passes vectorise."""
    level = shared_level(Q, mu, widths, inverse, code, flat, volume, order, buffer, keys, U,
                         H, G, start)
    k = fill_support(Q, widths, height_offset(code), keys, level, order, cumulative)
    return level, k


@njit(inline="always", cache=True)
def expected_arrivals(m, jobs, memory):
    """a, the jobs all dispatchers place this slot, as dispatcher m estimates it."""
    code = estimate(memory)
    if code == EST_RATE:
        return arrival_rate(memory)
    if code == EST_SCALED:
        return jobs / share(memory, m)
    return jobs + arrival_rate(memory) * (1.0 - share(memory, m))


@njit(inline="always", cache=True)
def _volume_or_vertex(m, a, slot, memory, ctx):
    """What every call starts with: dispatcher m's first call of slot t reads all N queues
    (N probes, N replies); then the volume V for the expected jobs a (a − 1 under the
    squared objective, a under the level one) and, when V ≤ 0, the vertex draw the call
    returns (else −1)."""
    Q = slot.Q
    seen = memory.int_state[ROW_SEEN]
    if seen[m] != slot.t:
        seen[m] = slot.t
        ctx.msg[PROBE] += Q.size
        ctx.msg[REPLY] += Q.size
    code = objective(memory)
    volume = a - 1.0 if code == OBJ_SQUARED else a
    if volume > 0.0:
        return volume, np.int64(-1)
    return volume, vertex_draw(Q, slot.mu, 0.5 * a if code == OBJ_SQUARED else 0.0,
                               homogeneous(memory), ctx.rng)


@choose_function
def _shared_law_choose(m, jobs, slot, memory, ctx):
    """``estimate="rate"``: the same a = λ_Σ and Q(t) for every call of slot t, so one
    level and one law a slot (:func:`shared_law`), drawn from in server order."""
    volume, vertex = _volume_or_vertex(m, arrival_rate(memory), slot, memory, ctx)
    if vertex >= 0:
        return vertex
    Q, t = slot.Q, slot.t
    N = Q.size
    head = memory.int_state[ROW_HEAD]
    order = memory.int_state[ROW_ORDER]
    cumulative = memory.float_state[ROW_CUMULATIVE]
    if head[HEAD_LEVEL] != t:
        last = memory.float_state[ROW_LAST]
        level, k = shared_law(Q, slot.mu, fixed_widths(memory, N), inverse_widths(memory, N),
                              objective(memory), homogeneous(memory), volume, order,
                              memory.int_state[ROW_BUFFER, :N], memory.float_state[ROW_KEY, :N],
                              memory.float_state[ROW_U], memory.float_state[ROW_H],
                              memory.float_state[ROW_G, :N], last[0], cumulative)
        last[0] = level
        head[HEAD_K] = k
        head[HEAD_LEVEL] = t
    return order[weighted_index(ctx.rng, cumulative[:head[HEAD_K]])]


@choose_function
def _own_volume_choose(m, jobs, slot, memory, ctx):
    """``estimate="scaled"`` or ``"conditional"``: a volume per dispatcher from its A^m(t),
    filled on the slot's one sort of the thresholds (shared by every dispatcher)."""
    volume, vertex = _volume_or_vertex(m, expected_arrivals(m, jobs, memory), slot, memory,
                                       ctx)
    if vertex >= 0:
        return vertex
    N = slot.Q.size
    head = memory.int_state[ROW_HEAD]
    order = memory.int_state[ROW_ORDER]
    U = memory.float_state[ROW_U]
    H = memory.float_state[ROW_H]
    G = memory.float_state[ROW_G, :N]
    if head[HEAD_SORTED] != slot.t:  # one sort a slot, shared by every dispatcher's volume
        prepare_fill(slot.Q, slot.mu, objective(memory), homogeneous(memory), order,
                     memory.int_state[ROW_BUFFER, :N], memory.float_state[ROW_KEY, :N], U,
                     H, G)
        head[HEAD_SORTED] = slot.t
    k = wetted(G, volume)
    return draw_filled(k, level_of(k, volume, U, H), volume, order, U, H, ctx.rng)


@njit(cache=True)
def _solve(Q, mu, a, objective_code, flat, sort):
    """P for queues Q, rates μ and a expected jobs, by the compiled routines the policy
    runs: the sort (``sort``) or the active set (for tests and
    :meth:`CoordinatedDispatch.probabilities`)."""
    N = Q.size
    P = np.zeros(N)
    volume = a - 1.0 if objective_code == OBJ_SQUARED else a
    if volume <= 0.0:
        offset = 0.5 * a if objective_code == OBJ_SQUARED else 0.0
        best = np.inf
        for n in range(N):
            best = min(best, (Q[n] + offset) / width(mu, n, flat))
        for n in range(N):
            P[n] = 1.0 if (Q[n] + offset) / width(mu, n, flat) == best else 0.0
        return P / P.sum()
    order = np.zeros(N, np.int64)
    buffer = np.zeros(N, np.int64)
    keys = np.zeros(N)
    U = np.zeros(N + 1)
    H = np.zeros(N + 1)
    G = np.zeros(N)
    if sort:
        prepare_fill(Q, mu, objective_code, flat, order, buffer, keys, U, H, G)
        level = level_of(wetted(G, volume), volume, U, H)
    else:
        widths = np.ones(N) if flat else mu.copy()
        level = shared_level(Q, mu, widths, 1.0 / widths, objective_code, flat, volume, order,
                             buffer, keys, U, H, G, -np.inf)
    c = height_offset(objective_code)
    for n in range(N):
        P[n] = max(width(mu, n, flat) * level - (Q[n] + c), 0.0) / volume
    return P


class CoordinatedDispatch(Policy):
    """SCD and TWF: every dispatcher draws from the same P, the solution of the fill of
    the expected arrivals a (module docstring, docs/policies.md)."""

    #: TWF: widths w_n = 1 (designed for homogeneous servers)
    flat: ClassVar[bool] = False
    parameters = (
        Param("objective", str, "squared", "squared: the papers' P, minimising "
              "Σ E[(Q_n + X_n)²]/μ_n (fill a − 1 onto Q_n + ½); level: fill a onto Q_n, "
              "P_n = fill_n/a (equal expected post-fill delays)", choices=OBJECTIVES),
        Param("estimate", str, "rate", "a, the jobs of the slot: rate (λ_Σ, the arrival "
              "law's mean), scaled (A^m(t)/p_m, the papers' code) or conditional "
              "(A^m(t) + λ_Σ(1 − p_m)); scaled and conditional need batch dispatch",
              choices=ESTIMATES),
    )

    def check_system(self, system: System) -> None:
        require(self.params["estimate"] == "rate" or system.dispatch == "batch",
                f"{self.name}.estimate", "scaled and conditional read A^m(t), which a "
                "dispatcher knows in batch dispatch only; use estimate=rate with per_job")

    def kernel(self, system: System) -> Kernel:
        self.check_system(system)
        N, M = system.n_servers, system.dispatchers
        ip = np.array([OBJECTIVES.index(self.params["objective"]),
                       ESTIMATES.index(self.params["estimate"]), int(self.flat), 1 + M],
                      np.int64)
        widths = np.ones(N) if self.flat else system.mu
        fp = np.concatenate([[system.arrival_rate], system.weights, widths, 1.0 / widths])
        ist = np.zeros((4, max(N, M, 3)), np.int64)
        ist[ROW_HEAD, :] = -1
        ist[ROW_SEEN, :] = -1
        fst = np.zeros((6, N + 1))
        fst[ROW_LAST, 0] = -np.inf  # no warm start in the first slot
        # one choose per estimate, so that a run compiles only the path it takes (the
        # default's adapter compiled in 5.7 s with both, measured on AMD EPYC)
        choose = _shared_law_choose if self.params["estimate"] == "rate" else _own_volume_choose
        return Kernel(choose, int_params=ip, float_params=fp, int_state=ist, float_state=fst)

    def probabilities(self, q: np.ndarray, mu: np.ndarray, arrivals: float, *,
                      sort: bool = False) -> np.ndarray:
        """P for queues ``q``, rates ``mu`` and ``arrivals`` = a, by the compiled solve:
        the active set (what ``estimate="rate"`` runs) or the sort (``sort``, the others)."""
        return _solve(np.asarray(q, np.int64), np.asarray(mu, float), float(arrivals),
                      OBJECTIVES.index(self.params["objective"]), self.flat, sort)


@register
class StochasticCoordination(CoordinatedDispatch):
    """SCD, registered as ``scd``: each job (or batch) to server n with probability P_n,
    the minimiser of Σ_n E[(Q_n + X_n)²]/μ_n over the simplex (X ~ Multinomial(a, P)),
    found by water-filling V = a − 1 onto heights Q_n + ½ of widths μ_n ([SCD])."""

    name = "scd"
    summary = ("SCD [SCD]: every dispatcher computes the same P from Q(t), μ and the "
               "expected jobs a (default λ_Σ) and sends each dispatch to n with "
               "probability P_n: P minimises Σ E[(Q_n + X_n)²]/μ_n, a water-fill of a − 1 "
               "onto Q_n + ½ with widths μ_n (O(N log N) a slot); 2N messages per dispatch.")
    theory = ("[SCD]: the stochastic-optimisation answer to herding with full information; "
              "for a > 1 the fill level ℓ solves Σ_n (μ_n ℓ − Q_n − ½)⁺ = a − 1 and "
              "P_n = (μ_n ℓ − Q_n − ½)⁺/(a − 1); a ≤ 1: argmin (Q_n + a/2)/μ_n. [SCD] "
              "evaluates it by simulation (below JSQ, JIQ, LSQ and weighted random on "
              "heterogeneous systems); no stability or heavy-traffic theorem here.")


@register
class TidalWaterFilling(CoordinatedDispatch):
    """TWF, registered as ``twf``: SCD with every width 1 ([TWF], homogeneous servers):
    P_n = (L − Q_n − 1/k)/(a − 1) on the k servers below the level L of a poured onto Q,
    the minimiser of E[Σ_n (Q_n + X_n)²]."""

    name = "twf"
    summary = ("TWF [TWF]: tidal water-filling for homogeneous servers: SCD with the rates "
               "ignored (every width 1): P_n = (ℓ − Q_n − ½)⁺/(a − 1), Σ P_n = 1; 2N "
               "messages per dispatch.")
    theory = ("[TWF]: minimises E[Σ_n (Q_n + X_n)²] with X ~ Multinomial(a, P); on "
              "heterogeneous servers it ignores μ (use scd). Evaluated by simulation in "
              "[TWF].")
    flat = True


# -- join the fastest of the shortest queues -------------------------------------------------


@njit(inline="always", cache=True)
def _jfsq_score(Q, mu, n, by_delay):
    return Q[n] / mu[n] if by_delay else Q[n] * 1.0


@choose_function
def _jfsq_choose(m, jobs, slot, memory, ctx):
    Q, mu = slot.Q, slot.mu
    N = Q.size
    ctx.msg[PROBE] += N
    ctx.msg[REPLY] += N
    by_delay = memory.int_params[0] == 1
    cache = memory.int_state[0]  # (slot, number of ties, their indices…), as jsed's cache
    if cache[0] != slot.t:
        best = _jfsq_score(Q, mu, 0, by_delay)
        fastest = mu[0]
        for n in range(1, N):
            s = _jfsq_score(Q, mu, n, by_delay)
            if s < best or (s == best and mu[n] > fastest):
                best, fastest = s, mu[n]
        ties = 0
        for n in range(N):
            cache[2 + ties] = n
            ties += (_jfsq_score(Q, mu, n, by_delay) == best) & (mu[n] == fastest)
        cache[0] = slot.t
        cache[1] = ties
    ties = cache[1]
    return cache[2 + (randint(ctx.rng, ties) if ties > 1 else 0)]


@register
class JoinFastestShortestQueue(Policy):
    """JFSQ, registered as ``jfsq``: argmin_n Q_n(t), ties to the fastest server (largest
    μ_n), then uniform; ``by_delay=true``: argmin Q_n/μ_n with the same ties (HJFSQ), the
    full-information baselines of [SCD]."""

    name = "jfsq"
    summary = ("JFSQ: the shortest queue, ties to the fastest server, then uniform "
               "(by_delay=true: the smallest Q_n/μ_n, ties to the fastest); 2N messages "
               "per dispatch.")
    theory = ("A full-information baseline of [SCD] and [TWF]: JSQ (or JSED's Q/μ form) "
              "with ties to the fastest server (docs/model.md#classical); herds with "
              "several dispatchers; no theorem of its own here.")
    parameters = (Param("by_delay", bool, False, "compare Q_n/μ_n instead of Q_n"),)

    def kernel(self, system: System) -> Kernel:
        cache = np.zeros((1, system.n_servers + 2), np.int64)
        cache[0, 0] = -1
        return Kernel(_jfsq_choose, int_params=np.array([int(self.params["by_delay"])]),
                      int_state=cache)
