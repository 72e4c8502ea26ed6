"""One self-contained HTML page per experiment: figures embedded, tables, spec, versions.

The page needs nothing beside itself (figures are PNG data URIs), so it can be
mailed or archived; PNG and SVG copies of every figure are written next to it.
"""

from __future__ import annotations

import base64
import html
import json
import math
import platform
import re
import shlex
import time
from collections.abc import Sequence
from importlib import metadata
from pathlib import Path

import pandas as pd

from dispatchlab.core.display import local_time
from dispatchlab.core.paths import write_whole
from dispatchlab.experiments.store import Store, code_version
from dispatchlab.report.plots import figure_notes, figures_of, summarize, write_figures
from dispatchlab.report.stored import full_spec, left_out_line, stored_spec, unrendered_policies
from dispatchlab.report.text import to_html
from dispatchlab.specs.experiment import ExperimentSpec

PACKAGES = ("numpy", "numba", "scipy", "pandas", "matplotlib", "distributed")

_STYLE = """
body { font-family: system-ui, sans-serif; margin: 2em auto; max-width: 70em; color: #222; }
h1 { font-size: 1.6em; } h2 { margin-top: 2em; border-bottom: 1px solid #ccc; }
table { border-collapse: collapse; font-size: 0.85em; margin: 1em 0; }
th, td { border: 1px solid #ddd; padding: 0.25em 0.6em; text-align: right; }
th { background: #f3f3f3; } td.text { text-align: left; }
pre { background: #f7f7f7; padding: 1em; overflow-x: auto; font-size: 0.8em; }
figure { margin: 1em 0; } figure img { max-width: 100%; border: 1px solid #eee; }
.failed { color: #a00; } .note { color: #555; font-size: 0.9em; }
"""


def write_report(store: Store, experiment: str, directory: str | Path,
                 command: str | None = None) -> Path:
    """Draw the figures of ``experiment`` from ``store`` and write ``index.html``; return it.

    A stored policy that is not registered in this installation (a user's own, registered
    by a module this process did not import) is left out: the page renders the others and
    says what it left out and why (:func:`unrendered_policies`)."""
    spec = stored_spec(store, experiment)
    left_out = unrendered_policies(store, experiment)
    directory = Path(directory)
    directory.mkdir(parents=True, exist_ok=True)
    frame = store.frame(experiment)
    if left_out:
        frame = frame[~frame["policy_label"].isin([p.display for p in left_out])]
    write_figures(spec, frame, directory, formats=("png", "svg"))
    stored_json = full_spec(store, experiment).to_json()
    write_whole("out", directory / "spec.json", lambda path: path.write_text(stored_json))
    page = render(spec, frame, store, directory, command,
                  unrendered=[left_out_line(store, experiment, p) for p in left_out],
                  stored=full_spec(store, experiment) if left_out else None)
    path = directory / "index.html"
    write_whole("out", path, lambda temporary: temporary.write_text(page, encoding="utf-8"))
    return path


