"""Every Python example of the README, the documentation and the docstrings of src/ runs as
written (issue 51).

A page's ``python`` blocks run in order in one namespace (a later block uses what an earlier
one made), in a folder of their own (an example may write a store), as ``__main__`` (an
example under ``if __name__ == "__main__":`` runs). A ``>>>`` block runs its statements
(its printed outputs hold timings, so they are not compared). A block that is a fragment
of a module, not a runnable example, says so on the line before its fence:
``<!-- fragment -->``. Real runs, seconds each: in the slow suite.
"""

from __future__ import annotations

import doctest
import os
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
SOURCES = sorted((ROOT / "src").rglob("*.py"))
FENCE = re.compile(r"^(<!-- fragment -->\n)?```python\n(.*?)^```", re.S | re.M)


def examples(page: Path) -> list[str]:
    """The runnable ``python`` blocks of a page, in order."""
    return [code for fragment, code in FENCE.findall(page.read_text(encoding="utf-8"))
            if not fragment]


def as_script(code: str) -> str:
    """A block as Python source: a ``>>>`` block's statements, else the block itself."""
    if not code.lstrip().startswith(">>>"):
        return code
    return "".join(example.source for example in doctest.DocTestParser().get_examples(code))


def test_the_pages_have_examples_and_mark_their_fragments() -> None:
    assert sum(len(examples(page)) for page in PAGES) >= 8
    text = (ROOT / "docs" / "CONTRIBUTING.md").read_text(encoding="utf-8")
    assert "<!-- fragment -->\n```python" in text  # a module's piece, not an example


@pytest.mark.slow
@pytest.mark.parametrize("page", [p for p in PAGES if examples(p)],
                         ids=lambda p: p.relative_to(ROOT).as_posix())
def test_every_example_runs(page: Path, tmp_path: Path, monkeypatch) -> None:
    import matplotlib

    matplotlib.use("Agg")
    monkeypatch.chdir(tmp_path)
    namespace: dict[str, object] = {"__name__": "__main__"}
    for number, code in enumerate(examples(page), 1):
        source = compile(as_script(code), f"{page.name} example {number}", "exec")
        exec(source, namespace)  # noqa: S102 - the project's own documentation
    assert os.getcwd() == str(tmp_path)


def docstring_examples(source: Path) -> list[str]:
    """The ``>>>`` examples of a module's docstrings (its own and its functions' and
    classes'), each docstring's as one block of statements."""
    import ast

    tree = ast.parse(source.read_text(encoding="utf-8"))
    nodes = [tree, *(node for node in ast.walk(tree) if isinstance(
        node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef))]
    texts = (ast.get_docstring(node, clean=True) or "" for node in nodes)
    return [as_script(text[text.index(">>>"):]) for text in texts if ">>>" in text]


def test_docstring_examples_are_found() -> None:
    """The modules that show an example (the package's own runs in the default suite:
    tests/simulation/test_python_api.py)."""
    found = {source.relative_to(ROOT / "src").as_posix()
             for source in SOURCES if docstring_examples(source)}
    assert {"dispatchlab/__init__.py", "dispatchlab/testing/conformance.py",
            "dispatchlab/experiments/sweeps.py"} <= found


@pytest.mark.slow
@pytest.mark.parametrize("source", [s for s in SOURCES if docstring_examples(s)],
                         ids=lambda s: s.relative_to(ROOT / "src").as_posix())
def test_every_docstring_example_runs(source: Path, tmp_path: Path, monkeypatch) -> None:
    import matplotlib

    matplotlib.use("Agg")
    monkeypatch.chdir(tmp_path)
    namespace: dict[str, object] = {"__name__": "__main__"}
    for number, code in enumerate(docstring_examples(source), 1):
        exec(compile(code, f"{source.name} example {number}", "exec"), namespace)  # noqa: S102
    assert os.getcwd() == str(tmp_path)
