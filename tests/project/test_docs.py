"""The documentation: the tutorial notebook runs (twice in one kernel) and the MkDocs site
builds with warnings as errors (issue 14)."""

from __future__ import annotations

import ast
import html
import importlib.util
import re
import subprocess
import sys
import time
from html.parser import HTMLParser
from pathlib import Path
from urllib.parse import unquote

import pytest

ROOT = Path(__file__).resolve().parents[2]
NOTEBOOK = ROOT / "docs" / "tutorial.ipynb"


def _missing(*modules: str) -> list[str]:
    return [m for m in modules if importlib.util.find_spec(m) is None]


@pytest.mark.slow  # a kernel and the whole notebook, twice (≈ 13 s)
@pytest.mark.skipif(bool(_missing("nbclient", "nbformat", "ipykernel")),
                    reason="needs nbclient, nbformat and ipykernel (the notebook extra)")
def test_tutorial_notebook_runs_twice_in_one_kernel() -> None:
    import nbformat
    from nbclient import NotebookClient

    notebook = nbformat.read(NOTEBOOK, as_version=4)
    committed = _notebook_hook().text_outputs(notebook)
    client = NotebookClient(notebook, timeout=120, kernel_name="python3",
                            resources={"metadata": {"path": str(ROOT)}})
    started = time.perf_counter()
    with client.setup_kernel():
        for _ in range(2):  # a researcher re-runs every cell: nothing may break
            for index, cell in enumerate(notebook.cells):
                if cell.cell_type == "code":
                    client.execute_cell(cell, index)  # raises CellExecutionError
    assert time.perf_counter() - started < 120
    texts = ["".join(o.get("text", "") or o.get("data", {}).get("text/plain", ""))
             for c in notebook.cells if c.cell_type == "code" for o in c.outputs]
    joined = "\n".join(texts)
    assert "Result(pod(d=2), N=10, M=3, ρ=0.9, E[ΣQ]=" in joined
    assert ": conforms" in joined and "FAILS" not in joined
    assert any(o.get("data", {}).get("image/png") for c in notebook.cells
               if c.cell_type == "code" for o in c.outputs)  # the sweep's figure
    # the committed notebook is executed, and its outputs are what the code prints now
    fresh = _notebook_hook().text_outputs(notebook)
    stale = [f"code cell {i}: committed {old!r}\n  now {new!r}"
             for i, (old, new) in enumerate(zip(committed, fresh, strict=True)) if old != new]
    assert not stale, ("docs/tutorial.ipynb's outputs are stale: run `make tutorial` and "
                       "commit it\n" + "\n".join(stale))


