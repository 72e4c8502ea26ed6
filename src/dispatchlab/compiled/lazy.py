"""Lazy compilation: numba dispatchers that compile their declared signature on first use.

Importing dispatchlab compiles nothing, and a run compiles only what it uses. Here, below
the engine and the theory, so that both can declare compiled functions this way.
"""

from __future__ import annotations

import ctypes
import functools
import hashlib
import os

from numba import errors, njit
from numba.core.types import WrapperAddressProtocol

# (imported for numba's typeof of a WrapperAddressProtocol, which it registers)
from numba.experimental import function_type as _function_type  # noqa: F401


def lazy_function(func, signature, *, cache: bool = True, allocates: bool = True,
                  from_python: bool = True, first_class: bool = True):
    """``func`` as a numba dispatcher that compiles nothing now: its declared ``signature``
    is compiled (or loaded from the disk cache) on first use — by :func:`compiled`, when
    the slot loop receives it as a first-class function, or when compiled code calls it.
    So importing dispatchlab compiles nothing, and a run compiles only what it uses.

    Without reference counting unless it ``allocates``: the loop's arrays are borrowed,
    so the reference counts numba maintains on them and on their views do nothing; but on
    the fields of tuple arguments they stay as calls its pruner cannot remove (about twenty
    per hook call, a few per cent of a run). A function that allocates no array needs none
    of them (numba's ``_nrt=False``).

    ``from_python``: Python calls it (numba builds a wrapper that unboxes every argument:
    for the slot loop's records of some fifty arrays, about as much code as the loop);
    ``first_class``: the loop receives it as a first-class function (which calls numba's C
    wrapper). A wrapper nothing calls is compiled code a cold run pays for and never runs.
    """
    options = {"cache": cache} if allocates else {"cache": cache, "_nrt": False}
    if not from_python:
        options["no_cpython_wrapper"] = True
    if not first_class:
        options["no_cfunc_wrapper"] = True
    dispatcher = njit(**options)(func)
    dispatcher.declared_signature = signature
    if not (func.__module__ or "").startswith("dispatchlab."):
        dispatcher.source_digest = source_digest(func)
    return dispatcher


def source_digest(func) -> str | None:
    """SHA-256 of the file that defines ``func`` as it is now, when it is declared (the code
    compiled later is what was loaded then, whatever the file says by that time); None
    without a file (a notebook cell, code given to ``exec``)."""
    try:
        with open(func.__code__.co_filename, "rb") as source:
            return hashlib.sha256(source.read()).hexdigest()
    except OSError:
        return None


def compiled(function, *, only: bool = False):
    """``function`` with its declared signature compiled (from the disk cache when there);
    ``only``: refuse any other signature afterwards (a function with first-class function
    arguments must not be specialised on each dispatcher it is called with)."""
    signature = getattr(function, "declared_signature", None)
    if signature is not None and tuple(signature.args) not in function.overloads:
        try:
            function.compile(signature)
        except errors.TypingError as error:
            if function.targetoptions.get("_nrt", True):
                raise
            raise errors.TypingError(
                f"{getattr(function, '__name__', function)}: {error}\n(if it allocates "
                "arrays, e.g. np.zeros or np.argsort, declare it with allocates=True)"
            ) from None
    if only and hasattr(function, "disable_compile"):  # not a wrapper of one
        function.disable_compile()
    return function


def needs_compiling(function, signature=None) -> bool:
    """Whether ``function`` has still to compile ``signature`` (default: its declared
    one; or a tuple of argument types, as compiled code that calls it compiles it): not in
    this process, and not in numba's disk cache (no index entry under the key a load would
    look for; a damaged index counts as none). False for what is not a numba dispatcher
    cached on disk."""
    from numba.core.caching import Cache

    signature = signature if signature is not None else getattr(function, "declared_signature",
                                                                   None)
    cache = getattr(function, "_cache", None)
    if signature is None or not isinstance(cache, Cache):
        return False
    arguments = tuple(signature.args) if hasattr(signature, "args") else tuple(signature)
    if arguments in function.overloads:
        return False
    try:
        index = cache._cache_file._load_index()
    except Exception:  # a damaged index: the load that compiles will say so and rebuild it
        return True
    return cache._index_key(signature, function.targetctx.codegen()) not in index


@functools.cache
def _abort_address() -> int:
    """The address of the C library's ``abort``: where an :class:`AbsentStep` points (looked
    up once a process: numba asks for it each time the loop is called)."""
    library = ctypes.CDLL(None) if os.name == "posix" else ctypes.CDLL("msvcrt")
    return ctypes.cast(library.abort, ctypes.c_void_p).value or 0


class AbsentStep(WrapperAddressProtocol):
    """A first-class function of ``signature`` that a run passes the slot loop for a step
    it never takes (a law, a hook or an observation the run does not have): it compiles
    nothing (a compiled stub cost a cold first run about 0.05 s each). Its address is the
    C library's ``abort``, so that a call the loop should never make stops the process
    at once instead of running whatever lies at a null address."""

    def __init__(self, signature, name: str) -> None:
        self._signature = signature
        self.__name__ = name

    def signature(self):
        return self._signature

    def __wrapper_address__(self) -> int:
        return _abort_address()

    def __repr__(self) -> str:
        return f"AbsentStep({self.__name__})"
