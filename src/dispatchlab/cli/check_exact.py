"""``dispatchlab check exact``: the exact stationary law of a small system under a policy,
without simulating (docs/exact.md)."""

from __future__ import annotations

import time
from collections.abc import Iterator
from contextlib import contextmanager, nullcontext
from typing import Annotated

import typer
from rich.markup import escape
from rich.table import Table

from dispatchlab.cli import options
from dispatchlab.cli.app import check_app
from dispatchlab.cli.output import (
    number,
    print_json,
    say_when_piped,
    stderr_console,
    stdout_console,
)

#: a piped or logged stderr gets the solver's line at most this often (seconds)
PIPED_EVERY = 5.0


@check_app.command("exact")
def exact_command(
    policy: Annotated[str, typer.Option(
        help="A policy that declares its exact dispatch law: rand, wrand, rr, jsq, jsed, pod, "
        "balanced-pod, jiq and jbt (M = 1).")] = "jsq",
    set_: options.PolicyParams = None,
    servers: options.Servers = None,
    dispatchers: options.Dispatchers = None,
    load: options.Load = None,
    epsilon: options.Epsilon = None,
    arrivals: options.Arrivals = None,
    service: options.Service = None,
    dispatch: options.Dispatch = None,
    split: options.Split = None,
    truncation: Annotated[int | None, typer.Option(
        help="K: keep ΣQ ≤ K \\[default: grow K until P(ΣQ = K) ≤ --tolerance].",
        show_default=False)] = None,
    tolerance: Annotated[float | None, typer.Option(
        help="Target mass at the truncation edge P(ΣQ = K) \\[default: 1e-9].",
        show_default=False)] = None,
    max_states: Annotated[int | None, typer.Option(
        help="Refuse a chain with more states than this (default: 400,000 for the chain, "
        "2·10⁷ for the two-server multilevel solver it hands JIQ/JBT-r over to).",
        show_default=False)] = None,
    method: Annotated[str, typer.Option(
        help="chain: the truncated sparse chain (the two-server multilevel solver for "
        "JIQ/JBT-r when it is too large); qbd: two servers, one dispatcher, Bernoulli laws, a "
        "JSQ-type rule, by logarithmic reduction (any ε > 0, e.g. 1e-4); auto: the chain, "
        "and the QBD where the chain would be too large and the QBD applies.")] = "auto",
    qbd: Annotated[bool, typer.Option("--qbd", help="Same as --method qbd.")] = False,
    json_: options.Json = False,
) -> None:
    """E[ΣQ], E[Q_n] and P(ΣQ = k) of the stationary law of a small system (truncated sparse
    chain, or the two-server QBD), with the truncation level and the mass at its edge;
    refused when no method fits."""
    from dispatchlab.core.errors import require
    from dispatchlab.simulation.exact import exact
    from dispatchlab.specs.run import RunSpec, parse_assignments

    require(not qbd or method in ("auto", "qbd"), "qbd",
            f"--qbd is --method qbd; it contradicts --method {method}")

    spec = RunSpec().with_overrides(
        policy=policy, params=parse_assignments(set_) or None, servers=servers,
        dispatchers=dispatchers, load=load, epsilon=epsilon, arrivals=arrivals,
        service=service, dispatch=dispatch, split=split)
    system = spec.build_system()
    chosen = spec.make_policy()
    if qbd:
        method = "qbd"
    with nullcontext() if json_ else solve_status():
        data = exact(system, chosen, method=method, truncation=truncation,
                     tolerance=tolerance, max_states=max_states).to_dict()
    qbd = "phase_limit" in data  # (auto may have chosen the QBD)
    if json_:
        print_json({"system": system.describe(), **data})
        return
    table = Table(title=escape(f"dispatchlab check exact: {policy}"), show_header=False,
                  title_justify="left")
    table.add_column("quantity", style="bold")
    table.add_column("value", justify="right")
    table.add_row("method", escape(data["method"]))
    table.add_row("E[ΣQ]", f"{data['mean_total_queue']:.10g}")
    table.add_row("E[Q_n]", ", ".join(f"{v:.6g}" for v in data["mean_queues"]))
    if qbd:
        table.add_row("ε·E[ΣQ]", f"{data['epsilon'] * data['mean_total_queue']:.8g}")
        table.add_row("error of E[ΣQ] (rounding, estimated)", number(data["error"]))
        table.add_row("phase limit D (|Q1 − Q2| ≤ D)", str(data["phase_limit"]))
        table.add_row("P(|Q1 − Q2| = D)", number(data["edge_mass"]))
        table.add_row("spectral radius of R", f"{data['spectral_radius']:.10g}")
    else:
        distribution = data["total_queue_distribution"]
        table.add_row("P(ΣQ = k), k = 0…5", ", ".join(number(v) for v in distribution[:6]))
        table.add_row("truncation K (ΣQ ≤ K)", str(data["truncation"]))
        table.add_row("P(ΣQ = K), the edge mass", number(data["edge_mass"]))
        table.add_row("E[ΣQ] beyond K (extrapolated)", number(data["truncation_error"]))
        table.add_row("jobs lost per slot at the edge", number(data["loss_rate"]))
        table.add_row("states (memory values)",
                      f"{data['states']:,} ({data['memory_values']})")
        if data["law_tail"] > 0:
            table.add_row("law tail cut", number(data["law_tail"]))
        extras = data.get("extras") or {}
        if "residual" in extras:  # the two-server multilevel solver
            table.add_row("residual ‖πP − π‖₁", number(extras["residual"]))
            table.add_row("E[U_Σ], E[U_Σ²]", f"{extras['mean_unused']:.10g}, "
                          f"{extras['mean_unused_square']:.10g}")
            table.add_row("E[ΣQ(t+1)·ΣU(t)] (Eq. 7)", f"{extras['cross_term']:.10g}")
    table.add_row("seconds", f"{data['seconds']:.3f}")
    stdout_console().print(table)


@contextmanager
def solve_status() -> Iterator[None]:
    """The solver's progress on stderr (:mod:`dispatchlab.solvers.progress`): on a terminal, a
    spinner with its latest line; piped or logged, a chain's size as it is said, and the
    latest line at most every :data:`PIPED_EVERY` seconds from the first second on. stdout
    is never touched."""
    from dispatchlab.solvers.progress import reporting

    console = stderr_console()
    started = time.perf_counter()
    last = [started - PIPED_EVERY]
    with console.status("solving …") as status:
        def show(line: str) -> None:
            status.update(f"solving: {escape(line)}")
            now = time.perf_counter()
            # (a chain's size, said before it is built, at once)
            if line.endswith("…") or (now - started >= 1.0 and now - last[0] >= PIPED_EVERY):
                last[0] = now
                say_when_piped(console, line)

        with reporting(show):
            yield
