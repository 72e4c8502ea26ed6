"""``dispatchlab.fluid(system, policy)``: the fluid (mean-field) limit of the system's
family as N → ∞ at its load, for a policy given by name or object (the solver,
:mod:`dispatchlab.solvers.fluid`, sits below the policies and takes their rule)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from dispatchlab.core.errors import ValidationError, refuse_unknown, require
from dispatchlab.core.signals import api_stops
from dispatchlab.model.system import System
from dispatchlab.model.values import as_flag, as_int, as_number

if TYPE_CHECKING:
    from dispatchlab.policies.base import Policy
    from dispatchlab.solvers.fluid import FluidResult


@api_stops()
def fluid(system: System, policy: Policy | str, *, policy_params: dict[str, Any] | None = None,
          tolerance: float | None = None, max_iterations: int | None = None,
          refined: bool = False, **unknown: Any) -> FluidResult:
    """The fixed point of the fluid map of ``system``'s family as N → ∞ (same server
    classes, fractions and load; per-job dispatch), docs/fluid.md.

    Args:
        system: the system (a :class:`~dispatchlab.System` with ``dispatch="per-job"``);
            its servers' distinct rates are the classes, their shares the fractions α_j.
        policy: a policy with a fluid rule, or its name: ``rand``, ``wrand``, ``pod`` (any
            d), ``jsq`` (uniform ties, no lag or water-filling), ``jiq`` and ``jbt`` (any
            threshold rule; the threshold at the system's ε).
        policy_params: the policy's parameters, with a policy name.
        tolerance: stop when ‖p(t+1) − p(t)‖₁ ≤ this (default 1e-12; at least 1e-15).
        max_iterations: give up after this many slots of the map (default 200,000; the
            result then says so in ``notes``).
        refined: also the 1/N term c of E[Q] per server (docs/fluid.md#refined: rand, wrand
            and pod with Poisson arrivals), E[ΣQ] ≈ N·fluid + c in
            ``refined_mean_total_queue``.

    Returns a :class:`~dispatchlab.solvers.fluid.FluidResult`: E[Q] per server and per class,
    ``mean_total_queue`` (N times the per-server mean: the limit's prediction of E[ΣQ]),
    ``mean_delay`` (slots), ``wait_probability``, P(Q_j ≥ k), the truncation, the
    residual and the iterations. Raises ValidationError for batch dispatch, trace
    arrivals, a load the policy cannot carry, or a policy without a fluid rule.
    """
    from dispatchlab.policies import Policy, make_policy
    from dispatchlab.solvers.fluid import MAX_ITERATIONS, TOLERANCE, fixed_point

    refuse_unknown(fluid, unknown)
    require(isinstance(system, System), "system", f"expected a System (got {system!r})")
    if isinstance(policy, str):
        policy = make_policy(policy, **(policy_params or {}))
    elif policy_params:
        raise ValidationError("policy_params", "give parameters with a policy name only")
    require(isinstance(policy, Policy), "policy", f"expected a Policy or a name (got {policy!r})")
    tolerance = TOLERANCE if tolerance is None else as_number(tolerance, "tolerance")
    require(1e-15 <= tolerance < 1, "tolerance",
            f"must be in [1e-15, 1): below it sums of doubles do not resolve (got {tolerance:g})")
    iterations = (MAX_ITERATIONS if max_iterations is None
                  else as_int(max_iterations, "max_iterations", low=1, high=10**9))
    refined = as_flag(refined, "refined")
    rule = policy.fluid_rule(system)
    require(rule is not None, "policy",
            f"{policy.name} has no fluid rule derived (docs/fluid.md); it applies to rand, "
            "wrand, pod, jsq (uniform ties, no lag or water-filling), jiq and jbt")
    from dispatchlab.simulation.summary import theory_stability

    verdict, why = theory_stability(system, policy)
    require(verdict != "unstable", "load", f"{policy.name} is unstable on this system ({why}; "
            f"arrival rate λ_Σ = {system.arrival_rate:.6g}): no fixed point to solve for")
    return fixed_point(system, rule, policy=policy.name, tolerance=tolerance,
                       max_iterations=iterations, refined=refined)
