"""The reStructuredText of docstrings and spec descriptions, made readable in a report.

Experiment descriptions are written like docstrings: ````code````, Sphinx roles
(``:func:`jbt_thresholds```, ``:class:`~dispatchlab.model.system.System```) and lines
wrapped at 90 columns. A report shows them as text: :func:`to_markdown` for the site,
:func:`to_html` for the HTML report (code as ``<code>``, paragraphs as ``<p>``).
"""

from __future__ import annotations

import html
import inspect
import re

#: a Sphinx role: ``:func:`name```, ``:py:class:`~a.b.C```, ``:data:`X```
ROLE = re.compile(r":(?:py:)?[a-z]+:`(~?)([^`]+)`")
#: reStructuredText inline code: ````x````
LITERAL = re.compile(r"``(.+?)``")


def _role_target(tilde: str, target: str) -> str:
    target = target.strip()
    shown = re.match(r"(.*?)\s*<(.+)>$", target)  # :ref:`text <target>`
    if shown:
        return shown.group(1)
    return target.rsplit(".", 1)[-1] if tilde else target


def paragraphs(text: str) -> list[str]:
    """The paragraphs of a docstring-like text, each on one line."""
    text = inspect.cleandoc(text)
    return [" ".join(block.split()) for block in re.split(r"\n\s*\n", text) if block.strip()]


def to_markdown(text: str) -> str:
    """Markdown: roles and ````literals```` as `code`, paragraphs unwrapped."""
    def one(paragraph: str) -> str:
        paragraph = ROLE.sub(lambda m: f"`{_role_target(m.group(1), m.group(2))}`", paragraph)
        return LITERAL.sub(lambda m: f"`{m.group(1)}`", paragraph)

    return "\n\n".join(one(p) for p in paragraphs(text))


def to_html(text: str) -> str:
    """HTML: each paragraph a ``<p>``, roles and literals as ``<code>``, the rest escaped."""
    def one(paragraph: str) -> str:
        pieces, last = [], 0
        pattern = re.compile(ROLE.pattern + "|" + LITERAL.pattern)
        for match in pattern.finditer(paragraph):
            pieces.append(html.escape(paragraph[last:match.start()]))
            code = (_role_target(match.group(1), match.group(2)) if match.group(2) is not None
                    else match.group(3))
            pieces.append(f"<code>{html.escape(code)}</code>")
            last = match.end()
        pieces.append(html.escape(paragraph[last:]))
        return "<p>" + "".join(pieces) + "</p>"

    return "\n".join(one(p) for p in paragraphs(text))
