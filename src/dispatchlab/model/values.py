"""Type checks of values given through the Python API, as :class:`ValidationError`.

The CLI and TOML readers convert their text before it reaches the model; a Python
caller can pass anything, so the model checks the type itself instead of letting
``int(2.9)`` truncate or ``"0.9" * 2`` fail with a ``TypeError`` deep inside.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from dispatchlab.core.errors import ValidationError


def _kind(value: Any) -> str:
    return type(value).__name__


def as_int(value: Any, field: str, low: int | None = None, high: int | None = None) -> int:
    """An integer (int or numpy integer, not bool, not a float: 2.9 is not truncated)."""
    if isinstance(value, bool) or not isinstance(value, int | np.integer):
        raise ValidationError(field, f"expected an integer (got {value!r}, a {_kind(value)})")
    value = int(value)
    if low is not None and value < low or high is not None and value > high:
        bounds = f"in [{low:,}, {high:,}]" if low is not None and high is not None else (
            f"≥ {low:,}" if low is not None else f"≤ {high:,}")
        raise ValidationError(field, f"must be an integer {bounds} (got {value:,})")
    return value


def as_number(value: Any, field: str) -> float:
    """A finite real number (int or float, not bool, not a string)."""
    if isinstance(value, bool) or not isinstance(value, int | float | np.integer | np.floating):
        raise ValidationError(field, f"expected a number (got {value!r}, a {_kind(value)})")
    number = float(value)
    if not math.isfinite(number):
        raise ValidationError(field, f"expected a finite number (got {value!r})")
    return number


def as_flag(value: Any, field: str) -> bool:
    """True or False (not 1, not "yes")."""
    if not isinstance(value, bool | np.bool_):
        raise ValidationError(field, f"expected True or False (got {value!r}, a {_kind(value)})")
    return bool(value)


def as_text(value: Any, field: str) -> str:
    """A string."""
    if not isinstance(value, str):
        raise ValidationError(field, f"expected a string (got {value!r}, a {_kind(value)})")
    return value


def as_numbers(value: Any, field: str) -> np.ndarray:
    """A flat sequence of real numbers as a float array (no strings, no bools, no nesting)."""
    if isinstance(value, str | bytes | dict) or not hasattr(value, "__len__"):
        raise ValidationError(field, f"expected a sequence of numbers (got {value!r})")
    try:
        array = np.asarray(value)
    except ValueError:  # ragged nesting
        raise ValidationError(field, "expected a flat sequence of numbers") from None
    if isinstance(value, np.ndarray):
        ok = array.dtype.kind in "fiu"
    else:  # numpy turns [True, 0.5] into floats: look at the items themselves
        ok = array.dtype.kind in "fiu" and not any(isinstance(x, bool | np.bool_) for x in value)
    if not ok or array.ndim > 1:
        bad = next((x for x in np.ravel(array) if isinstance(x, bool | str | np.bool_ | np.str_)),
                   None) if array.ndim <= 1 else None
        detail = f"got {bad!r}, a {_kind(bad)}" if bad is not None else f"got {value!r}"
        raise ValidationError(field, f"expected a flat sequence of numbers ({detail})")
    return array.astype(float).ravel()
