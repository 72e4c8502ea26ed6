"""MkDocs hook: Sphinx roles of docstrings shown as code in the API reference.

The docstrings are Google style (``mkdocs.yml``) but cross-reference names the Sphinx way,
``:class:`~dispatchlab.model.system.System```, which is also what ``help()`` readers
know. mkdocstrings renders such a role as the text ``:class:`` followed by the code; this
hook drops the role and, for ``~a.b.C``, keeps only ``C``, as Sphinx would show it.
"""

from __future__ import annotations

import re

ROLE = re.compile(r":(?:py:)?(?:class|func|meth|mod|attr|data|exc|obj|const|ref|term):"
                  r"<code>(~?)([^<]*)</code>")


def strip_roles(content: str) -> str:
    return ROLE.sub(lambda m: "<code>" + (m.group(2).rsplit(".", 1)[-1] if m.group(1)
                                          else m.group(2)) + "</code>", content)


def on_page_content(html_text: str, page, config, files) -> str:
    return strip_roles(html_text)
