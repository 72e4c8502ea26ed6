"""``dispatchlab`` (the installed command) and ``python -m dispatchlab``: the command line,
with Ctrl-C, SIGTERM and SIGHUP taken as one line from the start. The command line's own
modules (Typer, rich, every command's module) take a few tenths of a second to load, and a
stop in that time had been a ``KeyboardInterrupt`` traceback."""

from __future__ import annotations

import sys

from dispatchlab.core.signals import signals_as_interrupts


def main() -> None:
    """Load the command line inside :func:`signals_as_interrupts`, then run it
    (:func:`dispatchlab.cli.entry_point`)."""
    with signals_as_interrupts() as received:
        try:
            from dispatchlab.cli import entry_point
        except KeyboardInterrupt as stop:
            print(str(stop) or "interrupted", file=sys.stderr)
            raise SystemExit(received.exit_status(130)) from None
    entry_point()


if __name__ == "__main__":
    main()
