"""MkDocs hook: typeset math as MathML when the site is built, so that it renders offline.

Pages write TeX between ``$…$`` (inline) and ``$$…$$`` (display). ``pymdownx.arithmatex``
in its generic mode keeps that text away from the Markdown parser and wraps it in
``<span class="arithmatex">\\(…\\)</span>`` or ``<div class="arithmatex">\\[…\\]</div>``;
this hook replaces each wrapper by the MathML that ``latex2mathml`` makes of it. Browsers
render MathML Core natively (Chromium, Firefox, Safari): no script, no font download and no
CDN are involved, so the site reads the same with no network. A formula latex2mathml
cannot convert fails the build, naming the page and the formula.
"""

from __future__ import annotations

import html
import re

from latex2mathml.converter import convert

INLINE = re.compile(r'<span class="arithmatex">\\\((.*?)\\\)</span>', re.S)
BLOCK = re.compile(r'<div class="arithmatex">\\\[(.*?)\\\]</div>', re.S)


def to_mathml(tex: str, display: str, where: str) -> str:
    """The MathML of one TeX formula (``display``: ``inline`` or ``block``)."""
    try:
        return convert(html.unescape(tex).strip(), display=display)
    except Exception as error:  # latex2mathml raises bare exceptions of several kinds
        raise ValueError(f"{where}: cannot typeset {tex!r}: {error}") from error


def typeset(content: str, where: str = "page") -> str:
    """Every arithmatex wrapper of ``content`` (HTML) replaced by MathML."""
    content = BLOCK.sub(lambda m: '<div class="math-block">'
                        + to_mathml(m.group(1), "block", where) + "</div>", content)
    return INLINE.sub(lambda m: to_mathml(m.group(1), "inline", where), content)


def on_page_content(html_text: str, page, config, files) -> str:
    return typeset(html_text, page.file.src_uri)
