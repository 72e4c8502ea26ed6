"""The Typer command tree. Command modules in this package attach their commands here."""

from __future__ import annotations

import typer

app = typer.Typer(
    name="dispatchlab",
    help="A laboratory for dispatching (load-balancing) policies in discrete-time "
    "parallel-server systems.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)
check_app = typer.Typer(help="Theory checks without simulating (stability, tilt, lower "
                        "bound, exact solutions, the fluid limit, CI coverage).",
                        no_args_is_help=True)
app.add_typer(check_app, name="check")
