"""Ctrl-C in the test suite: a child process that receives it as a user's would, and one
Ctrl-C that stops the whole run.

A child: whatever the test runner's own SIGINT disposition and mask (both pass through
fork and exec), :func:`default_sigint` gives it Ctrl-C as from a terminal.

The run (the hooks conftest.py imports): a terminal's Ctrl-C is SIGINT to the runner and
to every process a test started. A test that runs the CLI in-process can catch it as the
CLI does (exit 130, "interrupted"), so the runner never saw a KeyboardInterrupt: the test
failed on ``assert 130 == 0`` and the suite carried on. Here the runner's SIGINT handler
notes the signal before raising KeyboardInterrupt as usual, and after any test that saw
one the session stops. No test sends SIGINT to the runner itself (the Ctrl-C tests signal
children of their own). Under pytest-xdist the controller stops the workers on its own
KeyboardInterrupt; a worker stops its session the same way.
"""

from __future__ import annotations

import signal
import threading
from collections.abc import Generator
from types import FrameType

import pytest


def default_sigint() -> None:
    """``preexec_fn``: SIGINT unblocked and at its default action in the child."""
    signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGINT})
    signal.signal(signal.SIGINT, signal.SIG_DFL)


_received = threading.Event()


def _on_sigint(signum: int, frame: FrameType | None) -> None:
    _received.set()
    raise KeyboardInterrupt


def pytest_configure(config: pytest.Config) -> None:
    # only over Python's own handler: a runner started with SIGINT ignored stays so
    if (threading.current_thread() is threading.main_thread()
            and signal.getsignal(signal.SIGINT) is signal.default_int_handler):
        signal.signal(signal.SIGINT, _on_sigint)


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_protocol(item: pytest.Item) -> Generator[None, None, None]:
    yield
    if _received.is_set():
        item.session.shouldstop = "interrupted: Ctrl-C (SIGINT) during the run"
