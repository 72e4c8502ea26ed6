"""The ``dispatchlab`` command line.

Every module in this package attaches its commands to :data:`app` (or a sub-app
such as :data:`check_app`) when imported; :func:`main` imports them all, runs the
app, and turns bad input (:class:`~dispatchlab.core.errors.ValidationError`) into one
line on stderr and exit status 2. A run that breaks an invariant or a policy that breaks
the compiled interface (:class:`~dispatchlab.core.errors.SimulationError`, e.g.
:class:`~dispatchlab.core.errors.PolicyError`) is a bug, not bad input: one ``error:`` line,
exit status 1. Ctrl-C: one line ("interrupted at slot t of T" when a run was under way),
exit status 130; SIGTERM and SIGHUP stop the installed command the same way
(:mod:`dispatchlab.core.signals`), with exit status 143 and 129.
"""

from __future__ import annotations

import atexit
import contextlib
import functools
import importlib
import os
import pkgutil
import signal
import sys
from collections.abc import Callable, Mapping, MutableMapping

import typer

from dispatchlab.cli import rich_help
from dispatchlab.cli.app import app, check_app
from dispatchlab.core.errors import SimulationError, ValidationError, require
from dispatchlab.core.signals import stops_held

#: the command tree, by a name of its own (tests replace ``app`` by a stand-in)
COMMANDS = app
EXIT_BAD_INPUT = 2
EXIT_BUG = 1
EXIT_INTERRUPTED = 130


def _load_commands() -> None:
    rich_help.install()
    for module in pkgutil.iter_modules(__path__):
        if module.name not in ("app", "rich_help"):
            importlib.import_module(f"{__name__}.{module.name}")
    _say_interrupts(COMMANDS)


def _say_interrupts(commands: typer.Typer) -> None:
    """Every command says how it was interrupted, in one line: Typer turns a
    ``KeyboardInterrupt`` raised in a command (Ctrl-C, SIGTERM or SIGHUP as
    :class:`~dispatchlab.core.signals.Terminated`) into exit status 130 without a word, so
    each command's callback is wrapped once to print it first (``RunInterrupted`` says where
    the run stopped, a sweep how many points are stored)."""
    for info in commands.registered_commands:
        callback = info.callback
        if callback is None or getattr(callback, "says_interrupts", False):
            continue

        @functools.wraps(callback)
        def saying(*args: object, callback: Callable[..., object] = callback,
                   **kwargs: object) -> object:
            try:
                return callback(*args, **kwargs)
            except KeyboardInterrupt as interrupt:
                with stops_held():  # a second stop while the line is written would cut it
                    print(str(interrupt) or "interrupted", file=sys.stderr)
                raise

        saying.says_interrupts = True  # type: ignore[attr-defined]
        info.callback = saying
    for group in commands.registered_groups:
        if group.typer_instance is not None:
            _say_interrupts(group.typer_instance)


def _usage_error_types() -> tuple[type[Exception], ...]:
    """Click's usage-error base class: Typer ≥ 0.20 vendors Click as ``typer._click``."""
    types: list[type[Exception]] = []
    for module in ("typer._click.exceptions", "click.exceptions"):
        try:
            types.append(importlib.import_module(module).ClickException)
        except (ImportError, AttributeError):
            continue
    return tuple(types)


def _usage_line(error: Exception) -> str:
    """Click's usage error as ``FIELD: message (see `dispatchlab CMD --help`)``."""
    param = getattr(error, "param", None)
    field = getattr(param, "name", None) or "usage"
    message = " ".join(error.format_message().split())  # type: ignore[attr-defined]
    context = getattr(error, "ctx", None)
    command = getattr(context, "command_path", None) or "dispatchlab"
    return f"{field}: {message} (see `{command} --help`)"


def _check_environment() -> None:
    """The environment variables a run reads, checked before any command: a bad
    ``DISPATCHLAB_MEMORY_LIMIT`` (``nan``, ``lots``) was read only by the policies whose
    memory it guards, and ignored by every other run; numba read ``NUMBA_NUM_THREADS=0``
    in the middle of a run (a ValueError traceback) and printed a traceback as a warning
    for ``NUMBA_NUM_THREADS=abc`` or ``NUMBA_OPT=9``."""
    from dispatchlab.core.ram import LIMIT_VARIABLE, parse_size

    value = os.environ.get(LIMIT_VARIABLE, "").strip()
    if value:
        parse_size(value, LIMIT_VARIABLE)
    threads = os.environ.get("NUMBA_NUM_THREADS", "").strip()
    if threads:
        require(threads.isdigit() and int(threads) >= 1, "NUMBA_NUM_THREADS",
                f"must be an integer ≥ 1, numba's thread count (got {threads!r})")
    level = os.environ.get("NUMBA_OPT", "").strip()
    require(level in ("", "0", "1", "2", "3", "max"), "NUMBA_OPT",
            f"numba's optimisation level: 0, 1, 2, 3 or max (got {level!r})")


def _printable_streams() -> None:
    """stdout and stderr write what their encoding cannot hold as ``?`` (an ASCII terminal
    or ``PYTHONIOENCODING=ascii``: the tables' ρ, Σ and — were a UnicodeEncodeError
    traceback)."""
    for stream in (sys.stdout, sys.stderr):
        try:
            "ρΣ—ε".encode(getattr(stream, "encoding", None) or "utf-8")
        except (UnicodeEncodeError, LookupError):
            with contextlib.suppress(AttributeError, ValueError):
                stream.reconfigure(errors="replace")  # type: ignore[union-attr]


