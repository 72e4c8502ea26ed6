"""Across processes, a function is compiled once: one process compiles, the others wait and
load it from numba's disk cache.

Two processes that miss the cache for the same function at the same time (the suite's
pytest-xdist workers, a sweep's workers, two terminals) each compiled it, paying its CPU
twice. Here :func:`install` wraps numba's ``Dispatcher.compile``: for a function cached on
disk, a process takes an exclusive lock on a file beside the function's cache index
(``INDEX.nbi.lock``, ``flock``) before it looks in the cache, and holds it while it
compiles and saves; a second process waits on the lock, then finds the entry and loads it.

No deadlock: a process holds the locks of the functions it is compiling, outermost
first, and a function's compilation only ever compiles its callees (never a caller); a
lock it already holds it does not take again. The kernel releases the lock of a process
that dies, and a lock not granted within :data:`WAIT_SECONDS` is given up on (the waiter
then compiles, as without the lock). Without ``fcntl`` (Windows) nothing changes.
"""

from __future__ import annotations

import contextlib
import os
import time
from collections.abc import Iterator
from typing import Any

try:
    import fcntl
except ImportError:  # pragma: no cover - not on POSIX
    fcntl = None  # type: ignore[assignment]

_state: dict[str, Any] = {"installed": False, "skip_busy": False}
#: the lock files this process holds
_held: set[str] = set()
#: how long a process waits for another's compilation before compiling itself
WAIT_SECONDS = 900.0
_POLL_SECONDS = 0.05


class Busy(Exception):
    """Another process is compiling this function (raised instead of waiting once
    :func:`skip_busy` was called)."""


def skip_busy() -> None:
    """From now on, this process does not wait for a function another process is compiling:
    the compilation raises :class:`Busy` instead (for a helper that compiles ahead of a
    run, and has better to do than wait for what the run compiles itself)."""
    _state["skip_busy"] = True


def _lock_path(dispatcher: Any) -> str | None:
    """The lock file of ``dispatcher``'s disk cache, or None (not cached on disk)."""
    from numba.core.caching import Cache

    cache = getattr(dispatcher, "_cache", None)
    if not isinstance(cache, Cache):
        return None
    index = getattr(getattr(cache, "_cache_file", None), "_index_path", None)
    return f"{index}.lock" if index else None


@contextlib.contextmanager
def _locked(path: str) -> Iterator[None]:
    """Hold the exclusive lock on ``path`` (re-entrant within the process)."""
    if path in _held or fcntl is None:
        yield
        return
    try:
        descriptor = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
    except OSError:  # a cache folder we cannot write to: numba will not save there either
        yield
        return
    try:
        deadline = time.monotonic() + WAIT_SECONDS
        while True:
            try:
                fcntl.flock(descriptor, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except BlockingIOError:
                if _state["skip_busy"]:
                    raise Busy(path) from None
                if time.monotonic() > deadline:
                    break  # compile without it rather than wait forever
                time.sleep(_POLL_SECONDS)
        _held.add(path)
        try:
            yield
        finally:
            _held.discard(path)
    finally:
        os.close(descriptor)  # releases the lock


def install() -> None:
    """Wrap numba's ``Dispatcher.compile`` (idempotent)."""
    if _state["installed"] or fcntl is None:
        return
    from numba.core import sigutils
    from numba.core.dispatcher import Dispatcher

    compile_ = Dispatcher.compile

    def compile_once(self: Any, sig: Any) -> Any:
        path = _lock_path(self)
        if path is None or tuple(sigutils.normalize_signature(sig)[0]) in self.overloads:
            return compile_(self, sig)
        with _locked(path):
            return compile_(self, sig)

    Dispatcher.compile = compile_once
    _state["installed"] = True