def render(spec: ExperimentSpec, frame: pd.DataFrame, store: Store, figure_dir: Path,
           command: str | None, *, unrendered: Sequence[str] = (),
           stored: ExperimentSpec | None = None) -> str:
    """The HTML text (figures read from ``figure_dir`` and embedded); ``unrendered``: one
    line for each part of the stored experiment the page leaves out, and why; ``stored``:
    the whole stored spec, shown when ``spec`` is only the part rendered."""
    esc = html.escape
    parts = [f"<!DOCTYPE html><html lang='en'><head><meta charset='utf-8'>"
             f"<title>{esc(spec.title or spec.name)}</title><style>{_STYLE}</style></head><body>",
             f"<h1>{esc(spec.title or spec.name)}</h1>"]
    if spec.paper:
        parts.append(f"<p><b>Reproduces:</b> {esc(spec.paper)}</p>")
    if spec.description:  # written like a docstring: its reST literals and roles as code
        parts.append(to_html(spec.description))
    parts.append(_claims(spec, store))
    total = len(spec.points())
    shown = set(p.display for p in spec.policies)
    failed = [row for row in store.points(spec.name, status="failed")
              if row["policy_label"] in shown]
    for line in unrendered:
        parts.append(f"<p class='failed unrendered'><b>Not shown:</b> {esc(line)}.</p>")
    parts.append(f"<p>Experiment <code>{esc(spec.name)}</code>: {len(frame)} of {total} points "
                 f"stored in <code>{esc(str(store.path))}</code>"
                 + (f", <span class='failed'>{len(failed)} failed</span>" if failed else "")
                 + f". Generated {time.strftime('%Y-%m-%d %H:%M:%S')}.</p>")
    for figure in figures_of(spec):
        png = (figure_dir / f"{figure.name}.png").read_bytes()
        data = base64.b64encode(png).decode("ascii")
        summary = summarize(frame, figure)
        parts.append(f"<h2>{esc(figure.title or figure.name)}</h2><figure>"
                     f"<img alt='{esc(figure.name)}' data-figure='{esc(figure.name)}' "
                     f"src='data:image/png;base64,{data}'>"
                     f"<figcaption>y = {esc(figure.y)}, x = {esc(figure.x)}; "
                     f"{_bands(figure, summary)} Files: "
                     f"{esc(figure.name)}.png, {esc(figure.name)}.svg"
                     + "".join(f"<br><span class='note'>{esc(note)}</span>"
                               for note in figure_notes(figure, frame, spec))
                     + "</figcaption></figure>")
        parts.append(_table(summary, figure.y))
    if failed:
        parts.append("<h2>Failed points</h2><table><tr><th>policy</th><th>system</th>"
                     "<th>x</th><th>rep</th><th>error</th></tr>")
        for row in failed:
            parts.append(f"<tr><td class='text'>{esc(row['policy_label'])}</td>"
                         f"<td class='text'>{esc(row['system'])}</td><td>{row['x']:g}</td>"
                         f"<td>{row['replication']}</td>"
                         f"<td class='text failed'>{esc(str(row['error']))}</td></tr>")
        parts.append("</table>")
    parts.append(_runs(store.runs(spec.name)))
    parts.append("<h2>How to reproduce</h2><pre>"
                 + esc(_reproduce(spec, command)) + "</pre>")
    parts.append("<h2>Versions</h2>" + _versions(frame))
    # the spec as readable JSON: γ, ε and ρ as themselves, not \u escapes
    readable = json.dumps(json.loads((stored or spec).to_json()), sort_keys=True, indent=1,
                          ensure_ascii=False)
    parts.append("<h2>Spec</h2><pre>" + html.escape(readable, quote=False) + "</pre>")
    parts.append("</body></html>")
    return "\n".join(parts)


def _bands(figure, summary: pd.DataFrame) -> str:
    """What the shaded bands are — or that there are none, and why."""
    if not figure.ci:
        return "no confidence bands (this figure draws means only)."
    bounds = zip(summary.get("ci_low", []), summary.get("ci_high", []), strict=True)
    finite = [lo is not None and hi is not None and math.isfinite(lo) and math.isfinite(hi)
              for lo, hi in bounds]
    if finite and all(finite):
        return "bands: 95 % confidence intervals."
    if any(finite):
        return ("bands: 95 % confidence intervals where a point has one (the others were "
                "too short to say or unstable).")
    return "no confidence bands: no stored point has an interval (too short to say or unstable)."


def _claims(spec: ExperimentSpec, store: Store) -> str:
    """The verdict on each paper claim this experiment tests, as on the Reproductions
    page (the same rules, dispatchlab.report.reproductions)."""
    from dispatchlab.report.reproductions import CLAIMS, VERDICTS, Verdict, claim_frame

    esc = html.escape
    rows = []
    for claim in CLAIMS:
        if spec.name != claim.experiment and spec.name not in claim.extra:
            continue
        if claim.experiment not in store.experiment_names():
            verdict = Verdict("not run yet", "")
        else:
            try:
                judged = ExperimentSpec.from_json(store.experiment_spec(claim.experiment) or "")
                verdict = claim.judge(judged, claim_frame(store, claim))
            except (KeyError, IndexError, StopIteration, ValueError) as error:
                verdict = Verdict("incomplete", f"{type(error).__name__}: {error}")
        meaning = VERDICTS.get(verdict.status, "")
        rows.append(f"<tr><td class='text'>{esc(claim.statement)}</td>"
                    f"<td class='text'>{esc(claim.paper)}</td>"
                    f"<td class='text' title='{esc(meaning)}'><b>{esc(verdict.status)}</b></td>"
                    f"<td class='text'>{esc(verdict.numbers)}</td></tr>")
    if not rows:
        return ("<h2>Verdict</h2><p>No paper claim is judged from this experiment "
                "(the Reproductions page lists the claims and their experiments).</p>")
    legend = "".join(f"<li><b>{esc(word)}</b>: {esc(text)}</li>" for word, text in
                     VERDICTS.items())
    return ("<h2>Verdict</h2><table><tr><th>claim</th><th>source</th><th>verdict</th>"
            "<th>numbers</th></tr>" + "".join(rows) + f"</table><ul>{legend}</ul>")


