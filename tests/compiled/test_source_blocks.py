"""What of a module's source a compiled function's key holds (compiled/source_blocks.py)."""

from __future__ import annotations

import ast
import io
import tokenize
from pathlib import Path

import pytest

import dispatchlab
from dispatchlab.compiled.source_blocks import _words, kept_source, top_level_blocks

MODULES = sorted(Path(dispatchlab.__file__).parent.rglob("*.py"))


@pytest.mark.parametrize("path", MODULES, ids=lambda path: path.name)
def test_the_blocks_are_those_python_parses_and_keep_every_name_of_code(path: Path) -> None:
    """Each top-level ``def``/``class`` the parser finds is one block, from its first
    decorator through its last line (then only blank or comment lines), and no other; and
    every name the tokenizer reads as code in a part of the file is among the words of
    that part that decide what else is kept (docstrings and comment lines are left out of
    those by patterns: a triple quote inside another string would hide code)."""
    source = path.read_bytes()
    parsed = [(node.name, min([d.lineno for d in node.decorator_list] + [node.lineno]),
               node.end_lineno) for node in ast.parse(source).body
              if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef)]
    outside, blocks = top_level_blocks(source)
    assert [(name, first) for name, first, _ in blocks] == [
        (name, first) for name, first, _ in parsed]
    lines = source.splitlines()
    names_on = {}
    for token in tokenize.tokenize(io.BytesIO(source).readline):
        if token.type == tokenize.NAME:
            names_on.setdefault(token.start[0], set()).add(token.string)
    inside: set[int] = set()
    for (_, first, text), (name, _, last) in zip(blocks, parsed, strict=True):
        end = first + text.count(b"\n") - 1
        assert end >= last, name
        assert all(not line.strip() or line.lstrip().startswith(b"#")
                   for line in lines[last:end]), name
        block_lines = range(first, end + 1)
        inside.update(block_lines)
        used = set().union(*(names_on.get(line, set()) for line in block_lines))
        assert used <= _words(text), (name, sorted(used - _words(text)))
    used = set().union(*(names for line, names in names_on.items() if line not in inside))
    assert used <= _words(outside), sorted(used - _words(outside))


SOURCE = b'''"""A module; its docstring names nothing."""
import math

SCALE = _scale(3)


def _scale(x):
    return _base() * x


def _base():
    return 2


@decorated(
    option=True)
def used(x):
    return x * SCALE


def unused(x):
    return other(x)


def other(x):
    return x


class Unreached:
    pass
'''


def test_kept_are_the_reached_blocks_and_what_kept_parts_name() -> None:
    kept = kept_source(SOURCE, frozenset({"used"}))
    for name in (b"def used", b"@decorated", b"option=True", b"def _scale", b"def _base",
                 b"SCALE = _scale(3)", b"import math", b"its docstring"):
        assert name in kept, name
    for name in (b"def unused", b"def other", b"class Unreached"):
        assert name not in kept, name
    # what a function cannot depend on changes nothing; what it can, the kept text
    edited = SOURCE.replace(b"return other(x)", b"return other(x) + 1")
    assert kept_source(edited, frozenset({"used"})) == kept
    for old, new in ((b"return 2", b"return 3"), (b"_scale(3)", b"_scale(4)"),
                     (b"return x * SCALE", b"return x * SCALE + 1")):
        source = SOURCE.replace(old, new)
        assert source != SOURCE
        assert kept_source(source, frozenset({"used"})) != kept, new


def test_decorators_without_a_definition_stay_outside() -> None:
    source = b"x = 1\n@odd\ny = 2\n"
    outside, blocks = top_level_blocks(source)
    assert blocks == () and outside == source


def test_names_in_docstrings_and_comment_lines_keep_nothing_but_an_f_string_s_code_does():
    source = b'''LABEL = f"{_label()}"


def _label():
    return "x"


def used(x):
    """Unlike :func:`mentioned`, which it does not call."""
    # nor does it call commented
    return x


def mentioned(x):
    return x


def commented(x):
    return x
'''
    kept = kept_source(source, frozenset({"used"}))
    assert b"def _label" in kept
    assert b"def mentioned" not in kept and b"def commented" not in kept
