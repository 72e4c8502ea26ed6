"""Text from a user (labels, titles, names) drawn by matplotlib exactly as written.

matplotlib parses any text holding a pair of unescaped ``$`` as mathtext: a policy label
``$\\notacommand$`` raised ParseFatalException when the figure was saved (after the points
were stored), and ``$x$`` would be typeset rather than shown. Every string that comes from
a user, a spec or a store goes through :func:`plain` before it reaches a figure; the
package's own labels are Unicode (ρ, ε, Σ) and need no mathtext either.
"""

from __future__ import annotations

from typing import Any


def plain(text: Any) -> str:
    """``text`` as matplotlib shows it literally: every ``$`` escaped (``\\$`` is drawn as
    ``$``, and no pair of unescaped dollars is left to start mathtext)."""
    return str(text).replace("$", r"\$")
