"""Compiled building blocks, the bottom layer under engine, policies, theory and stats.

:mod:`.rng`: the xoshiro256++ stream, the Bernoulli service stream and the samplers;
:mod:`.kernels`: small compiled helpers shared by policies (argmin with random ties, …);
:mod:`.histogram`: the layout of the delay histogram the loop fills and the statistics
read; :mod:`.lazy`: compilation on first use (:func:`.lazy.lazy_function`);
:mod:`.cache_guard`: numba's disk cache checked as it is read (installed on import, an
unreadable entry is rebuilt), each entry keyed by the sources it depends on
(:mod:`.dependencies`); :mod:`.cache_load`: the project's entries loaded without the
compiler's set-up; :mod:`.inlining`: numba's inliner without its quadratic costs;
:mod:`.compile_once`: one process compiles a function, the others wait and load it;
:mod:`.interrupts`: a stop (Ctrl-C, SIGTERM) during a compilation is never lost;
:mod:`.collector_pause`: Python's garbage collector paused while numba compiles;
:mod:`.target_options`: numba's compiler options compared at C speed;
:mod:`.typing_memo`: numba's typing of a builtin call done once per argument types;
:mod:`.error_markup`: numba's error messages marked up without wrapping the streams (all
installed on import).
Nothing here imports another dispatchlab package.
"""

from dispatchlab.compiled.cache_guard import install as _install_cache_guard
from dispatchlab.compiled.cache_load import install as _install_cache_load
from dispatchlab.compiled.collector_pause import install as _install_collector_pause
from dispatchlab.compiled.compile_once import install as _install_compile_once
from dispatchlab.compiled.error_markup import install as _install_error_markup
from dispatchlab.compiled.inlining import install as _install_inlining
from dispatchlab.compiled.interrupts import install as _install_interrupts
from dispatchlab.compiled.target_options import install as _install_target_options
from dispatchlab.compiled.typing_memo import install as _install_typing_memo

_install_cache_load()
_install_cache_guard()  # around cache_load's; before anything loads from numba's disk cache
_install_inlining()  # before anything compiles
_install_target_options()
_install_typing_memo()
_install_error_markup()
_install_compile_once()
_install_collector_pause()
_install_interrupts()  # outermost: around the lock a compilation waits for too
