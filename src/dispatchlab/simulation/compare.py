"""``compare(system, a, b, …)``: a paired comparison of two policies on common random
numbers (docs/statistics.md#paired).

Policies run with one seed see the same exogenous draws, A^m(t) and S_n(t) (the
arrivals and the service have streams of their own, :mod:`dispatchlab.compiled.rng`), so
replication r of policy a is paired with replication r of policy b. The pooled queue
q(t) is then the same path in both runs, and the difference ΣQ_a(t) − ΣQ_b(t) =
X_a(t) − X_b(t) is the difference of the excesses: the coupled and the plain estimators
give one difference.

The difference of means D = E[ΣQ_a] − E[ΣQ_b] is estimated from the per-block differences
d_k = ΣQ̄_a,k − ΣQ̄_b,k of one run (batch means sized by their own τ̂,
:func:`~dispatchlab.stats.estimators.batch_means`), or with R ≥ 2 replications from the
per-replication differences d_r (Student t on R − 1 df). The variance reduction is
Var(d̄)/(Var(ā) + Var(b̄)): the paired variance against the variance the same runs would
have if they were independent (1 means nothing gained; 0.1, a ten times narrower
variance).
"""

from __future__ import annotations

import math
import warnings
from dataclasses import asdict, dataclass
from typing import Any

import numpy as np

from dispatchlab.core.errors import require
from dispatchlab.core.pools import map_tasks
from dispatchlab.core.signals import api_stops
from dispatchlab.engine.raw import RawRun
from dispatchlab.model.system import System
from dispatchlab.policies.base import Policy
from dispatchlab.simulation.plan import Plan, check_settings, plan_run, run_indexed
from dispatchlab.simulation.result import Result
from dispatchlab.simulation.summary import summarize_plan
from dispatchlab.stats.estimators import Estimate, batch_means, replication_estimate, t_quantile


@dataclass(frozen=True)
class PairedComparison:
    """D = E[ΣQ_a] − E[ΣQ_b] with its paired 95 % CI, and what pairing bought.

    ``mean_a`` and ``mean_b`` are the two Results' headline E[ΣQ]; ``difference`` is the
    mean of the paired differences over the measured blocks (with the coupled estimator
    E[q] cancels, so it is X̄_a − X̄_b, the headline means' difference up to the warm-up's
    rounding to whole blocks).

    ``remaining_variance`` = Var(d̄)/(Var(ā) + Var(b̄)) on the same batches or
    replications, the share of the unpaired variance that pairing leaves (0.1: a tenth);
    ``unpaired_half_width`` is the half-width the two runs' own CIs would give their
    difference were they independent (t·√(SE_a² + SE_b²)).
    ``common_random_numbers`` says that the two runs' pooled queues q(t) agreed in every
    block (the exogenous draws were shared); ``method`` how the CI was formed."""

    policy_a: str
    policy_b: str
    mean_a: float
    mean_b: float
    difference: float
    ci_low: float
    ci_high: float
    standard_error: float
    method: str
    samples: int
    remaining_variance: float
    unpaired_half_width: float
    common_random_numbers: bool
    slots: int
    replications: int
    seed: int
    result_a: Result
    result_b: Result

    @property
    def variance_reduction(self) -> float:
        """The old name of :attr:`remaining_variance` (which is what it always held: the
        variance left, not the reduction); deprecated, removed in the next version."""
        warnings.warn("PairedComparison.variance_reduction is renamed remaining_variance "
                      "(the share of the variance pairing leaves)", DeprecationWarning,
                      stacklevel=2)
        return self.remaining_variance

    @property
    def half_width(self) -> float:
        """The paired CI's half-width (``nan`` without an interval)."""
        return (self.ci_high - self.ci_low) / 2

    def to_dict(self) -> dict[str, Any]:
        """Every field but the two Results, which come as ``result_a``/``result_b`` dicts."""
        record = {k: v for k, v in asdict(self).items() if k not in ("result_a", "result_b")}
        return {**record, "half_width": self.half_width,
                "result_a": self.result_a.to_dict(), "result_b": self.result_b.to_dict()}

    def __str__(self) -> str:
        if not math.isfinite(self.difference):
            return f"E[ΣQ] {self.policy_a} − {self.policy_b}: {self.method}"
        interval = (f"[{self.ci_low:.4g}, {self.ci_high:.4g}]"
                    if math.isfinite(self.half_width) else "(no interval: too short)")
        return (f"E[ΣQ] {self.policy_a} − {self.policy_b} = {self.difference:.4g} "
                f"{interval} (paired, {self.method}); remaining variance "
                f"{self.remaining_variance:.3g} of the unpaired (unpaired half-width "
                f"{self.unpaired_half_width:.3g})")


