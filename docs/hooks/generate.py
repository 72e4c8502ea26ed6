"""MkDocs hook: pages generated from the code at build time, so they never drift from it.

* ``policies.md``: the marker ``<!-- policies -->`` becomes one section per registered
  policy and preset (name, Python name, summary, theory, parameter table), read from the
  registry (:func:`dispatchlab.policies.catalog`).
* ``tutorial.md``: the marker ``<!-- notebook -->`` becomes the executed tutorial notebook,
  its code, outputs and figures (``docs/hooks/notebook.py``).
* ``gallery.md``: the marker ``<!-- gallery -->`` becomes every figure of the catalog
  drawn from the committed store (``docs/reproductions/<experiment>/<figure>.png``), with
  the experiment's description and the claims each figure is evidence for; catalog
  figures not drawn yet are listed with the command that draws them.
* ``reproductions.md``: written by ``make reproductions`` from the results store; when it
  is missing (a fresh clone), it is generated here from the default store, which says
  "not run yet" for every experiment not in it.
"""

from __future__ import annotations

import importlib.util
from pathlib import Path

MARKER = "<!-- policies -->"
NOTEBOOK_MARKER = "<!-- notebook -->"
GALLERY_MARKER = "<!-- gallery -->"
HOOKS = Path(__file__).resolve().parent


def on_pre_build(config) -> None:
    page = Path(config["docs_dir"]) / "reproductions.md"
    if not page.exists():
        from dispatchlab.report.reproductions import main

        main(["--store", "dispatchlab-results.sqlite", "--out", str(page)])


def on_page_markdown(markdown: str, page, config, files) -> str:
    if page.file.src_uri == "policies.md" and MARKER in markdown:
        return markdown.replace(MARKER, policy_sections())
    if page.file.src_uri == "tutorial.md" and NOTEBOOK_MARKER in markdown:
        return markdown.replace(NOTEBOOK_MARKER, tutorial_markdown())
    if page.file.src_uri == "gallery.md" and GALLERY_MARKER in markdown:
        return markdown.replace(GALLERY_MARKER, gallery_sections(Path(config["docs_dir"])))
    return markdown


def _notebook_module():
    spec = importlib.util.spec_from_file_location("dispatchlab_docs_notebook",
                                                  HOOKS / "notebook.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def tutorial_markdown() -> str:
    notebook = _notebook_module()
    executed = notebook.read()
    if not notebook.has_outputs(executed):
        raise ValueError("docs/tutorial.ipynb has no outputs: run `make tutorial` and commit it")
    return notebook.render(executed, heading_offset=1)  # one page title: tutorial.md's


def gallery_sections(docs_dir: Path) -> str:
    from dispatchlab.experiments import build_experiment, experiment_names
    from dispatchlab.report.reproductions import CLAIMS
    from dispatchlab.report.text import to_markdown

    drawn, pending = [], []
    for name in experiment_names():
        spec = build_experiment(name, quick=True)
        folder = docs_dir / "reproductions" / name
        figures = [(f, folder / f"{f.name}.png") for f in spec.figures]
        present = [(f, path) for f, path in figures if path.exists()]
        if not present:
            pending.append(f"| `{name}` | {_cell(spec.title)} | "
                           f"{', '.join(f'`{f.name}`' for f in spec.figures)} | "
                           f"`results/reproductions/run.sh {name}` |")
            continue
        drawn += [f"## {spec.title} {{#{name}}}", "",
                  f"Experiment `{name}`" + (f" — {spec.paper}." if spec.paper else "."), "",
                  to_markdown(spec.description), ""]
        for figure, path in present:
            claims = sorted({claim.paper for claim in CLAIMS
                             if claim.experiment == name and claim.figure == figure.name})
            caption = figure.title or figure.name
            band = (" Shaded bands: 95 % confidence intervals, where the stored runs gave one."
                    if figure.ci else "")
            evidence = (" Evidence for " + ", ".join(claims) + " on the "
                        "[Reproductions](reproductions.md) page.") if claims else ""
            drawn += [f"![{name}: {caption}](reproductions/{name}/{path.name})", "",
                      f"*{caption}* (`{name}/{path.name}`).{band}{evidence}", ""]
    out = drawn
    if pending:
        out += ["## Not drawn yet {#not-drawn}", "",
                "Catalog experiments whose points are not in the committed store; the "
                "command runs them and `make reproductions` then draws their figures.", "",
                "| experiment | title | figures | command |", "|---|---|---|---|", *pending, ""]
    return "\n".join(out)


def _cell(text: object) -> str:
    return str(text).replace("|", "\\|").replace("\n", " ")


def policy_sections() -> str:
    from dispatchlab.cli.policies import allowed_values, value_text
    from dispatchlab.policies import catalog
    from dispatchlab.policies.api import public_name_of
    from dispatchlab.policies.base import Preset, policy_entry

    out = []
    for name, summary, theory, params in catalog():
        python = public_name_of(name)
        entry = policy_entry(name)
        out += [f"## `{name}` — `{python}` {{#{name}}}", "", summary, ""]
        if isinstance(entry, Preset):
            # only what can do something with the preset's fixed values (PiRand has no d)
            useful = {p.name for p in entry.base.parameters_for(entry.fixed)}
            params = tuple(p for p in params if p.name in useful)
            fixed = ", ".join(f"`{k}={v!r}`" for k, v in entry.fixed.items())
            out += [f"A preset of [`{entry.base.name}`](#{entry.base.name}) with {fixed}.", ""]
            if theory == entry.base.theory:  # said once, in the base policy's section
                theory = f"as for [`{entry.base.name}`](#{entry.base.name})."
        if theory:
            out += [f"**Theory.** {theory}", ""]
        example = ", ".join(f"{p.name}={p.default!r}" for p in params[:2])
        out += ["```python", f"dispatchlab.policies.{python}({example})", "```", ""]
        if params:
            out += ["| parameter | default | allowed | meaning |", "|---|---|---|---|"]
            out += [f"| `{p.name}` | `{_cell(value_text(p.default))}` | "
                    f"{_cell(allowed_values(p))} | {_cell(p.doc)} |" for p in params]
            out.append("")
    return "\n".join(out)
