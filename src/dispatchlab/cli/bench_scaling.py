"""``dispatchlab bench --scaling``: the scaling table and its two summaries."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from rich.console import Console
from rich.table import Table

from dispatchlab.bench.workloads import to_json

TABLE_WIDTH = 160


def _grid(cells: Sequence[dict[str, Any]]) -> list[tuple[int, int]]:
    return sorted({(c["servers"], c["dispatchers"]) for c in cells})


def scaling_table(cells: Sequence[dict[str, Any]]) -> Table:
    """ns per job (the median of a cell's measurements): one row per family, one column
    per (N, M)."""
    from dispatchlab.bench.scaling import median_cells

    cells = median_cells(cells)
    grid = _grid(cells)
    repeats = max(c["repeats"] for c in cells)
    from dispatchlab.bench.machine import processor

    table = Table(title="dispatchlab bench --scaling: ns per job (CPU time / jobs arrived)"
                  + (f", median of {repeats}" if repeats > 1 else "")
                  + f"; processor: {processor()}")
    table.add_column("family", no_wrap=True)
    for n, m in grid:
        table.add_column(f"N={n:g} M={m}", justify="right", no_wrap=True)
    cost = {(c["family"], c["servers"], c["dispatchers"]): c["ns_per_job"] for c in cells}
    for family in dict.fromkeys(c["family"] for c in cells):
        table.add_row(family, *(f"{cost[(family, n, m)]:,.0f}" if (family, n, m) in cost
                                else "—" for n, m in grid))
    return table


def ratio_table(cells: Sequence[dict[str, Any]]) -> Table:
    """cost(M = largest)/cost(M = 1) at N = 10⁴ (or the largest N run) per family: the
    median of the rounds' ratios and, with several rounds, their range."""
    from dispatchlab.bench.scaling import RATIO_SERVERS, dispatcher_ratios

    ratios = dispatcher_ratios(cells)
    servers = (RATIO_SERVERS if any(c["servers"] == RATIO_SERVERS for c in cells)
               else max(c["servers"] for c in cells))
    top = max(c["dispatchers"] for c in cells)
    table = Table(title=f"cost(M = {top}) / cost(M = 1) at N = {servers:g} (target ≤ 2)")
    table.add_column("family", no_wrap=True)
    table.add_column("ratio", justify="right")
    table.add_column("rounds' range", justify="right")
    for family, (ratio, low, high) in ratios.items():
        table.add_row(family, f"{ratio:.2f}", f"{low:.2f}–{high:.2f}" if high > low else "")
    return table


def show_scaling(families: Sequence[str] | None, *, quick: bool, json_output: bool,
                 repeat: int = 1, servers: Sequence[int] | None = None,
                 dispatchers: Sequence[int] | None = None) -> None:
    """Run the scaling benchmark (on the grid ``servers`` × ``dispatchers`` when given);
    print JSON lines (one per measurement), or the tables at the end."""
    from dispatchlab.bench.scaling import relative_cost, run_scaling  # simulate: numba

    console = Console(stderr=not json_output)

    from dispatchlab.bench.machine import processor

    def show(cell: dict[str, Any]) -> None:
        if json_output:
            print(to_json({**cell, "processor": processor()}), flush=True)
        else:
            console.print(f"[dim]{cell['family']} N={cell['servers']} M={cell['dispatchers']}: "
                          f"{cell['ns_per_job']:,.0f} ns/job[/dim]")

    cells = run_scaling(families, quick=quick, servers=servers, dispatchers=dispatchers,
                        repeat=repeat, on_cell=show)
    if json_output or not cells:
        return
    console.width = max(console.width, TABLE_WIDTH)
    console.print(scaling_table(cells))
    console.print(ratio_table(cells))
    pi = relative_cost(cells, "pi-jsq", "jsq")
    if pi:
        line = ", ".join(f"N={n:g} M={m}: {r:.2f}" for (n, m), r in sorted(pi.items()))
        console.print(f"pi-jsq / jsq (target ≤ 2): {line}")
