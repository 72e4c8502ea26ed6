"""Exact answers for small systems: the stationary law of the slotted chain.

* :func:`dispatchlab.exact.chain.solve` — a truncated sparse chain for small N, any law
  and policy that declares its dispatch law (:mod:`dispatchlab.exact.rules`);
* :func:`dispatchlab.exact.qbd.two_server_qbd` — two servers in heavy traffic: a QBD
  (level min(Q₁, Q₂), phase Q₁ − Q₂) solved by logarithmic reduction.

This package sits beside the theory: it never imports the policies nor the engine and
asks a policy object for its capability. ``dispatchlab.exact(system, policy)`` (the
facade) also takes a policy's name; the module itself, called, takes a policy object.
"""

from __future__ import annotations

import sys
import types
from typing import Any


class _CallableModule(types.ModuleType):
    """``dispatchlab.exact`` names both this package and the facade's function; Python's
    import system sets the package as the attribute ``exact`` of ``dispatchlab`` when the
    package is first imported, hiding the function. Called, the package hands the call to
    the facade's function (which the facade loads by name, as it loads every public name)
    and puts that function back in place."""

    def __call__(self, system: Any, policy: Any, **options: Any) -> Any:
        facade = sys.modules["dispatchlab"]
        function = facade.__getattr__("exact")  # loads and re-binds dispatchlab.exact
        return function(system, policy, **options)


sys.modules[__name__].__class__ = _CallableModule
