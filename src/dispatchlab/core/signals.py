"""SIGTERM and SIGHUP stop a command as Ctrl-C does.

A command stopped by ``kill`` (SIGTERM) or by its terminal going away (SIGHUP) died at once
by the signal's default action: no line, its worker processes and multiprocessing's
resource tracker left running under PID 1, a sweep's run left ``running`` with its claims
in the store. Inside :func:`signals_as_interrupts` both raise :class:`Terminated`, a
``KeyboardInterrupt``, so every clean-up written for Ctrl-C runs for them too (pools
stopped and reaped, the run marked interrupted, nothing written half-way); the command
then exits with 128 + the signal's number (143, 129), as a shell reports a process the
signal killed. A second such signal during the clean-up kills the process (the default
action comes back with the first).

The Python API's long calls (``simulate``, ``sweep``, ``compare``, ``exact``) do the same
inside :func:`api_stops` for a signal still at its default action (a script's, a
kernel's): the call cleans up, says what it got to in one line, and the process then ends
by the signal, as it would have.

A loop around compiled code (the slot loop's chunks, a solver's cycles) takes any of these
stops, and Ctrl-C, as a flag inside :func:`stops_caught` and raises between two calls.
"""

from __future__ import annotations

import contextlib
import os
import signal
import sys
import threading
from collections.abc import Callable, Iterator, Sequence
from types import FrameType
from typing import TypeVar

T = TypeVar("T")

#: the signals that stop a command as Ctrl-C does (those this platform has)
STOPPING = tuple(getattr(signal, name) for name in ("SIGTERM", "SIGHUP")
                 if hasattr(signal, name))


class Terminated(KeyboardInterrupt):
    """A command stopped by ``signum`` (SIGTERM, SIGHUP) as by Ctrl-C; ``detail`` says how
    far it got."""

    def __init__(self, signum: int, detail: str = "") -> None:
        super().__init__(signum, detail)
        self.signum = signum
        self.detail = detail

    @property
    def exit_status(self) -> int:
        return 128 + self.signum

    def __str__(self) -> str:
        name = signal.Signals(self.signum).name
        return f"stopped by {name}: {self.detail}" if self.detail else f"stopped by {name}"

    def __reduce__(self) -> tuple[type, tuple[int, str]]:  # survives a worker process
        return type(self), (self.signum, self.detail)


def interrupt_saying(interrupt: KeyboardInterrupt, detail: str) -> KeyboardInterrupt:
    """``interrupt`` again, saying ``detail`` (how far the command got): a Ctrl-C is
    "interrupted: DETAIL", a :class:`Terminated` keeps its signal and exit status."""
    return interruption(getattr(interrupt, "signum", signal.SIGINT), detail)


class Received:
    """The stopping signal that came inside :func:`signals_as_interrupts`, if any (a
    command's code may turn the exception into an exit status of its own; Typer makes
    every ``KeyboardInterrupt`` 130): ``exit_status(status)`` is 128 + its number then."""

    def __init__(self) -> None:
        self.signum: int | None = None

    def exit_status(self, status: int) -> int:
        return status if self.signum is None else 128 + self.signum


@contextlib.contextmanager
def signals_as_interrupts() -> Iterator[Received]:
    """While inside (in the main thread), SIGTERM and SIGHUP raise :class:`Terminated`;
    the previous handlers come back on leaving. Elsewhere, nothing changes."""
    if threading.current_thread() is not threading.main_thread():
        yield Received()
        return
    with _raising(STOPPING) as received:
        yield received


@contextlib.contextmanager
def _raising(signums: Sequence[int]) -> Iterator[Received]:
    """``signums`` raise :class:`Terminated` while inside (main thread only); the first
    is noted and makes a second kill (the clean-up is the first one's)."""
    received = Received()

    def note(signum: int) -> None:
        received.signum = signum
        for stopping in signums:
            signal.signal(stopping, signal.SIG_DFL)

    def raise_terminated(signum: int, frame: FrameType | None) -> None:
        note(signum)
        raise Terminated(signum)

    raise_terminated.note = note  # type: ignore[attr-defined]  # (for stops_caught)
    previous = {signum: signal.getsignal(signum) for signum in signums}
    for signum in signums:
        signal.signal(signum, raise_terminated)
    try:
        yield received
    finally:
        for signum, handler in previous.items():
            signal.signal(signum, handler)


#: whether this process is a pool's worker (:func:`leave_stops_to_the_coordinator`)
_in_worker = False


def leave_stops_to_the_coordinator() -> None:
    """In a pool's worker: :func:`api_stops` takes no signal here (the coordinator stops
    its workers with SIGTERM and says what they got to; a worker's own line would only
    repeat it, from a run nobody keeps)."""
    global _in_worker
    _in_worker = True


