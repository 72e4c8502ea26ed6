"""The processor a benchmark ran on, printed with every bench result: speed ratios follow
the microarchitecture, so a figure without its processor cannot be compared."""

from __future__ import annotations

import functools
import platform
from pathlib import Path

CPUINFO = Path("/proc/cpuinfo")


@functools.cache
def processor() -> str:
    """The processor's model name (``lscpu``'s Model name: /proc/cpuinfo's ``model name``
    on Linux), else what :func:`platform.processor` says, else the machine type."""
    try:
        for line in CPUINFO.read_text(errors="replace").splitlines():
            key, sep, value = line.partition(":")
            if sep and key.strip().lower() == "model name" and value.strip():
                return " ".join(value.split())
    except OSError:
        pass
    return platform.processor() or platform.machine() or "unknown processor"
