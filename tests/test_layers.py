"""The package's layers, checked statically on every import statement of every module
(imports inside functions included; ``if TYPE_CHECKING:`` blocks excluded, they never run).

A module may import its own unit, a unit of a lower layer, and the units its own layer
explicitly allows (the ``SIDEWAYS`` table); never a unit of a higher layer. A unit is a
top-level module or subpackage of ``dispatchlab``, or one of the few modules that
``MODULE_UNITS`` places in a layer of their own (see docs/CONTRIBUTING.md, "Layers").
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

PACKAGE = Path(__file__).parent.parent / "src" / "dispatchlab"

# bottom to top; the index is the layer's rank
LAYERS: list[set[str]] = [
    {"errors"},  # ValidationError: every layer raises it
    {"convert", "paths", "parallel", "display", "memory"},  # converters, files, pools, …
    {"model", "compiled", "result"},  # the model, compiled building blocks, the Result record
    {"engine", "theory", "stats", "budget", "report.figures"},  # side by side
    {"policies"},  # run by the engine, described by the theory
    {"simulation"},  # one run of a system and a policy: simulate(), simulate_each()
    {"runspec", "bench", "coverage", "testing"},  # specs and checks built on simulate
    {"experiments"},  # grids, the store, notebook sweeps
    {"report"},  # pages and figures from stored points
    {"cli", "__init__"},  # front ends: the command line and the package facade
]

# modules whose layer differs from their package's: the figures' vocabulary (FigureSpec),
# which experiment specs hold and the report draws, sits below both; the scaling benchmark
# sits with the benchmark
MODULE_UNITS = {"report/figures.py": "report.figures", "bench_scaling.py": "bench"}

# imports within a layer that are allowed, importer -> imported
SIDEWAYS: dict[str, set[str]] = {}

RANK = {unit: rank for rank, units in enumerate(LAYERS) for unit in units}


def unit_of_file(path: Path) -> str:
    """The unit (layer member) of a source file under ``PACKAGE``."""
    relative = path.relative_to(PACKAGE).as_posix()
    if relative in MODULE_UNITS:
        return MODULE_UNITS[relative]
    return relative.split("/")[0].removesuffix(".py")


def unit_of_module(name: str) -> str | None:
    """The unit of an imported dotted name (None outside dispatchlab)."""
    parts = name.split(".")
    if parts[0] != "dispatchlab":
        return None
    if len(parts) == 1:
        return "__init__"
    candidate = "/".join(parts[1:]) + ".py"
    return MODULE_UNITS.get(candidate, parts[1])


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
                         else "dispatchlab" for alias in node.names
                         if alias.name != "__version__"]  # metadata: the facade imports nothing
        for name in names:
            unit = unit_of_module(name)
            if unit is not None:
                found.add(unit)
    return found


SOURCES = sorted(PACKAGE.rglob("*.py"))


def test_every_module_has_a_layer() -> None:
    units = {unit_of_file(path) for path in SOURCES}
    assert not units - set(RANK), f"give these a layer: {sorted(units - set(RANK))}"


@pytest.mark.parametrize("path", SOURCES, ids=lambda p: p.relative_to(PACKAGE).as_posix())
def test_no_import_runs_upward(path: Path) -> None:
    own = unit_of_file(path)
    for unit in imported_units(path):
        if unit == own or unit not in RANK:
            continue
        allowed = RANK[unit] < RANK[own] or unit in SIDEWAYS.get(own, set())
        assert allowed, (f"{path.relative_to(PACKAGE)} ({own}, layer {RANK[own]}) imports "
                         f"{unit} (layer {RANK[unit]})")


def test_theory_never_imports_policies_or_the_engine() -> None:
    for path in sorted((PACKAGE / "theory").rglob("*.py")):
        assert not imported_units(path) & {"policies", "engine"}, path.name


def test_the_checker_sees_imports_inside_functions(tmp_path: Path) -> None:
    source = tmp_path / "m.py"
    source.write_text("def f():\n    from dispatchlab.policies.base import Policy\n"
                      "from dispatchlab import simulation\nimport dispatchlab.report.figures\n")
    assert imported_units(source) == {"policies", "simulation", "report.figures"}


def test_the_checker_sees_the_facade(tmp_path: Path) -> None:
    source = tmp_path / "m.py"
    source.write_text("from dispatchlab import policies, simulate\n")  # simulate: a function
    assert imported_units(source) == {"policies", "__init__"}


def test_the_checker_skips_type_checking_blocks(tmp_path: Path) -> None:
    source = tmp_path / "m.py"
    source.write_text("from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n"
                      "    from dispatchlab.result import Result\nelse:\n"
                      "    from dispatchlab.model import System\n")
    assert imported_units(source) == {"model"}
