"""Paired comparisons in continuous time: two policies on the same arrival times and sizes
(one seed: common random numbers), the difference of their mean response times with an
interval from the pairs."""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np

from dispatchlab.continuous import engine
from dispatchlab.continuous.run import ContinuousResult, simulate_continuous
from dispatchlab.core.errors import require
from dispatchlab.core.signals import api_stops
from dispatchlab.stats.estimators import Estimate, batch_means, replication_estimate


@dataclass(frozen=True)
class ContinuousComparison:
    """D = E[T_a] − E[T_b] over the same jobs, with its 95 % interval from the pairs
    (``difference``), the half-width the two runs' own intervals would give unpaired, and
    both results."""

    policy_a: str
    policy_b: str
    difference: Estimate
    unpaired_half_width: float
    result_a: ContinuousResult
    result_b: ContinuousResult

    def __str__(self) -> str:
        d = self.difference
        return (f"E[T] {self.policy_a} − {self.policy_b} = {d.mean:.4g} [{d.ci_low:.4g}, "
                f"{d.ci_high:.4g}] (paired, {d.method}); unpaired half-width "
                f"{self.unpaired_half_width:.3g}")


def _response_means(blocks: np.ndarray) -> np.ndarray:
    jobs = blocks[engine.B_JOBS]
    return blocks[engine.B_RESPONSE] / np.where(jobs > 0, jobs, 1.0)


@api_stops()
def compare_continuous(servers: Any, a: str, b: str, **settings: Any) -> ContinuousComparison:
    """Run policies ``a`` and ``b`` on ``servers`` with the same settings and seed (the same
    arrival times and sizes) and estimate D = E[T_a] − E[T_b] from the pairs: with several
    replications Student's t over the replications' differences; with one, batch means
    over the differences of the blocks of the same jobs. ``settings`` are
    :func:`~dispatchlab.continuous.simulate_continuous`'s (``policy_params`` applies to
    both: give parameters through an alias or leave it out)."""
    require("policy_params" not in settings, "policy_params",
            "compare runs two policies: parameters of one would not fit the other")
    require(settings.get("precision") is None, "precision",
            "the pairs need the same replications of both policies: give replications")
    require(settings.get("warmup_method", "fraction") == "fraction", "warmup_method",
            "the pairs need the same jobs of both policies: MSER-5 would cut each at its "
            "own point; use the fixed warm-up (warmup=…)")
    first = simulate_continuous(servers, a, **settings)
    second = simulate_continuous(servers, b, **settings)
    nan = float("nan")
    several = len(first.blocks) > 1
    if several:
        paired = np.array([x[engine.B_RESPONSE].sum() / x[engine.B_JOBS].sum()
                           - y[engine.B_RESPONSE].sum() / y[engine.B_JOBS].sum()
                           for x, y in zip(first.blocks, second.blocks, strict=True)])
    else:
        paired = _response_means(first.blocks[0]) - _response_means(second.blocks[0])
    if first.stability == "unstable" or second.stability == "unstable":
        difference = Estimate(nan, nan, nan, "a run was unstable", 0)
    elif not np.any(paired):  # the same choices on the same jobs
        difference = Estimate(0.0, 0.0, 0.0, "every pair equal: the two policies made the "
                              "same choices on the same jobs", int(paired.size))
    elif several:
        difference = replication_estimate(paired)
    else:
        difference = batch_means(paired).shifted(
            first.mean_response.mean - second.mean_response.mean)
    unpaired = math.hypot(first.mean_response.half_width, second.mean_response.half_width)
    return ContinuousComparison(first.policy if a == first.policy else a,
                                second.policy if b == second.policy else b,
                                difference, unpaired, first, second)
