"""numba's typing of a builtin call, done once per argument types.

numba's type inference resolves every call — ``a[i]``, ``x + 1``, ``min(u, v)`` — by
trying the function's typing templates in order until one accepts the argument types,
and it does so again at every call site: in a cold L-JSQ push compile, 8,073 resolutions
of 957 distinct (function, argument types) pairs, 1.1 of 9.5 s, most of them ``getitem``,
``setitem`` and arithmetic failing a dozen ``@overload`` templates before the builtin one
accepts. Here a resolution that a builtin template won (the function's implementation key
is the function itself, not an ``@overload``'s compiled implementation) is remembered per
typing context, function type and argument types, and a later call site gets the same
signature with the same implementation key, as the templates would have given: builtin
templates are pure functions of the argument types. Resolutions an ``@overload`` won are
not remembered (their templates keep per-call state: inlining information, the compiler
options of the implementation). :func:`install` is called when :mod:`dispatchlab.compiled`
is imported; a numba without the attributes it relies on is left as it is.
"""

from __future__ import annotations

from typing import Any

_state: dict[str, Any] = {"installed": False}
#: (typing context, function type, argument types, keyword types) → signature
_RESOLVED: dict[tuple[Any, ...], Any] = {}


def install() -> None:
    """Patch numba's ``BaseFunction.get_call_type`` (idempotent)."""
    if _state["installed"]:
        return
    from numba.core.types import functions

    base = functions.BaseFunction
    resolve = _state["numba_get_call_type"] = getattr(base, "get_call_type", None)
    if resolve is None:
        _state["installed"] = True
        return

    def get_call_type_once(self: Any, context: Any, args: Any, kws: Any) -> Any:
        key = (context, self, tuple(args), tuple(kws.items()) if kws else ())
        try:
            signature = _RESOLVED.get(key)
        except TypeError:  # an argument type that cannot be hashed: numba's own way
            return resolve(self, context, args, kws)
        if signature is not None:
            self._impl_keys[signature.args] = self.typing_key  # as the template sets it
            return signature
        signature = resolve(self, context, args, kws)
        if signature is not None and self._impl_keys.get(signature.args) is self.typing_key:
            _RESOLVED[key] = signature
        return signature

    base.get_call_type = get_call_type_once
    _state["installed"] = True
