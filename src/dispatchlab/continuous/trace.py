"""A trace of jobs for the continuous-time engine: arrival times, and optionally each job's
size and dispatcher, replayed as they are (``arrivals="trace:PATH"``).

The file is a CSV (comma-separated, one job a line, UTF-8 with or without a byte-order
mark) or a ``.npy`` array (read without pickles) with one to three columns: the arrival
time (non-decreasing, finite, ≥ 0), the size (> 0; without it the run's size law draws
one), the dispatcher (an integer 0 … M − 1; without it job k goes to dispatcher k mod M).
A trace is data: nothing in it is executed, and an error names the file and the line but
quotes none of its content.
"""

from __future__ import annotations

import re
import warnings
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from dispatchlab.continuous.laws import LARGEST_VALUE, LEAST_VALUE
from dispatchlab.core.errors import ValidationError, require
from dispatchlab.core.paths import guarded_io, require_readable_file

#: the most jobs a trace holds (three float columns of 10⁸ jobs: 2.4 GB)
MAX_TRACE_JOBS = 100_000_000


@dataclass(frozen=True)
class JobTrace:
    """The jobs of a trace: ``times`` (non-decreasing), ``sizes`` and ``dispatchers``
    (empty when the file has no such column), and the file it came from."""

    path: str
    times: np.ndarray
    sizes: np.ndarray
    dispatchers: np.ndarray

    @property
    def rate(self) -> float:
        """The trace's arrival rate λ: its jobs over the span of their arrival times."""
        span = float(self.times[-1] - self.times[0])
        return (self.times.size - 1) / span if span > 0 else float("inf")


def _unreadable(path: Path, error: Exception) -> str:
    """Why the file could not be read, naming the line but quoting none of the content."""
    if path.suffix == ".npy":
        return f"trace {str(path)!r} is not a .npy array of numbers (one to three columns)"
    where = re.search(r"at row (\d+), column (\d+)", str(error))
    at = f" (line {int(where[1]) + 1}, column {where[2]})" if where else ""
    return (f"trace {str(path)!r} is not numeric{at}: expected one job a line, "
            "TIME[,SIZE[,DISPATCHER]]")


def load_job_trace(path: str | Path, dispatchers: int, field: str = "arrivals") -> JobTrace:
    """The trace at ``path`` for a run with ``dispatchers`` dispatchers, checked."""
    file = require_readable_file(path, field, "trace file")

    def read() -> np.ndarray:
        with warnings.catch_warnings():  # an empty file: our own message below
            warnings.simplefilter("ignore")
            if file.suffix == ".npy":
                array = np.load(file, allow_pickle=False)
                require(array.dtype.kind in "iuf", field,
                        f"trace {str(file)!r} holds {array.dtype} values, not numbers")
                return np.asarray(array, dtype=float)
            return np.loadtxt(file, delimiter=",", ndmin=2, dtype=float,
                              encoding="utf-8-sig")

    try:
        table = guarded_io(field, file, read, verb="read")
    except ValidationError:
        raise
    except (ValueError, TypeError, EOFError) as error:
        raise ValidationError(field, _unreadable(file, error)) from None
    if table.ndim == 1:
        table = table[:, None]
    require(table.ndim == 2 and 1 <= table.shape[1] <= 3, field,
            f"trace {str(file)!r} must have one to three columns: TIME[,SIZE[,DISPATCHER]] "
            f"(shape {table.shape})")
    require(table.shape[0] >= 2, field, f"trace {str(file)!r} needs at least two jobs")
    require(table.shape[0] <= MAX_TRACE_JOBS, field,
            f"trace {str(file)!r} holds {table.shape[0]:,} jobs; at most {MAX_TRACE_JOBS:,}")
    require(bool(np.all(np.isfinite(table))), field,
            f"trace {str(file)!r} holds a value that is not a finite number")
    times = np.ascontiguousarray(table[:, 0])
    if not (times[0] >= 0 and np.all(np.diff(times) >= 0)):
        raise ValidationError(field, f"trace {str(file)!r}: arrival times must be ≥ 0 and "
                              f"non-decreasing (line {_first_bad_time(times) + 1} is not)")
    require(times[-1] <= LARGEST_VALUE * 1e3, field,
            f"trace {str(file)!r}: arrival times must be ≤ {LARGEST_VALUE * 1e3:g}")
    sizes = np.ascontiguousarray(table[:, 1]) if table.shape[1] >= 2 else np.empty(0)
    if sizes.size:
        bad = np.flatnonzero((sizes < LEAST_VALUE) | (sizes > LARGEST_VALUE))
        require(bad.size == 0, field, f"trace {str(file)!r}: sizes must lie in "
                f"[{LEAST_VALUE:g}, {LARGEST_VALUE:g}] (line {bad[0] + 1 if bad.size else 0} "
                "does not)")
    owners = np.empty(0, dtype=np.int64)
    if table.shape[1] == 3:
        column = table[:, 2]
        bad = np.flatnonzero((column != np.round(column)) | (column < 0)
                             | (column >= dispatchers))
        require(bad.size == 0, field, f"trace {str(file)!r}: dispatchers must be integers "
                f"0 … M − 1 = {dispatchers - 1} (line {bad[0] + 1 if bad.size else 0} "
                "is not)")
        owners = column.astype(np.int64)
    return JobTrace(str(file), times, sizes, owners)


def _first_bad_time(times: np.ndarray) -> int:
    if times[0] < 0:
        return 0
    return int(np.flatnonzero(np.diff(times) < 0)[0]) + 1
