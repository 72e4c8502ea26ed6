"""``dispatchlab bench``: the standard workloads against the C yardstick refsim."""

from __future__ import annotations

import math
import sys
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.console import Console
from rich.table import Table

from dispatchlab.bench.workloads import (
    DEFAULT_SEED,
    DEFAULT_SLOTS,
    REFSIM_ENV,
    WORKLOAD_NAMES,
    run_bench,
    to_json,
)
from dispatchlab.cli.app import app
from dispatchlab.core.errors import require

SCALING_FAMILIES_HELP = ("--scaling or --cold: policy family to run (repeatable; default all; "
                         "see README)")

TABLE_WIDTH = 132


def _fmt(value: Any, spec: str) -> str:
    if value is None or (isinstance(value, float) and not math.isfinite(value)):
        return "—"
    return format(value, spec)


def _table(rows: list[dict[str, Any]]) -> Table:
    from dispatchlab.bench.machine import processor

    table = Table(title="dispatchlab bench: ratio = ours / refsim slots/s, same run; "
                  f"processor: {processor()}")
    for column in ("workload", "slots/s", "full", "refsim", "ratio", "full", "mean ΣQ ± 95%",
                   "reference", "ok", "msg/arr"):
        table.add_column(column, justify="left" if column == "workload" else "right",
                         no_wrap=True)
    for row in rows:
        if "skipped" in row:
            continue
        half_width = (row["ci_high"] - row["ci_low"]) / 2
        table.add_row(
            row["name"], _fmt(row["slots_per_second"], ",.0f"),
            _fmt(row["slots_per_second_full"], ",.0f"),
            _fmt(row.get("refsim_slots_per_second"), ",.0f"),
            _fmt(row.get("speed_ratio"), ".2f"), _fmt(row.get("speed_ratio_full"), ".2f"),
            f"{_fmt(row['mean_total_queue'], '.1f')} ± {_fmt(half_width, '.1f')}",
            f"{row['reference_mean_total_queue']:.1f} ± {row['reference_se']:.1f}",
            "yes" if row["reference_agrees"] else "NO",
            _fmt(row["messages_per_arrival"], ".4g"),
        )
    return table


def show_cold(families: list[str] | None, *, json_output: bool) -> None:
    """``bench --cold``: a JSON line or a table row per family, as each finishes."""
    from dispatchlab.bench.cold import cold_rows
    from dispatchlab.bench.machine import processor

    console = Console(stderr=not json_output)

    def progress(row: dict[str, Any]) -> None:
        if json_output:
            print(to_json(row), flush=True)
        else:
            console.print(f"[dim]{row['family']}: {row['wall_seconds']:.1f} s[/dim]")

    with console.status("compiling each family on an empty cache, one at a time …"):
        rows = cold_rows(families, on_row=progress)
    if json_output:
        return
    table = Table(title=f"dispatchlab bench --cold: a first run on an empty numba cache; "
                  f"processor: {processor()}")
    failed = any("error" in row for row in rows)
    for column in ("family", "policy", "wall s", "CPU s", "peak MB", "error")[:6 if failed else 5]:
        table.add_column(column, justify="left" if column in ("family", "policy", "error")
                         else "right")
    for row in rows:
        cells = [row["family"], row["policy"], f"{row['wall_seconds']:.1f}",
                 f"{row['cpu_seconds']:.1f}", f"{row['peak_mb']:,.0f}"]
        table.add_row(*cells, *([row.get("error", "")] if failed else []))
    console.print(table)


