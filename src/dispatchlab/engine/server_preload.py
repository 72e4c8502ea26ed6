"""Imported by a pool's fork server (:mod:`dispatchlab.core.pools`) before it forks any
worker: the slot loop loaded from numba's disk cache, so that every worker forked after
has it (loading it costs a worker about 0.3 s of CPU, every pool). Nothing compiles here:
with the loop not yet cached, workers load or compile it as before."""

from __future__ import annotations

import contextlib

from dispatchlab.compiled.lazy import compiled, needs_compiling
from dispatchlab.engine.loop import run_slots

# (the server ignores only an ImportError from what it imports and would die of any other
# error: a loop it cannot load is left to the workers, which load it and say why not)
with contextlib.suppress(Exception):
    if not needs_compiling(run_slots):
        compiled(run_slots, only=True)
