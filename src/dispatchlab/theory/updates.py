"""p of [LED] Eq. (5) for the LED update strategies (docs/model.md#led-updates): a lower bound of
P(I^m_n(t) = 1 | Z(t)), the probability that an update refreshes Q̃^m_n in a slot, and the
expected number of dispatch events per slot it needs for arrival-triggered push."""

from __future__ import annotations

import math

import numpy as np

from dispatchlab.core.errors import ValidationError, require
from dispatchlab.model.system import System


def _arrival_probability(system: System, share: float) -> float:
    """P(A^m(t) ≥ 1) for a dispatcher receiving a fraction ``share`` (p_m) of the jobs."""
    process = system.arrivals
    if process.law == "trace":
        assert process.trace is not None
        counts = process.trace.astype(float)
        if system.split == "batch":
            return share * float(np.mean(counts >= 1))
        return float(np.mean(1.0 - (1.0 - share) ** counts))
    if system.split == "batch":
        return share * _any_arrival(process.law, process.rate, process.trials)
    if process.law == "deterministic":
        return 1.0 - (1.0 - share) ** process.rate
    return _any_arrival(process.law, process.rate * share, process.trials)


def _any_arrival(law: str, lam: float, trials: int) -> float:
    """P(A ≥ 1) for the law with mean ``lam`` (all of a slot's jobs together)."""
    if law == "poisson":
        return 1.0 - math.exp(-lam)
    if law == "bernoulli":
        return lam
    if law == "binomial":
        return 1.0 - (1.0 - lam / trials) ** trials
    if law == "deterministic":
        return 1.0 if lam >= 1 else 0.0
    raise ValueError(f"no P(A ≥ 1) for law {law!r}")


def expected_dispatch_events(system: System) -> float:
    """E[#dispatchers with A^m(t) ≥ 1] per slot."""
    return float(sum(_arrival_probability(system, float(w)) for w in system.weights))


def update_probability(update: str, p_hat: float, *, d: int = 1, n_servers: int | None = None,
                       dispatchers: int | None = None, system: System | None = None,
                       trigger: str = "slot") -> float:
    """p of Eq. (5), P(I^m_n(t) = 1 | Z(t)) ≥ p: p̂·d/N for push, p̂/M for pull.

    Arrival-triggered push multiplies by min_m P(A^m(t) ≥ 1), which needs ``system``.
    """
    require(0.0 < p_hat <= 1.0, "p", f"p̂ must be in (0, 1] (got {p_hat:g})")
    n = system.n_servers if system is not None else n_servers
    m = system.dispatchers if system is not None else dispatchers
    if update == "push":
        require(n is not None, "servers", "N is needed for push")
        require(1 <= d <= n, "d", f"d must be between 1 and N = {n} (got {d})")
        base = p_hat * d / n
        if trigger == "arrival":
            require(system is not None, "trigger", "the arrival trigger needs the system")
            assert system is not None
            return base * min(_arrival_probability(system, float(w)) for w in system.weights)
        return base
    if update == "pull":
        require(m is not None and m >= 1, "dispatchers", "M is needed for pull")
        return p_hat / m
    raise ValidationError("update", f"allowed: push, pull (got {update!r})")
