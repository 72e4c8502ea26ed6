"""``dispatchlab.exact(system, policy)``: the exact stationary law of a small system, for a
policy given by name or object (the solvers themselves, :mod:`dispatchlab.solvers`, sit below
the policies and take the object), by the method that applies and fits."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from dispatchlab.core.errors import (
    INTEGER_LIMIT,
    TooLarge,
    ValidationError,
    refuse_unknown,
    require,
)
from dispatchlab.core.signals import api_stops
from dispatchlab.model.system import System

if TYPE_CHECKING:
    from dispatchlab.policies.base import Policy
    from dispatchlab.solvers.chain import ExactResult
    from dispatchlab.solvers.qbd import QBDResult


#: ``method`` of :func:`exact`
METHODS = ("auto", "chain", "qbd")
#: what the QBD takes, for a refusal that names it
QBD_TAKES = ("method='qbd' answers it (two servers, one dispatcher, Bernoulli arrivals and "
             "service, a JSQ-type rule, any ε > 0)")


@api_stops()
def exact(system: System, policy: Policy | str, *, method: str = "auto",
          policy_params: dict[str, Any] | None = None, truncation: int | None = None,
          tolerance: float | None = None, max_states: int | None = None,
          law_tail: float | None = None, **unknown: Any) -> ExactResult | QBDResult:
    """The stationary law of ``system`` under ``policy``, exactly.

    Args:
        system: the system (a :class:`~dispatchlab.System`).
        policy: a policy that declares its exact dispatch law, or its name (rand, wrand,
            rr, jsq, jsed, pod, balanced-pod; jiq and jbt with M = 1).
        method: ``"chain"``: the truncated sparse chain (:func:`dispatchlab.solvers.chain.solve`:
            E[ΣQ], E[Q_n], P(ΣQ = k), the truncation level K and the mass at its edge; for
            JIQ/JBT-r on two servers it hands a chain too large for it to the multilevel
            solver). ``"qbd"``: the two-server QBD by logarithmic reduction
            (:func:`dispatchlab.solvers.qbd.two_server_qbd`: E[ΣQ] and E[Q_n] at any ε > 0,
            for two servers, one dispatcher, Bernoulli laws and a JSQ-type rule).
            ``"auto"`` (default): the chain, and the QBD where the chain would be too large
            and the QBD applies.
        policy_params: the policy's parameters, with a policy name.
        truncation, tolerance, max_states, law_tail: the chain's options
            (:func:`dispatchlab.solvers.chain.solve`); refused with ``method="qbd"``.

    Raises ValidationError ("no exact solution: simulate") for a policy that declares no
    exact dispatch law, when no method fits (the refusal of ``method="chain"`` names the
    QBD when it would answer), and when theory says the policy is unstable on ``system``
    (a state-independent split that overloads a server, docs/model.md#pi-stability): such
    a chain has no stationary law, and its truncation would grow until ``max_states``.
    """
    from dispatchlab.policies import Policy, make_policy
    from dispatchlab.simulation.summary import theory_stability
    from dispatchlab.solvers.chain import solve
    from dispatchlab.solvers.qbd import two_server_qbd

    refuse_unknown(exact, unknown)
    require(isinstance(method, str) and method in METHODS, "method",
            f"one of {', '.join(METHODS)} (got {method!r})")
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
    if method == "qbd":
        if options:
            raise ValidationError(next(iter(options)), "an option of the truncated chain "
                                  "(method='chain' or 'auto'); the QBD takes none")
        return two_server_qbd(system, policy)
    try:
        return solve(system, policy, **options)
    except TooLarge as refusal:
        try:  # the QBD's answer where it applies
            answer = two_server_qbd(system, policy)
        except ValidationError:
            raise refusal from None
        if method == "auto":
            return answer
        raise ValidationError(refusal.field, f"{refusal.message.removesuffix('; simulate')}; "
                              f"{QBD_TAKES}") from None

