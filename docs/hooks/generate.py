"""MkDocs hook: pages generated from the code at build time, so they never drift from it.

* ``policies.md``: the marker ``<!-- policies -->`` becomes one section per registered
  policy and preset (name, Python name, summary, theory, parameter table), read from the
  registry (:func:`dispatchlab.policies.catalog`).
* ``reproductions.md``: written by ``make reproductions`` from the results store; when it
  is missing (a fresh clone), it is generated here from the default store, which says
  "not run yet" for every experiment not in it.
"""

from __future__ import annotations

from pathlib import Path

MARKER = "<!-- policies -->"


def on_pre_build(config) -> None:
    page = Path(config["docs_dir"]) / "reproductions.md"
    if not page.exists():
        from dispatchlab.report.reproductions import main

        main(["--store", "dispatchlab-results.sqlite", "--out", str(page)])


def on_page_markdown(markdown: str, page, config, files) -> str:
    if page.file.src_uri == "policies.md" and MARKER in markdown:
        return markdown.replace(MARKER, policy_sections())
    return markdown


def _cell(text: object) -> str:
    return str(text).replace("|", "\\|").replace("\n", " ")


def policy_sections() -> str:
    from dispatchlab.cli.policies import allowed_values, value_text
    from dispatchlab.policies import catalog
    from dispatchlab.policies.api import public_name_of

    out = []
    for name, summary, theory, params in catalog():
        python = public_name_of(name)
        out += [f"## `{name}` — `{python}`", "", summary, ""]
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
