"""The one-slot law of two servers under a one-dispatcher ID-memory rule (JIQ, JBT-r), for
the multilevel solver (:mod:`dispatchlab.solvers.multilevel`).

The state is (Q₁, Q₂) on the triangle Q₁ + Q₂ ≤ K (the memory, the set {n : Q_n < r}, is
a function of it; a second copy of the states with both queues below r holds the other
order of an ordered list). One slot as the slot loop runs it (docs/model.md): A_Σ(t) jobs
from the arrival law (Bernoulli, binomial, or Poisson cut where its tail falls below a
stated mass), one ``choose`` call for all of them (batch dispatch) or one per job (per-job
dispatch, the ID list shrinking as IDs are taken), Bernoulli service on each server, the
jobs beyond ΣQ = K lost one at a time from the longest queue (as :mod:`.chain` does), then
the end-of-slot reports.

Away from the axes and the edge — both queues above r, and ΣQ + A_Σ ≤ K — the list is
empty before and after the slot and every job follows the rule's fallback split, so the
transition is the same 2-D kernel P(ΔQ₁, ΔQ₂) everywhere: such *interior* states are not
stored, only the kernel. The other (*boundary*) states get explicit rows, built here with
the moments of the (ΣQ)² drift identity; the interior ones contribute none (no unused
service, no loss).
"""

from __future__ import annotations

import numpy as np
from numba import njit

from dispatchlab.solvers.laws import poisson_law

#: memory codes of the two-server ID list: (), (0,), (1,), (0, 1), (1, 0)
MEMORIES: tuple[tuple[int, ...], ...] = ((), (0,), (1,), (0, 1), (1, 0))
CODES = len(MEMORIES)


@njit(cache=True)
def accumulate(acc, touched, used, index, value):
    """acc[index] += value, listing ``index`` in ``touched`` the first time (a row being
    built in a dense scratch array); returns the entries listed."""
    if value != 0.0:
        if acc[index] == 0.0:
            touched[used] = index
            used += 1
        acc[index] += value
    return used


@njit(cache=True)
def flush_row(indices, data, fill, acc, touched, used):
    """Append the ``used`` entries listed in ``touched`` to the CSR arrays (grown by
    doubling when full) and clear them from ``acc``; returns (indices, data, fill)."""
    if fill + used > indices.size:
        capacity = max(2 * indices.size, fill + used)
        grown = np.empty(capacity, np.int64)
        grown[:fill] = indices[:fill]
        more = np.empty(capacity)
        more[:fill] = data[:fill]
        indices, data = grown, more
    for j in range(used):
        index = touched[j]
        indices[fill] = index
        data[fill] = acc[index]
        acc[index] = 0.0
        fill += 1
    return indices, data, fill


@njit(cache=True)
def state_index(q1, q2, code, k, r, ordered):
    """The index of (Q₁, Q₂) (row-major on the triangle), or of its second copy when the
    ordered list is (1, 0) (code 4)."""
    if ordered and code == 4:
        return (k + 1) * (k + 2) // 2 + q1 * r + q2
    return q1 * (k + 1) - q1 * (q1 - 1) // 2 + q2


@njit(cache=True)
def dispatch_laws(a_max, per_job, d_p, d_t, d_a):
    """law[code, a, a₁, after]: P(a₁ of a slot's a jobs go to server 1 and the list is
    ``after`` once they are dispatched | the list is ``code``), from the rule's one-call
    law (d_p, d_t, d_a: probability, target and list after, per code and branch)."""
    law = np.zeros((CODES, a_max + 1, a_max + 1, CODES))
    for code in range(CODES):
        law[code, 0, 0, code] = 1.0
        for a in range(1, a_max + 1):
            if not per_job:  # one call: all a jobs to its target
                for b in range(d_p.shape[1]):
                    if d_p[code, b] > 0:
                        a1 = a if d_t[code, b] == 0 else 0
                        law[code, a, a1, d_a[code, b]] += d_p[code, b]
                continue
            # one call per job: the previous job's law, one call further
            previous = law[code, a - 1]
            for a1 in range(a):
                for c in range(CODES):
                    w = previous[a1, c]
                    if w == 0.0:
                        continue
                    for b in range(d_p.shape[1]):
                        p = d_p[c, b]
                        if p > 0:
                            step = 1 if d_t[c, b] == 0 else 0
                            law[code, a, a1 + step, d_a[c, b]] += w * p
    return law