def _table(summary: pd.DataFrame, y: str) -> str:
    if summary.empty:
        return "<p>No stored points yet.</p>"
    esc = html.escape
    rows = ["<table><tr><th>system</th><th>policy</th><th>x</th>"
            f"<th>{esc(y)}</th><th>95 % CI</th><th>replications</th></tr>"]
    for row in summary.itertuples(index=False):
        value = f"{row.y:.5g}" if pd.notna(row.y) else ("unstable" if not row.stable else "—")
        ci = (f"[{row.ci_low:.5g}, {row.ci_high:.5g}]"
              if pd.notna(row.ci_low) and pd.notna(row.ci_high) else "")
        rows.append(f"<tr><td class='text'>{esc(row.system)}</td>"
                    f"<td class='text'>{esc(row.policy)}</td><td>{row.x:g}</td>"
                    f"<td>{value}</td><td>{ci}</td><td>{row.replications}</td></tr>")
    rows.append("</table>")
    return "\n".join(rows)


def _runs(runs: list[dict[str, object]]) -> str:
    if not runs:
        return ""
    esc = html.escape
    out = ["<h2>Runs</h2><table><tr><th>started</th><th>status</th><th>executor</th>"
           "<th>computed</th><th>failed</th><th>code</th></tr>"]
    for run in runs:
        started = local_time(run["started"])
        out.append(f"<tr><td>{started}</td><td class='text'>{esc(str(run['status']))}</td>"
                   f"<td class='text'>{esc(str(run['executor']))}</td>"
                   f"<td>{run['points_computed']}</td><td>{run['points_failed']}</td>"
                   f"<td class='text'>{esc(str(run['code_version']))}</td></tr>")
    out.append("</table>")
    return "\n".join(out)


def _reproduce(spec: ExperimentSpec, command: str | None) -> str:
    from dispatchlab.experiments.catalog import experiment_names

    lines = _install_lines()
    # a stored name is data: pasted, it runs nothing and is not taken for an option
    name = ("-- " if spec.name.startswith("-") else "") + shlex.quote(spec.name)
    if command:
        lines.append(command)
    elif spec.name in experiment_names():
        lines.append(f"dispatchlab experiment {name}")
    else:
        lines.append("dispatchlab sweep spec.json   # spec.json is written next to this page")
    lines.append(f"dispatchlab report {name}")
    return "\n".join(lines)


def _install_lines() -> list[str]:
    """An install that works: dispatchlab is not on PyPI, so clone the repository at the
    code version that made the report (``git describe`` of the source tree)."""
    version = code_version()
    _, _, described = version.partition("+")
    repository = _git("remote", "get-url", "origin")
    if not described:
        return [f"# dispatchlab {version} is not published on PyPI: install it from a copy",
                "# of its source tree:  pip install -e PATH/TO/dispatchlab"]
    commit = described.removesuffix("-dirty").rsplit("-g", 1)[-1]
    if not _is_remote(repository):  # no public remote: a clone of this machine's path is no use
        return ["# dispatchlab is not published on PyPI, and the source this report was made",
                "# from has no public remote: in your copy of the dispatchlab repository,",
                f"git checkout {shlex.quote(commit)}   # the code version of this report "
                f"({' '.join(version.split())})",
                "make venv && . .venv/bin/activate   # python -m venv .venv; pip install -e ."]
    lines = [f"git clone {shlex.quote(repository)} dispatchlab && cd dispatchlab",
             f"git checkout {shlex.quote(commit)}   # the code version of this report "
             f"({' '.join(version.split())})"]
    if described.endswith("-dirty"):
        lines.append("# (the report was made from a tree with uncommitted changes on top)")
    lines.append("make venv && . .venv/bin/activate   # python -m venv .venv; pip install -e .")
    return lines


def _is_remote(url: str) -> bool:
    """A URL another machine can clone (https://…, ssh://…, git@host:…), not a local path."""
    return bool(url) and ("://" in url and not url.startswith("file://")
                          or re.match(r"^[\w.-]+@[\w.-]+:", url) is not None)


def _git(*args: str) -> str:
    import subprocess

    try:
        return subprocess.run(["git", *args], cwd=Path(__file__).resolve().parent,
                              capture_output=True, text=True, timeout=5,
                              check=True).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        return ""


def _versions(frame: pd.DataFrame) -> str:
    items = {"dispatchlab (this report)": code_version(), "python": platform.python_version(),
             "platform": platform.platform()}
    for package in PACKAGES:
        try:
            items[package] = metadata.version(package)
        except metadata.PackageNotFoundError:
            items[package] = "not installed"
    if not frame.empty and "code_version" in frame:
        items["dispatchlab (stored points)"] = ", ".join(sorted(set(frame["code_version"])))
    body = "".join(f"<tr><td class='text'>{html.escape(k)}</td>"
                   f"<td class='text'>{html.escape(v)}</td></tr>" for k, v in items.items())
    return f"<table>{body}</table>"
