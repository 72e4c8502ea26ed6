"""What ``dispatchlab sweep`` needs to know of a grid's model: a sweep file read as the
slotted or the continuous-time grid it is (``time = "continuous"``), and a continuous
grid's size, work and dry-run plan."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from rich.markup import escape

from dispatchlab.cli.output import stdout_console
from dispatchlab.core.documents import read_text, read_toml
from dispatchlab.core.errors import ValidationError


def read_sweep_file(path: Path) -> Any:
    """The experiment spec of a sweep file: TOML, or the JSON a store or report keeps;
    a continuous-time grid when it says ``time = "continuous"`` (validated: TOML only,
    as ``ExperimentSpec.from_toml`` validates)."""
    from dispatchlab.specs.continuous_grid import (
        ContinuousExperimentSpec,
        grid_from_json,
        is_continuous,
    )
    from dispatchlab.specs.experiment import ExperimentSpec

    if path.suffix == ".json":
        return grid_from_json(read_text(path, "spec", "spec file"), repr(str(path)))
    data = read_toml(path, "spec", "spec file")
    if not is_continuous(data):
        return ExperimentSpec.from_toml(path)
    spec = ContinuousExperimentSpec.from_dict(data)
    spec.validate()
    return spec


def adjusted(spec: Any, *, slots: int | None, scale: float | None) -> Any:
    """A continuous grid with ``--scale`` applied (a factor on its jobs); ``--slots`` is a
    slotted budget and is refused."""
    if slots is not None:
        raise ValidationError("slots", "a continuous-time grid counts jobs, not slots: use "
                              "--scale (a factor on its jobs) or its jobs = … key")
    if scale is not None:
        spec = spec.scaled(scale)
    spec.validate()
    return spec


def continuous_work(spec: Any, done: int = 0) -> float:
    """The work guard's updates of a continuous grid (the measure of
    ``run --time continuous``: a job's events and, for the rules that scan, its servers),
    the points already stored taken off pro rata."""
    from dispatchlab.cli.run_continuous import SERVERS_PER_UPDATE, UPDATES_PER_JOB
    from dispatchlab.model.service import parse_rates

    points = len(spec.systems) * len(spec.policies) * len(spec.loads) * spec.replications
    if points == 0:
        return 0.0
    work = sum(float(spec.jobs) * spec.replications * len(spec.policies) * len(spec.loads)
               * (UPDATES_PER_JOB + parse_rates(system.servers).size / SERVERS_PER_UPDATE)
               for system in spec.systems)
    return work * max(0.0, 1.0 - done / points)


def print_continuous_plan(spec: Any, done: int, store: Path) -> None:
    """``--dry-run`` of a continuous grid: its shape and what is already stored."""
    console = stdout_console()
    console.print(f"[bold]{escape(spec.name)}[/bold] (dry run, continuous time: nothing is "
                  "run)")
    console.print("  loads: " + ", ".join(f"{load:g}" for load in spec.loads))
    for system in spec.systems:
        console.print(f"  system {escape(system.name)}")
    console.print("  policies: " + escape(", ".join(p.display for p in spec.policies)))
    points = len(spec.systems) * len(spec.policies) * len(spec.loads) * spec.replications
    console.print(f"  {points:,} points ({spec.replications} replication(s) each) of "
                  f"{spec.jobs:,} jobs; {done:,} already in {escape(str(store))}")