def interior_kernel(pa: np.ndarray, mu: np.ndarray, laws: np.ndarray) -> np.ndarray:
    """kernel[ΔQ₁ + 1, ΔQ₂ + 1] of an interior state: the fallback split (list empty,
    code 0) of the slot's jobs, then one Bernoulli service per server."""
    a_max = pa.size - 1
    a1, a2 = np.indices((a_max + 1, a_max + 1))
    total = a1 + a2
    inside = total <= a_max
    jobs = np.zeros((a_max + 1, a_max + 1))  # P(a₁ jobs to server 1, a₂ to server 2)
    jobs[inside] = pa[total[inside]] * laws[0, total[inside], a1[inside], 0]
    kernel = np.zeros((a_max + 2, a_max + 2))
    for s1, p1 in ((1, mu[0]), (0, 1.0 - mu[0])):
        for s2, p2 in ((1, mu[1]), (0, 1.0 - mu[1])):
            kernel[1 - s1:a_max + 2 - s1, 1 - s2:a_max + 2 - s2] += p1 * p2 * jobs
    return kernel


@njit(cache=True)
def _code_of(q1, q2, copy, r):
    if q1 < r and q2 < r:
        return 3 if copy == 0 else 4
    if q1 < r:
        return 1
    if q2 < r:
        return 2
    return 0


@njit(cache=True)
def build_boundary(k, r, ordered, pa, mu, laws, u_p, u_m, reach):
    """The chain's boundary rows (CSR: indptr, indices, data over every state; interior
    rows empty), the coordinates, the interior mask and per state the expected loss L,
    U_Σ, U_Σ², ΣQ(t+1)·ΣU(t), U_Σ·L and L² of one slot. ``reach``: the most ΣQ can grow
    in one slot from an interior state (so that no interior state reaches the edge)."""
    a_max = pa.size - 1
    base = (k + 1) * (k + 2) // 2
    n = base + (r * r if ordered else 0)
    c1 = np.zeros(n, np.int64)
    c2 = np.zeros(n, np.int64)
    interior = np.zeros(n, np.bool_)
    moments = np.zeros((n, 6))
    indptr = np.zeros(n + 1, np.int64)
    indices = np.empty(1024, np.int64)
    data = np.empty(1024)
    acc = np.zeros(n)
    touched = np.empty(n, np.int64)
    fill = 0
    # the rows in index order: the triangle row by row, then the ordered copies
    for copy in range(2 if ordered else 1):
        for q1 in range(r if copy else k + 1):
            for q2 in range(r if copy else k + 1 - q1):
                code = _code_of(q1, q2, copy, r)
                s = state_index(q1, q2, code, k, r, ordered)
                c1[s], c2[s] = q1, q2
                if code == 0 and q1 > r and q2 > r and q1 + q2 + reach <= k:
                    interior[s] = True
                    continue
                count = 0
                m = moments[s]
                for a in range(a_max + 1):
                    for a1 in range(a + 1):
                        for after in range(CODES):
                            w0 = pa[a] * laws[code, a, a1, after]
                            if w0 == 0.0:
                                continue
                            for s1 in range(2):
                                p1 = mu[0] if s1 == 1 else 1.0 - mu[0]
                                for s2 in range(2):
                                    p2 = mu[1] if s2 == 1 else 1.0 - mu[1]
                                    w = w0 * p1 * p2
                                    if w == 0.0:
                                        continue
                                    x1 = max(q1 + a1 - s1, 0)
                                    x2 = max(q2 + a - a1 - s2, 0)
                                    u = (max(s1 - q1 - a1, 0) + max(s2 - q2 - a + a1, 0))
                                    lost = max(x1 + x2 - k, 0)
                                    for _ in range(lost):  # from the longest queue
                                        if x1 >= x2:
                                            x1 -= 1
                                        else:
                                            x2 -= 1
                                    m[0] += w * lost
                                    m[1] += w * u
                                    m[2] += w * u * u
                                    m[3] += w * (x1 + x2) * u
                                    m[4] += w * u * lost
                                    m[5] += w * lost * lost
                                    pattern = (1 if x1 < r else 0) + (2 if x2 < r else 0)
                                    for e in range(u_p.shape[2]):
                                        pu = u_p[after, pattern, e]
                                        if pu <= 0.0:
                                            continue
                                        dest = state_index(x1, x2, u_m[after, pattern, e],
                                                           k, r, ordered)
                                        count = accumulate(acc, touched, count, dest, w * pu)
                indices, data, fill = flush_row(indices, data, fill, acc, touched, count)
                indptr[s + 1] = count
    for s in range(n):
        indptr[s + 1] += indptr[s]
    return indptr, indices[:fill].copy(), data[:fill].copy(), c1, c2, interior, moments


