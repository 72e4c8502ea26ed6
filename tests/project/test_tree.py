"""The tests' tree mirrors the package's: one folder per package of src/dispatchlab (and
project/ for checks of the whole tree), no test file imports another (shared helpers live
at the root of tests/), base names unique across folders, none named after a tracker
number. Read from the tree, not from a list."""

from __future__ import annotations

import ast
import re
from collections import Counter
from pathlib import Path

TESTS = Path(__file__).resolve().parents[1]
PACKAGE = TESTS.parent / "src" / "dispatchlab"
#: folders of tests/ that are not a package's: whole-tree checks and committed answers
OWN_FOLDERS = {"project", "known_answers", "__pycache__"}


def _test_files() -> list[Path]:
    return sorted(TESTS.rglob("test_*.py"))


def test_every_test_folder_is_a_package_of_the_source() -> None:
    packages = {path.parent.name for path in PACKAGE.glob("*/__init__.py")}
    folders = {path.name for path in TESTS.iterdir() if path.is_dir()} - OWN_FOLDERS
    assert folders <= packages, f"folders of tests/ that no package has: {folders - packages}"
    assert not list(TESTS.glob("test_*.py")), "a test file at the root of tests/: move it"


def test_no_test_file_imports_another() -> None:
    offenders = []
    for path in _test_files():
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            names = ([alias.name for alias in node.names] if isinstance(node, ast.Import)
                     else [node.module or ""] if isinstance(node, ast.ImportFrom) else [])
            offenders += [f"{path.relative_to(TESTS)}: {name}" for name in names
                          if name.split(".")[0].startswith("test_")]
    assert not offenders, "shared helpers belong in a module at tests/'s root:\n" + \
        "\n".join(offenders)


def test_base_names_are_unique_and_say_what_they_test() -> None:
    names = Counter(path.name for path in _test_files())
    assert not [name for name, count in names.items() if count > 1]
    assert not [name for name in names if re.search(r"issue|_\d+\.py$", name)]
