"""MkDocs hook: every citation key ("[LED]", "[Π]", "[ES12]", …) links to its bibliography entry.

The keys are the headings of ``docs/bibliography.md`` (``### [LED] {#led}``). After a page
is rendered — its own Markdown and the docstrings mkdocstrings put on it — each key in
running text becomes a link to ``bibliography.html#anchor``. Code, math, headings and existing
links are left alone. ``tests/project/test_docs.py`` checks that every key used in the docs and
the docstrings has an entry, and that the built pages link it.
"""

from __future__ import annotations

import re
from pathlib import Path

from mkdocs.utils import get_relative_url

ENTRY = re.compile(r"^#{2,6}\s+\[([^\]]+)\]\s*\{#([A-Za-z0-9_-]+)\}", re.M)
#: regions left as they are: code, math, headings, links, scripts
PROTECTED = re.compile(r"<(pre|code|a|math|h[1-6]|script|style|textarea)\b.*?</\1\s*>", re.S)
TAG = re.compile(r"(<[^>]+>)")


def bibliography_keys(docs_dir: str | Path) -> dict[str, str]:
    """Citation key → anchor, read from the headings of ``bibliography.md``."""
    text = (Path(docs_dir) / "bibliography.md").read_text(encoding="utf-8")
    return {key: anchor for key, anchor in ENTRY.findall(text)}


def link_citations(content: str, keys: dict[str, str], bibliography_url: str) -> str:
    """``content`` (HTML) with each ``[KEY]`` of running text a link to its entry."""
    if not keys:
        return content
    key_pattern = re.compile(r"(?<![\w\]\[])\[(" + "|".join(
        re.escape(k) for k in sorted(keys, key=len, reverse=True)) + r")\](?![\w(\[])")

    def in_text(segment: str) -> str:
        parts = TAG.split(segment)
        for i in range(0, len(parts), 2):  # even parts are text, odd parts are tags
            parts[i] = key_pattern.sub(
                lambda m: f'<a class="citation" href="{bibliography_url}#{keys[m.group(1)]}" '
                          f'title="bibliography">[{m.group(1)}]</a>', parts[i])
        return "".join(parts)

    out, last = [], 0
    for match in PROTECTED.finditer(content):
        out += [in_text(content[last:match.start()]), match.group(0)]
        last = match.end()
    out.append(in_text(content[last:]))
    return "".join(out)


def on_page_content(html_text: str, page, config, files) -> str:
    keys = bibliography_keys(config["docs_dir"])
    # the page's own URL (bibliography.html, or bibliography/ with directory URLs)
    url = get_relative_url(files.get_file_from_path("bibliography.md").url, page.url)
    return link_citations(html_text, keys, url)
