"""How numbers and small tables read in a terminal and a notebook (``repr`` texts and
``_repr_html_`` tables). Formatting only; no computation."""

from __future__ import annotations

import html
import math
import time
from collections.abc import Iterable
from typing import Any


def number(value: Any, digits: int = 4) -> str:
    """``value`` with ``digits`` significant digits; ``—`` for nan/None (an unreported mean)."""
    if value is None:
        return "—"
    if isinstance(value, float) and not math.isfinite(value):
        return "—"
    if isinstance(value, float):
        return f"{value:.{digits}g}"
    return str(value)


def local_time(timestamp: float | None) -> str:
    """A stored time as local date and time; ``—`` for none, or for one no calendar has (a
    received store may say 1e300)."""
    if timestamp is None:
        return "—"
    try:
        return time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(timestamp))
    except (OverflowError, OSError, ValueError):
        return "—"


def params_text(params: dict[str, Any]) -> str:
    """Parameters as ``k=v`` pairs (values by ``repr``), comma-separated, in their order."""
    return ", ".join(f"{k}={v!r}" for k, v in params.items())


def html_table(title: str, rows: Iterable[tuple[str, Any]]) -> str:
    """A two-column HTML table with a caption; values are escaped."""
    esc = html.escape
    body = "".join(f"<tr><th style='text-align:left'>{esc(name)}</th>"
                   f"<td style='text-align:left'>{esc(number(value))}</td></tr>"
                   for name, value in rows)
    return f"<table><caption style='text-align:left'><b>{esc(title)}</b></caption>{body}</table>"
