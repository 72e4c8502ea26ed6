"""Two processes that need the same function compile it once (issue 45: the suite's two
workers, a sweep's workers): the second waits for the first and loads its cache entry.

The first process is made slow to compile (a compile listener sleeps), so the second
surely asks while the first compiles; each reports the functions it compiled.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

PROBE = """
from numba import njit


@njit(cache=True)
def probe(x):
    return x + 1
"""
RUN = """
import json, pathlib, sys, time
from numba.core import event

role, mark, folder = sys.argv[1:4]
compiled = []


class Listener(event.Listener):
    def on_start(self, e):
        if role == "first":
            pathlib.Path(mark).touch()
            time.sleep(2.0)

    def on_end(self, e):
        compiled.append(e.data["dispatcher"].py_func.__name__)


event.register("numba:compile", Listener())
from dispatchlab.compiled import compile_once  # installs it

sys.path.insert(0, folder)
import probe_module

if role == "skipper":  # a compile helper: does not wait for what another compiles
    compile_once.skip_busy()
    try:
        probe_module.probe(3)
    except compile_once.Busy:
        compiled.append("busy")
else:
    assert probe_module.probe(3) == 4
print(json.dumps(compiled))
"""


@pytest.mark.skipif(sys.platform == "win32", reason="flock")
@pytest.mark.parametrize(("second_role", "second_compiles"),
                         [("second", []), ("skipper", ["busy"])])
def test_the_second_process_loads_what_the_first_compiled(
        tmp_path: Path, second_role: str, second_compiles: list[str]) -> None:
    """The second waits and loads the first one's cache entry; one that skips what another
    is compiling (compile_once.skip_busy) is told Busy at once instead."""
    (tmp_path / "probe_module.py").write_text(PROBE, encoding="utf-8")
    mark = tmp_path / "compiling"
    env = dict(os.environ, NUMBA_CACHE_DIR=str(tmp_path / "cache"))

    def start(role: str) -> subprocess.Popen[str]:
        return subprocess.Popen([sys.executable, "-c", RUN, role, str(mark), str(tmp_path)],
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                                env=env)

    first = start("first")
    deadline = time.monotonic() + 120
    while not mark.exists() and time.monotonic() < deadline:
        time.sleep(0.02)
    assert mark.exists(), "the first process never compiled"
    second = start(second_role)
    outputs = [process.communicate(timeout=300) for process in (first, second)]
    for process, (_, err) in zip((first, second), outputs, strict=True):
        assert process.returncode == 0, err
    assert json.loads(outputs[0][0]) == ["probe"]
    assert json.loads(outputs[1][0]) == second_compiles
