"""``dispatchlab policies``: the registered policies, their parameters and their theory."""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Annotated, Any

import typer
from rich.markup import escape
from rich.table import Table

from dispatchlab.cli import options
from dispatchlab.cli.app import app
from dispatchlab.cli.output import params_text, print_json, stdout_console

if TYPE_CHECKING:  # the registry imports every policy module (numba): loaded when listed
    from dispatchlab.policies import Param


def allowed_values(param: Param) -> str:
    """The allowed values of a parameter: its choices, or its interval, e.g. ``(0, 1]``."""
    if param.choices:
        return "{" + ", ".join(map(str, param.choices)) + "}"
    if param.kind is bool:
        return "{true, false}"
    if param.low is None and param.high is None:
        return param.kind.__name__
    low = "−∞" if param.low is None else f"{param.low:g}"
    high = "∞" if param.high is None else f"{param.high:g}"
    opening = "(" if param.low is None or param.low_open else "["
    closing = ")" if param.high is None else "]"
    return f"{param.kind.__name__} in {opening}{low}, {high}{closing}"


def value_text(value: Any) -> str:
    """A default as a user types it after ``--set`` (``true``, ``0.5``, ``name``)."""
    if isinstance(value, bool):
        return str(value).lower()
    return str(value)


def param_record(param: Param) -> dict[str, Any]:
    """The JSON record of one policy parameter (``dispatchlab policies --json``): name, type,
    default, allowed values, choices, bounds (an infinite bound as ``None``) and its doc."""
    def finite(value: float | None) -> float | None:
        return value if value is None or math.isfinite(value) else None

    return {
        "name": param.name, "type": param.kind.__name__, "default": param.default,
        "allowed": allowed_values(param), "choices": list(param.choices),
        "low": finite(param.low), "high": finite(param.high), "low_open": param.low_open,
        "doc": param.doc,
    }


def policy_records() -> list[dict[str, Any]]:
    """One record per registered policy and preset (what ``--json`` prints)."""
    from dispatchlab.policies import catalog
    from dispatchlab.policies.api import public_name_of

    return [
        {"name": name, "python": f"dispatchlab.policies.{public_name_of(name)}",
         "summary": summary, "theory": theory, "parameters": [param_record(p) for p in params]}
        for name, summary, theory, params in catalog()
    ]


def continuous_records() -> list[dict[str, Any]]:
    """The continuous-time policies, with their aliases and parameters, then the user rules
    registered in this process (``--import`` their module)."""
    from dispatchlab.continuous.policies import ALIASES, POLICIES
    from dispatchlab.continuous.user_rules import RULES

    return [{"name": policy.name, "time": "continuous", "summary": policy.summary,
             "aliases": {alias: params for alias, (target, params) in ALIASES.items()
                         if target == policy.name},
             "parameters": dict(policy.defaults)} for policy in POLICIES.values()] + [
        {"name": rule.name, "time": "continuous", "summary": rule.summary or "(a user rule)",
         "aliases": {}, "parameters": dict(rule.params), "user": True}
        for rule in RULES.values()]


@app.command("policies")
def policies_command(
    json_: Annotated[bool, typer.Option("--json", help="Print a JSON array.")] = False,
    time: options.Time = None,
    import_: options.Import = None,
) -> None:
    """List every registered policy with its parameters and what theory says about it
    (with --time continuous: the continuous-time policies and their aliases); --import
    MODULE lists the policies and rules that module registers too."""
    from dispatchlab.cli.run_continuous import time_model
    from dispatchlab.core.imports import import_user_modules

    import_user_modules(import_ or [])

    if time_model(time) == "continuous":
        continuous_table(continuous_records(), json_)
        return
    records = policy_records()
    if json_:
        print_json(records)
        return
    table = Table(title="Registered policies (parameters: --set KEY=VALUE)",
                  title_justify="left", show_lines=True)
    table.add_column("policy", style="bold", no_wrap=True)
    table.add_column("parameters (default; allowed)")
    table.add_column("what it does / theory")
    for record in records:
        params = "\n".join(
            f"{p['name']}={value_text(p['default'])}; {p['allowed']}: {p['doc']}"
            for p in record["parameters"]) or "—"
        text = escape(record["summary"])
        if record["theory"]:
            text += f"\n[dim]{escape(record['theory'])}[/]"
        name = f"{escape(record['name'])}\n[dim]{escape(record['python'].rsplit('.', 1)[1])}[/]"
        table.add_row(name, escape(params), text)
    stdout_console().print(table)
    stdout_console().print("Continuous-time policies (jobs with sizes, FIFO/PS/SRPT servers): "
                           "dispatchlab policies --time continuous")


def continuous_table(records: list[dict[str, Any]], json_: bool) -> None:
    """Print the continuous-time policies as a table or JSON."""
    if json_:
        print_json(records)
        return
    table = Table(title="Continuous-time policies (dispatchlab run --time continuous "
                  "--policy NAME; parameters: --set KEY=VALUE)", title_justify="left",
                  show_lines=True)
    table.add_column("policy", style="bold", no_wrap=True)
    table.add_column("aliases")
    table.add_column("parameters (default)")
    table.add_column("rule")
    for record in records:
        aliases = "\n".join(f"{alias}" + (f" ({params_text(params)})" if params else "")
                            for alias, params in record["aliases"].items()) or "—"
        params = ", ".join(f"{key}={value_text(value)}"
                           for key, value in record["parameters"].items()) or "—"
        table.add_row(escape(record["name"]), escape(aliases), escape(params),
                      escape(record["summary"]))
    stdout_console().print(table)