@api_stops()
def compare(system: System, a: Policy | str, b: Policy | str, *, workers: int | None = None,
            **settings: Any) -> PairedComparison:
    """Run policies ``a`` and ``b`` on ``system`` with one seed (common random numbers) and
    estimate D = E[ΣQ_a] − E[ΣQ_b] with a paired CI (docs/statistics.md#paired).

    Args:
        system: the validated model.
        a: a :class:`Policy` or a registered name (``policy_params`` is not taken:
            build the policy with :func:`~dispatchlab.policies.make_policy`).
        b: the policy compared with ``a``, likewise.
        workers: processes for the 2·R replications (``None``: every core).
        settings: :func:`~dispatchlab.simulate`'s run settings (``slots``, ``warmup``,
            ``seed``, ``replications``, ``warmup_method``, ``estimator``, ``start``,
            ``bound``, ``delay``, ``imbalance``, …), validated by it; a precision
            target is refused (the pairs need the same replications on both sides).

    Returns a :class:`PairedComparison` with both :class:`Result` objects.
    """
    plans, runs, labels = _run_paired(system, [a, b], workers, settings)
    return paired_comparison(plans[0], plans[1], runs[0], runs[1], labels=(labels[0],
                                                                        labels[1]))


def compare_with_first(system: System, policies: list[Policy | str], *,
                       workers: int | None = None, **settings: Any) -> list[PairedComparison]:
    """Every policy after the first against the first (the baseline): for k ≥ 1 the
    comparison of policy k (``a``) with policy 0 (``b``), D = E[ΣQ_k] − E[ΣQ_0], all
    policies' replications on one pool and each policy run once. The settings are
    :func:`compare`'s."""
    plans, runs, labels = _run_paired(system, policies, workers, settings)
    return [paired_comparison(plans[k], plans[0], runs[k], runs[0],
                              labels=(labels[k], labels[0]))
            for k in range(1, len(plans))]


def _run_paired(system: System, policies: list[Policy | str], workers: int | None,
                settings: dict[str, Any]) -> tuple[list[Plan], list[list[RawRun]], list[str]]:
    """Plan (validate) and run every policy with the same settings and seed."""
    check_settings(settings, "compare")
    require(settings.get("precision") is None, "precision", "a paired comparison runs a "
            "fixed number of replications on both policies; give slots and replications")
    require("policy_params" not in settings, "policy_params",
            "give parameters to make_policy and compare the Policy objects")
    require(isinstance(policies, list | tuple) and len(policies) >= 2, "policies",
            "a paired comparison needs two policies or more")
    plans = [plan_run(system, policy, **settings) for policy in policies]
    items = [(plan.task, index) for plan in plans for index in plan.indices]
    raw = map_tasks(run_indexed, items, workers=workers)
    count = len(plans[0].indices)
    runs = [raw[k * count:(k + 1) * count] for k in range(len(plans))]
    labels = [policy if isinstance(policy, str) else repr(policy) for policy in policies]
    return plans, runs, labels


#: what a paired difference says when a side has no mean
NO_MEAN = "no mean (unstable)"


