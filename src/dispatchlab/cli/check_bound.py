"""``dispatchlab check bound``: the heavy-traffic reference values of a system, without
simulating (docs/model.md#lower-bound, docs/model.md#random-routing)."""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import TYPE_CHECKING

from rich.markup import escape
from rich.table import Table

from dispatchlab.cli import options
from dispatchlab.cli.app import check_app
from dispatchlab.cli.output import number, print_json, stdout_console
from dispatchlab.core.errors import ValidationError

if TYPE_CHECKING:
    from dispatchlab.model.system import System


def pooled_queue_reference(system: System) -> tuple[float, str]:
    """E[q] of the pooled queue and how it was obtained: the exact banded solve of its
    stationary law, or — when that does not apply or would be too large — nan, with the
    reason; Kingman's analytic bounds are always reported beside it."""
    from dispatchlab.theory.closed_forms import pooled_queue_mean  # scipy

    try:
        return pooled_queue_mean(system), "exact (banded solve of the stationary law)"
    except ValidationError as error:
        return math.nan, f"analytic Kingman bounds only: no exact solve ({error.message})"


def reference_values(system: System) -> dict[str, float | str]:
    """Every policy-free reference value for ``system`` (nan where none applies)."""
    from dispatchlab.theory.bounds import heavy_traffic_limit, lower_bound_total_queue
    from dispatchlab.theory.closed_forms import (
        pooled_queue_bounds,
        random_routing_constant,
        random_routing_total_mean,
        uniform_rand_critical_load,
    )

    def exact(function: Callable[..., float], *args: object) -> float:
        try:
            return float(function(system, *args))
        except ValidationError:
            return math.nan

    low, high = pooled_queue_bounds(system)
    pooled, method = pooled_queue_reference(system)
    return {
        "arrival_rate": system.arrival_rate,
        "mu_sum": system.mu_sum,
        "load": system.load,
        "epsilon": system.epsilon,
        "zeta_half": heavy_traffic_limit(system),
        "lower_bound_total_queue": lower_bound_total_queue(system),
        "pooled_queue_mean": pooled,
        "pooled_queue_method": method,
        "pooled_queue_kingman_low": low,
        "pooled_queue_kingman_high": high,
        "weighted_random_total_queue": exact(random_routing_total_mean, True),
        "random_routing_limit": exact(random_routing_constant),
        "uniform_rand_critical_load": uniform_rand_critical_load(system.mu),
    }


LABELS = {
    "arrival_rate": "λ_Σ", "mu_sum": "μ_Σ", "load": "ρ", "epsilon": "ε",
    "zeta_half": "ζ/2: lim ε·E[ΣQ] of a heavy-traffic optimal policy",
    "lower_bound_total_queue": "lower bound on E[ΣQ], every policy (ζ^(ε)/2ε − B)",
    "pooled_queue_mean": "E[q], the resource-pooled queue (exact)",
    "pooled_queue_method": "how E[q] was computed",
    "pooled_queue_kingman_low": "E[q] Kingman lower bound",
    "pooled_queue_kingman_high": "E[q] Kingman upper bound",
    "weighted_random_total_queue": "E[ΣQ] under weighted RAND (exact)",
    "random_routing_limit": "lim ε·E[ΣQ] under weighted RAND",
    "uniform_rand_critical_load": "uniform RAND stable iff ρ < this",
}


@check_app.command("bound")
def bound_command(
    servers: options.Servers = None,
    dispatchers: options.Dispatchers = None,
    load: options.Load = None,
    epsilon: options.Epsilon = None,
    arrivals: options.Arrivals = None,
    service: options.Service = None,
    dispatch: options.Dispatch = None,
    split: options.Split = None,
    json_: options.Json = False,
) -> None:
    """The lower bound ζ/2 (and its finite-ε form), the pooled queue and the random-routing
    references of a system, without simulating."""
    from dispatchlab.specs.run import RunSpec

    system = RunSpec().with_overrides(
        servers=servers, dispatchers=dispatchers, load=load, epsilon=epsilon,
        arrivals=arrivals, service=service, dispatch=dispatch, split=split).build_system()
    values = reference_values(system)
    if json_:
        print_json({"system": system.describe(), **values})
        return
    table = Table(title="dispatchlab check bound", show_header=False, title_justify="left")
    table.add_column("quantity", style="bold")
    table.add_column("value", justify="right")
    for key, value in values.items():
        table.add_row(escape(LABELS[key]), escape(value) if isinstance(value, str)
                      else number(value))
    stdout_console().print(table)
