"""The work guard: refuse, with the estimate, a run or sweep far larger than anyone means.

A typo such as ``--replications 100000000`` or a slot rule that gives 2·10^13 slots
would otherwise start hours or years of work without a word. Every command that
simulates (``run``, ``compare``, ``experiment``, ``sweep``) estimates its work first
with :func:`system_work` and calls :func:`check_work`; above :data:`WORK_LIMIT` it
refuses unless the user confirms with ``--yes``.

Work is counted in *server-slot updates*: a slot costs about N + M updates (every
queue served, every dispatcher's arrivals split) plus one per job when jobs are
dispatched one by one (``dispatch = per-job``). The compiled loop does about
:data:`UPDATES_PER_SECOND` of them per second on one core, which turns the estimate
into a rough duration for the message.
"""

from __future__ import annotations

from dispatchlab.core.errors import ValidationError
from dispatchlab.core.precision_target import Precision
from dispatchlab.model.system import System

#: about 17 minutes of one core (a sweep spreads it over its workers)
WORK_LIMIT = 3e10
#: measured: 50x0.1,50x0.5, M = 10, JSQ: 3.2·10^5 slots/s × 110 ≈ 3.5·10^7 (2-core machine)
UPDATES_PER_SECOND = 3e7


def slot_cost(system: System) -> float:
    """Server-slot updates of one slot: N + M, plus λ_Σ when every job is dispatched alone."""
    per_job = system.arrival_rate if system.dispatch == "per_job" else 0.0
    return float(system.n_servers + system.dispatchers) + per_job


def system_work(system: System, slots: int, replications: int = 1,
                precision: Precision | None = None) -> float:
    """Server-slot updates of ``replications`` runs of ``slots`` slots on ``system``, or of
    a precision run's whole slot budget (which it may spend) when ``precision`` is given."""
    if precision is not None:
        return slot_cost(system) * float(precision.check(slots, replications).max_slots)
    return slot_cost(system) * float(slots) * float(replications)


def _duration(seconds: float) -> str:
    for unit, size in (("years", 3.15e7), ("days", 86400.0), ("hours", 3600.0),
                       ("minutes", 60.0)):
        if seconds >= size:
            return f"{seconds / size:.3g} {unit}"
    return f"{seconds:.3g} seconds"


def describe_work(work: float) -> str:
    """``2.1e+13 server-slot updates (about 8.1 days on one core)``."""
    return f"{work:.3g} server-slot updates (about {_duration(work / UPDATES_PER_SECOND)} " \
           "on one core)"


def check_work(work: float, *, confirmed: bool, what: str = "this run",
               field: str = "budget", check: str = "slots, replications and rates") -> None:
    """Refuse ``work`` above :data:`WORK_LIMIT` unless ``confirmed`` (the ``--yes`` flag);
    ``check`` names what to look at."""
    if confirmed or work <= WORK_LIMIT:
        return
    raise ValidationError(
        field, f"{what} is {describe_work(work)}, above the limit of {WORK_LIMIT:.3g}; "
        f"check {check}, or pass --yes to run it anyway")
