"""numba's error messages marked up without wrapping the process's streams at every call.

Type inference tries templates that fail (a dozen ``@overload`` templates before the one
that fits, at each call site) and each failure builds a message that numba marks up
(``errors.HighlightColorScheme._markup``: bold, or the colours of ``NUMBA_COLOR_SCHEME``)
and then drops. Each markup enters numba's ``ColorShell``, which calls colorama's
``init()`` and ``deinit()``: ``sys.stdout`` and ``sys.stderr`` wrapped and unwrapped (and
the environment read) for a string that is built in memory and never written. In a cold
compile from the Python API (L-JBA pull, JSQ and SCD) that was 1.0 s of 11–12 s of CPU
(AMD EPYC). The markup does not depend on the wrapping (colorama's codes are constants):
here ``ColorShell`` does nothing and the messages are the same strings.

The command line and the test suite turn numba's highlighting off
(``NUMBA_DISABLE_ERROR_MESSAGE_HIGHLIGHTING``, :func:`dispatchlab.cli.plain_compile_errors`);
numba then has no ``ColorShell`` and there is nothing to patch.
"""

from __future__ import annotations

import contextlib
from typing import Any

_state: dict[str, Any] = {"installed": False}


class _NoShell(contextlib.AbstractContextManager):
    """numba's ``ColorShell`` without colorama's ``init``/``deinit`` (its ``__exit__`` only
    named a constant)."""

    def __exit__(self, *exc_detail: object) -> None:
        return None


def install() -> None:
    """Replace numba's ``ColorShell`` where numba highlights its errors (idempotent)."""
    if _state["installed"]:
        return
    from numba.core import errors

    if hasattr(errors, "ColorShell"):
        _state["numba_color_shell"] = errors.ColorShell
        errors.ColorShell = _NoShell
    _state["installed"] = True
