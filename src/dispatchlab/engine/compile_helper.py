"""A cold run compiles on two cores: a helper process compiles the run's pieces from the
other end of the list while the run compiles them in order, both into numba's disk cache.

A run compiles its pieces one after another (the slot loop, the policy's ``choose``
adapter, its hooks' adapters, the steps of its laws), each in one thread: on a cold cache
an L-JSQ push run spent about 11 s on ``choose``, 5 s on the push hook and 3 s on the loop,
on one core of two. Here, when at least two of a run's pieces have still to compile and a
second core is free, :func:`compile_alongside` starts ``python -m
dispatchlab.engine.compile_helper`` with the pieces in reverse order. The two processes
never compile one function twice (``compiled.compile_once``: the first takes the
function's lock, the other loads the result from the disk cache), and the helper never
waits: a piece the run is compiling it skips (``compile_once.skip_busy``). Results are
the same functions from the same cache, so nothing a run computes depends on the helper.

The helper imports dispatchlab's own modules only (a piece is a module of the package and
the name of a compiled function in it), writes nothing but numba's cache, dies with the run
(``PR_SET_PDEATHSIG`` on Linux; the run stops it when it no longer needs it), and is
never started inside a worker of a process pool, in the helper itself, on one core, or
with ``DISPATCHLAB_COMPILE_HELPER=0``.
"""

from __future__ import annotations

import contextlib
import importlib
import json
import multiprocessing
import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator, Sequence
from dataclasses import asdict, dataclass
from typing import Any

from dispatchlab.compiled.lazy import compiled, needs_compiling
from dispatchlab.engine.adapter import (
    adapter_needs_compiling,
    is_policy_function,
    policy_adapter,
)

#: "0": never start a helper
SWITCH = "DISPATCHLAB_COMPILE_HELPER"
#: set in the helper's environment (a helper starts no helper)
_IN_HELPER = "DISPATCHLAB_IN_COMPILE_HELPER"
_PACKAGE = "dispatchlab."
#: what the last run's helper reported as it ended (done, or stopped by the run): its peak
#: resident memory (``peak_kb``) and CPU seconds (``cpu_seconds``); empty when the run had
#: none
last_helper: dict[str, float] = {}
#: the helper of this process while it runs (one at a time: a run inside a compile that
#: has one starts none)
_running: list[subprocess.Popen[str]] = []


@dataclass(frozen=True)
class Piece:
    """A compiled function of a run, as the helper finds it again: ``module``'s attribute
    ``name`` (a lazily compiled step, a policy function whose adapter compiles, or a
    function a piece calls, which ``module`` declares in its ``CALLEES``)."""

    module: str
    name: str


def _needs_compiling(function: Any) -> bool:
    if is_policy_function(function):
        return adapter_needs_compiling(function)
    return needs_compiling(function)


def _address(function: Any) -> Piece | None:
    """Where dispatchlab's ``function`` can be imported from, or None."""
    module_name = getattr(getattr(function, "py_func", None), "__module__", "") or ""
    module = sys.modules.get(module_name)
    if not module_name.startswith(_PACKAGE) or module is None:
        return None
    for name, value in vars(module).items():
        if value is function:
            return Piece(module_name, name)
    return None


def pieces_to_compile(functions: Sequence[Any]) -> list[Piece]:
    """Those of a run's ``functions`` (lazily compiled steps, and policy functions that
    compile through their adapters) that have still to compile, in the order given, each
    once."""
    pieces: dict[Piece, None] = {}
    for function in functions:
        piece = _address(function)
        if piece is not None and piece not in pieces and _needs_compiling(function):
            pieces[piece] = None
    return list(pieces)


def _helper_allowed() -> bool:
    if os.environ.get(SWITCH, "1") == "0" or os.environ.get(_IN_HELPER):
        return False
    if multiprocessing.parent_process() is not None:  # a pool's worker: its cores are taken
        return False
    try:
        cores = len(os.sched_getaffinity(0))
    except AttributeError:  # pragma: no cover - not on Linux
        cores = os.cpu_count() or 1
    return cores >= 2


#: what a piece is, for a person waiting for it (else its module and name)
_DESCRIPTIONS = {
    "run_slots": "the slot loop",
    "serve_other_law": "its service law",
    "bernoulli_fifo": "its FIFO delays",
    "other_arrivals": "its arrival law",
    **{f"{law}_to_one": "its arrival law" for law in ("poisson", "bernoulli", "binomial",
                                                      "deterministic", "trace")},
    "observe_step": "its observations",
    "ptrs_draw": "its Poisson draws",
    "tag_one_step": "its tagged delays",
}


def describe(pieces: Sequence[Piece]) -> str:
    """The pieces in words: "the slot loop, policies.classic._jsq_choose"."""
    return ", ".join(_DESCRIPTIONS.get(piece.name)
                     or f"{piece.module.removeprefix(_PACKAGE)}.{piece.name}"
                     for piece in pieces)


