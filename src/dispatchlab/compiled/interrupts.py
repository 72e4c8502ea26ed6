"""A Ctrl-C that comes while numba compiles is never lost.

llvmlite calls back into Python while it generates code (through ctypes: its object
cache's notifications); an exception raised inside such a callback is printed ("Exception
ignored on calling ctypes callback function") and dropped. A Ctrl-C that landed there was
lost: a cold run carried on compiling, ran all its slots and ended with exit 0.

:func:`install` wraps numba's ``Dispatcher.compile``: while an outermost compilation runs
in the main thread (with Python's default SIGINT handler), SIGINT raises
``KeyboardInterrupt`` as before and is also noted; a compilation that returns although
SIGINT came raises ``KeyboardInterrupt`` then. A caller with a SIGINT handler of its own
(or one compiling in another thread) keeps its behaviour.
"""

from __future__ import annotations

import signal
import threading
from types import FrameType
from typing import Any

_state: dict[str, bool] = {"installed": False}


def _note_and_interrupt(noted: list[int]) -> Any:
    def handler(signum: int, frame: FrameType | None) -> None:
        noted.append(signum)
        raise KeyboardInterrupt

    return handler


def install() -> None:
    """Wrap numba's ``Dispatcher.compile`` (idempotent)."""
    if _state["installed"]:
        return
    from numba.core.dispatcher import Dispatcher

    compile_ = Dispatcher.compile

    def compile_keeping_ctrl_c(self: Any, sig: Any) -> Any:
        # (a compilation inside this one finds the handler below installed: it passes)
        if (threading.current_thread() is not threading.main_thread()
                or signal.getsignal(signal.SIGINT) is not signal.default_int_handler):
            return compile_(self, sig)
        noted: list[int] = []
        signal.signal(signal.SIGINT, _note_and_interrupt(noted))
        try:
            result = compile_(self, sig)
        finally:
            signal.signal(signal.SIGINT, signal.default_int_handler)
        if noted:  # it came, and an ignored callback swallowed its KeyboardInterrupt
            raise KeyboardInterrupt
        return result

    compile_keeping_ctrl_c.__wrapped__ = compile_  # type: ignore[attr-defined]
    Dispatcher.compile = compile_keeping_ctrl_c
    _state["installed"] = True
