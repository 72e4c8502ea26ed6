"""Progress in a Jupyter notebook: one output line updated in place, nothing elsewhere.

``dispatchlab.sweep`` (points done of the grid, with an ETA) and ``dispatchlab.simulate``
(slot t of T, once a run takes longer than a couple of seconds) show their progress when
they run inside a Jupyter kernel, and only there: a script, the command line (which has
its own spinner), a test or a worker process shows nothing, and IPython is never
imported by this module (it is looked up only when a kernel already loaded it). The line
is an IPython display updated by its ``display_id``, which needs no widget library, and
marked ``{"dispatchlab": "progress"}`` in its metadata.
"""

from __future__ import annotations

import html
import sys
from collections.abc import Callable

#: the metadata of a progress output (docs/hooks/notebook.py leaves such outputs out)
PROGRESS_METADATA = {"dispatchlab": "progress"}


def in_notebook() -> bool:
    """Whether this process is a Jupyter kernel (an IPython ZMQ shell already running)."""
    ipython = sys.modules.get("IPython")
    get = getattr(ipython, "get_ipython", None)
    shell = get() if callable(get) else None
    return shell is not None and type(shell).__name__ == "ZMQInteractiveShell"


def notebook_progress() -> Callable[[str, float | None], None] | None:
    """In a notebook, ``show(text, fraction)``: draw or update one progress line (an HTML
    bar when ``fraction`` in [0, 1] is given); elsewhere ``None`` (no progress)."""
    if not in_notebook():
        return None
    from IPython.display import HTML, display

    handle = None

    def show(text: str, fraction: float | None = None) -> None:
        nonlocal handle
        bar = ("" if fraction is None else
               f'<progress value="{max(0.0, min(1.0, fraction)):.4f}" max="1" '
               'style="width: 20em"></progress> ')
        shown = HTML(f"<span>{bar}{html.escape(text)}</span>")
        if handle is None:  # marked, so that a check of a notebook's outputs can skip it
            handle = display(shown, display_id=True, metadata=PROGRESS_METADATA)
        else:
            handle.update(shown, metadata=PROGRESS_METADATA)

    return show
