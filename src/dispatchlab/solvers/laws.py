"""The per-slot laws of the model as probability vectors, truncated where unbounded.

Arrivals A_Σ(t) and services S_n(t) exactly as the slot loop draws them (docs/model.md):
Bernoulli, Binomial(K, λ/K), deterministic and, truncated, Poisson and geometric on
{0, 1, …} (P(k) = (1−q)·q^k, q = μ/(1+μ)). An unbounded law is cut at the smallest k
whose tail P(X > k) is below ``tail``; that tail is lumped into k and reported.
"""

from __future__ import annotations

import math

import numpy as np

from dispatchlab.core.errors import ValidationError, require
from dispatchlab.model.arrivals import ArrivalProcess
from dispatchlab.model.service import ServiceLaw

#: the longest pmf the solver accepts for one slot's arrivals or one server's service
MAX_SUPPORT = 400

#: the least truncation edge mass a solver here is asked for (``chain``, ``multilevel``):
#: below it the sums of doubles no longer resolve it
MIN_TOLERANCE = 1e-14


def _cut(pmf: list[float], field: str, what: str) -> tuple[np.ndarray, float]:
    values = np.array(pmf, dtype=float)
    tail = max(0.0, 1.0 - float(values.sum()))
    values[-1] += tail
    return values, tail


def poisson_law(lam: float, tail: float, field: str) -> tuple[np.ndarray, float]:
    """(P(X = k), k = 0..k_max) of a Poisson(``lam``) cut at the smallest k_max with
    P(X > k_max) < ``tail`` (that tail lumped into k_max), and the tail."""
    require(lam < 500, field, f"a Poisson mean of {lam:g} per slot is too large for the exact "
            "solver (its support is cut at P(X > k) < tail)")
    pmf = [math.exp(-lam)]
    total = pmf[0]
    k = 0
    while 1.0 - total >= tail:
        k += 1
        require(k < MAX_SUPPORT, field, f"Poisson({lam:g}) needs more than {MAX_SUPPORT} "
                "values to reach the tail tolerance")
        pmf.append(pmf[-1] * lam / k)
        total += pmf[-1]
    return _cut(pmf, field, "Poisson")


def _geometric(mean: float, tail: float, field: str) -> tuple[np.ndarray, float]:
    q = mean / (1.0 + mean)
    # P(X > k) = q^(k+1) < tail
    k = max(0, math.ceil(math.log(tail) / math.log(q)) - 1)
    require(k < MAX_SUPPORT, field, f"geometric({mean:g}) needs {k + 1} values to reach the "
            f"tail tolerance {tail:g}; at most {MAX_SUPPORT}")
    pmf = [(1 - q) * q**j for j in range(k + 1)]
    return _cut(pmf, field, "geometric")


def _binomial(trials: int, p: float, field: str) -> tuple[np.ndarray, float]:
    require(trials < MAX_SUPPORT, field, f"binomial:{trials} has more than {MAX_SUPPORT} "
            "values; the exact solver handles K < 400")
    pmf = [math.comb(trials, k) * p**k * (1 - p) ** (trials - k) for k in range(trials + 1)]
    return np.array(pmf), 0.0


def arrival_pmf(arrivals: ArrivalProcess, tail: float) -> tuple[np.ndarray, float]:
    """(P(A_Σ = k), k = 0..a_max) and the tail mass lumped into a_max."""
    lam = arrivals.rate
    if arrivals.law == "bernoulli":
        return np.array([1 - lam, lam]), 0.0
    if arrivals.law == "binomial":
        return _binomial(arrivals.trials, lam / arrivals.trials, "arrivals")
    if arrivals.law == "deterministic":
        k = int(lam)
        require(k < MAX_SUPPORT, "arrivals", f"{k} arrivals per slot is too many")
        pmf = np.zeros(k + 1)
        pmf[k] = 1.0
        return pmf, 0.0
    if arrivals.law == "poisson":
        return poisson_law(lam, tail, "arrivals")
    raise ValidationError("arrivals", f"no exact solution for {arrivals.describe()} arrivals "
                          "(a trace is not an i.i.d. law): simulate")


def service_pmf(law: ServiceLaw, mu: float, tail: float) -> tuple[np.ndarray, float]:
    """(P(S_n = k), k = 0..s_max) for one server and the tail mass lumped into s_max."""
    if law.kind == "bernoulli":
        return np.array([1 - mu, mu]), 0.0
    if law.kind == "binomial":
        return _binomial(law.trials, mu / law.trials, "service")
    if law.kind == "deterministic":
        pmf = np.zeros(int(mu) + 1)
        pmf[int(mu)] = 1.0
        return pmf, 0.0
    if law.kind == "poisson":
        return poisson_law(mu, tail, "service")
    return _geometric(mu, tail, "service")


def count_splits(total: int, dispatchers: int) -> int:
    """How many ways ``total`` jobs split among ``dispatchers``: C(total + M − 1, M − 1)."""
    return math.comb(total + dispatchers - 1, dispatchers - 1)


def multinomial_splits(total: int, weights: np.ndarray) -> list[tuple[float, tuple[int, ...]]]:
    """The law of (A^1, …, A^M) given A_Σ = ``total`` split job by job with p = ``weights``:
    dispatcher m takes Bin(jobs left, p_m / Σ_{j ≥ m} p_j) of the jobs the ones before it
    left (walked with a stack of its own: M may exceed Python's recursion limit)."""
    out: list[tuple[float, tuple[int, ...]]] = []
    last = weights.size - 1
    stack: list[tuple[int, int, float, tuple[int, ...], float]] = [(0, total, 1.0, (), 1.0)]
    while stack:
        m, left, prob, parts, rest = stack.pop()
        if m == last or left == 0:  # the rest take what is left: nothing, or all of it
            out.append((prob, (*parts, *(0,) * (last - m), left)))
            continue
        share = min(1.0, weights[m] / rest) if rest > 0 else 0.0
        for k in range(left, -1, -1):  # pushed in reverse: popped in the order k = 0, 1, …
            p = math.comb(left, k) * share**k * (1 - share) ** (left - k)
            if p > 0:
                stack.append((m + 1, left - k, prob * p, (*parts, k), rest - weights[m]))
    return out
