"""Python's garbage collector is paused while numba compiles, and given back as it was
(compiled/collector_pause.py)."""

from __future__ import annotations

import gc

import pytest
from numba import njit
from numba.core import event

import dispatchlab.compiled  # noqa: F401  (installs the wrappers)


class _CollectorSeen(event.Listener):
    """Whether the collector ran at the start of each compilation."""

    def __init__(self) -> None:
        self.enabled: list[bool] = []

    def on_start(self, ev: event.Event) -> None:
        self.enabled.append(gc.isenabled())

    def on_end(self, ev: event.Event) -> None:
        pass


@pytest.fixture
def seen():
    listener = _CollectorSeen()
    with event.install_listener("numba:compile", listener):
        yield listener.enabled


def test_a_compilation_runs_without_the_collector_and_gives_it_back(seen) -> None:
    """The callee compiles inside its caller's compilation: off in both, on after."""
    @njit
    def add(a, b):
        return a + b

    @njit
    def add_twice(a, b):
        return add(add(a, b), b)

    assert gc.isenabled()
    assert add_twice(1, 2) == 5
    assert len(seen) >= 2 and not any(seen)
    assert gc.isenabled()


def test_a_collector_disabled_by_the_caller_stays_disabled(seen) -> None:
    @njit
    def twice(a):
        return 2 * a

    gc.disable()
    try:
        assert twice(2.5) == 5.0
        assert seen and not gc.isenabled()
    finally:
        gc.enable()


def test_a_compilation_that_fails_gives_the_collector_back(seen) -> None:
    from numba.core.errors import TypingError

    @njit
    def broken(a):
        return a.no_such_attribute

    with pytest.raises(TypingError):
        broken(1)
    assert seen and not any(seen)
    assert gc.isenabled()


class _StopAtStart(event.Listener):
    """A Ctrl-C as a compilation starts."""

    def on_start(self, ev: event.Event) -> None:
        raise KeyboardInterrupt

    def on_end(self, ev: event.Event) -> None:
        pass


def test_a_stop_during_a_compilation_gives_the_collector_back() -> None:
    @njit
    def halve(a):
        return a / 2

    with event.install_listener("numba:compile", _StopAtStart()), \
            pytest.raises(KeyboardInterrupt):
        halve(3.0)
    assert gc.isenabled()
