"""Files named by a user: say exactly what is wrong with a path, as :class:`ValidationError`.

One place for the checks every reader and writer of a user's file needs, so that a
directory, a device such as ``/dev/null``, a missing folder or an unwritable place is
reported as what it is (not as "does not exist", and never as an ``OSError`` traceback).
"""

from __future__ import annotations

import contextlib
import os
import stat
from collections.abc import Callable
from pathlib import Path
from typing import TypeVar

from dispatchlab.core.errors import ValidationError

T = TypeVar("T")


def _kind(mode: int) -> str:
    if stat.S_ISDIR(mode):
        return "a directory"
    if stat.S_ISCHR(mode) or stat.S_ISBLK(mode):
        return "a device"
    if stat.S_ISFIFO(mode):
        return "a pipe"
    if stat.S_ISSOCK(mode):
        return "a socket"
    return "not a regular file"


def require_readable_file(path: str | Path, field: str, what: str = "file") -> Path:
    """``path`` as a :class:`Path` if it is a regular file this process can read."""
    path = Path(path)
    try:
        mode = path.stat().st_mode
    except FileNotFoundError:
        raise ValidationError(field, f"{what} {str(path)!r} does not exist") from None
    except OSError as error:
        raise ValidationError(field, f"cannot read {what} {str(path)!r}: "
                              f"{error.strerror or error}") from None
    if not stat.S_ISREG(mode):
        raise ValidationError(field, f"{what} {str(path)!r} is {_kind(mode)}, not a file")
    if not os.access(path, os.R_OK):
        raise ValidationError(field, f"cannot read {what} {str(path)!r}: permission denied")
    return path


def require_writable_file(path: str | Path, field: str) -> Path:
    """``path`` as a :class:`Path` if a file can be written there (checked before any work)."""
    path = Path(path)
    parent = path.parent
    if path.is_dir():
        raise ValidationError(field, f"{str(path)!r} is a directory")
    if not parent.is_dir():
        problem = "is not a directory" if parent.exists() else "does not exist"
        raise ValidationError(field, f"cannot write {str(path)!r}: directory {str(parent)!r} "
                              f"{problem}")
    if not os.access(path if path.exists() else parent, os.W_OK):
        raise ValidationError(field, f"cannot write {str(path)!r}: permission denied")
    return path


def guarded_io(field: str, path: str | Path, action: Callable[[], T], verb: str = "write") -> T:
    """Run ``action`` (a read or write of ``path``); an ``OSError`` becomes a ValidationError."""
    try:
        return action()
    except OSError as error:
        raise ValidationError(field, f"cannot {verb} {str(path)!r}: "
                              f"{error.strerror or error}") from None


def write_whole(field: str, path: str | Path, write: Callable[[Path], object]) -> None:
    """Write ``path`` whole or not at all: ``write(temporary)`` writes a file next to it
    that replaces ``path`` only once complete. A failure on the way (disk full, a file-size
    limit, Ctrl-C) removes the temporary file and leaves any old ``path`` as it was (a
    half-written CSV or HTML page was left behind before); an ``OSError`` is a
    ValidationError on ``field``. A path that is not a regular file (``/dev/stdout``, a
    pipe) is written directly: renaming over it would replace the device or pipe itself."""
    path = Path(path)
    try:
        regular = stat.S_ISREG(path.stat().st_mode)
    except FileNotFoundError:
        regular = True
    except OSError:
        regular = False
    if not regular:
        guarded_io(field, path, lambda: write(path))
        return
    temporary = path.with_name(f".{path.name}.{os.getpid()}.partial")
    try:
        guarded_io(field, path, lambda: write(temporary))
        guarded_io(field, path, lambda: os.replace(temporary, path))
    finally:
        with contextlib.suppress(OSError):
            temporary.unlink()
