"""A stop (Ctrl-C, and SIGTERM/SIGHUP where a handler raises for them) that comes while
numba compiles is never lost.

llvmlite calls back into Python while it generates code (through ctypes: its object
cache's notifications); an exception raised inside such a callback is printed ("Exception
ignored on calling ctypes callback function") and dropped. A Ctrl-C that landed there was
lost: a cold run carried on compiling, ran all its slots and ended with exit 0.

:func:`install` wraps numba's ``Dispatcher.compile``: while an outermost compilation runs
in the main thread, each of these signals with a Python handler gets that handler behind a
note (it still raises at once); a compilation that returns although one came calls the
handler again, which raises now. A signal that is ignored, or left to the operating
system, keeps its behaviour.
"""

from __future__ import annotations

import signal
import threading
from collections.abc import Callable
from types import FrameType
from typing import Any

_state: dict[str, bool] = {"installed": False}
#: the signals that stop a command (those this platform has)
_STOPS = tuple(getattr(signal, name) for name in ("SIGINT", "SIGTERM", "SIGHUP")
               if hasattr(signal, name))


def _noting(handler: Callable[[int, FrameType | None], Any], noted: list[int]) -> Any:
    def note_then_handle(signum: int, frame: FrameType | None) -> Any:
        noted.append(signum)
        return handler(signum, frame)

    note_then_handle.noting = True  # type: ignore[attr-defined]
    return note_then_handle


def install() -> None:
    """Wrap numba's ``Dispatcher.compile`` (idempotent)."""
    if _state["installed"]:
        return
    from numba.core.dispatcher import Dispatcher

    compile_ = Dispatcher.compile

    def compile_keeping_stops(self: Any, sig: Any) -> Any:
        if threading.current_thread() is not threading.main_thread():
            return compile_(self, sig)
        handlers = {signum: signal.getsignal(signum) for signum in _STOPS}
        handlers = {signum: handler for signum, handler in handlers.items()
                    if callable(handler) and not getattr(handler, "noting", False)}
        if not handlers:  # (a compilation inside another: the outer one notes)
            return compile_(self, sig)
        noted: list[int] = []
        for signum, handler in handlers.items():
            signal.signal(signum, _noting(handler, noted))
        try:
            result = compile_(self, sig)
        finally:
            for signum, handler in handlers.items():
                if getattr(signal.getsignal(signum), "noting", False):  # (not replaced since)
                    signal.signal(signum, handler)
        if noted:  # it came, and an ignored callback swallowed what its handler raised
            handlers[noted[0]](noted[0], None)
        return result

    compile_keeping_stops.__wrapped__ = compile_  # type: ignore[attr-defined]
    Dispatcher.compile = compile_keeping_stops
    _state["installed"] = True
