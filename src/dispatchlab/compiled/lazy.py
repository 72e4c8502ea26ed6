"""Lazy compilation: numba dispatchers that compile their declared signature on first use.

Importing dispatchlab compiles nothing, and a run compiles only what it uses. Here, below
the engine and the theory, so that both can declare compiled functions this way.
"""

from __future__ import annotations

from numba import errors, njit


def lazy_function(func, signature, *, cache: bool = True, allocates: bool = True):
    """``func`` as a numba dispatcher that compiles nothing now: its declared ``signature``
    is compiled (or loaded from the disk cache) on first use — by :func:`compiled`, when
    the slot loop receives it as a first-class function, or when compiled code calls it.
    So importing dispatchlab compiles nothing, and a run compiles only what it uses.

    Without reference counting unless it ``allocates``: the loop's arrays are borrowed,
    so the reference counts numba maintains on them and on their views do nothing; but on
    the fields of tuple arguments they stay as calls its pruner cannot remove (about twenty
    per hook call, a few per cent of a run). A function that allocates no array needs none
    of them (numba's ``_nrt=False``)."""
    options = {"cache": cache} if allocates else {"cache": cache, "_nrt": False}
    dispatcher = njit(**options)(func)
    dispatcher.declared_signature = signature
    return dispatcher


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
