"""The memory guard: refuse, before allocating, a run whose arrays would not fit.

Every allocation that grows with the user's parameters beyond O(N) (a policy's memory:
LED's M × N estimates, a periodic policy's cycle of T slots) is estimated from the
parameters first and checked here, so a too-large request is one ``error: FIELD: …`` line
with the estimate instead of a MemoryError traceback (or the machine swapping).

The limit is the memory available now (``MemAvailable`` on Linux, else the physical
memory), capped by the process's address-space limit (``ulimit -v``), times
:data:`USABLE_FRACTION`; ``DISPATCHLAB_MEMORY_LIMIT`` (bytes, or with a K/M/G/T suffix)
overrides it.
"""

from __future__ import annotations

import math
import os
import resource
import sys

from dispatchlab.core.errors import ValidationError, require

#: the share of the available memory one run may ask for
USABLE_FRACTION = 0.5
LIMIT_VARIABLE = "DISPATCHLAB_MEMORY_LIMIT"
_SUFFIXES = {"K": 2**10, "M": 2**20, "G": 2**30, "T": 2**40}


def memory_limit() -> int:
    """The bytes one run may allocate (see the module docstring)."""
    override = os.environ.get(LIMIT_VARIABLE, "").strip()
    if override:
        return parse_size(override, LIMIT_VARIABLE)
    available = _available_bytes()
    soft, _ = resource.getrlimit(resource.RLIMIT_AS)
    if soft != resource.RLIM_INFINITY:
        available = min(available, soft)
    return int(available * USABLE_FRACTION)


def parse_size(text: str, field: str) -> int:
    """``"8G"`` → 8·2^30 bytes: a finite number > 0 of bytes, with an optional K/M/G/T
    suffix (and B); anything else is a ValidationError naming ``field``."""
    digits = text.strip().upper().removesuffix("B")
    scale = _SUFFIXES.get(digits[-1:], 1)
    try:
        size = float(digits.rstrip("KMGT")) * scale
    except ValueError:
        size = math.nan
    require(math.isfinite(size) and size >= 1, field,
            f"must be a size of at least 1 byte, such as 8G or 512M (got {text!r})")
    return int(size)


def _available_bytes() -> int:
    try:
        with open("/proc/meminfo") as meminfo:
            for line in meminfo:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) * 1024
    except OSError:
        pass
    return os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")


def format_bytes(size: float) -> str:
    """``512 B``, ``3.2 MB``, ``7.45 GB`` (powers of 1024)."""
    for unit in ("B", "KB", "MB", "GB", "TB", "PB"):
        if size < 1024 or unit == "PB":
            return f"{size:.3g} {unit}" if unit != "B" else f"{int(size)} B"
        size /= 1024
    raise AssertionError("unreachable")


def require_memory(field: str, nbytes: float, what: str) -> None:
    """Raise ``ValidationError(field, …)`` when ``nbytes`` (for ``what``) exceed the limit."""
    limit = memory_limit()
    if nbytes > limit:
        raise ValidationError(field, f"{what} needs about {format_bytes(nbytes)} of memory, "
                              f"more than the {format_bytes(limit)} available to a run "
                              f"(set {LIMIT_VARIABLE} to change the limit)")


def peak_resident_bytes() -> int:
    """The most memory this process has held resident so far (``ru_maxrss``: kilobytes on
    Linux, bytes on macOS)."""
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return int(peak if sys.platform == "darwin" else peak * 1024)
