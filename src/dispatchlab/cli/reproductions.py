"""``dispatchlab reproductions``: the Reproductions page from a results store (what ``make
reproductions`` runs; :mod:`dispatchlab.report.reproductions`)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from dispatchlab.cli.app import app
from dispatchlab.report import REPRODUCTIONS_STORE


@app.command("reproductions")
def reproductions_command(
    store: Annotated[Path, typer.Option(help="the results store the claims are judged from")]
    = Path(REPRODUCTIONS_STORE),
    out: Annotated[Path, typer.Option(help="the page to write (its figures go beside it)")]
    = Path("docs/reproductions.md"),
    readme: Annotated[Path | None, typer.Option(
        help="also rewrite this README's summary of the verdicts")] = None,
) -> None:
    """Judge every paper claim from the store and write the Reproductions page."""
    from dispatchlab.report.reproductions import write_reproductions

    write_reproductions(store, out, readme)
    print(out)
