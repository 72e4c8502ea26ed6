"""``dispatchlab.exact(system, policy)``: the exact stationary law of a small system, for a
policy given by name or object (the solver itself, :mod:`dispatchlab.exact`, sits below
the policies and takes the object)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from dispatchlab.core.errors import INTEGER_LIMIT, ValidationError, refuse_unknown, require
from dispatchlab.core.signals import api_stops
from dispatchlab.model.system import System

if TYPE_CHECKING:
    from dispatchlab.exact.chain import ExactResult
    from dispatchlab.policies.base import Policy


EXACT_KEYWORDS = "policy_params, truncation, tolerance, max_states, law_tail"


@api_stops()
def exact(system: System, policy: Policy | str, *, policy_params: dict[str, Any] | None = None,
          truncation: int | None = None, tolerance: float | None = None,
          max_states: int | None = None, law_tail: float | None = None,
          **unknown: Any) -> ExactResult:
    """The stationary law of ``system`` under ``policy``: E[ΣQ], E[Q_n], P(ΣQ = k), the
    truncation level K and the mass at its edge (:func:`dispatchlab.exact.chain.solve`).

    Raises ValidationError ("no exact solution: simulate") for a policy that declares no
    exact dispatch law, when the state space would be too large, and when theory says the
    policy is unstable on ``system`` (a state-independent split that overloads a server,
    docs/model.md#pi-stability): such a chain has no stationary law, and its truncation
    would grow until ``max_states``.
    """
    from dispatchlab.exact.chain import solve
    from dispatchlab.policies import Policy, make_policy
    from dispatchlab.simulation.summary import theory_stability

    refuse_unknown("exact", unknown, EXACT_KEYWORDS)
    require(isinstance(system, System), "system", f"expected a System (got {system!r})")
    for name, value in (("truncation", truncation), ("max_states", max_states)):
        require(not isinstance(value, int) or isinstance(value, bool)
                or value <= INTEGER_LIMIT, name,
                f"must be an integer ≤ 2^62 (got {value!r})")
    if isinstance(policy, str):
        policy = make_policy(policy, **(policy_params or {}))
    elif policy_params:
        raise ValidationError("policy_params", "give parameters with a policy name only")
    require(isinstance(policy, Policy), "policy", f"expected a Policy or a name (got {policy!r})")
    policy.check_system(system)
    verdict, why = theory_stability(system, policy)
    require(verdict != "unstable", "load", f"{policy.name} is unstable on this system ({why}; "
            f"arrival rate λ_Σ = {system.arrival_rate:.6g}): no stationary law to solve for")
    options = {key: value for key, value in (("truncation", truncation),
                                             ("tolerance", tolerance),
                                             ("max_states", max_states),
                                             ("law_tail", law_tail)) if value is not None}
    return solve(system, policy, **options)