@functools.cache
def _click_command(commands: typer.Typer) -> Callable[..., object]:
    """The click command Typer builds from ``commands``, once a process: calling the Typer
    app builds it again from every command's signature (~40–80 ms a call, measured on AMD
    EPYC; 5 % of the test suite's CPU, which calls :func:`main` thousands of times). The
    app disables Typer's pretty exceptions, the only other thing its call adds."""
    return typer.main.get_command(commands)


def main(argv: list[str] | None = None) -> int:
    """Run the CLI; returns the exit status."""
    try:
        _load_commands()
        _printable_streams()
        _check_environment()
        command = _click_command(app) if isinstance(app, typer.Typer) else app
        status = command(args=argv, standalone_mode=False)
    except ValidationError as error:
        print(f"error: {error}", file=sys.stderr)
        return EXIT_BAD_INPUT
    except OSError as error:  # a file the user named that every check missed (disk full, …)
        where = f" {error.filename!s}" if error.filename else ""
        print(f"error: file:{where} {error.strerror or error}", file=sys.stderr)
        return EXIT_BAD_INPUT
    except MemoryError:
        print("error: memory: this input needs more memory than this machine can give; "
              "use a smaller system or fewer slots", file=sys.stderr)
        return EXIT_BAD_INPUT
    except SystemExit as exit_:
        return int(exit_.code or 0)
    except SimulationError as error:
        print(f"error: {error}", file=sys.stderr)
        return EXIT_BUG
    except KeyboardInterrupt as interrupt:  # outside a command (those say it themselves)
        print(str(interrupt) or "interrupted", file=sys.stderr)
        return EXIT_INTERRUPTED  # (SIGTERM, SIGHUP: entry_point makes it 143, 129)
    except _usage_error_types() as error:  # usage errors: one line too, exit status 2
        if type(error).__name__ == "NoArgsIsHelpError":  # a bare group: its help was shown
            return 0
        print(f"error: {_usage_line(error)}", file=sys.stderr)
        return int(getattr(error, "exit_code", EXIT_BAD_INPUT) or EXIT_BAD_INPUT)
    except typer.Abort as abort:  # click turns an EOFError anywhere into Abort: say what
        cause = abort.__cause__ or abort.__context__
        if isinstance(cause, KeyboardInterrupt):  # (click's own, while it parses)
            print(str(cause) or "interrupted", file=sys.stderr)
            return EXIT_INTERRUPTED
        if cause is not None:
            what = str(cause) or "unexpected end of input"
            print(f"error: internal: {type(cause).__name__}: {what} (a bug: please report it)",
                  file=sys.stderr)
        return 1
    # without standalone mode, ``typer.Exit(code)`` comes back as its code
    return status if isinstance(status, int) and not isinstance(status, bool) else 0


def single_threaded_blas(environ: MutableMapping[str, str] = os.environ,
                         modules: Mapping[str, object] = sys.modules) -> None:
    """One OpenBLAS thread for the command and its worker processes, unless the user's
    environment sets ``OPENBLAS_NUM_THREADS``; before numpy loads (after, it is too late).

    A command's linear algebra is small (the pooled queue's banded solve), and OpenBLAS's
    threads wait for work by spinning: a cold first run on a busy 2-core machine spent
    0.1–1.5 s of CPU in them (3.59 vs 3.78 s, medians of 4 paired runs); pools have a
    process per core already."""
    if "numpy" not in modules:
        environ.setdefault("OPENBLAS_NUM_THREADS", "1")


def plain_compile_errors(environ: MutableMapping[str, str] = os.environ) -> None:
    """numba's compile errors without terminal highlighting, before numba loads.

    With colorama installed, numba wraps the text of every failed overload it tries in
    colorama's stream set-up and tear-down, thousands of times a compile (5,851 in a cold
    classical run, measured with cProfile): a few per cent of a cold run's CPU, for bold
    escape codes in messages that the one-line errors do not show."""
    environ.setdefault("NUMBA_DISABLE_ERROR_MESSAGE_HIGHLIGHTING", "1")


def entry_point() -> None:
    """The ``dispatchlab`` command: :func:`main`, then a fast exit.

    The interpreter's normal teardown frees numba's compiled code and LLVM's JIT one object
    at a time: 2–3 s after every command (measured), which also made Ctrl-C look ignored.
    So: run the atexit hooks, flush, and leave with ``os._exit``."""
    from dispatchlab.core.signals import signals_as_interrupts

    single_threaded_blas()
    plain_compile_errors()
    with signals_as_interrupts() as received:
        status = received.exit_status(main())
    # the command is over: a second Ctrl-C must not cut the clean-up short (a semaphore
    # unlinked but not yet unregistered was reported as leaked; colorama's hook, a traceback)
    with contextlib.suppress(ValueError):  # not the main thread
        signal.signal(signal.SIGINT, signal.SIG_IGN)
    atexit._run_exitfuncs()  # logging, numba, multiprocessing, weakref finalizers
    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(OSError):  # a closed pipe (``| head``) is not an error here
            stream.flush()
    os._exit(status)


__all__ = ["app", "check_app", "main"]
