"""The import statements a compiled function's dependency digest reads are found line by
line (compiled.dependencies.import_statements), and are those of a whole parse."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

import dispatchlab
from dispatchlab.compiled.dependencies import _statements, import_statements

PACKAGE = Path(dispatchlab.__file__).resolve().parent


def whole_parse(source: bytes) -> list[str]:
    return [ast.dump(node) for node in _statements(ast.parse(source).body)
            if isinstance(node, ast.Import | ast.ImportFrom)]


def test_every_module_s_imports_are_those_of_a_whole_parse() -> None:
    differ = [path.relative_to(PACKAGE).as_posix() for path in sorted(PACKAGE.rglob("*.py"))
              if [ast.dump(node) for node in import_statements(path.read_bytes())]
              != whole_parse(path.read_bytes())]
    assert not differ, differ


@pytest.mark.parametrize("source", [
    # a docstring's example, an import in a function, a relative import over lines
    b'"""Use:\n\n    from dispatchlab.x import y\n"""\nfrom dispatchlab.a import (\n'
    b'    b,\n    c as d,\n)\n\n\ndef f():\n    import dispatchlab.e as g\n    return g\n',
    b"from . import (x,  # see f()\n    y)\n",  # a parenthesis in a comment
    b"from dispatchlab.a import b, \\\n    c\n",  # a backslash continuation
    b"import os; from dispatchlab.a import b\n",
    b"x = '''\nimport nothing\n'''\nif x:\n    from dispatchlab.a import b\n",
])
def test_awkward_sources_give_what_a_whole_parse_gives(source: bytes) -> None:
    assert [ast.dump(node) for node in import_statements(source)] == whole_parse(source)
