"""The part of a module's source that a compiled function can depend on.

:func:`.dependencies.dependency_digest` keys a compiled function by the dispatchlab
sources it reaches. Keyed by whole files, an edit to one policy's ``choose`` recompiled
every ``choose`` of its file (``policies/classic.py`` holds ten, ``policies/led/choose.py``
eleven). :func:`kept_source` drops from a file the top-level ``def`` and ``class`` blocks
that nothing the function reaches can run:

* a block is kept when the walk reached its name (the function, a helper it calls or
  inlines, a constant's class), or when a kept part of the file names it in its code (not
  in a docstring or a comment line): the module-level statements (imports, constants, a
  table computed at import by a helper of the file) and every kept block, to a fixed
  point;
* everything else that is not such a block stays: the module-level statements, comments
  and docstrings between blocks.

So the digest still changes with every edit that can change what the function computes,
and with some that cannot (a name a kept line of code mentions in a trailing comment or a
string is kept).

Blocks are found line by line (a whole parse of every file a run's pieces reach would add
to every run's start): a block starts at a line that begins, in column 0, with ``@``,
``def``, ``async def`` or ``class``, and ends before the next line that begins in column
0 with anything but a closing bracket or ``#``. A test checks that this gives the blocks
Python's own parser finds, for every module of the package; a file outside the package
(a user's) is always kept whole.
"""

from __future__ import annotations

import re
from functools import lru_cache

#: a top-level definition's first line
_HEADER = re.compile(rb"(?:async[ \t]+)?(?:def|class)[ \t]+(\w+)")
#: a line that continues the block above it when it starts in column 0
_CONTINUES = re.compile(rb"[ \t\r\n)\]}#]|$")
#: an identifier
_IDENTIFIER = re.compile(rb"[A-Za-z_]\w*")
#: a triple-quoted string that is no f-string (a docstring), and a line that is a comment:
#: the names they mention are not names the code uses
_LONG_STRING = re.compile(rb'(?s)(?<![fF])(?<![fF][rR])("""|\'\'\').*?\1')
_COMMENT_LINE = re.compile(rb"(?m)^[ \t]*#[^\n]*")


def _starts_block(line: bytes) -> bool:
    return line[:1] == b"@" or _HEADER.match(line) is not None


def _words(text: bytes) -> frozenset[str]:
    """The identifiers of ``text`` outside its docstrings and comment lines."""
    code = _COMMENT_LINE.sub(b"", _LONG_STRING.sub(b"", text))
    return frozenset(word.decode() for word in _IDENTIFIER.findall(code))


@lru_cache(maxsize=512)
def top_level_blocks(source: bytes) -> tuple[bytes, tuple[tuple[str, int, bytes], ...]]:
    """``source`` split into the text outside top-level definitions and the definitions,
    each as (name, first line number, text with its decorators)."""
    lines = source.splitlines(keepends=True)
    outside: list[bytes] = []
    blocks: list[tuple[str, int, bytes]] = []
    i = 0
    while i < len(lines):
        if not _starts_block(lines[i]):
            outside.append(lines[i])
            i += 1
            continue
        start = i
        # decorators, and their continuation lines, up to the header
        while i < len(lines) and _HEADER.match(lines[i]) is None:
            if i > start and not (lines[i][:1] == b"@" or _CONTINUES.match(lines[i])):
                break
            i += 1
        header = _HEADER.match(lines[i]) if i < len(lines) else None
        if header is None:  # decorators without a definition: not a block
            outside.extend(lines[start:i])
            continue
        i += 1
        while i < len(lines) and _CONTINUES.match(lines[i]):
            i += 1
        blocks.append((header.group(1).decode(), start + 1, b"".join(lines[start:i])))
    return b"".join(outside), tuple(blocks)


#: a definition's name, text and the identifiers in it
_Named = tuple[str, bytes, frozenset[str]]


@lru_cache(maxsize=512)
def _named(source: bytes) -> tuple[bytes, frozenset[str], tuple[_Named, ...]]:
    """:func:`top_level_blocks` with the identifiers of each part."""
    outside, blocks = top_level_blocks(source)
    return outside, _words(outside), tuple((name, text, _words(text)) for name, _, text in blocks)


def kept_source(source: bytes, reached: frozenset[str]) -> bytes:
    """``source`` without the top-level definitions that neither ``reached`` (the names a
    compiled function's walk reached in this module) nor a kept part of the file names."""
    outside, names, blocks = _named(source)
    names = names | reached
    kept: set[int] = set()
    grew = True
    while grew:
        grew = False
        for index, (name, _, words) in enumerate(blocks):
            if index not in kept and name in names:
                kept.add(index)
                names |= words
                grew = True
    return outside + b"".join(text for index, (_, text, _) in enumerate(blocks)
                              if index in kept)
