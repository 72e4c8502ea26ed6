"""The slot loop's arrival draws (docs/model.md#arrivals): the total A_Σ(t) of a slot by
its law, the Poisson inversion tables and PTRS for large rates, and the split of a slot's
arrivals among the M dispatchers (per-job Poisson, Bernoulli or multinomial).

The loop draws split-Poisson arrivals itself (:func:`_draw_split_poisson`); every other
case comes to it as its arrival step (:func:`arrival_step`: one law's draw for a single
dispatcher, :data:`other_arrivals` for several, each compiled only for a run that takes
it; :data:`split_poisson_only` for the others).
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
from numba import njit, types

from dispatchlab.compiled.lazy import AbsentStep, lazy_function
from dispatchlab.compiled.rng import (
    INV_2_53,
    PTRS_CONSTANTS,
    binomial,
    poisson,
    poisson_ptrs,
    ptrs_constants,
    uniform,
    weighted_index,
    xoshiro_step,
)
from dispatchlab.compiled.signature_types import BOOL, F64, F64_VEC, I64, I64_VEC, U64_VEC
from dispatchlab.engine.interface import LOOP_ONLY
from dispatchlab.model.arrivals import (
    ARRIVAL_BERNOULLI,
    ARRIVAL_BINOMIAL,
    ARRIVAL_DETERMINISTIC,
    ARRIVAL_POISSON,
    ARRIVAL_TRACE,
)


@njit(**LOOP_ONLY)
def _draw_total(code, rate, trials, trace, t, rng):
    """A_Σ(t)."""
    if code == ARRIVAL_POISSON:
        return poisson(rng, rate)
    if code == ARRIVAL_BERNOULLI:
        return np.int64(uniform(rng) < rate)
    if code == ARRIVAL_BINOMIAL:
        return binomial(rng, trials, rate / trials)
    if code == ARRIVAL_DETERMINISTIC:
        return np.int64(rate)
    return trace[t % trace.size]  # ARRIVAL_TRACE


#: below this λ_m a dispatcher's Poisson arrivals are drawn by inversion of a table (about
#: λ + 9√λ + 64 doubles), above it by PTRS (40 ns a draw: 100 dispatchers at λ_m = 36
#: spent 4 µs a slot on it); e^−λ, where the table's recursion starts, is still a normal
#: double here
POISSON_TABLE_LIMIT = 600.0
# an inversion row starts with a guide of POISSON_GUIDE entries: entry b is the number of
# CDF values ≤ b/POISSON_GUIDE, where the search for u ∈ [b/G, (b+1)/G) starts
POISSON_GUIDE_BITS = 6
POISSON_GUIDE = 1 << POISSON_GUIDE_BITS


#: a PTRS row of :func:`poisson_tables`: λ and :func:`ptrs_constants` (λ); an inversion row
#: is longer (the guide alone has POISSON_GUIDE entries), so a row's length says its kind
PTRS_ROW = 1 + PTRS_CONSTANTS


def _poisson_row(lam: float) -> np.ndarray:
    """One dispatcher's row of :func:`poisson_tables` for λ = ``lam`` ≥ 0."""
    if lam >= POISSON_TABLE_LIMIT:
        return np.array((lam, *ptrs_constants(lam)))
    # the pmf by its recursion p_k = p_(k−1)·(λ/k) from e^−λ and the CDF by running sums,
    # each a sequential product or sum as in a loop; kept up to where F reaches 1 in double
    # precision or, past λ, the pmf falls below 10⁻¹⁸
    span = int(lam + 15.0 * math.sqrt(lam) + 50.0)
    while True:
        steps = np.empty(span)
        steps[0] = math.exp(-lam)
        steps[1:] = lam / np.arange(1, span)
        pmf = np.cumprod(steps)
        cdf = np.cumsum(pmf)
        stop = (cdf >= 1.0) | ((np.arange(span) > lam) & (pmf < 1e-18))
        if stop.any():
            break
        span *= 2
    cdf = np.minimum(cdf[:max(int(stop.argmax()), 1)], 1.0)
    edges = np.arange(POISSON_GUIDE) / POISSON_GUIDE
    guide = np.searchsorted(cdf, edges, side="right")  # #{j : F(j) ≤ b/G}
    return np.concatenate([guide.astype(np.float64), cdf])