@njit(cache=True)
def axis_law(size, r, m, pa, mu_m, laws):
    """The stationary law of Q_m on {0, …, size} (moves beyond it end there) while the
    other queue stays above r, so that the list holds m exactly when Q_m < r; and the
    mean arrivals to the *other* server from each Q_m. Q_m moves down by at most one a
    slot, so the flow balance across each cut {≤ j} | {> j} gives the law level by level
    (rescaled on the way: for a large r it grows by orders of magnitude below r)."""
    a_max = pa.size - 1
    moves = np.zeros((size + 1, a_max + 2))  # P(q → q − 1 + j)
    to_other = np.zeros(size + 1)
    for q in range(size + 1):
        code = 1 + m if q < r else 0
        for a in range(a_max + 1):
            for a1 in range(a + 1):
                for after in range(CODES):
                    w0 = pa[a] * laws[code, a, a1, after]
                    if w0 == 0.0:
                        continue
                    jobs = a1 if m == 0 else a - a1
                    to_other[q] += w0 * (a - jobs)
                    for s in range(2):
                        p = mu_m if s == 1 else 1.0 - mu_m
                        step = min(max(q + jobs - s, 0), size) - q
                        moves[q, step + 1] += w0 * p
    law = np.zeros(size + 1)
    law[0] = 1.0
    for j in range(size):
        flow = 0.0
        for i in range(max(0, j - a_max), j + 1):
            for step in range(j - i + 1, a_max + 1):
                flow += law[i] * moves[i, step + 1]
        if moves[j + 1, 0] <= 0.0:
            law[:] = np.nan  # Q_m never moves down from j + 1: no stationary law here
            return law, to_other
        law[j + 1] = flow / moves[j + 1, 0]
        if law[j + 1] > 1e250:
            law[: j + 2] *= 1e-250
    return law / law.sum(), to_other


def interior_factors(per_job: bool, poisson: bool, lam: float, fallback: np.ndarray,
                     mu: np.ndarray, pa: np.ndarray, law_tail: float
                     ) -> tuple[list[tuple[np.ndarray, np.ndarray]], float] | None:
    """The interior kernel as a sum of products of the laws of ΔQ₁ and ΔQ₂ (arrays from
    −1), and the arrival tail mass they cut; None where it is not one (then the dense
    kernel is used). Batch dispatch sends the slot's jobs to one server drawn from the
    fallback split f: two products. Per-job dispatch of Poisson arrivals splits them into
    independent Poisson streams of means λ·f_n: one product, each stream cut at half the
    tail mass (so it differs from the boundary rows' law, cut on A_Σ, by less than the
    tail). Bernoulli arrivals keep their nine-entry kernel."""
    if pa.size <= 2 or (per_job and not poisson):
        return None

    def with_service(jobs: np.ndarray, n: int, width: int) -> np.ndarray:
        law = np.convolve(jobs, [mu[n], 1.0 - mu[n]])  # P(jobs − S_n = d), d from −1
        return np.pad(law, (0, width - law.size))

    if per_job:
        streams = [poisson_law(lam * share, law_tail / 2, "arrivals") if share > 0
                   else (np.ones(1), 0.0) for share in fallback]
        first, second = (with_service(law, n, law.size + 1)
                         for n, (law, _) in enumerate(streams))
        return [(first, second)], max(tail for _, tail in streams)
    none, width = np.ones(1), pa.size + 1
    terms = []
    for n, share in enumerate(fallback):  # all the slot's jobs to server n
        if share > 0:
            jobs = (pa, none) if n == 0 else (none, pa)
            terms.append((share * with_service(jobs[0], 0, width),
                          with_service(jobs[1], 1, width)))
    return terms, 0.0


def kernel_of(factors: list[tuple[np.ndarray, np.ndarray]]) -> np.ndarray:
    """The dense kernel Σ first ⊗ second."""
    return sum(np.outer(first, second) for first, second in factors)
