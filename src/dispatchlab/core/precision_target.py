"""A precision target for a run's mean, and the rounds that reach it: replications are
added, each round sized from the current 95 % confidence interval, until the interval is as
narrow as asked or the budget is spent (in slots for the slotted model,
:mod:`dispatchlab.simulation.precision`; in jobs for continuous time,
:mod:`dispatchlab.continuous.precision`)."""

from __future__ import annotations

import math
import sys
from collections.abc import Callable
from concurrent.futures import Executor
from contextlib import ExitStack
from dataclasses import dataclass
from typing import Any, TypeVar

import numpy as np

from dispatchlab.core.convert import as_float, as_int, as_table, check_keys
from dispatchlab.core.errors import INTEGER_LIMIT, require
from dispatchlab.core.pools import process_pool, resolve_workers

R = TypeVar("R")

#: a precision run's budget (all replications, warm-ups included) unless given: this
#: multiple of one replication's slots (jobs)
PRECISION_BUDGET_FACTOR = 64
#: rounds of a precision run aim this much beyond the replications the t-CI says it needs
PRECISION_OVERSHOOT = 1.2


def _is_int(value: object) -> bool:
    return isinstance(value, int | np.integer) and not isinstance(value, bool)


@dataclass(frozen=True)
class Precision:
    """A precision target for the 95 % CI of the run's mean (E[ΣQ] in slots, E[T] in
    continuous time): replications run in rounds until the CI is that narrow or the budget
    is spent (``stop_reason``).

    Attributes:
        rel: relative half-width (0.01: ± 1 %).
        abs: absolute half-width (with ``rel``: both must hold).
        max_slots: the slotted model's budget, warm-ups included (default
            :data:`PRECISION_BUDGET_FACTOR` × ``slots``).
        max_jobs: continuous time's budget, jobs in all replications, warm-ups included
            (default :data:`PRECISION_BUDGET_FACTOR` × ``jobs``).
    """

    rel: float | None = None
    abs: float | None = None
    max_slots: int | None = None
    max_jobs: int | None = None

    def check(self, slots: int, replications: int = 1) -> Precision:
        """Checked against the run length and the replications asked at least;
        ``max_slots`` resolved to the budget."""
        require(self.max_jobs is None, "precision.max_jobs",
                "a budget in jobs is continuous time's; in slots give max_slots")
        self._check_targets()
        budget = self._budget(self.max_slots, slots, "slots", replications)
        return Precision(None if self.rel is None else float(self.rel),
                         None if self.abs is None else float(self.abs), budget)

    def check_jobs(self, jobs: int, replications: int = 1) -> Precision:
        """Checked against a continuous-time run's ``jobs`` per replication and the
        replications asked at least; ``max_jobs`` resolved to the budget."""
        require(self.max_slots is None, "precision.max_slots",
                "a budget in slots is the slotted model's; in continuous time give max_jobs")
        self._check_targets()
        budget = self._budget(self.max_jobs, jobs, "jobs", replications)
        return Precision(None if self.rel is None else float(self.rel),
                         None if self.abs is None else float(self.abs), max_jobs=budget)

    def _budget(self, given: int | None, length: int, unit: str, replications: int) -> int:
        """The budget in ``unit`` (slots, jobs): ``given``, or PRECISION_BUDGET_FACTOR
        replications of ``length`` (the ``replications`` asked, when more); it must cover
        those, and two at least."""
        name = f"precision.max_{unit}"
        require(given is None or (_is_int(given) and length <= given <= INTEGER_LIMIT),
                name, f"must be an integer in [{unit} = {length}, 2^62] (got {given!r})")
        first = max(replications, 2)
        budget = max(PRECISION_BUDGET_FACTOR, first) * length if given is None else int(given)
        require(budget // length >= first, name, f"the budget {budget:,} {unit} does not "
                f"cover {first} replications of {length:,} {unit}")
        return budget

    def _check_targets(self) -> None:
        for name in ("rel", "abs"):
            value = getattr(self, name)
            require(value is None or (isinstance(value, int | float)
                                      and not isinstance(value, bool)
                                      and math.isfinite(value) and value > 0),
                    f"precision.{name}", f"must be a number > 0 (got {value!r})")
        require(self.rel is not None or self.abs is not None, "precision",
                "give a target: Precision(rel=…) and/or Precision(abs=…)")
        # a relative half-width below double precision's resolution of a mean cannot be
        # reached (asking for it overflowed the rounds' arithmetic)
        require(self.rel is None or self.rel >= sys.float_info.epsilon, "precision.rel",
                f"must be ≥ {sys.float_info.epsilon:.3g}, the resolution of a double (got "
                f"{self.rel!r})")

    @staticmethod
    def from_table(value: Any, name: str = "precision", budget: str = "max_slots"
                   ) -> Precision:
        """A spec file's ``[run.precision]`` table: ``rel``, ``abs`` and ``budget``
        (``max_slots``, or continuous time's ``max_jobs``)."""
        data = as_table(value, name)
        check_keys(data, name, ("rel", "abs", budget))
        limit = {budget: as_int(data[budget], f"{name}.{budget}", low=1)} if budget in data \
            else {}
        return Precision(*(as_float(data[key], f"{name}.{key}") if key in data else None
                           for key in ("rel", "abs")), **limit)

    @staticmethod
    def of(value: Any) -> Precision | None:
        if value is None:
            return None
        require(isinstance(value, Precision), "precision",
                f"expected Precision(rel=…, abs=…, max_slots=…) or None (got {value!r}); "
                "e.g. precision=Precision(rel=0.01) for ± 1 %")
        return value

    def half_width(self, mean: float) -> float:
        """The half-width that meets every given target at this mean."""
        widths = [self.abs] if self.abs is not None else []
        if self.rel is not None:
            widths.append(self.rel * abs(mean))
        return min(widths)

    def met(self, mean: float, half_width: float) -> bool:
        return math.isfinite(half_width) and half_width <= self.half_width(mean)


