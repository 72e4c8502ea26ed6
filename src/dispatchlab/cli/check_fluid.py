"""``dispatchlab check fluid``: the fluid (mean-field) limit of a system's family as N → ∞
at its load, per-job dispatch, without simulating (docs/fluid.md)."""

from __future__ import annotations

from typing import Annotated

import typer
from rich.markup import escape
from rich.table import Table

from dispatchlab.cli import options
from dispatchlab.cli.app import check_app
from dispatchlab.cli.output import number, print_json, stdout_console, to_resolution


@check_app.command("fluid")
def fluid_command(
    policy: Annotated[str, typer.Option(
        help="A policy with a fluid rule: rand, wrand, pod (any d), jsq (uniform ties, no "
        "lag or water-filling), jiq and jbt.")] = "pod",
    set_: options.PolicyParams = None,
    servers: options.Servers = None,
    dispatchers: options.Dispatchers = None,
    load: options.Load = None,
    epsilon: options.Epsilon = None,
    arrivals: options.Arrivals = None,
    service: options.Service = None,
    dispatch: Annotated[str, typer.Option(
        help="The dispatch model: per-job (the only one with a fluid limit; a batch of order "
        "N/M jobs goes to one server).")] = "per-job",
    tolerance: Annotated[float | None, typer.Option(
        help="Stop when ‖p(t+1) − p(t)‖₁ ≤ this \\[default: 1e-12].",
        show_default=False)] = None,
    max_iterations: Annotated[int | None, typer.Option(
        help="Give up after this many slots of the map \\[default: 200,000].",
        show_default=False)] = None,
    refined: Annotated[bool, typer.Option(
        "--refined", help="Also the 1/N term c of the refined mean field (rand, wrand and "
        "pod, Poisson arrivals): E[ΣQ] ≈ N·E[Q] + c at the system's N.")] = False,
    json_: options.Json = False,
) -> None:
    """E[Q] per server and per class, E[ΣQ] = N·E[Q], the mean delay, the probability of
    joining a busy server and P(Q_j ≥ k) at the fixed point of the fluid map of the
    system's server classes (N → ∞ at the same fractions and load)."""
    from dispatchlab.simulation.fluid import fluid
    from dispatchlab.specs.run import RunSpec, parse_assignments

    spec = RunSpec().with_overrides(
        policy=policy, params=parse_assignments(set_) or None, servers=servers,
        dispatchers=dispatchers, load=load, epsilon=epsilon, arrivals=arrivals,
        service=service, dispatch=dispatch)
    system = spec.build_system()
    data = fluid(system, spec.make_policy(), tolerance=tolerance,
                 max_iterations=max_iterations, refined=refined).to_dict()
    if json_:
        print_json({"system": system.describe(), **data})
        return
    table = Table(title=escape(f"dispatchlab check fluid: {data['policy']} (N → ∞, per-job "
                               f"dispatch, ρ = {system.arrival_rate / system.mu_sum:.4g})"),
                  show_header=False, title_justify="left")
    table.add_column("quantity", style="bold")
    table.add_column("value", justify="right")
    table.add_row("E[Q] per server", f"{data['mean_queue_per_server']:.8g}")
    for entry, mean in zip(data["classes"], data["mean_queue_by_class"], strict=True):
        table.add_row(f"E[Q], class μ = {entry['mu']:g} ({entry['fraction']:.3g} of the "
                      "servers)", f"{mean:.8g}")
    table.add_row(f"E[ΣQ] at N = {system.n_servers:,} (N·E[Q])",
                  f"{data['mean_total_queue']:.8g}")
    if refined:  # to c's resolution (its finite differences), which the sum inherits
        resolution = data["refined_resolution"]
        table.add_row("1/N term c (E[Q] per server ≈ E[Q] + c/N)",
                      to_resolution(data["refined_correction"], resolution))
        table.add_row(f"E[ΣQ] at N = {system.n_servers:,}, refined (N·E[Q] + c)",
                      to_resolution(data["refined_mean_total_queue"], resolution))
    table.add_row("mean delay (slots, Little)", f"{data['mean_delay']:.8g}")
    table.add_row("P(a job joins a busy server)", number(data["wait_probability"]))
    tails = data["tail_by_class"][0][:6]
    table.add_row("P(Q ≥ k), k = 0…5, first class", ", ".join(number(v) for v in tails))
    table.add_row("truncation K, mass at K", f"{data['truncation']:,}, "
                  f"{number(data['edge_mass'])}")
    table.add_row("iterations, residual ‖p(t+1) − p(t)‖₁",
                  f"{data['iterations']:,}, {number(data['residual'])}")
    for note in data["notes"]:
        table.add_row("note", escape(note))
    table.add_row("seconds", f"{data['seconds']:.3f}")
    stdout_console().print(table)
