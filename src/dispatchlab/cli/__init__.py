"""The ``dispatchlab`` command line.

Every module in this package attaches its commands to :data:`app` (or a sub-app
such as :data:`check_app`) when imported; :func:`main` imports them all, runs the
app, and turns bad input (:class:`~dispatchlab.errors.ValidationError`) into one
line on stderr and exit status 2.
"""

from __future__ import annotations

import importlib
import pkgutil
import sys

from dispatchlab.cli.app import app, check_app
from dispatchlab.errors import ValidationError

EXIT_BAD_INPUT = 2


def _load_commands() -> None:
    for module in pkgutil.iter_modules(__path__):
        if module.name != "app":
            importlib.import_module(f"{__name__}.{module.name}")


def main(argv: list[str] | None = None) -> int:
    """Run the CLI; returns the exit status."""
    _load_commands()
    try:
        app(args=argv, standalone_mode=False)
    except ValidationError as error:
        print(f"error: {error}", file=sys.stderr)
        return EXIT_BAD_INPUT
    except SystemExit as exit_:
        return int(exit_.code or 0)
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
        return 130
    except Exception as error:  # click usage errors and aborts
        import click

        if isinstance(error, click.exceptions.ClickException):
            error.show()
            return error.exit_code
        if isinstance(error, click.exceptions.Abort):
            return 1
        raise
    return 0


def entry_point() -> None:
    sys.exit(main())


__all__ = ["app", "check_app", "main"]
