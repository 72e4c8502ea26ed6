"""Induced dispatch fractions a_l(η) (THEORY.md §4.3) of Π policies and of their classical twins.

:func:`dispatch_fractions` maps a policy to its
:class:`~dispatchlab.theory.stability.DispatchFractions`: exactly for the catalog of
§4.8, by Monte Carlo with the compiled decision function for user decisions.
Classical policies that are Π members (rand, wrand, rr, jsq, jsed, pod) map to their
Π fractions; any other policy raises a ValidationError saying that the Π stability
theory does not apply to it.
"""

from __future__ import annotations

import numpy as np

from dispatchlab.engine.interface import compiled
from dispatchlab.engine.rng import make_rng_state
from dispatchlab.errors import ValidationError, require
from dispatchlab.policies.base import Policy
from dispatchlab.policies.framework import PiPolicy
from dispatchlab.policies.framework.kernel import count_destinations
from dispatchlab.theory.stability import (
    MAX_ENUMERATION,
    DispatchFractions,
    rank_fractions_pod,
)

MONTE_CARLO_CYCLES = 20_000
MAX_MONTE_CARLO_ENUMERATION = 6

# classical policy name -> the equivalent Π parameters (§4.8)
CLASSICAL_MEMBERS: dict[str, str] = {
    "rand": "RAND: a_l = 1/N",
    "wrand": "weighted RAND: a_l(η) = μ_η(l)/μ_Σ",
    "rr": "RR: a_l = 1/N (balanced: the cycle's counts)",
    "jsq": "JSQ: a = e_N (γ = 1)",
    "jsed": "JSED: a = e_N (γ = μ; the classical +1 of SED is outside Π, §4.8)",
    "pod": "Po-d: a_l = C(l−1,d−1)/C(N,d)",
}


def monte_carlo_fractions(policy: PiPolicy, mu: np.ndarray, eta: np.ndarray, *,
                          cycles: int = MONTE_CARLO_CYCLES, seed: int = 0) -> np.ndarray:
    """Estimate a_l(η) by running the compiled decision function ``cycles`` times."""
    entry = policy.decision
    T = policy.cycle_length(mu)
    counts = compiled(count_destinations, only=True)(
        compiled(entry.function), np.ascontiguousarray(eta, np.int64),
        np.ascontiguousarray(mu, float),
        np.ascontiguousarray(entry.int_params(policy.params, mu), np.int64),
        np.ascontiguousarray(entry.float_params(policy.params, mu), float),
        make_rng_state(seed), T, cycles)
    return counts / counts.sum()


def pi_fractions(policy: PiPolicy, mu: np.ndarray) -> DispatchFractions:
    """a_l(η) of a ``pi`` policy: exact for built-in decisions, Monte Carlo otherwise."""
    entry = policy.decision
    mu = np.asarray(mu, dtype=float)
    if entry.fractions is not None:
        return entry.fractions(policy.params, mu)
    n = mu.size
    method = f"monte-carlo ({MONTE_CARLO_CYCLES} cycles per order)"
    if entry.rank_symmetric:
        values = monte_carlo_fractions(policy, mu, np.arange(n))
        return DispatchFractions("rank", values, method=method)
    require(n <= min(MAX_ENUMERATION, MAX_MONTE_CARLO_ENUMERATION), "servers",
            f"decision {entry.name!r} has no exact fractions and is not declared "
            f"rank-symmetric: estimating a_l(η) for every η needs N ≤ "
            f"{MAX_MONTE_CARLO_ENUMERATION} (got {n})")
    cache: dict[tuple[int, ...], np.ndarray] = {}

    def of_order(eta: np.ndarray) -> np.ndarray:
        key = tuple(int(x) for x in eta)
        if key not in cache:
            cache[key] = monte_carlo_fractions(policy, mu, np.asarray(eta),
                                               cycles=MONTE_CARLO_CYCLES // 4)
        return cache[key]

    return DispatchFractions("order", of_order=of_order, method=method)


def dispatch_fractions(policy: Policy, mu: np.ndarray) -> DispatchFractions:
    """a_l(η) of ``policy`` on rates μ, or a ValidationError when it is not a Π member."""
    mu = np.asarray(mu, dtype=float)
    n = mu.size
    if isinstance(policy, PiPolicy):
        return pi_fractions(policy, mu)
    name = policy.name
    if name in ("rand", "jsq", "jsed", "pod", "rr", "wrand"):
        if name == "rand" or (name == "rr" and not policy.params.get("weighted", False)):
            return DispatchFractions("rank", np.full(n, 1.0 / n))
        if name == "wrand":
            return DispatchFractions("server", mu / mu.sum())
        if name == "rr":
            counts = np.bincount(policy.cycle(mu), minlength=n)
            return DispatchFractions("server", counts / counts.sum())
        if name in ("jsq", "jsed"):
            return DispatchFractions("rank", np.eye(n)[n - 1])
        return DispatchFractions("rank", rank_fractions_pod(n, policy.params["d"]))
    members = "pi-framework and its presets (pi-jsq, pi-pod, …), " + ", ".join(CLASSICAL_MEMBERS)
    if name == "balanced-pod":
        raise ValidationError(
            "policy", "balanced-pod is a Π member (§4.8) but its dispatch fractions a_l(η) are "
            "not implemented, so the check does not apply to it; it applies to " + members)
    raise ValidationError(
        "policy", f"{name!r} is not a member of framework Π (its decisions are not a fixed "
        "function of a periodically sampled queue order), so the Π stability check does not "
        "apply to it; it applies to " + members)