def _notebook_hook():
    spec = importlib.util.spec_from_file_location("docs_notebook",
                                                  ROOT / "docs" / "hooks" / "notebook.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


class _TextOutsideCode(HTMLParser):
    """The text of a page outside code, scripts and typeset math."""

    KEPT = frozenset({"code", "pre", "script", "style", "math", "kbd", "svg"})

    def __init__(self) -> None:
        super().__init__()
        self.inside = 0
        self.text: list[str] = []

    def handle_starttag(self, tag: str, attrs: list) -> None:
        self.inside += tag in self.KEPT

    def handle_endtag(self, tag: str) -> None:
        self.inside -= tag in self.KEPT and self.inside > 0

    def handle_data(self, data: str) -> None:
        if not self.inside:
            self.text.append(data)


def raw_markup(page: str) -> list[str]:
    """TeX left untypeset in a built page's text (``_{``, ``^(``, ``^{``, a backslash
    command), outside code and math, each with its surroundings."""
    reader = _TextOutsideCode()
    reader.feed(page)
    text = " ".join(reader.text)
    return [text[max(0, m.start() - 20):m.end() + 20]
            for m in re.finditer(r"_\{|\^\(|\^\{|\\[A-Za-z]", text)]


def test_raw_markup_is_found_outside_code_only() -> None:
    page = ("<p>limsup_{ε↓0} and R^(r)</p><code>x_{1}</code><math><mi>a</mi></math>"
            "<p>\\alpha</p><pre>\\beta</pre>")
    hits = raw_markup(page)
    assert len(hits) == 3, hits  # _{ and ^( in the text, \\alpha; not the code's nor pre's
    assert not any("x_{1}" in hit or "beta" in hit for hit in hits), hits


def _warnings(log: str) -> list[str]:
    """The WARNING lines of a build's log (strict mode aborts on them)."""
    return [line for line in log.splitlines() if line.startswith(("WARNING", "Aborted"))]


# the whole site (~11 s of CPU): `make docs` builds it too; the default suite keeps the
# strict build of a small site with the project settings (the test below)
@pytest.mark.slow
@pytest.mark.skipif(bool(_missing("mkdocs", "material", "mkdocstrings")),
                    reason="needs mkdocs, mkdocs-material and mkdocstrings[python] "
                    "(pip install -e '.[docs]')")
def test_site_builds_strict(tmp_path: Path) -> None:
    # (not -q: it hides strict mode's warnings, and the build then exits 0 with them)
    done = subprocess.run([sys.executable, "-m", "mkdocs", "build", "--strict",
                           "-d", str(tmp_path / "site")], cwd=ROOT, capture_output=True,
                          text=True, timeout=300)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    assert not _warnings(done.stderr), _warnings(done.stderr)
    raw = {page.name: found for page in sorted((tmp_path / "site").rglob("*.html"))
           if (found := raw_markup(page.read_text(encoding="utf-8")))}
    assert raw == {}, raw  # every formula typeset
    policies = (tmp_path / "site" / "policies.html").read_text(encoding="utf-8")
    # the names a fresh process registers (this worker's registry may hold policies other
    # tests registered)
    names = subprocess.run([sys.executable, "-c", "import dispatchlab as dl; "
                            "print(*dl.policy_names(), sep='\\n')"], capture_output=True,
                           text=True, check=True).stdout.split()
    assert "jsq" in names
    for name in names:  # generated from the registry, not copied
        assert f"<code>{name}</code>" in policies, name
    assert "PowerOfD" in policies and "LJBAPull" in policies
    api = (tmp_path / "site" / "api.html").read_text(encoding="utf-8")
    assert "check_policy" in api and "with_params" in api
    assert not re.search(r":(class|func|meth|mod|attr|data|exc|obj):", api)  # no raw roles
    for name in ("Kernel", "choose_function", "hook_function", "Strategy", "register_strategy",
                 "decision_function", "register_decision", "simulate_each", "RunSpec"):
        assert re.search(rf'id="dispatchlab\.[\w.]*\b{name}"', api), name  # the seam
    assert "<li><code>conservation</code>" in api and "<li><code>little</code>" in api
    assert (tmp_path / "site" / "reproductions.html").exists()
    tutorial = (tmp_path / "site" / "tutorial.html").read_text(encoding="utf-8")
    assert "data:image/png;base64," in tutorial and "Result(pod(d=2)" in tutorial  # outputs
    assert tutorial.count("<h1") == 1  # the notebook's title is a section of the page
    assert '<a href="model.html#led-tilt">docs/model.md#led-tilt</a>' in policies
    gallery = (tmp_path / "site" / "gallery.html").read_text(encoding="utf-8")
    for figure in sorted((ROOT / "docs" / "reproductions").glob("*/*.png")):
        assert f"{figure.parent.name}/{figure.name}" in gallery, figure
    assert ":func:" not in gallery and "``" not in gallery
    _check_site_offline_math_and_citations(tmp_path / "site")
    assert not unfollowable_links(tmp_path / "site"), unfollowable_links(tmp_path / "site")


def _check_site_offline_math_and_citations(site: Path) -> None:
    """Math is MathML (typeset at build time), nothing is fetched from a CDN, and every
    citation key of running text links to its bibliography entry (issue 24)."""
    for page in ("model", "statistics"):
        html = (site / f"{page}.html").read_text(encoding="utf-8")
        assert html.count("<math") >= 5 and 'class="arithmatex"' not in html, page
    entries = dict(BIB_ENTRY.findall(BIBLIOGRAPHY.read_text(encoding="utf-8")))
    unlinked = []
    for path in site.rglob("*.html"):
        html = path.read_text(encoding="utf-8")
        lowered = html.lower()
        assert "fonts.googleapis" not in lowered and "mathjax" not in lowered, path
        assert "polyfill" not in lowered and "cdn.jsdelivr" not in lowered, path
        prose = re.sub(r'<a class="citation" href="(?:\.\./)*bibliography\.html#([\w-]+)"[^>]*>'
                       r"\[([^\]]+)\]</a>",
                       lambda m: "" if entries.get(m.group(2)) == m.group(1) else m.group(0),
                       html)
        prose = re.sub(r"<(pre|code|math|h[1-6]|a|script|title)\b.*?</\1\s*>", "", prose,
                       flags=re.S)
        prose = re.sub(r"<[^>]+>", " ", prose)
        unlinked += [f"{path.relative_to(site)}: [{key}]" for key in CITATION.findall(prose)
                     if key in entries]
    assert not unlinked, "citation keys not linked to the bibliography:\n" + "\n".join(unlinked)


#: an href or src attribute of built HTML
LINK = re.compile(r"""\b(?:href|src)\s*=\s*["']([^"']*)["']""")
#: not a link inside the site: another site, a data: or mailto: URI
OTHER_SITE = re.compile(r"^(?:[a-z][a-z0-9+.-]*:|//)", re.I)


def unfollowable_links(site: Path) -> list[str]:
    """The internal links of a built site that a browser reading it from ``file://``
    cannot follow: one ending in "/" or naming a folder (a directory listing there), a
    root-absolute one ("/x.html": the root of the disk), one whose file is missing, or one
    whose #anchor is not in its page. Each as "page: link". ``404.html`` is left out: a web
    server shows it at any URL, so it links from the root by design, and no link leads
    to it."""
    bad, texts = [], {}
    for page in sorted(set(site.rglob("*.html")) - {site / "404.html"}):
        for url in LINK.findall(page.read_text(encoding="utf-8")):
            url = html.unescape(url)
            if not url or OTHER_SITE.match(url):
                continue
            path, _, anchor = url.partition("#")
            path = unquote(path.split("?", 1)[0])
            target = (page.parent / path) if path else page
            if path.endswith("/") or path.startswith("/") or not target.is_file():
                bad.append(f"{page.relative_to(site).as_posix()}: {url}")
            elif anchor and target.suffix == ".html":
                text = texts.setdefault(target, target.read_text(encoding="utf-8"))
                if f'id="{unquote(anchor)}"' not in text:
                    bad.append(f"{page.relative_to(site).as_posix()}: {url}")
    return bad


def test_unfollowable_links_are_found(tmp_path: Path) -> None:
    (tmp_path / "model").mkdir()
    (tmp_path / "model" / "index.html").write_text('<a href="../index.html">up</a>')
    (tmp_path / "img").mkdir()
    (tmp_path / "img" / "a b.png").write_bytes(b"")
    (tmp_path / "model.html").write_text('<h2 id="x">X</h2> <a href="#y">not here</a>')
    (tmp_path / "404.html").write_text('<link href="/css/theme.css">')
    (tmp_path / "index.html").write_text(
        '<a href="model.html#x">page</a> <img src="img/a%20b.png"> <a href="#">top</a> '
        '<a href="https://example.org/x/">other site</a> <img src="data:image/png;base64,A"> '
        '<a href="model/">folder</a> <a href="model">bare folder</a> <a href="gone.html">'
        'missing</a> <a href="/model.html">root</a> <a href=\'model/index.html?q=1\'>file</a> '
        '<a href="model.html#nope">no such anchor</a>')
    assert unfollowable_links(tmp_path) == [
        "index.html: model/", "index.html: model", "index.html: gone.html",
        "index.html: /model.html", "index.html: model.html#nope", "model.html: #y"]


@pytest.mark.skipif(bool(_missing("mkdocs")), reason="needs mkdocs (pip install -e '.[docs]')")
def test_a_small_site_with_the_project_settings_links_pages_not_folders(tmp_path: Path) -> None:
    """The project's URL setting and citation hook on a two-page site (seconds, where the
    whole site takes minutes): every link, a citation's included, opens a file."""
    import yaml

    settings = yaml.safe_load((ROOT / "mkdocs.yml").read_text(encoding="utf-8"))
    assert settings["use_directory_urls"] is False  # file:// browsing (issue 24)
    docs = tmp_path / "docs"
    (docs / "sub").mkdir(parents=True)
    (docs / "index.md").write_text("# Home\n\nAs [LED] shows: [page](sub/page.md#a).\n")
    (docs / "sub" / "page.md").write_text("# Page\n\n## A {#a}\n\n[LED]; [home](../index.md)\n")
    (docs / "bibliography.md").write_text("# Bibliography\n\n### [LED] {#led}\n\nX. *T.* 2020\n")
    (tmp_path / "mkdocs.yml").write_text(yaml.safe_dump({
        "site_name": "t", "use_directory_urls": settings["use_directory_urls"],
        "hooks": [str(ROOT / "docs" / "hooks" / "citations.py")],
        "markdown_extensions": ["attr_list"]}))
    done = subprocess.run([sys.executable, "-m", "mkdocs", "build", "--strict"],
                          cwd=tmp_path, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    assert not _warnings(done.stderr), _warnings(done.stderr)
    site = tmp_path / "site"
    assert 'href="bibliography.html#led"' in (site / "index.html").read_text(encoding="utf-8")
    page = (site / "sub" / "page.html").read_text(encoding="utf-8")
    assert 'href="../bibliography.html#led"' in page and 'href="../index.html"' in page
    assert not unfollowable_links(site), unfollowable_links(site)


def test_docs_references_in_running_text_link_to_their_page() -> None:
    spec = importlib.util.spec_from_file_location("docs_crossrefs",
                                                  ROOT / "docs" / "hooks" / "crossrefs.py")
    hook = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(hook)
    pages = {"model.md": "../model.html"}
    html_in = ('<p>see docs/model.md#led-tilt and docs/model.md, not docs/other.md#x</p>'
               '<pre>docs/model.md#led</pre><code>docs/model.md#jiq</code>'
               '<a href="y">docs/model.md#lsq</a><h2>docs/model.md#kslq</h2>')
    assert hook.link_references(html_in, pages.get) == (
        '<p>see <a href="../model.html#led-tilt">docs/model.md#led-tilt</a> and '
        '<a href="../model.html">docs/model.md</a>, not docs/other.md#x</p>'
        '<pre>docs/model.md#led</pre><code>docs/model.md#jiq</code>'
        '<a href="y">docs/model.md#lsq</a><h2>docs/model.md#kslq</h2>')


def test_reproductions_page_says_not_run_yet_for_an_empty_store(tmp_path: Path) -> None:
    from dispatchlab.experiments import build_experiment, experiment_names
    from dispatchlab.experiments.store import Store
    from dispatchlab.report.reproductions import CLAIMS, render

    for claim in CLAIMS:  # every claim points at a catalog experiment and one of its figures
        assert claim.experiment in experiment_names(), claim.key
        figures = {f.name for f in build_experiment(claim.experiment, quick=True).figures}
        assert claim.figure in figures, claim.key
    with Store(tmp_path / "empty.sqlite") as store:
        text = render(store, tmp_path / "docs" / "reproductions.md")
    rows = [line for line in text.splitlines() if line.startswith("| ") and "**" in line]
    assert len(rows) == len(CLAIMS)
    assert all("**not run yet**" in row and "`results/reproductions/run.sh " in row
               for row in rows)
    for claim in CLAIMS:  # extra experiments are catalog entries too
        assert all(name in experiment_names() for name in claim.extra), claim.key


# --- the repository stands alone (issue 23) -------------------------------------------------

#: what no tracked file may contain: the team's notes outside the repository and machine paths
OUTSIDE_REFERENCES = ("THEORY" + ".md", "../" + "shared", "/" + "work/", "/" + "home/")
CHECKED = ("src", "docs", "examples", "benchmarks", "tests", "README.md")
MODEL_PAGE = ROOT / "docs" / "model.md"
ANCHOR = re.compile(r"\{#([A-Za-z0-9_-]+)\}")


def _tracked_files(*paths: str) -> list[Path]:
    try:
        done = subprocess.run(["git", "ls-files", "-z", "--", *paths], cwd=ROOT,
                              capture_output=True, text=True, timeout=60)
    except OSError:
        pytest.skip("git is not available")
    if done.returncode != 0:
        pytest.skip("not a git checkout")
    return [ROOT / name for name in done.stdout.split("\0") if name]


def _text(path: Path) -> str:
    """A tracked file's text; "" for a binary file (a NUL byte: a figure's PNG bytes can
    spell "§1" by chance) and for one absent from this tree."""
    try:
        data = path.read_bytes()
    except (FileNotFoundError, IsADirectoryError):  # deleted or a submodule in this tree
        return ""
    return "" if b"\0" in data else data.decode("utf-8", errors="replace")


def test_no_tracked_file_cites_material_outside_the_repository() -> None:
    this_file = Path(__file__).resolve()
    offenders = [f"{path.relative_to(ROOT)}:{number}: {needle}"
                 for path in _tracked_files(*CHECKED) if path.resolve() != this_file
                 for number, line in enumerate(_text(path).splitlines(), 1)
                 for needle in OUTSIDE_REFERENCES if needle in line]
    assert not offenders, "cite docs/model.md#… or the paper instead:\n" + "\n".join(offenders)


def test_no_tracked_text_holds_a_control_character() -> None:
    """A backslash escape lost on the way (``"\\varepsilon"`` written as ``"\\v…"`` in a
    Python string) leaves a vertical tab, a backspace or a form feed, and the page's formula
    renders as "arepsilon = eta rac{…}" (docs/model.md's Halfin–Whitt scaling did)."""
    offenders = [f"{path.relative_to(ROOT)}:{number}: {line[:60]!r}"
                 for path in _tracked_files(*CHECKED)
                 for number, line in enumerate(_text(path).split("\n"), 1)
                 if any(ord(c) < 32 and c not in "\t\r" for c in line)]
    assert not offenders, "\n".join(offenders)


def _anchors(page: Path) -> list[str]:
    return ANCHOR.findall(page.read_text(encoding="utf-8"))


def test_every_section_of_the_model_page_has_one_unique_explicit_anchor() -> None:
    in_code = False
    for line in MODEL_PAGE.read_text(encoding="utf-8").splitlines():
        in_code ^= line.startswith("```")
        if not in_code and re.match(r"#{2,6} ", line):
            assert ANCHOR.search(line), f"docs/model.md: a section without {{#anchor}}: {line}"
    anchors = _anchors(MODEL_PAGE)
    assert len(anchors) == len(set(anchors)), "docs/model.md: an anchor is used twice"


@pytest.mark.parametrize("page", ["model", "bibliography"])
def test_every_cited_anchor_exists(page: str) -> None:
    anchors = set(_anchors(ROOT / "docs" / f"{page}.md"))
    cited = re.compile(rf"\b{page}\.md#([A-Za-z0-9_-]+)")
    missing = [f"{path.relative_to(ROOT)}: {page}.md#{anchor}"
               for path in _tracked_files(*CHECKED, "mkdocs.yml")
               for anchor in cited.findall(_text(path)) if anchor not in anchors]
    assert not missing, f"anchors missing from docs/{page}.md:\n" + "\n".join(missing)


#: a "§" followed by a number: a section of some work
SECTION = re.compile(r"§\s*\d")
#: what names that work just before the "§": its key ("[LED] §6", "[Sokal] §3") or the year
#: that ends its full reference ("SIAM 1999, §8.4")
NAMED_WORK = re.compile(r"(?:\[[^\[\]\s]{1,10}\]|\b(?:19|20)\d\d,)$")


def test_every_section_reference_names_its_work() -> None:
    """The repository's own model is cited as docs/model.md#…; a bare "§6.2" would be
    the numbering of notes outside the repository, which no reader can follow."""
    this_file = Path(__file__).resolve()
    offenders = []
    for path in _tracked_files(*CHECKED):
        if path.resolve() == this_file:
            continue
        text = _text(path)
        for match in SECTION.finditer(text):
            before = " ".join(text[max(0, match.start() - 24):match.start()].split())
            if not NAMED_WORK.search(before):
                line = text.count("\n", 0, match.start()) + 1
                offenders.append(f"{path.relative_to(ROOT)}:{line}: …{before} "
                                 f"{text[match.start():match.end() + 4]}")
    assert not offenders, ("a bare § reference: cite docs/model.md#… or name the paper by key "
                           "([LED] §6):\n" + "\n".join(offenders))


# -- docstrings (issue 23): every public top-level name has one, in the declared Google style --

SOURCE = ROOT / "src" / "dispatchlab"
#: a NumPy-style section: its title underlined with dashes ("Parameters\n----------")
NUMPY_SECTION = re.compile(
    r"^\s*(Parameters|Other Parameters|Returns|Yields|Receives|Raises|Warns|Attributes|"
    r"Methods|See Also|Notes|References|Examples?)\s*\n\s*-{3,}\s*$", re.M)
#: a Sphinx field list entry (":param x:", ":returns:", ":rtype:", ":raises ValueError:")
SPHINX_FIELD = re.compile(r"^\s*:(param|parameter|arg|argument|key|keyword|type|returns?|"
                          r"rtype|raises?|except|exception|yields?|ytype|ivar|cvar|var)\b[^:]*:",
                          re.M)


def _modules() -> list[tuple[Path, ast.Module]]:
    return [(path, ast.parse(path.read_text(encoding="utf-8"), str(path)))
            for path in sorted(SOURCE.rglob("*.py"))]


def test_every_public_top_level_function_and_class_has_a_docstring() -> None:
    missing = [f"{path.relative_to(ROOT)}:{node.lineno}: {node.name}"
               for path, tree in _modules() for node in tree.body
               if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef)
               and not node.name.startswith("_") and ast.get_docstring(node) is None]
    assert not missing, "public names without a docstring:\n" + "\n".join(missing)


def test_no_docstring_uses_numpy_or_sphinx_parameter_sections() -> None:
    """mkdocs.yml declares ``docstring_style: google``: sections are ``Args:``,
    ``Returns:``, ``Raises:``; prose without sections is Google style too."""
    declared = re.search(r"docstring_style:\s*(\w+)", (ROOT / "mkdocs.yml").read_text())
    assert declared and declared.group(1) == "google"
    kinds = (ast.Module, ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)
    offenders = [f"{path.relative_to(ROOT)}:{getattr(node, 'lineno', 1)}: "
                 f"{getattr(node, 'name', '(module)')}: {match.group(0).strip()}"
                 for path, tree in _modules() for node in ast.walk(tree)
                 if isinstance(node, kinds) and (doc := ast.get_docstring(node))
                 for pattern in (NUMPY_SECTION, SPHINX_FIELD)
                 for match in pattern.finditer(doc)]
    assert not offenders, ("NumPy- or Sphinx-style docstring sections (use Google's Args:, "
                           "Returns:, Raises:):\n" + "\n".join(offenders))


# -- citations (issue 24): every key used has a bibliography entry, and the site links it --

BIBLIOGRAPHY = ROOT / "docs" / "bibliography.md"
BIB_ENTRY = re.compile(r"^#{2,6}\s+\[([^\]]+)\]\s*\{#([A-Za-z0-9_-]+)\}", re.M)
#: a DOI or an arXiv id, written as a link to its resolver
IDENTIFIER = re.compile(r"\[doi:(10\.\d{4,9}/[^\]\s]+)\]\(https://doi\.org/\1\)"
                        r"|\[arXiv:(\d{4}\.\d{4,5})\]\(https://arxiv\.org/abs/\2\)")
#: a citation key in running text: "[LED]", "[Π]", "[ES12]", "[MSER-5]" (not "x[n]",
#: "[text](link)", "[link][ref]" or a one-letter "[X]")
CITATION = re.compile(r"(?<![\w\]\[`'\"])\[(Π|[A-Z][A-Za-z0-9-]{1,9})\](?![\w(\[:])")


def _prose(markdown: str) -> str:
    """Markdown without fenced code, inline code and display math."""
    markdown = re.sub(r"^\s*```.*?^\s*```", "", markdown, flags=re.S | re.M)
    markdown = re.sub(r"\$\$.*?\$\$", "", markdown, flags=re.S)
    return re.sub(r"``.+?``|`[^`\n]*`", "", markdown)


def _citations_used() -> dict[str, list[str]]:
    used: dict[str, list[str]] = {}
    for path in _tracked_files("docs", "README.md", "src"):
        if path.suffix == ".md":
            texts = [_prose(_text(path))]
        elif path.suffix == ".py" and path.exists():
            kinds = (ast.Module, ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)
            texts = [_prose(doc) for node in ast.walk(ast.parse(_text(path)))
                     if isinstance(node, kinds) and (doc := ast.get_docstring(node))]
        else:
            continue
        for text in texts:
            for key in CITATION.findall(text):
                used.setdefault(key, []).append(str(path.relative_to(ROOT)))
    return used


def test_every_citation_key_used_has_a_bibliography_entry() -> None:
    entries = dict(BIB_ENTRY.findall(BIBLIOGRAPHY.read_text(encoding="utf-8")))
    used = _citations_used()
    for key in ("ES12", "HLM", "CY12", "GTZ", "HSJSQ", "LSQ", "LED", "JBT", "Π"):
        assert key in used, f"[{key}] is no longer cited: update this test"
    missing = {key: sorted(set(where)) for key, where in used.items() if key not in entries}
    assert not missing, f"citation keys without an entry in docs/bibliography.md: {missing}"
    text = BIBLIOGRAPHY.read_text(encoding="utf-8")
    for key in entries:  # each entry: authors, title (in italics), year and an identifier
        body = text.split(f"[{key}] {{#{entries[key]}}}", 1)[1].split("\n#", 1)[0]
        assert re.search(r"\*[^*]+\*", body) and re.search(r"\b(19|20)\d\d\b", body), key
        prose = " ".join(body.lower().split())
        assert IDENTIFIER.search(body) or "identifier not verified" in prose, key


def test_every_bibliography_identifier_is_well_formed_and_links_to_itself() -> None:
    """A DOI or arXiv id is written once, as the text of a link to its own resolver, so
    the text a reader copies and the link they follow cannot disagree."""
    text = BIBLIOGRAPHY.read_text(encoding="utf-8")
    links = re.findall(r"\[(?:doi|arXiv):[^\]]*\]\([^)]*\)", text)
    assert len(links) >= 20
    assert [link for link in links if not IDENTIFIER.fullmatch(link)] == []


def test_the_home_page_example_prints_what_the_page_says() -> None:
    """docs/index.md quotes the repr of its first two runs; they must be what they print."""
    import dispatchlab as dl

    page = (ROOT / "docs" / "index.md").read_text(encoding="utf-8")
    quoted = re.findall(r"#\s*(Result\(.*\))", page)
    system = dl.System.build("50x0.1,50x0.5", load=0.9, dispatchers=10)
    runs = [dl.simulate(system, dl.policies.PowerOfD(d=2), slots=200_000, seed=7),
            dl.simulate(system.with_load(0.6), dl.policies.PowerOfD(d=2), slots=200_000,
                        seed=7)]
    assert quoted == [repr(run) for run in runs]