def paired_comparison(plan_a: Plan, plan_b: Plan, runs_a: list[RawRun],
                      runs_b: list[RawRun], labels: tuple[str, str] | None = None
                      ) -> PairedComparison:
    """The :class:`PairedComparison` of two plans' runs, replication r with replication r
    (the plans differ in their policy alone); ``labels`` name the two (default: the
    policies' names)."""
    result_a, result_b = summarize_plan(plan_a, runs_a), summarize_plan(plan_b, runs_b)
    common = all(ra.block_pooled.shape == rb.block_pooled.shape
                 and bool((ra.block_pooled == rb.block_pooled).all())
                 for ra, rb in zip(runs_a, runs_b, strict=True))
    without_mean = [label for label, result in zip(
        labels or (plan_a.task.policy.name, plan_b.task.policy.name), (result_a, result_b),
        strict=True) if not math.isfinite(result.mean_total_queue)]
    if any(run.hit_bound for run in (*runs_a, *runs_b)):
        estimate = Estimate(math.nan, math.nan, math.nan, "a run stopped at the bound "
                            "(unstable): no difference of means", 0)
        reduction = unpaired = math.nan
    elif without_mean:  # a difference against no mean would be a number that means nothing
        estimate = Estimate(math.nan, math.nan, math.nan, f"{NO_MEAN}: "
                            f"{', '.join(without_mean)}; no difference of means", 0)
        reduction = unpaired = math.nan
    elif len(runs_a) == 1:
        estimate, reduction, unpaired = _paired_blocks(runs_a[0], runs_b[0])
    else:
        estimate, reduction, unpaired = _paired_replications(runs_a, runs_b)
    task = plan_a.task
    return PairedComparison(
        policy_a=labels[0] if labels else plan_a.task.policy.name,
        policy_b=labels[1] if labels else plan_b.task.policy.name,
        mean_a=result_a.mean_total_queue, mean_b=result_b.mean_total_queue,
        difference=estimate.mean, ci_low=estimate.ci_low, ci_high=estimate.ci_high,
        standard_error=estimate.standard_error, method=estimate.method,
        samples=estimate.samples, remaining_variance=reduction,
        unpaired_half_width=unpaired, common_random_numbers=common, slots=task.slots,
        replications=len(runs_a), seed=task.seed, result_a=result_a, result_b=result_b)


def _measured_blocks(run: RawRun) -> np.ndarray:
    """Mean ΣQ of each complete block after the warm-up (the first block wholly after it)."""
    first = -(-run.warmup // run.block_length)
    return run.block_means()[first:]


def _paired_blocks(run_a: RawRun, run_b: RawRun) -> tuple[Estimate, float, float]:
    """One run each: batch means of the per-block differences, and on the same batches the
    two runs' own variances (the variance reduction and the unpaired half-width)."""
    blocks_a, blocks_b = _measured_blocks(run_a), _measured_blocks(run_b)
    differences = blocks_a - blocks_b
    if not differences.any():  # the same path (a policy against itself)
        return (Estimate(0.0, 0.0, 0.0, "exact: the same path in every block",
                         int(differences.size), standard_error=0.0), 0.0, math.nan)
    estimate = batch_means(differences)
    if estimate.too_short:
        return estimate, math.nan, math.nan
    own_a = batch_means(blocks_a, batches=estimate.samples)
    own_b = batch_means(blocks_b, batches=estimate.samples)
    estimate = Estimate(estimate.mean, estimate.ci_low, estimate.ci_high,
                        f"per-block differences, {estimate.method}", estimate.samples,
                        estimate.lag1_autocorrelation, estimate.standard_error,
                        estimate.dof, estimate.autocorrelation_time)
    return estimate, *_reduction(estimate, own_a.standard_error, own_b.standard_error)


def _paired_replications(runs_a: list[RawRun], runs_b: list[RawRun]
                         ) -> tuple[Estimate, float, float]:
    """R ≥ 2 replications: Student t on the per-replication differences d_r."""
    means_a = np.array([_measured_blocks(run).mean() for run in runs_a])
    means_b = np.array([_measured_blocks(run).mean() for run in runs_b])
    estimate = replication_estimate(means_a - means_b)
    estimate = Estimate(estimate.mean, estimate.ci_low, estimate.ci_high,
                        f"per-replication differences ({means_a.size} pairs)",
                        estimate.samples, standard_error=estimate.standard_error,
                        dof=estimate.dof)
    if estimate.standard_error == 0.0:
        return estimate, 0.0, math.nan
    own_a, own_b = replication_estimate(means_a), replication_estimate(means_b)
    return estimate, *_reduction(estimate, own_a.standard_error, own_b.standard_error)


def _reduction(paired: Estimate, se_a: float, se_b: float) -> tuple[float, float]:
    """(Var(d̄)/(Var(ā) + Var(b̄)), the unpaired half-width t·√(SE_a² + SE_b²))."""
    independent = se_a**2 + se_b**2
    if not independent > 0:
        return math.nan, math.nan
    return (paired.standard_error**2 / independent,
            t_quantile(paired.dof) * math.sqrt(independent))

