"""CSV that a spreadsheet opens as data, never as formulas.

A spreadsheet evaluates a cell that begins with ``=``, ``+``, ``-`` or ``@`` (and, in
some, a tab or a carriage return) as a formula, so a policy label or an error message
such as ``=HYPERLINK("http://evil","x")`` in an exported CSV would run when the file is
opened. Every text cell (and column name) that begins with one of these characters is
written with a leading apostrophe, the usual neutralisation, which spreadsheets show as
the text itself. Numbers stay numbers: a numeric column is never touched, and a text
cell that is a plain number (``-3``, ``+1.5e-2``) cannot be a formula and is kept as is.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # pandas is imported where an export needs it
    import pandas as pd

#: what makes a spreadsheet read a cell as a formula
FORMULA_STARTS = ("=", "+", "-", "@", "\t", "\r")
_PLAIN_NUMBER = re.compile(r"[+-]?(\d+\.?\d*|\.\d+)([eE][+-]?\d+)?")


def neutral_cell(value: Any) -> Any:
    """``value`` with a leading ``'`` when it is text a spreadsheet would evaluate."""
    if (isinstance(value, str) and value.startswith(FORMULA_STARTS)
            and _PLAIN_NUMBER.fullmatch(value) is None):
        return "'" + value
    return value


def neutralised(frame: pd.DataFrame) -> pd.DataFrame:
    """A copy of ``frame`` whose text cells and column names are :func:`neutral_cell`."""
    import pandas as pd

    out = frame.copy()
    for column in out.columns:
        values = out[column]
        if pd.api.types.is_object_dtype(values) or pd.api.types.is_string_dtype(values):
            out[column] = values.map(neutral_cell)
    out.columns = [neutral_cell(column) for column in out.columns]
    return out


def to_csv(frame: pd.DataFrame, path: Any = None) -> str | None:
    """``frame.to_csv`` (no index) of the :func:`neutralised` frame: the text when
    ``path`` is None, else written to ``path``."""
    return neutralised(frame).to_csv(path, index=False)
