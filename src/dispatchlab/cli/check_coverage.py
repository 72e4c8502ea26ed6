"""``dispatchlab check coverage``: the measured coverage of the default 95 % CI on systems
whose mean is known exactly (docs/model.md#closed-forms; docs/statistics.md)."""

from __future__ import annotations

from typing import Annotated

import typer
from rich.markup import escape
from rich.table import Table

from dispatchlab.cli.app import check_app
from dispatchlab.cli.output import integer, number, print_json, stderr_console, stdout_console
from dispatchlab.core.errors import require
from dispatchlab.testing.coverage_study import (
    CASE_NAMES,
    DEFAULT_RUNS,
    ESTIMATORS,
    CoverageRow,
    measure_estimators,
    select_cases,
)


@check_app.command("coverage")
def coverage_command(
    case: Annotated[list[str] | None, typer.Option(
        "--case", help=f"A case (repeatable): {', '.join(CASE_NAMES)} \\[default: all].",
        show_default=False)] = None,
    fast: Annotated[bool, typer.Option(
        "--fast", help="Only the quick subset the test suite runs.")] = False,
    runs: Annotated[int, typer.Option(help="K, independent runs per case.")] = DEFAULT_RUNS,
    slots: Annotated[int | None, typer.Option(
        help="Slots per run \\[default: each case's, 10^6].", show_default=False)] = None,
    replications: Annotated[int | None, typer.Option(
        help="Replications per run \\[default: simulate's, 1].", show_default=False)] = None,
    precision_rel: Annotated[float | None, typer.Option(
        help="Run each to this relative half-width instead of a fixed length.",
        show_default=False)] = None,
    seed: Annotated[int, typer.Option(help="Run k of a case uses seed + k.")] = 0,
    estimator: Annotated[str, typer.Option(
        help="The interval to check: coupled, plain, or both (from the same runs).")] = "both",
    workers: Annotated[int | None, typer.Option(
        help="Processes \\[default: every core].", show_default=False)] = None,
    json_: Annotated[bool, typer.Option("--json", help="Print one JSON object.")] = False,
) -> None:
    """Run K independent runs of each case with the default settings and report how often
    the 95 % CI of E[ΣQ] contains the exact mean, ± its binomial standard error."""
    require(runs >= 2, "runs", f"must be ≥ 2 (got {runs})")
    require(seed >= 0, "seed", f"must be ≥ 0 (got {seed})")
    require(workers is None or workers >= 1, "workers", f"must be ≥ 1 (got {workers})")
    require(estimator in (*ESTIMATORS, "both"), "estimator",
            f"allowed: {', '.join(ESTIMATORS)}, both (got {estimator!r})")
    wanted = ESTIMATORS if estimator == "both" else (estimator,)
    given = {key: value for key, value in (("replications", replications),
                                           ("precision_rel", precision_rel)) if value is not None}
    settings = {key: value for key, value in given.items() if key != "precision_rel"}
    if precision_rel is not None:
        from dispatchlab.core.precision_target import Precision  # numpy: not for --help

        settings["precision"] = Precision(rel=precision_rel)
    chosen = select_cases(case, fast=fast)
    rows: list[CoverageRow] = []
    for index, item in enumerate(chosen, start=1):
        case_settings = dict(settings, slots=slots) if slots is not None else settings
        with stderr_console().status(f"[{index}/{len(chosen)}] {item.name}: {runs} runs …"):
            by_estimator = measure_estimators(item, runs=runs, seed=seed, workers=workers,
                                              **case_settings)
        rows.extend(by_estimator[name] for name in wanted)
    if json_:
        print_json({"runs": runs, "seed": seed, "settings": given,
                    "cases": [row.to_dict() for row in rows]})
        return
    stdout_console().print(coverage_table(rows))


def coverage_table(rows: list[CoverageRow]) -> Table:
    """The table of ``dispatchlab check coverage``: per case and estimator, how often the 95 %
    CI of E[ΣQ] covered the exact mean (± its standard error), with run length, relative
    half-width and bias."""
    table = Table(title="dispatchlab check coverage: the 95 % CI of E[ΣQ] against the exact "
                  "mean", title_justify="left",
                  caption="coverage ± sqrt(p̂(1−p̂)/K); runs without an interval "
                  "(too short to say) count as misses", caption_justify="left")
    for name in ("case", "estimator", "exact E[ΣQ]", "K", "coverage", "no CI", "mean run length",
                 "mean rel. half-width", "rel. bias"):
        table.add_column(escape(name), justify="left" if name == "case" else "right")
    for row in rows:
        style = "green" if row.coverage >= 0.9 else "red"
        table.add_row(escape(row.case), row.estimator, number(row.exact_mean), str(row.runs),
                      f"[{style}]{row.coverage:.3f}[/] ± {row.coverage_se:.3f}",
                      str(row.no_interval), integer(row.mean_slots),
                      number(row.mean_relative_half_width, 3),
                      f"{row.relative_bias:+.4f}")
    return table
