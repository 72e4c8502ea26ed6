"""Shared test helpers (keep small)."""

from __future__ import annotations

import gc
import importlib.util
import math
import os
import shutil
import sys
from collections.abc import Callable
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

from sigint import pytest_configure, pytest_runtest_protocol  # noqa: F401 (Ctrl-C hooks)

try:
    import fcntl
except ImportError:  # (Windows: each pytest-xdist worker builds its own, see built_once)
    fcntl = None

# one BLAS thread per process: the suite runs a worker per core (pytest-xdist), and
# OpenBLAS's own threads on top of them (one per core each, spinning while they wait) made
# the exact solvers' tests four times slower (solvers/test_exact*.py: 111 s -> 27 s on 2
# cores).
# Set before numpy loads (here, in the controller: the workers and every child inherit it)
for _variable in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_variable, "1")

# numba's compile errors without colorama's stream wrapping around each failed overload it
# tries (cli.plain_compile_errors; the test extras install colorama)
os.environ.setdefault("NUMBA_DISABLE_ERROR_MESSAGE_HIGHLIGHTING", "1")

# no compile helper beside a run (engine.compile_helper): the suite's workers already keep
# every core busy; tests/engine/test_compile_helper.py turns it on where it tests it
os.environ["DISPATCHLAB_COMPILE_HELPER"] = "0"


#: tests between two freezes of what the worker holds (see below)
FREEZE_EVERY = 20
_tests_since_freeze = 0


def _collect_and_freeze() -> None:
    """Free what is garbage now, and leave what survives out of later full collections."""
    gc.collect()
    gc.freeze()


def pytest_collection_finish(session: pytest.Session) -> None:
    """What collection loaded (the test modules, numba, scipy, …) lives as long as the
    worker: left out of the garbage collector's full collections from here on."""
    _collect_and_freeze()


def pytest_runtest_logfinish(nodeid: str, location: tuple[str, int | None, str]) -> None:
    """And so, every FREEZE_EVERY tests, is what the tests left: compiled functions and
    their typing, which a worker keeps to its end (1.6 million objects in the end). Each
    of Python's automatic full collections walked all of it — 50 to 90 a worker, 15 to
    22 s of CPU each worker on a cold suite — and each now walks only what came since
    the last freeze. A cycle that turns to garbage after it was frozen is never freed (the
    worker ends with it); whatever is freed by reference counting is freed as before."""
    global _tests_since_freeze
    _tests_since_freeze += 1
    if _tests_since_freeze >= FREEZE_EVERY:
        _tests_since_freeze = 0
        _collect_and_freeze()


@pytest.fixture(autouse=True)
def _one_worker_unless_named(monkeypatch: pytest.MonkeyPatch) -> None:
    """A run in a test's own process that names no ``workers`` (simulate, compare,
    replications, precision rounds) takes its tasks in that process, not in a pool of a
    worker per core: the suite's workers already keep every core busy, and 34 tests had
    started 64 such pools, each worker loading or compiling again what the test process
    had. A test of a pool names its workers; a subprocess (the CLI's tests of pooled runs
    and their signals) still takes every core, and so does a sweep (the experiments'
    runner holds its own reference to ``available_cores``)."""
    from dispatchlab.core import pools

    monkeypatch.setattr(pools, "available_cores", lambda: 1)


# A closed form must lie inside the reported 95 % CI widened by this factor. With ≥ 10
# replications (t₉) a correct engine fails this with probability ≈ 0.2 %, so a change of
# random stream elsewhere in the engine does not make the suite flaky; the CI must also
# be narrow (``max_relative_half_width``), so that a wrong engine cannot hide in it.
CI_WIDEN = 2.0


def check_in_ci(mean: float, low: float, high: float, expected: float, *,
                max_relative_half_width: float, label: str = "") -> None:
    """Assert that ``expected`` lies in [low, high] widened by CI_WIDEN around ``mean``,
    and that the CI is finite and its half-width at most the given fraction of ``expected``."""
    half = (high - low) / 2
    where = f"{label}: expected {expected:.6g}, simulated {mean:.6g} [{low:.6g}, {high:.6g}]"
    assert math.isfinite(half) and half > 0, f"no CI ({where})"
    assert half <= max_relative_half_width * abs(expected), f"CI too wide to test ({where})"
    assert abs(mean - expected) <= CI_WIDEN * half, f"closed form outside the CI ({where})"


@pytest.fixture
def in_ci() -> Callable[..., None]:
    """The :func:`check_in_ci` assertion, as a fixture."""
    return check_in_ci


@pytest.fixture
def burst_system(tmp_path: Path) -> Callable[..., Any]:
    """Two unit-rate deterministic servers fed 3 jobs every 4th slot (trace 3,0,0,0), in
    ``dispatch`` mode (batch by default): every report and message is countable by hand."""
    from dispatchlab import System

    def build(dispatch: str = "batch") -> System:
        trace = tmp_path / "burst.csv"
        trace.write_text("3\n0\n0\n0\n")
        return System.build([1, 1], arrivals=f"trace:{trace}", service="deterministic",
                            dispatch=dispatch)

    return build


def built_once(factory: pytest.TempPathFactory, name: str,
               build: Callable[[Path], None]) -> Path:
    """The folder ``name`` that ``build`` fills once for the whole run, shared by the
    pytest-xdist workers (their temporary folders have one parent): the first worker
    builds it under a lock, the others wait and use it. For a session fixture whose work
    is a cold compile, which each worker would otherwise repeat."""
    root = factory.getbasetemp()
    if fcntl is not None and os.environ.get("PYTEST_XDIST_WORKER"):
        root = root.parent
    folder = root / name
    with open(root / f"{name}.lock", "a") as lock:
        if fcntl is not None:
            fcntl.flock(lock, fcntl.LOCK_EX)  # (released as the file closes)
        if not (folder / ".built").exists():
            shutil.rmtree(folder, ignore_errors=True)
            folder.mkdir(parents=True)
            build(folder)
            (folder / ".built").touch()
    return folder


EXAMPLES = Path(__file__).resolve().parents[1] / "examples"


def load_example(name: str) -> ModuleType:
    """Import ``examples/NAME.py`` as a proper module (registered in ``sys.modules`` before
    it runs, as ``import`` does), so numba caches its compiled functions under a module
    name that a later process can import again. Loading it twice re-runs it: its
    registrations must be idempotent."""
    spec = importlib.util.spec_from_file_location(name, EXAMPLES / f"{name}.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    try:
        spec.loader.exec_module(module)
    except BaseException:
        del sys.modules[name]
        raise
    return module
