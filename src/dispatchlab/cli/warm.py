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
from dispatchlab.cli.output import number, say_when_piped, stderr_console
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
    """The small system ``warm`` runs on (LED compiles its ``choose`` for a system's size:
    on this one, the scans)."""
    from dispatchlab.model.system import System

    return System.build(WARM_SERVERS, load=0.5, dispatchers=WARM_DISPATCHERS,
                        dispatch=dispatch)


def precompile(system: System, policies: Sequence[Policy | str], *,
               delay: str = "tagged", observe: bool = False) -> None:
    """Before a pool of worker processes starts: compile (or load from the disk cache) the
    slot loop and the functions of ``policies`` here, once, with a short run of each on
    ``system`` itself (LED's ``choose`` is compiled for the system's size: a scan, a min
    tree or block minima); the workers then load them from the cache instead of each
    compiling them again (on a cold cache, two workers doubled the CPU of
    ``dispatchlab compare``). Says what it compiles, and compiles beside a helper process
    (engine.compile_helper). A policy that does not fit ``system`` is left to the workers
    (they report it). ``delay``: the runs' delay mode (``"all"`` needs a service step of
    its own); ``observe``: the runs observe (per-server statistics, a trajectory: the
    loop's observation step)."""
    from dispatchlab.compiled.lazy import compiled
    from dispatchlab.engine import loop
    from dispatchlab.engine.compile_helper import compile_alongside, describe, pieces_to_compile
    from dispatchlab.engine.observe import observe_step
    from dispatchlab.simulation.run import simulate

    cold = pieces_to_compile([loop.run_slots, *_policy_functions(system, policies)])
    text = f"compiling {describe(cold) or 'the runs'} (once, for every worker) …"
    console = stderr_console()
    if cold:
        say_when_piped(console, text)
    with console.status(escape(text)), compile_alongside(cold):
        for policy in policies:
            try:  # the run's own laws, delay mode and size: the steps the workers take
                simulate(system, policy, slots=WARM_SLOTS, seed=0, delay=delay)
            except ValidationError:
                continue
        if observe:
            compiled(observe_step)


def _policy_functions(system: System, policies: Sequence[Policy | str]) -> list[object]:
    """The compiled functions of ``policies`` on ``system`` (those it fits), in order."""
    from dispatchlab.policies.base import make_policy

    functions: list[object] = []
    for policy in policies:
        try:
            kernel = (make_policy(policy) if isinstance(policy, str) else policy).kernel(system)
        except ValidationError:
            continue
        functions += [kernel.choose, kernel.begin_slot, kernel.end_slot]
    return functions


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
