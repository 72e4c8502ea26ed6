"""The project's compiled code loaded from numba's disk cache without the compiler's set-up.

numba's ``Cache.load_overload`` starts with ``target_context.refresh()``: it imports every
implementation module numba lowers with (``numba.np.arraymath``, which imports
``scipy.linalg`` to find BLAS, ``numba.np.linalg``, the random generators, the typed
containers, unicode, …), installs their registries and refreshes the typing context.
Loading a compiled function uses none of it: the cached library is machine code, rebuilt
with the code generator and numba's runtime (NRT). The set-up was 0.1–0.2 s of a warm
run's 0.55–0.8 s (``dispatchlab run``, the Python API, every pool worker: AMD EPYC).

Here a function of dispatchlab's (the adapters, the slot loop, the solvers' kernels) is
loaded with the runtime initialised and nothing more; any other function, a user's own
cached numba code included, is loaded by numba's own method. numba's compiler refreshes
the contexts itself when it starts (``CompilerBase``), so a compile after such a load finds
them set up.
"""

from __future__ import annotations

from typing import Any

_state: dict[str, Any] = {"installed": False}


def install() -> None:
    """Replace numba's ``Cache.load_overload`` (idempotent; before :mod:`.cache_guard`
    wraps it)."""
    if _state["installed"]:
        return
    from numba.core import caching
    from numba.core.runtime.nrt import rtsys

    load = _state["numba_load_overload"] = caching.Cache.load_overload

    def load_overload(self: Any, sig: Any, target_context: Any) -> Any:
        function = getattr(self, "_py_func", None)
        if not getattr(function, "__module__", "").startswith("dispatchlab."):
            return load(self, sig, target_context)
        rtsys.initialize(target_context)  # (once: it returns at once after)
        with self._guard_against_spurious_io_errors():
            return self._load_overload(sig, target_context)
        return None  # an I/O error the guard swallowed: not in the cache

    caching.Cache.load_overload = load_overload
    _state["installed"] = True
