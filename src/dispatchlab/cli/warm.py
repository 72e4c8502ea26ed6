"""``dispatchlab warm``: compile the slot loop (and chosen policies) into numba's disk cache.

Only a convenience for the first run after an install (``make venv`` runs it): a run
compiles what it needs on first use anyway, and the cold figures in benchmarks/README.md
are measured with an empty cache, without it.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from typing import TYPE_CHECKING, Annotated

import typer
from rich.markup import escape

from dispatchlab.cli.app import app
from dispatchlab.cli.output import number, stderr_console
from dispatchlab.core.errors import ValidationError

if TYPE_CHECKING:
    from dispatchlab.model.system import System
    from dispatchlab.policies import Policy

#: what ``warm`` compiles by default: the loop and the policy of the README's first run
DEFAULT_POLICIES = ("jsq",)
#: a system every policy accepts with its default parameters (d ≤ N, M ≥ 2 for pull, …)
WARM_SERVERS = "4x0.3,4x0.6"
WARM_DISPATCHERS = 2
WARM_SLOTS = 20


def warm_system(dispatch: str = "batch") -> System:
    """The small system the compiling runs use (compiled code does not depend on sizes)."""
    from dispatchlab.model.system import System

    return System.build(WARM_SERVERS, load=0.5, dispatchers=WARM_DISPATCHERS,
                        dispatch=dispatch)


def precompile(system: System, policies: Sequence[Policy | str], *,
               delay: str | None = None, observe: bool = False) -> None:
    """Before a pool of worker processes starts: compile (or load from the disk cache) the
    slot loop and the functions of ``policies`` here, once, with a short run of each on a
    small system like ``system``; the workers then load them from the cache instead of
    each compiling them again (on a cold cache, two workers doubled the CPU of
    ``dispatchlab compare``). A policy the small system does not fit is left to the
    workers. ``delay``: the runs' delay mode (``"all"`` needs a service step of its own);
    ``observe``: the runs observe (per-server statistics, a trajectory: the loop's
    observation step)."""
    from dispatchlab.compiled.lazy import compiled
    from dispatchlab.engine import arrivals, observe
    from dispatchlab.engine.raw import loop_steps, needs_ptrs
    from dispatchlab.simulation.run import simulate

    small = warm_system(system.dispatch)
    with stderr_console().status("compiling (once, for every worker) …"):
        for policy in policies:
            try:
                simulate(small, policy, slots=WARM_SLOTS, seed=0)
            except ValidationError:
                continue
        # the loop's steps for laws and splits the small system may not use
        for step in loop_steps(system, track_delay=delay == "all"):
            compiled(step)
        if observe:
            compiled(observe.observe_step)
        if needs_ptrs(system):  # the small system's λ_m are far below PTRS's
            compiled(arrivals.ptrs_draw)


def compile_on_demand_steps() -> None:
    """The loop's steps that compile on a run's first use of them and that the small warm
    runs do not take: observing (per-server statistics, a trajectory), the PTRS draw of
    dispatchers at λ_m ≥ 600 and the tagging of per-job placements."""
    from dispatchlab.compiled.lazy import compiled
    from dispatchlab.engine import arrivals, observe, tags

    for step in (observe.observe_step, arrivals.ptrs_draw, tags.tag_one_step):
        compiled(step)


@app.command("warm")
def warm_command(
    policy: Annotated[list[str] | None, typer.Option(
        "--policy", "-p", help="A policy whose functions to compile with the loop "
        "(repeatable) \\[default: jsq].", show_default=False)] = None,
    all_: Annotated[bool, typer.Option(
        "--all", help="Every registered policy and preset (minutes on a cold cache).")] = False,
) -> None:
    """Compile the slot loop and policies into numba's disk cache (first runs start at once).

    A run compiles what it needs on first use anyway; this only moves that wait to the
    install (`make venv` runs it)."""
    from dispatchlab.policies import policy_names
    from dispatchlab.simulation.run import simulate

    names = list(policy_names()) if all_ else list(policy or DEFAULT_POLICIES)
    system = warm_system()
    console = stderr_console()
    start = time.process_time()
    for name in names:
        begun = time.process_time()
        try:
            simulate(system, name, slots=WARM_SLOTS, seed=0)
        except ValidationError as error:
            if not all_:
                raise
            console.print(f"skipped {escape(name)}: {escape(str(error))}")
            continue
        console.print(f"{escape(name)}: {number(time.process_time() - begun, 2)} s")
    compile_on_demand_steps()
    console.print(f"compiled (or found cached) the slot loop and {len(names)} "
                  f"polic{'y' if len(names) == 1 else 'ies'} in "
                  f"{number(time.process_time() - start, 2)} s of CPU")
