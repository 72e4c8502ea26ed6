"""The resource-pooled heavy-traffic lower bound ([ES12] Lemma 5; docs/model.md#lower-bound)."""

from __future__ import annotations

import math

import numpy as np

from dispatchlab.core.errors import ValidationError
from dispatchlab.model.system import System


def zeta(arrival_variance: float, service_variances: np.ndarray) -> float:
    """ζ = σ_Σ² + ν_Σ², the heavy-traffic variance constant."""
    return float(arrival_variance + np.sum(service_variances))


def limit_arrival_variance(system: System) -> float:
    """σ_Σ², Var A_Σ of the system's arrival law at λ_Σ = μ_Σ (its heavy-traffic limit);
    the current variance when the law cannot reach that rate (a trace, Bernoulli)."""
    try:
        return system.arrivals.with_rate(system.mu_sum).variance
    except ValidationError:
        return system.arrivals.variance


def heavy_traffic_limit(system: System) -> float:
    """ζ/2, ζ = lim Var A_Σ + Σ_n ν_n² (docs/model.md#lower-bound): the limit of ε·E[ΣQ]
    as ε ↓ 0 for a heavy-traffic delay-optimal policy, the same at every ε of a sweep. (The
    finite-ε bound uses the variance at the system's own λ_Σ instead.)"""
    return zeta(limit_arrival_variance(system), system.service_variances) / 2


def lower_bound_total_queue(system: System) -> float:
    """Finite-ε lower bound on E[ΣQ] for every policy: ζ^(ε)/(2ε) − B, B = ½·Σ_n S_max,n.

    Clipped at 0; ``nan`` when the service is unbounded (B infinite) or ε ≤ 0.
    """
    epsilon = system.epsilon
    if epsilon <= 0:
        return math.nan
    s_max = system.service.max_service(system.mu)
    if not np.all(np.isfinite(s_max)):
        return math.nan
    zeta_eps = zeta(system.arrivals.variance, system.service_variances) + epsilon**2
    return max(0.0, zeta_eps / (2 * epsilon) - 0.5 * float(np.sum(s_max)))
