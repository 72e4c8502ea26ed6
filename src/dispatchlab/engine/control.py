"""Between two chunks of the compiled loop: Ctrl-C, progress with ETA, and chunk sizes.

The compiled slot loop cannot see Python signals, so :func:`dispatchlab.engine.raw.run_once`
runs it in chunks of about :data:`CHUNK_SECONDS` each and, between chunks,

- checks whether SIGINT arrived (``core.signals.stops_caught``): the run then stops with
  :class:`RunInterrupted`, a ``KeyboardInterrupt`` that says where it stopped, raised
  while the run's state is consistent (at a slot boundary);
- reports progress to the :class:`Progress` a caller installed with :func:`progress_to`
  (the CLI does, on a terminal; the API reports nothing unless asked);
- sizes the next chunk from the measured speed (:class:`ChunkSizer`).

Chunk boundaries never change a result: the loop state persists between chunks.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar

#: target wall time of one chunk: Ctrl-C waits at most about this long
CHUNK_SECONDS = 0.2
#: slots of the first chunk, before any timing (a first chunk sized from a cost model
#: held Ctrl-C for 53 s with a policy taking a millisecond a choice); the chunks after it
#: grow to CHUNK_SECONDS by measured speed, at most MAX_GROWTH times a chunk
FIRST_CHUNK_SLOTS = 8
#: a chunk is at most this many times longer than the one before (timings are noisy)
MAX_GROWTH = 8
#: progress appears only once a run has taken this long
PROGRESS_AFTER_SECONDS = 2.0


class RunInterrupted(KeyboardInterrupt):
    """Ctrl-C stopped a run between two chunks, at slot ``slot`` of ``slots``."""

    def __init__(self, slot: int, slots: int, policy: str) -> None:
        super().__init__(f"interrupted at slot {slot:,} of {slots:,} ({policy})")
        self.slot = slot
        self.slots = slots
        self.policy = policy

    def __str__(self) -> str:
        return str(self.args[0])

    def __reduce__(self) -> tuple[type, tuple[int, int, str]]:  # survives a worker process
        return type(self), (self.slot, self.slots, self.policy)


class ChunkSizer:
    """Slots per chunk so that one chunk takes about :data:`CHUNK_SECONDS`: the first is
    :data:`FIRST_CHUNK_SLOTS` slots, whatever a slot costs; each chunk's measured speed
    sizes the next."""

    def __init__(self) -> None:
        self.size = FIRST_CHUNK_SLOTS

    def record(self, slots_done: int, seconds: float) -> None:
        if slots_done <= 0:
            return
        if seconds <= 0:
            wanted = self.size * MAX_GROWTH
        else:
            wanted = slots_done * CHUNK_SECONDS / seconds
        self.size = max(1, int(min(wanted, self.size * MAX_GROWTH)))


class Progress:
    """Progress of ``runs`` runs of ``slots`` slots each, run one after another.

    :meth:`update` hands ``show`` one line ("slot t of T (x %), ETA …", with the run
    number when there are several) once the work has taken
    :data:`PROGRESS_AFTER_SECONDS`, then at most every ``interval`` seconds."""

    def __init__(self, show: Callable[[str], None], *, runs: int = 1,
                 interval: float = 0.5) -> None:
        self.show = show
        self.runs = max(1, runs)
        self.interval = interval
        self.run_index = 0
        self.started = time.perf_counter()
        self.last_shown = -math.inf
        self.slots_before = 0  # slots of the runs already finished

    def start_run(self) -> None:
        self.run_index += 1

    def compiling(self, what: str) -> None:
        """A run is about to compile ``what`` (a cold cache: its first run)."""
        self.show(f"compiling {what} (once: cached for the next runs) …")

    def finish_run(self, slots: int) -> None:
        self.slots_before += slots

    def update(self, slot: int, slots: int) -> None:
        now = time.perf_counter()
        elapsed = now - self.started
        if elapsed < PROGRESS_AFTER_SECONDS or now - self.last_shown < self.interval:
            return
        self.last_shown = now
        done = self.slots_before + slot
        remaining = (slots - slot) + slots * (self.runs - self.run_index)
        eta = remaining * elapsed / done if done > 0 else math.inf
        run = f"run {self.run_index}/{self.runs}: " if self.runs > 1 else ""
        self.show(f"{run}slot {slot:,} of {slots:,} ({100 * slot / slots:.0f} %), "
                  f"ETA {format_seconds(eta)}")


def format_seconds(seconds: float) -> str:
    """``42 s``, ``3 min 05 s``, ``2 h 07 min``, ``12 d``: an ETA, readable at a glance."""
    if not math.isfinite(seconds):
        return "unknown"
    seconds = int(round(seconds))
    if seconds < 60:
        return f"{seconds} s"
    if seconds < 3600:
        return f"{seconds // 60} min {seconds % 60:02d} s"
    if seconds < 86400 * 2:
        return f"{seconds // 3600} h {seconds % 3600 // 60:02d} min"
    return f"{seconds / 86400:.3g} d"


_progress: ContextVar[Progress | None] = ContextVar("dispatchlab_progress", default=None)


@contextmanager
def progress_to(progress: Progress) -> Iterator[Progress]:
    """Report the progress of the runs started inside to ``progress``."""
    token = _progress.set(progress)
    try:
        yield progress
    finally:
        _progress.reset(token)


def current_progress() -> Progress | None:
    """The :class:`Progress` installed by the innermost :func:`progress_to`, if any."""
    return _progress.get()