def next_round(count: int, half: float, aim: float, affordable: int, per_round: int) -> int:
    """How many replications the next round of a precision run adds to ``count``, whose
    CI's half-width is ``half`` where ``aim`` is wanted: about count·(half/aim)² − count
    (the half-width shrinks as 1/√R), PRECISION_OVERSHOOT beyond, in whole rounds of
    ``per_round`` workers, at least one, and never past ``affordable`` in all."""
    if math.isfinite(half) and half > 0 and aim > 0 and half / aim < math.sqrt(affordable):
        wanted = math.ceil(count * (half / aim) ** 2 * PRECISION_OVERSHOOT)
    elif math.isfinite(half) and half > 0:  # out of reach: the budget (no overflow)
        wanted = affordable
    else:
        wanted = 2 * count
    more = max(wanted - count, 1)
    return min(-(-more // per_round) * per_round, affordable - count)


def run_in_rounds(target: Precision, first: int, affordable: int, workers: int | None,
                  add: Callable[[int, int, Executor | None], list[R]],
                  judge: Callable[[list[R]], tuple[float, float, bool]],
                  spent: str) -> tuple[list[R], str]:
    """Replications in rounds until ``target`` is met, with the reason they stopped.

    ``add(start, count, pool)`` runs replications start … start + count − 1 (on ``pool``,
    of one process a worker, or here without one); ``judge(runs)`` is (the mean, its CI's
    half-width, whether a run was unstable). The first round runs ``first`` replications
    (at least one a worker), each next one :func:`next_round`'s, until the target is met
    ("target reached"), a run is unstable, or ``affordable`` replications ran (then the
    reason is ``spent``)."""
    per_round = resolve_workers(workers, affordable)
    with ExitStack() as stack:
        pool = stack.enter_context(process_pool(per_round)) if per_round > 1 else None
        count = min(max(first, per_round), affordable)
        runs = add(0, count, pool)
        while True:
            mean, half, unstable = judge(runs)
            if unstable:
                return runs, "unstable: no mean to estimate"
            if target.met(mean, half):
                return runs, "target reached"
            if count >= affordable:
                return runs, spent
            more = next_round(count, half, target.half_width(mean), affordable, per_round)
            runs += add(count, more, pool)
            count += more
