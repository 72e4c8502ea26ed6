"""The TOML and JSON documents a user names (spec files, a report's spec.json), read into
plain data with every failure as one :class:`ValidationError`.

One reader for every such file, so that each says the same things the same way:

* UTF-8, with or without a byte-order mark (Windows editors write one; it is skipped);
  any other encoding names the first bad byte's position, never the file's content;
* malformed TOML or JSON: the parser's message (line and column);
* nesting deeper than :data:`MAX_DEPTH` (a 5000-deep array overflowed the parsers' stack
  as a RecursionError): refused by a scan *before* parsing, so no parser recursion is
  ever reached, and the depth is named; TOML's dotted keys (``a.b.c… = 1``), which nest
  without brackets, are counted by a scan too (a key of 5,000 parts took tomllib 0.3 s,
  one of 50,000 40 s: its time grows as the square of the parts), then measured
  on the parsed tables before anything walks them.
"""

from __future__ import annotations

import json
import re
import tomllib
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from dispatchlab.core.errors import ValidationError, require
from dispatchlab.core.paths import guarded_io, require_readable_file

BOM = "\ufeff"
#: the deepest nesting of arrays and tables a document may have (a spec needs about 4)
MAX_DEPTH = 64
#: what a TOML/JSON string or comment looks like, what opens and closes a level, and a
#: key of parts joined by dots (bare or quoted)
_MULTI_LINE = r'"""|\'\'\''
_STRING = r'"(?:[^"\\\n]|\\.)*"|\'[^\'\n]*\''
_COMMENT = r"#[^\n]*"
_KEY_PART = rf"(?:[A-Za-z0-9_-]+|{_STRING})"
_TOKENS = re.compile(rf"{_MULTI_LINE}|{_STRING}|{_COMMENT}|[\[\]{{}}]")
_DOTTED = re.compile(rf"{_MULTI_LINE}|{_COMMENT}|{_KEY_PART}(?:[ \t]*\.[ \t]*{_KEY_PART})*")
_PART = re.compile(_KEY_PART)


def read_text(path: str | Path, field: str, what: str = "file") -> str:
    """The text of the UTF-8 file ``path`` (a leading byte-order mark removed)."""
    path = require_readable_file(path, field, what)
    data = guarded_io(field, path, path.read_bytes, verb="read")
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as error:
        raise ValidationError(field, f"{what} {str(path)!r} is not UTF-8 text (byte "
                              f"0x{data[error.start]:02x} at offset {error.start})") from None
    return text.removeprefix(BOM)


def _tokens(pattern: re.Pattern[str], text: str) -> Iterator[str]:
    """The matches of ``pattern`` in ``text``, each multi-line string skipped whole."""
    position = 0
    while (match := pattern.search(text, position)) is not None:
        token = match.group()
        position = match.end()
        if token in ('"""', "'''"):
            end = text.find(token, position)
            position = len(text) if end < 0 else end + 3
        else:
            yield token


def nesting_depth(text: str, limit: int = MAX_DEPTH) -> int:
    """The deepest nesting of ``[ ]``/``{ }`` outside strings and comments, counted up to
    ``limit + 1`` (enough to refuse; the scan stops there)."""
    depth = deepest = 0
    for token in _tokens(_TOKENS, text):
        if token in "[{":
            depth += 1
            deepest = max(deepest, depth)
            if deepest > limit:
                break
        elif token in "]}":
            depth = max(depth - 1, 0)
    return deepest


def dotted_depth(text: str, limit: int = MAX_DEPTH) -> int:
    """The most dots in one dotted key ``a.b.c…`` of a TOML document (the tables it nests
    at most), outside multi-line strings and comments; the scan stops at the first key
    past ``limit``. A number's dot counts too (``0.5``: one), far below any limit."""
    deepest = 0
    for token in _tokens(_DOTTED, text):
        if "." in token and not token.startswith("#"):
            deepest = max(deepest, len(_PART.findall(token)) - 1)
            if deepest > limit:
                break
    return deepest


def data_depth(value: Any, limit: int = MAX_DEPTH) -> int:
    """The nesting depth of parsed lists and dicts (iteratively: TOML's dotted keys
    ``a.b.c… = 1`` nest tables without a bracket), counted up to ``limit + 1``."""
    deepest = 0
    stack = [(value, 0)]
    while stack:
        item, depth = stack.pop()
        if isinstance(item, dict | list):
            depth += 1
            deepest = max(deepest, depth)
            if deepest > limit:
                break
            stack.extend((child, depth) for child in
                         (item.values() if isinstance(item, dict) else item))
    return deepest


def _check_depth(depth: int, where: str, field: str) -> None:
    require(depth <= MAX_DEPTH, field, f"{where} nests arrays or tables more than {MAX_DEPTH} "
            "deep")


def loads_toml(text: str, field: str = "spec", where: str = "the spec") -> dict[str, Any]:
    """The tables of the TOML document ``text`` (``where`` names it in a message)."""
    # before the parser can recurse, or spend minutes on one key
    _check_depth(max(nesting_depth(text), dotted_depth(text)), where, field)
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as error:
        raise ValidationError(field, f"{where} is not valid TOML: {error}") from None
    except RecursionError:  # the scan above makes this unreachable; kept as a backstop
        raise ValidationError(field, f"{where} nests too deep") from None
    # dotted keys; the document itself is one table, not a level
    _check_depth(data_depth(data, MAX_DEPTH + 1) - 1, where, field)
    return data


def loads_json(text: str, field: str = "spec", where: str = "the spec") -> Any:
    """The value of the JSON document ``text`` (``where`` names it in a message)."""
    require(isinstance(text, str), field, f"{where} is not JSON text (got {type(text).__name__})")
    _check_depth(nesting_depth(text), where, field)
    try:
        return json.loads(text)
    except json.JSONDecodeError as error:
        raise ValidationError(field, f"{where} is not valid JSON: {error}") from None
    except RecursionError:
        raise ValidationError(field, f"{where} nests too deep") from None


def read_toml(path: str | Path, field: str = "spec", what: str = "spec file") -> dict[str, Any]:
    """The tables of the TOML file ``path``."""
    return loads_toml(read_text(path, field, what), field, repr(str(path)))


def read_json(path: str | Path, field: str = "spec", what: str = "spec file") -> Any:
    """The value of the JSON file ``path``."""
    return loads_json(read_text(path, field, what), field, repr(str(path)))
