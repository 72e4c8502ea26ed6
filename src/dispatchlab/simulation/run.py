"""``simulate(system, policy, …) -> Result``: the one entry point that runs a policy."""

from __future__ import annotations

from typing import Any

from dispatchlab.core.errors import refuse_unknown
from dispatchlab.core.pools import map_tasks
from dispatchlab.core.precision_target import Precision
from dispatchlab.core.signals import api_stops
from dispatchlab.model.system import System
from dispatchlab.policies.base import Policy
from dispatchlab.simulation.execute import execute
from dispatchlab.simulation.measures import PerServer, Trajectory, refuse_renamed
from dispatchlab.simulation.plan import DEFAULT_SLOTS, check_settings, plan_run, run_indexed
from dispatchlab.simulation.result import Result


@api_stops()
def simulate(
    system: System,
    policy: Policy | str,
    *,
    slots: int = DEFAULT_SLOTS,
    warmup: int | None = None,
    seed: int = 0,
    replications: int = 1,
    warmup_method: str = "fraction",
    estimator: str = "coupled",
    start: str = "empty",
    bound: int | None = None,
    delay: str = "tagged",
    imbalance: bool = True,
    per_server: PerServer | bool | None = None,
    trajectory: Trajectory | None = None,
    precision: Precision | None = None,
    policy_params: dict[str, Any] | None = None,
    workers: int | None = None,
    **unknown: Any,
) -> Result:
    """Simulate ``policy`` on ``system`` for ``slots`` slots.

    Args:
        system: the validated model.
        policy: a :class:`Policy`, or a registered name (with ``policy_params``).
        slots: slots per replication.
        warmup: slots discarded before measuring (default 10 % of ``slots``).
        seed: the root seed; replication r uses ``SeedSequence(seed).spawn(R)[r]``.
        replications: independent replications. One run: the CI comes from batch means
            sized by τ̂, the integrated autocorrelation time of ΣQ (none when the window is
            < 10·τ̂: "too short to say"); R ≥ 2: within- and between-run variance pooled
            (:func:`~dispatchlab.stats.estimators.pooled_estimate`; docs/statistics.md).
        warmup_method: ``fraction`` (fixed warm-up) or ``mser5`` (MSER-5 truncation of
            the ΣQ series after the fixed warm-up, applied to the mean and CI of ΣQ).
        estimator: the headline E[ΣQ] and its CI (docs/statistics.md#coupled):
            ``coupled`` (default), E[q] of the resource-pooled queue on the same draws,
            computed, plus the time average of X = ΣQ − q; where E[q] cannot be computed
            exactly (trace arrivals, very wide laws) the plain one, saying why in
            ``estimator_note``. ``plain``: the time average of ΣQ. Both are reported.
        start: Q(0): ``empty`` (default), or ``stationary``: ΣQ(0) = q(0) drawn from the
            pooled queue's stationary law and spread over the servers in proportion to
            μ_n, so that q(t) is stationary from slot 0 and only X = ΣQ − q has a
            transient (heavy traffic: the pooled queue's relaxation time ζ/ε² no longer
            bounds the run; docs/statistics.md#coupled).
        bound: ΣQ at which the run stops and is judged unstable.
        delay: how the delay quantiles are measured (docs/statistics.md#tagged-delays):
            ``tagged`` (default), a sample of tagged jobs followed through their FIFOs at
            O(tags) a slot, each quantile with a 95 % CI (``delay_quantile_ci``);
            ``all``, every job timed through a FIFO; ``off``, none. The mean delay by
            Little's law (``mean_delay``) is exact in every mode.
        imbalance: measure the queue imbalance DQI₁, DQI₂ every slot (default on).
        per_server: :class:`PerServer` (or ``True`` for its default bins): each server's
            utilisation, idle fraction and queue-length distribution over the measured
            window of every replication (docs/statistics.md#per-server;
            ``Result.per_server_frame()``, ``Result.server_distribution_frame()``). No
            draw changes.
        trajectory: :class:`Trajectory` ``(every=k, servers=…)``: ΣQ(t), the pooled q(t)
            and Q_n(t) of the given servers every k slots of the first replication, warm-up
            included (``Result.trajectory_frame()``).
        precision: :class:`Precision` ``(rel=…, abs=…, max_slots=…)``, a target
            half-width of the 95 % CI of E[ΣQ]: replications of ``slots`` slots run in
            rounds (``workers`` at a time) until the CI is that narrow or the slot budget is
            spent. The result says the precision reached and why it stopped
            (``stop_reason``).
        policy_params: the parameters of a policy given by name.
        workers: processes that run replications side by side (fresh processes: safe in
            Jupyter and on macOS); ``None`` (default) uses every core. Replication r has the
            same seed whatever the number of workers, so the result does not depend on it.

    The keywords of earlier versions (``track_delay``, ``detail``, ``per_server_bins``,
    ``trajectory_servers``, ``precision_abs``, ``max_slots``) are refused with one line
    naming their replacement (:data:`~dispatchlab.simulation.measures.RENAMED`).
    """
    refuse_renamed(unknown)
    refuse_unknown(simulate, unknown)
    return execute(plan_run(
        system, policy, slots=slots, warmup=warmup, seed=seed, replications=replications,
        warmup_method=warmup_method, estimator=estimator, start=start, bound=bound,
        delay=delay, imbalance=imbalance, per_server=per_server, trajectory=trajectory,
        precision=precision, policy_params=policy_params), workers)


def simulate_each(system: System, policies: list[Policy | str], *, workers: int | None = None,
                  **settings: Any) -> list[Result]:
    """``[simulate(system, p, **settings) for p in policies]`` with every replication of
    every policy on one pool of ``workers`` processes (default: every core).

    Each result is identical to its own sequential :func:`simulate` call. Precision
    targets (``precision``) run policy after policy, each on the pool.
    """
    check_settings(settings, "simulate_each")
    plans = [plan_run(system, policy, **settings) for policy in policies]
    if any(plan.target is not None for plan in plans):
        return [execute(plan, workers) for plan in plans]
    from dispatchlab.simulation.summary import summarize_plan  # (see execute._execute)

    items = [(plan.task, index) for plan in plans for index in plan.indices]
    raw = map_tasks(run_indexed, items, workers=workers)
    results, start = [], 0
    for plan in plans:
        runs = raw[start:start + len(plan.indices)]
        start += len(plan.indices)
        results.append(summarize_plan(plan, runs))
    return results
