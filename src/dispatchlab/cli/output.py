"""Shared output helpers of the CLI commands: number formatting, consoles, JSON."""

from __future__ import annotations

import json
import math
import sys
from typing import Any

from rich.console import Console

from dispatchlab.simulation.result import Result

MISSING = "—"


def say_when_piped(console: Console, line: str) -> None:
    """``line`` as one plain line on ``console`` when it is no terminal (a log, CI, a pipe:
    where Rich draws no spinner to show it in); nothing on a terminal."""
    if not console.is_terminal:
        console.print(line, markup=False, highlight=False, soft_wrap=True)


def load_text(load: Any, digits: int = 4) -> str:
    """A load ρ as :func:`number` writes it, except within 10^−digits below 1, where those
    digits would round it to 1: ``1 − 5e-10`` (1 − ρ is exact in floating point there)."""
    if load is not None and 0.0 < 1.0 - float(load) < 10.0**-digits:
        return f"1 − {1.0 - float(load):.{digits - 1}g}"
    return number(load, digits)


def number(value: Any, digits: int = 4) -> str:
    """``value`` with ``digits`` significant digits; ``—`` for missing (None / nan)."""
    if value is None:
        return MISSING
    value = float(value)
    if not math.isfinite(value):
        return MISSING if math.isnan(value) else ("∞" if value > 0 else "−∞")
    if value != 0 and (abs(value) >= 10 ** (digits + 2) or abs(value) < 1e-3):
        return f"{value:.{digits - 1}e}"
    text = f"{value:.{digits}g}"
    if "e" in text:  # large but below the threshold: plain digits read better
        text = f"{value:.0f}"
    return text


def to_resolution(value: float, resolution: float) -> str:
    """``value`` to the decimal of its ``resolution``'s first digit, and ``± resolution``
    to one digit (``-4.5515 ± 0.0003``): no digit beyond what the method resolves, nor
    beyond the 15 significant digits a float holds. An exact value (resolution 0) is
    written with 10 significant digits; an unknown resolution (nan, ∞) is said."""
    if resolution == 0 or not math.isfinite(value):
        return f"{value:.10g}"
    if not math.isfinite(resolution) or resolution < 0:
        return f"{value:.4g} ± {resolution:g}"
    decimals = -math.floor(math.log10(resolution))
    if value != 0:
        decimals = min(decimals, 14 - math.floor(math.log10(abs(value))))
    return f"{value:.{max(decimals, 0)}f} ± {resolution:.1g}"


def integer(value: Any) -> str:
    """``value`` as an integer with thousands separators, or :data:`MISSING` for ``None``."""
    return MISSING if value is None else f"{int(value):,}"


def interval(result: Result) -> str:
    """``mean [low, high]`` of ΣQ, or ``—`` for an unstable run."""
    if math.isnan(result.mean_total_queue):
        return MISSING
    return (f"{number(result.mean_total_queue)} "
            f"[{number(result.ci_low)}, {number(result.ci_high)}]")


def params_text(params: dict[str, Any]) -> str:
    """``d=2, by_delay=false`` as typed after ``--set`` (booleans in lower case)."""
    def text(value: Any) -> str:
        return str(value).lower() if isinstance(value, bool) else str(value)

    return ", ".join(f"{k}={text(v)}" for k, v in params.items()) or MISSING


def stdout_console() -> Console:
    """The console for tables; wide enough that a captured (non-TTY) stream is not cramped."""
    return Console(width=None if sys.stdout.isatty() else 120, highlight=False,
                   soft_wrap=False)


def stderr_console() -> Console:
    """A Rich console on stderr, without highlighting: for status and errors, kept off stdout."""
    return Console(stderr=True, highlight=False)


def _strict(data: Any) -> Any:
    """``data`` with every nan / ±inf float replaced by None (JSON null)."""
    if isinstance(data, float):
        return data if math.isfinite(data) else None
    if isinstance(data, dict):
        return {key: _strict(value) for key, value in data.items()}
    if isinstance(data, list | tuple):
        return [_strict(value) for value in data]
    return data


def print_json(data: Any) -> None:
    """Print exactly one strict JSON document on stdout (nan and ±inf become null)."""
    sys.stdout.write(json.dumps(_strict(data), allow_nan=False, ensure_ascii=False) + "\n")
    sys.stdout.flush()
