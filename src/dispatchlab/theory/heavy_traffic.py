"""The two heavy-traffic reference lines of every ε·E[ΣQ] plot (docs/model.md#lower-bound,
docs/model.md#random-routing).

* ζ/2, the resource-pooled limit reached by heavy-traffic delay-optimal policies
  (JSQ, JBT-r with K·log(1/ε) ≤ r = o(1/ε), Theorem 2);
* the random-routing constant lim ε·E[ΣQ̄] of weighted random routing (p_n = μ_n/μ_Σ),
  which JBT-r with r = (1/ε)^{1+α} degenerates to (Theorem 1, Eq. (6)), and which every
  constant threshold stays strictly below (Eq. (5)).

The formulas live in :mod:`dispatchlab.theory.closed_forms`
(docs/model.md#random-routing, for any dispatch mode, M and split); this module names them
for the heavy-traffic experiments.
"""

from __future__ import annotations

from dispatchlab.model.system import System
from dispatchlab.theory.bounds import heavy_traffic_limit
from dispatchlab.theory.closed_forms import random_routing_constant


def pooled_limit(system: System) -> float:
    """ζ/2 with ζ = σ_Σ² + ν_Σ² at the heavy-traffic limit λ_Σ → μ_Σ, the same for every ε
    of a sweep (:func:`~dispatchlab.theory.bounds.heavy_traffic_limit`)."""
    return heavy_traffic_limit(system)


def random_routing_limit(system: System) -> float:
    """lim_{ε↓0} ε·E[ΣQ̄] under weighted random routing for ``system``'s rates, laws,
    dispatch mode and dispatchers (docs/model.md#random-routing)."""
    return random_routing_constant(system)


def reference_lines(system: System) -> dict[str, float]:
    """The reference values of a heavy-traffic plot for ``system``: ``zeta_half`` (ζ/2)
    and ``random_routing`` (the weighted-RAND constant)."""
    return {"zeta_half": pooled_limit(system), "random_routing": random_routing_limit(system)}
