"""``dispatchlab reproductions``: the Reproductions page from a results store (what ``make
reproductions`` runs; :mod:`dispatchlab.report.reproductions`)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from dispatchlab.cli.app import app

#: the committed store the page is judged from (as the report module's DEFAULT_STORE, which
#: this module does not import: every command's module loads at each start)
DEFAULT_STORE = Path("results/reproductions/store.sqlite")


@app.command("reproductions")
def reproductions_command(
    store: Annotated[Path, typer.Option(help="the results store the claims are judged from")]
    = DEFAULT_STORE,
    out: Annotated[Path, typer.Option(help="the page to write (its figures go beside it)")]
    = Path("docs/reproductions.md"),
    readme: Annotated[Path | None, typer.Option(
        help="also rewrite this README's summary of the verdicts")] = None,
) -> None:
    """Judge every paper claim from the store and write the Reproductions page."""
    from dispatchlab.report.reproductions import write_reproductions

    write_reproductions(store, out, readme)
    print(out)
