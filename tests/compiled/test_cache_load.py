"""The project's compiled code loads from numba's disk cache without the compiler's set-up
(compiled/cache_load.py); anything else loads as numba loads it, and a compile after such
a load finds the compiler set up."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from compile_events import RECORD_COMPILES
from dispatchlab import System, simulate

#: imported by numba's set-up of its compiler (``CPUContext.load_additional_registries``)
#: and by nothing a slotted JSQ run loads
SET_UP_ONLY = "numba.np.polynomial.polynomial_core"


def _python(code: str, cwd: Path | None = None) -> dict:
    done = subprocess.run([sys.executable, "-c", RECORD_COMPILES + code],
                          capture_output=True, text=True, timeout=300, cwd=cwd)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout.strip().splitlines()[-1])


def _jsq_mean() -> float:
    return simulate(System.build([0.5, 0.5], load=0.5), "jsq", slots=500, seed=3,
                    delay="off").mean_total_queue


def test_a_run_loads_the_loop_without_numba_s_compiler_set_up() -> None:
    expected = _jsq_mean()  # (compiled here, or loaded: in the cache either way)
    found = _python(f"""
from dispatchlab import System, simulate
mean = simulate(System.build([0.5, 0.5], load=0.5), "jsq", slots=500, seed=3,
                delay="off").mean_total_queue
print(json.dumps({{"mean": mean, "compiled": compiled,
                   "set_up": {SET_UP_ONLY!r} in sys.modules}}))
""")
    assert found["compiled"] == []  # loaded from the cache
    assert found["mean"] == expected
    assert not found["set_up"]


def test_a_compile_after_such_a_load_finds_the_compiler_set_up() -> None:
    _jsq_mean()
    found = _python(f"""
import numpy as np
from numba import njit
from numba.typed import List
from dispatchlab import System, simulate
simulate(System.build([0.5, 0.5], load=0.5), "jsq", slots=500, seed=3, delay="off")
before = {SET_UP_ONLY!r} in sys.modules


@njit
def uses_the_registries(values):
    kept = List()
    for v in values:
        kept.append(np.sqrt(v))
    return np.sum(np.asarray(values)) + len(kept) + np.polynomial.polynomial.polyval(2.0,
                                                                                  values)


print(json.dumps({{"before": before, "value": uses_the_registries(np.arange(3.0)),
                   "compiled": compiled}}))
""")
    assert not found["before"]
    assert found["value"] == 3.0 + 3 + (0.0 + 1.0 * 2 + 2.0 * 4)
    assert "uses_the_registries" in found["compiled"]


def test_a_user_s_cached_function_loads_as_numba_loads_it(tmp_path: Path) -> None:
    (tmp_path / "users_module.py").write_text(
        "from numba import njit\n\n\n@njit(cache=True)\ndef add_one(x):\n    return x + 1\n",
        encoding="utf-8")
    code = f"""
from users_module import add_one
value = add_one(41)
print(json.dumps({{"value": value, "compiled": compiled,
                   "set_up": {SET_UP_ONLY!r} in sys.modules}}))
"""
    import_project_first = "import dispatchlab.compiled\n"
    first = _python(import_project_first + code, cwd=tmp_path)
    assert first["compiled"] == ["add_one"] and first["value"] == 42
    second = _python(import_project_first + code, cwd=tmp_path)
    assert second["compiled"] == [] and second["value"] == 42  # loaded from its cache
    assert second["set_up"]  # by numba's own method, its set-up included
