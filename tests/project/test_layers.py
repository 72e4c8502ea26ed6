"""The package's layers, checked statically on every import statement of every module
(imports inside functions included; ``if TYPE_CHECKING:`` blocks excluded, they never run).

A module may import its own unit and the units of lower layers, never a unit of its own
layer or a higher one. A unit is a subpackage of ``dispatchlab``; the package root holds
only the facade, ``__init__.py`` (see docs/CONTRIBUTING.md, "Layers").
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

PACKAGE = Path(__file__).parents[2] / "src" / "dispatchlab"

# bottom to top; the index is the layer's rank
LAYERS: list[set[str]] = [
    {"core"},  # the one error, converters, files, the RAM guard, pools, number formatting
    {"model", "compiled"},  # the validated model; the compiled building blocks
    {"engine", "theory", "stats", "solvers"},  # side by side
    {"policies"},  # run by the engine, described by the theory
    # one run of a system and a policy: plan, execute, summarise -> Result; and the
    # continuous-time engine with its policies and run
    {"simulation", "continuous"},
    {"specs", "bench"},  # what users write down (runs, grids, figures); the benchmarks
    {"testing"},  # the conformance kit, the coverage study, the known-answer fingerprint
    {"experiments"},  # grids run into the store, notebook sweeps
    {"report"},  # pages and figures from stored points
    {"cli", "__init__"},  # front ends: the command line and the package facade
    {"__main__"},  # the installed command's entry: loads the command line
]

RANK = {unit: rank for rank, units in enumerate(LAYERS) for unit in units}


def unit_of_file(path: Path) -> str:
    """The unit (layer member) of a source file under ``PACKAGE``."""
    return path.relative_to(PACKAGE).as_posix().split("/")[0].removesuffix(".py")


def unit_of_module(name: str) -> str | None:
    """The unit of an imported dotted name (None outside dispatchlab)."""
    parts = name.split(".")
    if parts[0] != "dispatchlab":
        return None
    return "__init__" if len(parts) == 1 else parts[1]


def _is_submodule(name: str) -> bool:
    """Whether ``from dispatchlab import name`` imports a module (else the facade's name)."""
    return (PACKAGE / f"{name}.py").is_file() or (PACKAGE / name / "__init__.py").is_file()


def _runtime_nodes(tree: ast.AST):
    """Every node except those under ``if TYPE_CHECKING:``."""
    stack = [tree]
    while stack:
        node = stack.pop()
        yield node
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.If) and "TYPE_CHECKING" in ast.unparse(child.test):
                stack.extend(child.orelse)
                continue
            stack.append(child)


def imported_units(path: Path) -> set[str]:
    """The dispatchlab units that a file imports at run time, anywhere in it."""
    found = set()
    for node in _runtime_nodes(ast.parse(path.read_text())):
        names: list[str] = []
        if isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names = [node.module]
            if node.module == "dispatchlab":  # a submodule, or a name of the facade
                names = [f"dispatchlab.{alias.name}" if _is_submodule(alias.name)
                         else "dispatchlab" for alias in node.names]
        for name in names:
            unit = unit_of_module(name)
            if unit is not None:
                found.add(unit)
    return found


SOURCES = sorted(PACKAGE.rglob("*.py"))


def test_every_module_has_a_layer() -> None:
    units = {unit_of_file(path) for path in SOURCES}
    assert not units - set(RANK), f"give these a layer: {sorted(units - set(RANK))}"


def test_the_package_root_holds_only_the_facade() -> None:
    # (and the installed command's entry, which loads the command line)
    assert sorted(p.name for p in PACKAGE.glob("*.py")) == ["__init__.py", "__main__.py"]


@pytest.mark.parametrize("path", SOURCES, ids=lambda p: p.relative_to(PACKAGE).as_posix())
def test_no_import_runs_upward(path: Path) -> None:
    own = unit_of_file(path)
    for unit in imported_units(path):
        if unit == own or unit not in RANK:
            continue
        assert RANK[unit] < RANK[own], (f"{path.relative_to(PACKAGE)} ({own}, layer "
                                        f"{RANK[own]}) imports {unit} (layer {RANK[unit]})")


def test_theory_never_imports_policies_or_the_engine() -> None:
    for path in sorted((PACKAGE / "theory").rglob("*.py")):
        assert not imported_units(path) & {"policies", "engine"}, path.name


def test_the_checker_sees_imports_inside_functions(tmp_path: Path) -> None:
    source = tmp_path / "m.py"
    source.write_text("def f():\n    from dispatchlab.policies.base import Policy\n"
                      "from dispatchlab import simulation\nimport dispatchlab.specs.figure\n")
    assert imported_units(source) == {"policies", "simulation", "specs"}


def test_the_checker_sees_the_facade(tmp_path: Path) -> None:
    source = tmp_path / "m.py"
    source.write_text("from dispatchlab import policies, simulate\n")  # simulate: a function
    assert imported_units(source) == {"policies", "__init__"}


def test_the_checker_skips_type_checking_blocks(tmp_path: Path) -> None:
    source = tmp_path / "m.py"
    source.write_text("from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n"
                      "    from dispatchlab.simulation.result import Result\nelse:\n"
                      "    from dispatchlab.model import System\n")
    assert imported_units(source) == {"model"}