@app.command("bench")
def bench(
    slots: Annotated[int, typer.Option(help="slots per workload and run (≥ 1000)")] = DEFAULT_SLOTS,
    seed: Annotated[int, typer.Option(help="seed (ours and refsim's)")] = DEFAULT_SEED,
    workload: Annotated[list[str] | None, typer.Option(
        help=f"workload to run (repeatable; default all): {', '.join(WORKLOAD_NAMES)}")] = None,
    json_output: Annotated[bool, typer.Option("--json", help="one JSON line per workload")] = False,
    refsim: Annotated[Path | None, typer.Option(
        help="refsim.c (built with cc -O3 -march=native) or a built refsim binary; "
        f"default: ${REFSIM_ENV}, else benchmarks/refsim.c of the source checkout")] = None,
    no_refsim: Annotated[bool, typer.Option("--no-refsim", help="do not run refsim")] = False,
    refsim_timeout: Annotated[float | None, typer.Option(
        help="seconds a refsim run may take before it is stopped (default: 60 s plus a "
        "microsecond per slot)", show_default=False)] = None,
    repeat: Annotated[int, typer.Option(
        help="timed runs per workload (with --scaling: per cell, in rounds); speeds and "
        "ratios are medians")] = 1,
    scaling: Annotated[bool, typer.Option(
        "--scaling", help="run the scaling benchmark instead: ns per job of every policy "
        "family over N ∈ {10², …, 10⁵} × M ∈ {1, 10, 100}")] = False,
    quick: Annotated[bool, typer.Option(
        "--quick", help="scaling: a small grid (N ∈ {100, 1000}, M ∈ {1, 10}), seconds")] = False,
    family: Annotated[list[str] | None, typer.Option(help=SCALING_FAMILIES_HELP)] = None,
    servers: Annotated[list[int] | None, typer.Option(
        help="scaling: N of the grid (repeatable; default 10², 10³, 10⁴, 10⁵)",
        show_default=False)] = None,
    dispatchers: Annotated[list[int] | None, typer.Option(
        help="scaling: M of the grid (repeatable; default 1, 10, 100)",
        show_default=False)] = None,
    cold: Annotated[bool, typer.Option(
        "--cold", help="the cold first run of each policy family instead (an empty numba "
        "cache: seconds and peak MB of compiling; --family to choose)")] = False,
) -> None:
    """Run the standard benchmark workloads single-threaded (after a compile run) and
    compare speed and mean ΣQ with the C reference simulator refsim in the same run.

    slots/s is timed with delay tracking and the imbalance pass off (what refsim
    measures too); "full" has every measurement on. With --scaling: the scaling
    benchmark (ns per job against N and M; see benchmarks/README.md). With --cold: each
    policy family's first run on an empty compile cache."""
    require(not (cold and scaling), "cold", "either --cold or --scaling, not both")
    if cold:
        show_cold(family, json_output=json_output)
        return
    if scaling:
        from dispatchlab.cli.bench_scaling import show_scaling

        show_scaling(family, quick=quick, json_output=json_output, repeat=repeat,
                     servers=servers, dispatchers=dispatchers)
        return
    for name, given in (("servers", servers), ("dispatchers", dispatchers)):
        require(given is None, name, "only with --scaling (the grid of the scaling benchmark)")
    console = Console(stderr=not json_output)
    use: Path | bool = False if no_refsim else (refsim if refsim is not None else True)

    def show(row: dict[str, Any]) -> None:
        if json_output:
            print(to_json(row), flush=True)
        else:
            label = row.get("skipped") or f"{row['slots_per_second']:,.0f} slots/s"
            console.print(f"[dim]{row['name']}: {label}[/dim]")

    rows = run_bench(workload, slots=slots, seed=seed, refsim=use, repeat=repeat, on_row=show,
                     refsim_timeout=refsim_timeout)
    missing = next((row["refsim"] for row in rows if row.get("refsim", "off") != "off"), None)
    if missing:
        print(missing, file=sys.stderr)  # one line, whatever the terminal's width
    if not json_output:
        console.width = max(console.width, TABLE_WIDTH)
        console.print(_table(rows))
        for row in rows:
            if "skipped" in row:
                console.print(f"{row['name']}: skipped ({row['skipped']})")
