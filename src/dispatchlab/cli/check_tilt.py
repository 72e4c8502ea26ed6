"""``dispatchlab check tilt``: dispatching preference Δ, tilt and δ of an LED strategy."""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Annotated, Any

import typer

from dispatchlab.cli.app import check_app
from dispatchlab.cli.output import number, print_json, stdout_console
from dispatchlab.core.errors import ValidationError, require

if TYPE_CHECKING:  # the strategies and the tilt check are compiled (numba): loaded when run
    from dispatchlab.policies.led.strategies import Strategy

SHOWN_RANKS = 5
#: ``--samples`` by default: theory.tilt's MONTE_CARLO_SAMPLES (a test checks they agree),
#: written here so that ``--help`` loads no compiled module
DEFAULT_SAMPLES = 20_000


def load_strategy(spec: str, *, pod_d: int, jba_average: str) -> Strategy:
    """A registered name, or ``package.module:attribute`` naming a user strategy."""
    from dispatchlab.policies.led.strategies import (
        builtin_strategy,
        custom_strategy,
        strategy_names,
    )

    if ":" not in spec:
        require(spec.strip().lower().removeprefix("l-") in strategy_names(), "strategy",
                f"allowed: {', '.join(strategy_names())}, or module:function for a user "
                f"strategy (got {spec!r})")
        return builtin_strategy(spec, pod_d=pod_d, jba_average=jba_average)
    module_name, _, attribute = spec.partition(":")
    try:
        target: Any = getattr(importlib.import_module(module_name), attribute)
    except (ImportError, AttributeError) as error:
        raise ValidationError("strategy", f"cannot import {spec!r}: {error}") from None
    return custom_strategy(target, name=attribute)


def _delta_text(delta: list[float]) -> str:
    ranks = list(enumerate(delta, start=1))
    if len(ranks) > 2 * SHOWN_RANKS:
        shown = ranks[:SHOWN_RANKS] + [None] + ranks[-SHOWN_RANKS:]
    else:
        shown = ranks
    return "  ".join("…" if item is None else f"Δ{item[0]}={number(item[1])}" for item in shown)


@check_app.command("tilt")
def tilt_command(
    strategy: Annotated[str, typer.Option(
        help="jsq, jba, pod, or module:function naming a strategy compiled with "
        "dispatchlab.policies.led.strategy_function (checked by Monte Carlo).")] = "jsq",
    servers: Annotated[str, typer.Option(
        help="Service rates μ_n: COUNTxRATE list or rates.")] = "50x0.1,50x0.5",
    pod_d: Annotated[int, typer.Option(help="L-Pod: number of distinct choices.")] = 2,
    jba_average: Annotated[str, typer.Option(
        help="L-JBA threshold: plain or weighted (μ-weighted mean).")] = "plain",
    update: Annotated[str | None, typer.Option(
        help="Also report p of Eq. (5) for this update strategy: push or pull.",
        show_default=False)] = None,
    p: Annotated[float, typer.Option(help="p̂ of the update strategy.")] = 0.1,
    d: Annotated[int, typer.Option(help="push: servers sampled per update.")] = 2,
    dispatchers: Annotated[int, typer.Option(help="M (for pull).")] = 10,
    samples: Annotated[int, typer.Option(
        help="Monte Carlo calls per state (user strategies).")] = DEFAULT_SAMPLES,
    seed: Annotated[int, typer.Option(help="Seed of the state search.")] = 0,
    json: Annotated[bool, typer.Option("--json", help="Print one JSON object.")] = False,
) -> None:
    """Search estimate vectors for the worst dispatching preference Δ and print the verdict:
    tilted, δ-tilted and δ (docs/model.md#led-tilt)."""
    import numpy as np

    from dispatchlab.model.service import parse_rates
    from dispatchlab.theory.tilt import check_tilt
    from dispatchlab.theory.updates import update_probability

    mu = parse_rates(servers)
    require(pod_d >= 1, "pod_d", f"must be ≥ 1 (got {pod_d})")
    require(pod_d <= mu.size, "pod_d", f"must be between 1 and N = {mu.size} (got {pod_d})")
    require(samples >= 100, "samples", f"must be ≥ 100 (got {samples})")
    rule = load_strategy(strategy, pod_d=pod_d, jba_average=jba_average)
    report = check_tilt(rule, mu, samples=samples, seed=seed)
    data = report.to_dict()
    if update is not None:
        eq5 = update_probability(update, p, d=d, n_servers=mu.size, dispatchers=dispatchers)
        data["update"] = {"update": update, "p_hat": p, "d": d, "dispatchers": dispatchers,
                          "p_eq5": eq5}
    if json:
        print_json(data)
        return
    console = stdout_console()
    console.print(f"strategy {report.strategy} on N = {mu.size} servers "
                  f"(μ_Σ = {number(float(np.sum(mu)))}), {report.method}, "
                  f"{report.cases} states searched")
    case = report.worst_case
    title = "first failing state" if report.failing_case is not None else "worst state"
    console.print(f"{title}: {case.label}")
    console.print(f"  {_delta_text(case.delta)}")
    console.print(f"min Δ₁ = {number(report.min_delta_1)}   min −Δ_N = "
                  f"{number(report.min_minus_delta_n)}   max |ΣΔ| = "
                  f"{number(report.max_abs_delta_sum)}")
    console.print(f"tilted: {'yes' if report.tilted else 'no'}   partial sums ≥ 0: "
                  f"{'yes' if report.partial_sums_hold else 'no'}   δ-tilted: "
                  f"{'yes' if report.delta_tilted else 'no'}   δ = {number(report.delta)}"
                  + (f"   (δ quoted by [LED]: {number(report.delta_theory)})"
                     if report.delta_theory is not None else ""))
    for note in report.notes:
        console.print(f"note: {note}")
    if update is not None:
        console.print(f"update {update}(p̂={p:g}" + (f", d={d}" if update == "push" else "")
                      + f"): p of Eq. (5) = {number(data['update']['p_eq5'])}")
