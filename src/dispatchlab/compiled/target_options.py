"""numba's compiler options compared at C speed.

numba keys the implementations of its ``@overload`` templates by the compiler options in
force (``templates._get_impl``: the key holds a ``Flags``, a ``TargetConfig``), so every
call the type inference resolves hashes and compares option sets. ``TargetConfig.values``
built each set through one Python property call per option (some 40), and a hash and a
comparison ask it three times: 3.5 million property calls, 9 % of a cold L-JSQ push
compile under a profiler. Here ``values`` is the class's defaults updated by the options
set, the same dict in the same order, built in C. :func:`install` is called when
:mod:`dispatchlab.compiled` is imported; a numba without the attributes it relies on is
left as it is.
"""

from __future__ import annotations

from typing import Any

_state: dict[str, Any] = {"installed": False}
#: per TargetConfig subclass, its options' defaults in the class's order of options
_DEFAULTS: dict[type, dict[str, Any]] = {}


def _defaults(cls: type) -> dict[str, Any]:
    defaults = _DEFAULTS.get(cls)
    if defaults is None:
        defaults = _DEFAULTS[cls] = {name: option.default
                                     for name, option in cls.options.items()}
    return defaults


def _values(self: Any) -> dict[str, Any]:
    """What numba's ``TargetConfig.values`` returns: every option's value, by name."""
    defaults = _defaults(type(self))
    values = {**defaults, **self._values}
    if len(values) != len(defaults):  # copied from another kind of config: its options only
        values = {name: values[name] for name in defaults}
    return values


def install() -> None:
    """Patch numba's ``TargetConfig.values`` (idempotent)."""
    if _state["installed"]:
        return
    from numba.core import targetconfig

    config = targetconfig.TargetConfig
    if "_values" in getattr(config, "__slots__", ()) and hasattr(config, "values"):
        config.values = _values
    _state["installed"] = True