@contextlib.contextmanager
def compile_alongside(pieces: Sequence[Piece]) -> Iterator[None]:
    """While the body compiles a run's ``pieces`` (:func:`pieces_to_compile`) in this
    order, a helper process compiles them from the other end, when there are two or more
    and a helper is allowed; it is stopped when the body ends. The helper first compiles
    the out-of-line functions the pieces call (:func:`callees_to_compile`), which the run
    would otherwise compile one by one, inside the piece whose type inference meets them."""
    if not pieces or _running or not _helper_allowed():
        yield
        return
    ahead = callees_to_compile(pieces)  # (a walk of their code: ~10 ms a piece)
    if len(pieces) + len(ahead) < 2:
        yield
        return
    helper = _start([*ahead, *pieces[::-1]])
    _running.append(helper)
    try:
        yield
    finally:
        _running.clear()
        _stop(helper)


def callees_to_compile(pieces: Sequence[Piece]) -> list[Piece]:
    """The compiled functions the ``pieces``' code calls rather than inlines, that their
    modules declare with the argument types they are called with (a module's ``CALLEES``,
    name → types: the loop's steps, LED's group walk and tree refresh), still to compile;
    as pieces, each once, in the order of the pieces that reach them (the loop's first).
    A piece compiles such a callee inside its own compile, on one core; compiled ahead by
    the helper, it is loaded from the cache instead (a cold LSQ run waited 4.9 s for the
    helper to compile its ``choose`` with the group walk and the refresh inside)."""
    from dispatchlab.compiled.dependencies import reachable_dispatchers

    found: dict[Piece, None] = {}
    for piece in pieces:
        function = getattr(sys.modules.get(piece.module), piece.name, None)
        if function is None:
            continue
        reached = reachable_dispatchers(function)
        # a module declares the callees its code calls, wherever they are defined (the
        # loop's steps live in engine.service and engine.tags)
        modules = {piece.module: None}
        modules.update((callee.py_func.__module__, None) for callee in reached)
        callees = {id(callee) for callee in reached}
        for module_name in modules:
            module = sys.modules.get(module_name)
            for name, types in getattr(module, "CALLEES", {}).items():
                callee = getattr(module, name, None)
                if id(callee) in callees and needs_compiling(callee, types):
                    found[Piece(module_name, name)] = None
    return list(found)


def _start(pieces: Sequence[Piece]) -> subprocess.Popen[str]:
    environment = {**os.environ, _IN_HELPER: "1"}
    command = [sys.executable, "-P", "-m", __name__, str(os.getpid()),
               json.dumps([asdict(piece) for piece in pieces])]
    # its own session: a Ctrl-C at the terminal goes to the run, which stops the helper
    return subprocess.Popen(command, env=environment, stdin=subprocess.DEVNULL,
                            stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True,
                            start_new_session=True)


def _stop(helper: subprocess.Popen[str]) -> None:
    if helper.poll() is None:
        helper.terminate()
    try:
        output, _ = helper.communicate(timeout=10)
    except subprocess.TimeoutExpired:
        helper.kill()
        output, _ = helper.communicate()
    last_helper.clear()
    with contextlib.suppress(ValueError, IndexError):
        last_helper.update(json.loads((output or "").strip().splitlines()[-1]))


def _die_with(parent: int) -> None:
    """Be killed when ``parent`` dies (Linux), and stop now if it already has."""
    with contextlib.suppress(OSError, AttributeError):
        import ctypes

        ctypes.CDLL(None, use_errno=True).prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG
    if os.getppid() != parent:
        raise SystemExit(0)


def _peak_kb() -> int:
    with contextlib.suppress(OSError), open("/proc/self/status") as status:
        for line in status:
            if line.startswith("VmHWM:"):
                return int(line.split()[1])
    return 0


def _compile(piece: Piece) -> None:
    if not piece.module.startswith(_PACKAGE):
        return
    module = importlib.import_module(piece.module)
    function = getattr(module, piece.name)
    if is_policy_function(function):
        policy_adapter(function)
    elif piece.name in getattr(module, "CALLEES", {}):  # a function a piece calls
        function.compile(module.CALLEES[piece.name])
    else:
        compiled(function)


def main(argv: Sequence[str]) -> int:
    """The helper: ``argv`` = (the run's process id, the pieces as JSON)."""
    from dispatchlab.compiled import compile_once

    _die_with(int(argv[0]))
    signal.signal(signal.SIGTERM, _stop_now)  # the run is done compiling: report and go
    compile_once.skip_busy()
    try:
        for fields in json.loads(argv[1]):
            # a piece the run is compiling (Busy), or one that fails here and so fails the
            # run itself, which reports it: the helper goes on to the next one
            with contextlib.suppress(Exception):
                _compile(Piece(**fields))
    finally:
        report = {"peak_kb": _peak_kb(), "cpu_seconds": time.process_time()}
        print(json.dumps(report), flush=True)
    return 0


def _stop_now(signum: int, frame: Any) -> None:
    raise SystemExit(0)


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
