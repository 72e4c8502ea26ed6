"""The tutorial notebook on the site, with its outputs and figures.

``docs/tutorial.ipynb`` is committed **executed**: its outputs (tables, text, the sweep's
figure) are those of the code as it is. ``make tutorial`` (``python
docs/hooks/notebook.py``) executes it again in place; ``tests/project/test_docs.py`` executes it
and fails when the committed outputs differ from fresh ones, so they cannot go stale.
When the site is built, :func:`render` turns the executed notebook into Markdown — code
cells as code blocks, text outputs as text blocks, HTML outputs (DataFrames) as HTML,
figures as embedded PNG — so the page needs neither a kernel nor nbconvert, and reads
offline.
"""

from __future__ import annotations

import argparse
import html
import json
import re
from pathlib import Path

TUTORIAL = Path(__file__).resolve().parents[1] / "tutorial.ipynb"


def _text(value: str | list[str]) -> str:
    return "".join(value) if isinstance(value, list) else value


def _fence(text: str, language: str = "") -> list[str]:
    text = text.rstrip("\n")
    fence = "```"
    while fence in text:
        fence += "`"
    return [f"{fence}{language}", text, fence, ""]


def _output(output: dict, figure_number: list[int]) -> list[str]:
    kind = output.get("output_type")
    if kind == "stream":
        return _fence(_text(output.get("text", "")), "text")
    if kind == "error":
        return _fence(f"{output.get('ename')}: {output.get('evalue')}", "text")
    data = output.get("data", {})
    if "image/png" in data:
        figure_number[0] += 1
        png = _text(data["image/png"]).replace("\n", "")
        alt = html.escape(_text(data.get("text/plain", "figure")))
        return [f'<p class="nb-figure"><img alt="{alt} (figure {figure_number[0]})" '
                f'src="data:image/png;base64,{png}"></p>', ""]
    if "text/html" in data:
        body = "\n".join(line for line in _text(data["text/html"]).splitlines() if line.strip())
        return [f'<div class="nb-output">\n{body}\n</div>', ""]
    if "text/plain" in data:
        return _fence(_text(data["text/plain"]), "text")
    return []


def _demote(markdown: str, levels: int) -> str:
    """``markdown`` with each ATX heading ``levels`` deeper (code fences left alone)."""
    lines, fenced = [], False
    for line in markdown.split("\n"):
        fenced ^= line.lstrip().startswith("```")
        if not fenced and re.match(r"#{1,6} ", line):
            line = "#" * levels + line
        lines.append(line)
    return "\n".join(lines)


def render(notebook: dict, heading_offset: int = 0) -> str:
    """Markdown for an executed notebook (cells in order, each code cell with its outputs).

    Args:
        notebook: the executed notebook (its JSON).
        heading_offset: how many levels deeper its headings go (1: the notebook's title
            becomes a section of the page that shows it, which keeps its own title).
    """
    out: list[str] = []
    figures = [0]
    for cell in notebook.get("cells", []):
        source = _text(cell.get("source", ""))
        if cell.get("cell_type") == "markdown":
            out += [_demote(source.rstrip("\n"), heading_offset), ""]
        elif cell.get("cell_type") == "code":
            out += _fence(source, "python")
            for output in cell.get("outputs", []):
                out += _output(output, figures)
    return "\n".join(out)


def read(path: Path = TUTORIAL) -> dict:
    return json.loads(path.read_text(encoding="utf-8"))


def has_outputs(notebook: dict) -> bool:
    return any(cell.get("outputs") for cell in notebook.get("cells", []))


def text_outputs(notebook: dict) -> list[list[str]]:
    """Per code cell, its outputs as text (stream text, else text/plain; figures as
    "<image/png>"): what a fresh execution must reproduce. A progress line
    (dispatchlab.core.progress_display, marked in its metadata) is left out: it says how
    long the run took."""
    cells = []
    for cell in notebook.get("cells", []):
        if cell.get("cell_type") != "code":
            continue
        texts = []
        for output in cell.get("outputs", []):
            if output.get("metadata", {}).get("dispatchlab") == "progress":
                continue
            data = output.get("data", {})
            if "image/png" in data:
                texts.append("<image/png>")
            else:
                texts.append(_text(output.get("text", "") or data.get("text/plain", "")).strip())
        cells.append(texts)
    return cells


def execute(path: Path = TUTORIAL, timeout: int = 300) -> None:
    """Execute the notebook in place (from the repository root, no timing metadata)."""
    import nbformat
    from nbclient import NotebookClient

    notebook = nbformat.read(path, as_version=4)
    NotebookClient(notebook, timeout=timeout, kernel_name="python3", record_timing=False,
                   resources={"metadata": {"path": str(path.resolve().parents[1])}}).execute()
    for cell in notebook.cells:
        cell.metadata.pop("execution", None)
    nbformat.write(notebook, path)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("notebook", nargs="?", type=Path, default=TUTORIAL)
    execute(parser.parse_args(argv).notebook)


if __name__ == "__main__":
    main()
