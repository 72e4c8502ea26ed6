"""Induced dispatch fractions a_l(η) (docs/model.md#pi-fractions) of Π policies and of their
classical twins.

:func:`dispatch_fractions` maps a policy to its
:class:`~dispatchlab.theory.stability.DispatchFractions`: exactly for the catalog of
docs/model.md#pi-members, by Monte Carlo with the compiled decision function for user decisions.
Classical policies that are Π members (rand, wrand, rr, jsq, jsed, pod) map to their
Π fractions; any other policy raises a ValidationError saying that the Π stability
theory does not apply to it.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from dispatchlab.compiled.rng import make_rng_state
from dispatchlab.core.errors import ValidationError, require
from dispatchlab.engine.interface import compiled
from dispatchlab.policies.base import Policy, Preset, policy_entry, policy_names
from dispatchlab.policies.framework.kernel import count_destinations
from dispatchlab.theory.stability import (
    MAX_ENUMERATION,
    DispatchFractions,
)

MONTE_CARLO_CYCLES = 20_000
MAX_MONTE_CARLO_ENUMERATION = 6


def monte_carlo_fractions(policy: Any, mu: np.ndarray, eta: np.ndarray, *,
                          cycles: int = MONTE_CARLO_CYCLES, seed: int = 0) -> np.ndarray:
    """Estimate a_l(η) by running the compiled decision function ``cycles`` times
    (``policy``: a PiPolicy, read by its ``decision`` and ``cycle_length``; this module sits
    below the package that defines it)."""
    entry = policy.decision
    T = policy.cycle_length(mu)
    counts = compiled(count_destinations, only=True)(
        compiled(entry.function), np.ascontiguousarray(eta, np.int64),
        np.ascontiguousarray(mu, float),
        np.ascontiguousarray(entry.int_params(policy.params, mu), np.int64),
        np.ascontiguousarray(entry.float_params(policy.params, mu), float),
        make_rng_state(seed), T, cycles)
    return counts / counts.sum()


def pi_fractions(policy: Any, mu: np.ndarray) -> DispatchFractions:
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


def pi_members() -> str:
    """The registered policies that declare their Π fractions (their presets included)."""
    entries = {name: policy_entry(name) for name in policy_names()}
    with_presets = {entry.base for entry in entries.values() if isinstance(entry, Preset)}
    return ", ".join(
        name + (" and its presets" if entry in with_presets else "")
        for name, entry in entries.items()
        if not isinstance(entry, Preset)
        and entry.dispatch_fractions is not Policy.dispatch_fractions)


def dispatch_fractions(policy: Policy, mu: np.ndarray) -> DispatchFractions:
    """a_l(η) of ``policy`` on rates μ (its ``dispatch_fractions`` capability), or a
    ValidationError when it is not a Π member with known fractions."""
    fractions = policy.dispatch_fractions(np.asarray(mu, dtype=float))
    if fractions is not None:
        return fractions
    members = pi_members()
    if policy.pi_member_without_fractions:
        raise ValidationError(
            "policy", f"{policy.name} is a Π member (docs/model.md#pi-members) but its dispatch "
            "fractions a_l(η) are not implemented, so the check does not apply to it; it "
            "applies to " + members)
    raise ValidationError(
        "policy", f"{policy.name!r} is not a member of framework Π (its decisions are not a "
        "fixed function of a periodically sampled queue order), so the Π stability check "
        "does not apply to it; it applies to " + members)
