"""numba's disk cache, checked as it is read: an unreadable entry is removed and rebuilt.

numba keeps each compiled function in ``__pycache__`` as an index (``*.nbi``) and data
files (``*.nbc``), both pickles, and trusts them: a truncated ``*.nbc`` raised EOFError
(which click turned into a silent exit 1), random bytes an UnpicklingError traceback, and
every later run failed the same way until someone deleted the files.

:func:`install` wraps numba's ``Cache.load_overload`` and ``Cache.save_overload``: when
an entry cannot be read (any error but Ctrl-C), its index is removed, so numba compiles
the function again and writes a fresh entry, and one line on stderr says so (once per
process: a cache broken in many places is still one line). Installed when
:mod:`dispatchlab.compiled` is imported, before anything compiled can load.

numba also trusts an entry whose own source file is unchanged, though a function it calls
or inlines from another module changed: after an update of dispatchlab (``git pull`` on an
editable install, a rebase) the slot loop could run stale compiled helpers and give wrong
numbers, silently (seen: a policy's end-of-slot step from before a change, half the
departures). So the index key of every function that uses dispatchlab also holds the
digest of the dispatchlab sources it depends on (:func:`.dependencies.dependency_digest`):
an edit to one of them compiles it afresh, an edit elsewhere (the report, the CLI, a
test) does not.
"""

from __future__ import annotations

import contextlib
import os
import sys
from typing import Any

from dispatchlab.compiled.dependencies import dependency_digest

_state: dict[str, Any] = {"installed": False, "announced": False}


def announce(path: str, error: BaseException) -> None:
    """The one line (per process) saying that the cache was unreadable and is rebuilt."""
    if _state["announced"]:
        return
    _state["announced"] = True
    where = os.path.dirname(path) or "."
    print(f"note: numba cache: an unreadable entry in {where} ({type(error).__name__}: "
          f"{os.path.basename(path)}) was removed; compiling again, this run is slower "
          "(the rebuilt cache serves later runs)", file=sys.stderr, flush=True)


def _discard(cache: Any) -> str:
    """Remove the index of ``cache`` (its data files are then unreferenced and are
    overwritten by the next save); return the index path."""
    cache_file = getattr(cache, "_cache_file", None)
    path = str(getattr(cache_file, "_index_path", "") or "")
    if path:
        with contextlib.suppress(OSError):
            os.unlink(path)
    return path


def install() -> None:
    """Wrap numba's cache loading and saving (idempotent)."""
    if _state["installed"]:
        return
    from numba.core import caching

    load, save = caching.Cache.load_overload, caching.Cache.save_overload
    index_key = caching.Cache._index_key

    def keyed_by_sources(self: Any, sig: Any, codegen: Any) -> Any:
        key = index_key(self, sig, codegen)
        function = getattr(self, "_py_func", None)
        digest = dependency_digest(function) if function is not None else None
        return key if digest is None else (*key, digest)

    def guarded_load(self: Any, sig: Any, target_context: Any) -> Any:
        try:
            return load(self, sig, target_context)
        except Exception as error:  # noqa: BLE001 - any unreadable entry: rebuild it
            announce(_discard(self), error)
            return None

    def guarded_save(self: Any, sig: Any, data: Any) -> None:
        try:
            save(self, sig, data)
        except Exception as error:  # noqa: BLE001 - an unreadable index: start it afresh
            announce(_discard(self), error)
            with contextlib.suppress(Exception):  # a cache that cannot be written: no cache
                save(self, sig, data)

    caching.Cache.load_overload = guarded_load
    caching.Cache.save_overload = guarded_save
    caching.Cache._index_key = keyed_by_sources
    _state["installed"] = True
