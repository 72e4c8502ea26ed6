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
    """``dispatchlab.exact`` is also the facade's function name: once this package is
    imported, ``dispatchlab.exact`` is this module, so calling it solves."""

    #: the facade's function, registered by dispatchlab.simulation.exact when it loads
    front: Any = None

    def __call__(self, system: Any, policy: Any, **options: Any) -> Any:
        from dispatchlab.core.errors import ValidationError
        from dispatchlab.exact.chain import solve

        if self.front is not None:
            return self.front(system, policy, **options)
        if isinstance(policy, str):
            raise ValidationError("policy", "dispatchlab.exact.solve takes a Policy object; "
                                  "use make_policy(name) (the facade's function resolves "
                                  "names: dispatchlab.simulation.exact.exact)")
        return solve(system, policy, **options)


sys.modules[__name__].__class__ = _CallableModule
