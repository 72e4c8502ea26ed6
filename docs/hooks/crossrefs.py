"""MkDocs hook: a reference to a documentation page in plain text links to that page.

Docstrings and registry texts cite the documentation as ``docs/model.md#led-tilt`` (the
path a reader of the source can open). On the site, the API reference and the generated
Policies and Gallery pages show that text; this hook makes each such reference a link to
the built page and anchor (``model.html#led-tilt``, relative to the page it is on) when the
page is part of the site. Code, math, headings and existing links are left alone, as
``citations.py`` does for citation keys.
"""

from __future__ import annotations

import re

from mkdocs.utils import get_relative_url

REFERENCE = re.compile(r"\bdocs/([\w-]+\.md)(#[\w-]+)?")
#: regions left as they are: code, math, headings, links, scripts
PROTECTED = re.compile(r"<(pre|code|a|math|h[1-6]|script|style|textarea)\b.*?</\1\s*>", re.S)
TAG = re.compile(r"(<[^>]+>)")


def link_references(content: str, url_of) -> str:
    """``content`` (HTML) with each ``docs/<page>.md#anchor`` of running text a link;
    ``url_of(page)`` is the page's URL relative to this one, or None (left as text)."""

    def link(match: re.Match) -> str:
        url = url_of(match.group(1))
        if url is None:
            return match.group(0)
        return f'<a href="{url}{match.group(2) or ""}">{match.group(0)}</a>'

    def in_text(segment: str) -> str:
        parts = TAG.split(segment)
        for i in range(0, len(parts), 2):  # even parts are text, odd parts are tags
            parts[i] = REFERENCE.sub(link, parts[i])
        return "".join(parts)

    out, last = [], 0
    for match in PROTECTED.finditer(content):
        out += [in_text(content[last:match.start()]), match.group(0)]
        last = match.end()
    out.append(in_text(content[last:]))
    return "".join(out)


def on_page_content(html_text: str, page, config, files) -> str:
    def url_of(name: str) -> str | None:
        target = files.get_file_from_path(name)
        return None if target is None else get_relative_url(target.url, page.url)

    return link_references(html_text, url_of)