def poisson_tables(rates: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The per-dispatcher tables of :func:`_draw_split_poisson`: ``(offsets, table)``, row m at
    ``table[offsets[m]:offsets[m + 1]]`` (NumPy, once a run; equal rates share the work).

    λ_m < POISSON_TABLE_LIMIT: a guide of POISSON_GUIDE entries, then the CDF F(0), F(1), …
    of Poisson(λ_m) for inversion; guide entry b = #{j : F(j) ≤ b/POISSON_GUIDE} (a small
    integer, stored as a float). The CDF is summed from e^−λ by the pmf's recursion
    (relative error a few 10⁻¹⁵ at λ = 600) and ends where the sum reaches 1 in double
    precision or, past λ, the pmf falls below 10⁻¹⁸: the mass beyond the row is below
    10⁻¹⁴ (at λ = 600; 10⁻¹⁸ below λ ≈ 40), under what any run can resolve. Otherwise
    (PTRS_ROW entries) λ_m and PTRS's set-up
    (:func:`~dispatchlab.compiled.rng.ptrs_constants` (λ_m)), so that a slot's M draws do not
    each recompute a square root, two logarithms and two divisions. A rate that is not
    positive (NaN included) is 0: no arrivals."""
    rows: dict[float, np.ndarray] = {}
    chosen = []
    for rate in np.asarray(rates, np.float64):
        lam = float(rate) if rate > 0.0 else 0.0
        if lam not in rows:
            rows[lam] = _poisson_row(lam)
        chosen.append(rows[lam])
    offsets = np.zeros(len(chosen) + 1, np.int64)
    offsets[1:] = np.cumsum([row.size for row in chosen])
    table = np.concatenate(chosen) if chosen else np.zeros(0)
    return offsets, table


def _ptrs_row(rng, poisson_table, row):
    """Poisson(λ_m) by PTRS from a PTRS row of :func:`poisson_tables` at ``row``."""
    return poisson_ptrs(rng, poisson_table[row], poisson_table[row + 1],
                        poisson_table[row + 2], poisson_table[row + 3],
                        poisson_table[row + 4], poisson_table[row + 5],
                        poisson_table[row + 6])


#: ptrs(rng, poisson_table, row) -> k: a dispatcher's PTRS draw (λ_m ≥ POISSON_TABLE_LIMIT)
PTRS_SIGNATURE = types.int64(types.uint64[::1], types.float64[::1], types.int64)
PTRS_TYPE = types.FunctionType(PTRS_SIGNATURE)
#: the split-Poisson arrivals' PTRS draw, which the loop receives as a first-class function:
#: compiled for a run with a dispatcher at λ_m ≥ POISSON_TABLE_LIMIT alone (PTRS was about
#: a tenth of a cold first run's compiling), :data:`NO_PTRS` for the others
ptrs_draw = lazy_function(_ptrs_row, PTRS_SIGNATURE, allocates=False, from_python=False)
NO_PTRS = AbsentStep(PTRS_SIGNATURE, "no_ptrs")


def has_ptrs_rows(poisson_offsets: np.ndarray) -> bool:
    """Whether the tables of :func:`poisson_tables` (their ``offsets``) have a PTRS row."""
    return bool((np.diff(poisson_offsets) == PTRS_ROW).any())


@njit(inline="always", cache=True)
def _draw_split_poisson(poisson_offsets, poisson_table, A_m, rng, ptrs):
    """A^m(t) for Poisson(λ_Σ) arrivals split among M > 1 dispatchers job by job: M
    independent Poisson(λ_Σ·p_m) draws into ``A_m`` from the rows of
    :func:`poisson_tables`, by inversion of the tabulated CDF or, for a PTRS row, by PTRS
    (``ptrs``: :data:`ptrs_draw`, or :data:`NO_PTRS` when no row is one). Returns A_Σ(t)."""
    total = 0
    s0, s1, s2, s3 = rng[0], rng[1], rng[2], rng[3]
    for m in range(A_m.size):
        row = poisson_offsets[m]  # (indices into the flat table: a row slice is a view
        # whose reference counting cost two calls per dispatcher)
        if poisson_offsets[m + 1] - row == PTRS_ROW:
            rng[0], rng[1], rng[2], rng[3] = s0, s1, s2, s3
            k = ptrs(rng, poisson_table, row)
            s0, s1, s2, s3 = rng[0], rng[1], rng[2], rng[3]
        else:
            bits, s0, s1, s2, s3 = xoshiro_step(s0, s1, s2, s3)
            u = np.float64(bits >> np.uint64(11)) * INV_2_53
            # k = #{j : F(j) ≤ u} = min{k : u < F(k)}: the guide gives the count below
            # u's bucket, u ≥ b/G (b = the top bits of u), then a short scan
            bucket = np.int64(bits >> np.uint64(64 - POISSON_GUIDE_BITS))
            k = np.int64(poisson_table[row + bucket])
            cdf = row + POISSON_GUIDE
            length = poisson_offsets[m + 1] - cdf
            # the first step without a branch (taken for ~1 draw in 10 at λ_m ≈ 3, and
            # mispredicted then: the draws cost 15 % less); a second is rarer still
            k += np.int64(k < length) & np.int64(poisson_table[cdf + min(k, length - 1)] <= u)
            while k < length and poisson_table[cdf + k] <= u:
                k += 1
        A_m[m] = k
        total += k
    rng[0], rng[1], rng[2], rng[3] = s0, s1, s2, s3
    return total


def _draw_other_arrivals(code, rate, trials, trace, t, p, cumulative, batch_split, A_m, rng):
    """A_Σ(t) and its split A^m(t) for every case but :func:`_draw_split_poisson`'s: the
    total by its law, then all of it to one dispatcher (M = 1, or drawn from p for the
    ``batch`` split) or split multinomially by p_m. Returns A_Σ(t)."""
    M = A_m.size
    total = _draw_total(code, rate, trials, trace, t, rng)
    for m in range(M):
        A_m[m] = 0
    if M == 1:
        A_m[0] = total
    elif batch_split:
        if total > 0:
            A_m[weighted_index(rng, cumulative)] = total
    else:
        remaining = total
        left = 1.0
        for m in range(M - 1):
            if remaining == 0 or left <= 0.0:
                break
            share = binomial(rng, remaining, min(1.0, p[m] / left))
            A_m[m] = share
            remaining -= share
            left -= p[m]
        A_m[M - 1] += remaining
    return total


#: arrivals(code, rate, trials, trace, t, p, cumulative, batch_split, A_m, rng) -> A_Σ(t):
#: the arrival step for every case but Poisson arrivals split job by job among M > 1
#: dispatchers (which the loop draws itself, :func:`_draw_split_poisson`); a first-class
#: function like the service step, so that the other laws and splits (Binomial, PTRS, the
#: multinomial split) compile only for a run that uses them
ARRIVALS_SIGNATURE = I64(I64, F64, I64, I64_VEC, I64, F64_VEC, F64_VEC, BOOL, I64_VEC, U64_VEC)
ARRIVALS_TYPE = types.FunctionType(ARRIVALS_SIGNATURE)

#: the loop's ``draw_other_arrivals`` (:data:`ARRIVALS_SIGNATURE`), compiled on first use
#: (see :func:`needs_other_arrivals`), and the step of split-Poisson runs, never called
other_arrivals = lazy_function(_draw_other_arrivals, ARRIVALS_SIGNATURE, allocates=False)
split_poisson_only = AbsentStep(ARRIVALS_SIGNATURE, "split_poisson_only")


# One dispatcher: A^0(t) = A_Σ(t), drawn by its law alone, so that a run compiles that
# law's draw and nothing else (the general step above holds every law's draw and the
# multinomial split's binomials: 4.6 of a 13-CPU-second cold single-dispatcher run, AMD
# EPYC). The same draws as the general step with M = 1.


def _poisson_to_one(code, rate, trials, trace, t, p, cumulative, batch_split, A_m, rng):
    A_m[0] = poisson(rng, rate)
    return A_m[0]


def _bernoulli_to_one(code, rate, trials, trace, t, p, cumulative, batch_split, A_m, rng):
    A_m[0] = np.int64(uniform(rng) < rate)
    return A_m[0]


def _binomial_to_one(code, rate, trials, trace, t, p, cumulative, batch_split, A_m, rng):
    A_m[0] = binomial(rng, trials, rate / trials)
    return A_m[0]


def _deterministic_to_one(code, rate, trials, trace, t, p, cumulative, batch_split, A_m,
                          rng):
    A_m[0] = np.int64(rate)
    return A_m[0]


def _trace_to_one(code, rate, trials, trace, t, p, cumulative, batch_split, A_m, rng):
    A_m[0] = trace[t % trace.size]
    return A_m[0]


#: the arrival step of a single dispatcher, by arrival law (:data:`ARRIVALS_SIGNATURE`)
poisson_to_one = lazy_function(_poisson_to_one, ARRIVALS_SIGNATURE, allocates=False)
bernoulli_to_one = lazy_function(_bernoulli_to_one, ARRIVALS_SIGNATURE, allocates=False)
binomial_to_one = lazy_function(_binomial_to_one, ARRIVALS_SIGNATURE, allocates=False)
deterministic_to_one = lazy_function(_deterministic_to_one, ARRIVALS_SIGNATURE,
                                     allocates=False)
trace_to_one = lazy_function(_trace_to_one, ARRIVALS_SIGNATURE, allocates=False)
TO_ONE = {ARRIVAL_POISSON: poisson_to_one, ARRIVAL_BERNOULLI: bernoulli_to_one,
          ARRIVAL_BINOMIAL: binomial_to_one, ARRIVAL_DETERMINISTIC: deterministic_to_one,
          ARRIVAL_TRACE: trace_to_one}


def arrival_step(arrival_code: int, dispatchers: int, batch_split: bool) -> Any:
    """The loop's arrival step for a law, M and split: :data:`split_poisson_only` where the
    loop draws the arrivals itself, the law's own step for one dispatcher, else
    :data:`other_arrivals`."""
    if not needs_other_arrivals(arrival_code, dispatchers, batch_split):
        return split_poisson_only
    if dispatchers == 1:
        return TO_ONE[arrival_code]
    return other_arrivals


def needs_other_arrivals(arrival_code: int, dispatchers: int, batch_split: bool) -> bool:
    """Whether a run draws its arrivals with ``other_arrivals``: all but Poisson arrivals
    split job by job among M > 1 dispatchers."""
    return not (arrival_code == ARRIVAL_POISSON and dispatchers > 1 and not batch_split)
