"""The resource-pooled heavy-traffic lower bound (THEORY.md §5)."""

from __future__ import annotations

import math

import numpy as np

from dispatchlab.model.system import System


def zeta(arrival_variance: float, service_variances: np.ndarray) -> float:
    """ζ = σ_Σ² + ν_Σ², the heavy-traffic variance constant."""
    return float(arrival_variance + np.sum(service_variances))


def heavy_traffic_limit(system: System) -> float:
    """ζ/2: the limit of ε·E[ΣQ] for a heavy-traffic delay-optimal policy."""
    return zeta(system.arrivals.variance, system.service_variances) / 2


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
