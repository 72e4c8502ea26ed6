"""What a long exact solve is doing, for whoever listens: the CLI shows it (``check exact``),
the Python API stays silent unless a caller listens (:func:`reporting`).

A solver calls :func:`say` with one line at each step that can take seconds: a chain of at
least :data:`LONG_SOLVE_STATES` states, its size and memory before it is built and solved
(a line ending in "…"); each multilevel cycle, with its residual and the time left at its
rate of convergence. Nothing here prints: the listener decides how often and where.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar

#: a chain this large takes seconds to build and solve: its size is said before
LONG_SOLVE_STATES = 100_000

_listener: ContextVar[Callable[[str], None] | None] = ContextVar("exact_progress",
                                                                 default=None)


@contextmanager
def reporting(show: Callable[[str], None]) -> Iterator[None]:
    """While inside, the solvers' lines go to ``show``."""
    token = _listener.set(show)
    try:
        yield
    finally:
        _listener.reset(token)


def say(line: str) -> None:
    """Hand ``line`` to the listener, if any."""
    show = _listener.get()
    if show is not None:
        show(line)


def seconds_left(errors: list[float], target: float, seconds_per_step: float) -> float:
    """The time until a geometrically falling error reaches ``target``, at the rate of its
    last steps (``errors``, one per step; inf while there is no rate yet)."""
    recent = [e for e in errors[-4:] if e > 0]
    if len(recent) < 2 or recent[-1] <= target:
        return math.inf if len(recent) < 2 else 0.0
    rate = (recent[-1] / recent[0]) ** (1 / (len(recent) - 1))
    if not 0 < rate < 1:
        return math.inf
    return math.log(target / recent[-1]) / math.log(rate) * seconds_per_step