@contextlib.contextmanager
def api_stops() -> Iterator[None]:
    """For a Python API call (as a decorator or a ``with``): SIGTERM and SIGHUP still at
    their default action, which would end the process at once with the call's workers
    orphaned and a store's run left ``running``, raise :class:`Terminated` inside, in the
    main thread. The call's clean-up then runs as for Ctrl-C; its line goes to stderr and
    the process ends by the signal after all (exit status 128 + n). Handlers someone else
    set (the command line's, a kernel's, the caller's own) are left alone, and so is a
    nested call (its outer call holds the signals). A call made by a worker as it imports
    its coordinator's script ends the worker (:func:`leave_if_importing_the_main_script`)."""
    leave_if_importing_the_main_script()
    taken = [signum for signum in STOPPING if signal.getsignal(signum) == signal.SIG_DFL]
    if not taken or _in_worker or threading.current_thread() is not threading.main_thread():
        yield
        return
    try:
        with _raising(taken):
            yield
    except Terminated as stop:  # (the default actions are back)
        print(stop, file=sys.stderr)
        for stream in (sys.stdout, sys.stderr):
            with contextlib.suppress(OSError, ValueError):
                stream.flush()
        signal.raise_signal(stop.signum)  # ends the process, as the signal would have
        raise


def leave_if_importing_the_main_script() -> None:
    """In a pool worker that is importing its coordinator's main script, leave at once,
    quietly.

    A pool worker runs the top level of the script that started it. A script that calls
    dispatchlab with workers there, without ``if __name__ == "__main__":``, made each worker
    run the call again: its work, then a pool of its own, which multiprocessing refuses
    while the worker starts, with a traceback from every worker (184 lines of stderr for a
    two-worker ``dl.sweep``). The worker now exits before doing anything, and the
    coordinator's error (a dead worker) ends with the line that says to add the guard
    (``core.pools.BROKEN_POOL``)."""
    multiprocessing = sys.modules.get("multiprocessing")  # (a spawned worker has it)
    if multiprocessing is not None and getattr(multiprocessing.current_process(),
                                               "_inheriting", False):
        os._exit(1)


def interruption(signum: int, detail: str = "") -> KeyboardInterrupt:
    """The exception for a stop that :func:`stops_caught` noted: Ctrl-C's
    "interrupted: DETAIL" (without a detail, the bare one Python's handler raises), or
    :class:`Terminated` for SIGTERM and SIGHUP."""
    if signum == signal.SIGINT:
        return KeyboardInterrupt(f"interrupted: {detail}") if detail else KeyboardInterrupt()
    return Terminated(signum, detail)


@contextlib.contextmanager
def stops_caught() -> Iterator[Callable[[], int]]:
    """While inside, a stop only sets a flag; yields a function that reads it (the signal's
    number, 0 while none came). For a loop around compiled code (the slot loop's chunks, a
    solver's cycles), which checks it between two calls: a KeyboardInterrupt raised as
    compiled code returns had surfaced as numba's ``SystemError: … returned a result with
    an exception set``.

    A stop is SIGINT with Python's default handler, or SIGTERM and SIGHUP inside
    :func:`signals_as_interrupts`; a caller that handles these itself (or ignores them)
    keeps its behaviour, and nothing changes outside the main thread. On leaving, the
    previous handlers come back."""
    caught = [0]
    if threading.current_thread() is not threading.main_thread():
        yield lambda: caught[0]
        return
    previous = {}
    for signum in (signal.SIGINT, *STOPPING):
        handler = signal.getsignal(signum)
        note = getattr(handler, "note", None)
        if handler is signal.default_int_handler or note is not None:
            previous[signum] = handler

            def flag(signum: int, frame: FrameType | None, note=note) -> None:
                caught[0] = caught[0] or signum
                if note is not None:
                    note(signum)

            signal.signal(signum, flag)
    try:
        yield lambda: caught[0]
    finally:
        for signum, handler in previous.items():
            if signal.getsignal(signum) is not signal.SIG_DFL:  # (a noted stop kills now)
                signal.signal(signum, handler)


@contextlib.contextmanager
def stops_held() -> Iterator[None]:
    """While inside, a stop waits (:func:`stops_caught`): for a bounded clean-up that a
    second Ctrl-C must not cut short (a pool's workers reaped, a run marked in the store,
    the count the line reports). On leaving, a stop that came is raised — unless the block
    is the clean-up of a stop already on its way out (inside its ``except`` or
    ``finally``), which goes on and says more than the second would."""
    handling = sys.exc_info()[1]
    with stops_caught() as stopped:
        yield
    if stopped() and not isinstance(handling, KeyboardInterrupt):
        raise interruption(stopped())


def call_interruptibly(function: Callable[..., T], *args: object) -> T:
    """``function(*args)`` in a helper thread while this (main) thread waits, so that a
    stop (Ctrl-C, or a signal raised as one) interrupts the wait within a tenth of a second
    although ``function`` spends seconds in C code that checks no signal (SuperLU's
    factorisation releases the GIL but never returns early). The abandoned call runs on
    to its end in its daemon thread; its result is dropped. Off the main thread, a plain
    call."""
    if threading.current_thread() is not threading.main_thread():
        return function(*args)
    outcome: list[object] = []

    def run() -> None:
        try:
            outcome.append((True, function(*args)))
        except BaseException as error:  # noqa: BLE001 - re-raised in the caller's thread
            outcome.append((False, error))

    helper = threading.Thread(target=run, name="dispatchlab-solve", daemon=True)
    helper.start()
    while helper.is_alive():
        helper.join(0.1)
    succeeded, value = outcome[0]
    if not succeeded:
        raise value
    return value
