"""Coverage of the default confidence interval, measured (``dispatchlab check coverage``).

A confidence interval is a claim about repeated experiments: the 95 % CI of E[ΣQ] should
contain the true mean in 95 % of independent runs. For systems whose stationary mean is
known exactly (docs/model.md#closed-forms: Geo/Geo/1, Poisson/Bernoulli single queues,
random and weighted random routing in batch and per-job mode, the ``wrand`` bench
workload; and two-server JSQ, whose mean the exact chain solver gives) this module runs K
independent runs with :func:`~dispatchlab.simulation.run.simulate`'s default settings and
counts how many CIs contain the truth, for both estimators of every run: the
coupled one (E[q] computed + the mean of X = ΣQ − q) and the plain time average of ΣQ
(docs/statistics.md#coupled). The binomial standard error of the empirical coverage p̂
over K runs is sqrt(p̂(1 − p̂)/K).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass
from typing import TYPE_CHECKING, Any

from dispatchlab.core.errors import require

if TYPE_CHECKING:
    from dispatchlab.model.system import System

# the system and the closed forms (numpy), the pool and simulate are imported where a case
# runs: `dispatchlab check coverage --help` reads this module's cases

DEFAULT_RUNS = 60
#: the estimators whose intervals a run reports (Result's coupled_* and plain_* fields)
ESTIMATORS = ("coupled", "plain")
DEFAULT_SLOTS = 1_000_000


@dataclass(frozen=True)
class CoverageCase:
    """A system with an exact stationary mean E[ΣQ] and the policy that has it."""

    name: str
    description: str
    servers: str
    load: float
    policy: str
    arrivals: str = "poisson"
    dispatchers: int = 1
    dispatch: str = "batch"
    split: str = "per_job"
    slots: int = DEFAULT_SLOTS
    fast: bool = False  # part of the quick subset the default test suite runs

    def system(self) -> System:
        from dispatchlab.model.system import System

        return System.build(self.servers, load=self.load, arrivals=self.arrivals,
                            service="bernoulli", dispatchers=self.dispatchers,
                            dispatch=self.dispatch, split=self.split)

    def exact_mean(self) -> float:
        """E[ΣQ] in closed form (docs/model.md#single-queue, docs/model.md#random-routing),
        or, for JSQ, from the exact solution of the slotted chain (docs/exact.md)."""
        from dispatchlab.theory.closed_forms import (
            geo_geo_1_mean,
            poisson_bernoulli_mean,
            random_routing_total_mean,
        )

        system = self.system()
        if self.policy == "jsq":
            from dispatchlab.simulation.exact import exact  # scipy: not for --help

            return float(exact(system, "jsq").mean_total_queue)
        if system.n_servers == 1:
            mean: Callable[[float, float], float] = (
                geo_geo_1_mean if self.arrivals == "bernoulli" else poisson_bernoulli_mean)
            return float(mean(system.arrival_rate, float(system.mu[0])))
        return random_routing_total_mean(system, weighted=self.policy == "wrand")


CASES: tuple[CoverageCase, ...] = (
    CoverageCase("geo1-far", "Geo/Geo/1, μ = 0.5, ρ = 0.5", "0.5", 0.5, "rand",
                 arrivals="bernoulli", fast=True),
    CoverageCase("geo1-near", "Geo/Geo/1, μ = 0.5, ρ = 0.95", "0.5", 0.95, "rand",
                 arrivals="bernoulli", fast=True),
    CoverageCase("pb-far", "Poisson/Bernoulli single queue, μ = 0.5, ρ = 0.5", "0.5", 0.5,
                 "rand", fast=True),
    CoverageCase("pb-near", "Poisson/Bernoulli single queue, μ = 0.5, ρ = 0.98", "0.5", 0.98,
                 "rand"),
    CoverageCase("rand-batch", "uniform RAND, 2×0.3 + 2×0.6, ρ = 0.6, M = 2, batch",
                 "2x0.3,2x0.6", 0.6, "rand", dispatchers=2, dispatch="batch"),
    CoverageCase("rand-perjob", "uniform RAND, 2×0.3 + 2×0.6, ρ = 0.6, per job",
                 "2x0.3,2x0.6", 0.6, "rand", dispatch="per_job", fast=True),
    CoverageCase("wrand-batch", "weighted RAND, 2×0.2 + 2×0.6, ρ = 0.9, M = 2, batch",
                 "2x0.2,2x0.6", 0.9, "wrand", dispatchers=2, dispatch="batch", fast=True),
    CoverageCase("wrand-perjob", "weighted RAND, 2×0.2 + 2×0.6, ρ = 0.9, per job",
                 "2x0.2,2x0.6", 0.9, "wrand", dispatch="per_job"),
    CoverageCase("wrand-bench", "the `wrand` bench workload: 50×0.1 + 50×0.5, ρ = 0.95, "
                 "M = 10, batch", "50x0.1,50x0.5", 0.95, "wrand", dispatchers=10,
                 dispatch="batch"),
    CoverageCase("jsq2-far", "JSQ on two servers 0.3 + 0.6, ρ = 0.7 (exact chain)",
                 "0.3,0.6", 0.7, "jsq", fast=True),
    CoverageCase("jsq2-near", "JSQ on two servers 0.3 + 0.6, ρ = 0.9 (exact chain)",
                 "0.3,0.6", 0.9, "jsq"),
    CoverageCase("jsq2-hom-near", "JSQ on two servers 0.5 + 0.5, ρ = 0.95 (exact chain)",
                 "0.5,0.5", 0.95, "jsq"),
)
CASE_NAMES = tuple(case.name for case in CASES)


def select_cases(names: Sequence[str] | None, *, fast: bool = False) -> list[CoverageCase]:
    """The named cases (all, or the fast subset with ``fast``, when ``names`` is empty)."""
    if not names:
        return [case for case in CASES if case.fast or not fast]
    by_name = {case.name: case for case in CASES}
    for name in names:
        require(name in by_name, "case", f"unknown case {name!r}; allowed: {', '.join(CASE_NAMES)}")
    return [by_name[name] for name in names]


@dataclass(frozen=True)
class CoverageRow:
    """The measured coverage of one case: K runs, how many 95 % CIs held the exact mean."""

    case: str
    description: str
    exact_mean: float
    runs: int
    covered: int
    no_interval: int  # runs whose CI was "too short to say" (counted as not covering)
    mean_slots: float  # mean run length, all replications and warm-ups included
    mean_relative_half_width: float
    relative_bias: float  # (mean of the K estimates − exact)/exact
    ci_method: str  # the method of the first run
    missed_seeds: tuple[int, ...] = ()  # the runs whose CI missed the exact mean
    estimator: str = "coupled"

    @property
    def coverage(self) -> float:
        return self.covered / self.runs

    @property
    def coverage_se(self) -> float:
        """Binomial standard error sqrt(p̂(1 − p̂)/K) (at least that of one run in K)."""
        p = self.coverage
        return math.sqrt(max(p * (1 - p), (1 - 1 / self.runs) / self.runs) / self.runs)

    def to_dict(self) -> dict[str, Any]:
        return {**asdict(self), "coverage": self.coverage, "coverage_se": self.coverage_se}


def _one_run(item: tuple[CoverageCase, int, dict[str, Any]]) -> dict[str, tuple[Any, ...]]:
    """Each estimator's (mean, CI low, CI high, slots run, method) of one run."""
    from dispatchlab.simulation.run import simulate  # numba: not for `check coverage --help`

    case, seed, settings = item
    result = simulate(case.system(), case.policy, seed=seed, delay="off", imbalance=False,
                      workers=1, **{"slots": case.slots, **settings})  # runs are the pool's
    coupled_method = (result.ci_method if result.estimator == "coupled"
                      else f"coupled, E[q] {result.pooled_queue_method}")
    plain_method = result.ci_method if result.estimator == "plain" else "plain time average"
    return {"coupled": (result.coupled_mean_total_queue, result.coupled_ci_low,
                        result.coupled_ci_high, result.slots_run, coupled_method),
            "plain": (result.plain_mean_total_queue, result.plain_ci_low,
                      result.plain_ci_high, result.slots_run, plain_method)}


def measure_coverage(case: CoverageCase, *, runs: int = DEFAULT_RUNS, seed: int = 0,
                     workers: int | None = None, estimator: str = "coupled",
                     **settings: Any) -> CoverageRow:
    """Run ``case`` ``runs`` times (seeds seed … seed+runs−1, on ``workers`` processes) with
    :func:`simulate`'s defaults, or ``settings`` (slots, replications, precision, …) over them,
    and count the 95 % CIs of ``estimator`` that contain the exact mean."""
    require(estimator in ESTIMATORS, "estimator", f"allowed: {', '.join(ESTIMATORS)}")
    return measure_estimators(case, runs=runs, seed=seed, workers=workers,
                              **settings)[estimator]


def measure_estimators(case: CoverageCase, *, runs: int = DEFAULT_RUNS, seed: int = 0,
                       workers: int | None = None, **settings: Any) -> dict[str, CoverageRow]:
    """:func:`measure_coverage` of every estimator, from the same runs."""
    require(isinstance(runs, int) and runs >= 2, "runs", f"must be an integer ≥ 2 (got {runs!r})")
    from dispatchlab.core.pools import map_tasks

    exact = case.exact_mean()
    outcomes = map_tasks(_one_run, [(case, seed + k, settings) for k in range(runs)],
                         workers=workers)
    return {name: _row(case, exact, [outcome[name] for outcome in outcomes], seed, name)
            for name in ESTIMATORS}


def _row(case: CoverageCase, exact: float, rows: list[tuple[Any, ...]], seed: int,
         estimator: str) -> CoverageRow:
    import numpy as np

    runs = len(rows)
    means = np.array([r[0] for r in rows])
    low = np.array([r[1] for r in rows])
    high = np.array([r[2] for r in rows])
    finite = np.isfinite(low) & np.isfinite(high)
    covered = int(np.sum(finite & (low <= exact) & (exact <= high)))
    half = (high - low) / 2 / np.abs(means)
    return CoverageRow(
        case=case.name, description=case.description, exact_mean=exact, runs=runs,
        covered=covered, no_interval=int(np.sum(~finite)),
        mean_slots=float(np.mean([r[3] for r in rows])),
        mean_relative_half_width=float(np.mean(half[finite])) if finite.any() else math.nan,
        relative_bias=float((np.nanmean(means) - exact) / exact), ci_method=rows[0][4],
        missed_seeds=tuple(seed + k for k in range(runs) if not (
            finite[k] and low[k] <= exact <= high[k])), estimator=estimator)
