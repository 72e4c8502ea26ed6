"""The package's layers, checked statically on every import statement (functions included).

Only the layers already separated are enforced here: the compiled building blocks import
nothing but errors, and the engine nothing above errors, model and compiled (in particular
not the policies, whose Kernel it runs)."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

PACKAGE = Path(__file__).parent.parent / "src" / "dispatchlab"

ALLOWED = {
    "compiled": {"compiled", "errors"},
    "engine": {"compiled", "engine", "errors", "model"},
}


def imported_packages(path: Path) -> set[str]:
    """The dispatchlab subpackages or modules that a file imports, anywhere in it."""
    found = set()
    for node in ast.walk(ast.parse(path.read_text())):
        names = []
        if isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names = [node.module]
        for name in names:
            parts = name.split(".")
            if parts[0] == "dispatchlab" and len(parts) > 1:
                found.add(parts[1])
    return found


@pytest.mark.parametrize("layer", sorted(ALLOWED))
def test_layer_imports_only_layers_below(layer: str) -> None:
    files = sorted((PACKAGE / layer).rglob("*.py"))
    assert files
    for path in files:
        extra = imported_packages(path) - ALLOWED[layer]
        assert not extra, f"{path.relative_to(PACKAGE)} imports {sorted(extra)}"


def test_the_checker_sees_imports_inside_functions(tmp_path: Path) -> None:
    source = tmp_path / "m.py"
    source.write_text("def f():\n    from dispatchlab.policies.base import Policy\n")
    assert imported_packages(source) == {"policies"}
