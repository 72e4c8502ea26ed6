"""Typed converters for user input (TOML tables, JSON, keyword mappings).

Every spec reads its input through these: each takes the value and the name of its
field (``"system.dispatchers"``, ``"systems[0].split"``) and returns the converted
value or raises :class:`ValidationError` naming that field. They sit on the bottom
layer (they import only :mod:`dispatchlab.core.errors`), so the run spec, the experiment
grid and the report's figure specs share them.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from typing import Any

from dispatchlab.core.errors import INTEGER_LIMIT, require


class CommandLineText(str):
    """A value typed on the command line (``--set d=2``, ``-p pod:d=2``): text that the
    declared type of its field parses. Every other value must already have its type:
    a converter never turns a Python or TOML string into a number."""

    __slots__ = ()


def as_int(value: Any, name: str, low: int = 0) -> int:
    """An integer ≥ ``low`` (``True`` is not an integer here)."""
    require(_is_integer(value), name, f"expected an integer (got {value!r})")
    require(value >= low, name, f"must be ≥ {low} (got {value})")
    require(value <= INTEGER_LIMIT, name, f"must be ≤ 2^62 (got {value})")
    return int(value)


def as_float(value: Any, name: str) -> float:
    """A finite number (int or float, not a bool)."""
    require(_is_number(value), name, f"expected a number (got {value!r})")
    require(math.isfinite(float(value)), name, f"must be a finite number (got {value!r})")
    return float(value)


def as_str(value: Any, name: str) -> str:
    """A non-empty string, stripped."""
    require(isinstance(value, str) and bool(value.strip()), name,
            f"expected a non-empty string (got {value!r})")
    return value.strip()


def as_bool(value: Any, name: str) -> bool:
    """``value`` if it is a bool (no truthy coercion); else a ValidationError naming ``name``."""
    require(isinstance(value, bool), name, f"expected true or false (got {value!r})")
    return bool(value)


def as_floats(value: Any, name: str) -> tuple[float, ...]:
    """An array of numbers (a TOML array, JSON list or tuple)."""
    require(isinstance(value, list | tuple), name, f"expected an array of numbers (got {value!r})")
    return tuple(as_float(v, f"{name}[{i}]") for i, v in enumerate(value))


def as_ints(value: Any, name: str) -> tuple[int, ...]:
    """An array of integers (a TOML array, JSON list or tuple; no bools)."""
    require(isinstance(value, list | tuple), name,
            f"expected an array of integers (got {value!r})")
    return tuple(as_int(v, f"{name}[{i}]") for i, v in enumerate(value))


def as_choice(allowed: tuple[str, ...], aliases: Mapping[str, str] | None = None
              ) -> Callable[[Any, str], str]:
    """A converter to one of ``allowed`` (lower-cased; ``aliases`` map old spellings)."""
    def convert(value: Any, name: str) -> str:
        text = as_str(value, name).lower()
        text = (aliases or {}).get(text, text)
        require(text in allowed, name, f"allowed: {', '.join(allowed)} (got {value!r})")
        return text
    return convert


def as_table(value: Any, name: str) -> dict[str, Any]:
    """A table (mapping) with string keys, copied."""
    require(isinstance(value, Mapping), name,
            f"expected a table [{name}] of key = value (got {value!r})")
    return dict(value)


def check_keys(data: Mapping[str, Any], name: str, allowed: tuple[str, ...]) -> None:
    """Reject a key not in ``allowed``, naming it (``system.loads``; ``name`` "" at the top)."""
    prefix = f"{name}." if name else ""
    for key in data:
        require(key in allowed, f"{prefix}{key}",
                f"unknown key; allowed here: {', '.join(allowed)}")


def _is_integer(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) or _numpy_kind(value) == "i"


def _is_number(value: Any) -> bool:
    return (isinstance(value, int | float) and not isinstance(value, bool)
            or _numpy_kind(value) in ("i", "f"))


def _numpy_kind(value: Any) -> str:
    """``"i"``/``"f"`` for numpy integer/float scalars (numpy is not imported here)."""
    dtype = getattr(value, "dtype", None)
    return getattr(dtype, "kind", "") if getattr(value, "ndim", None) == 0 else ""
