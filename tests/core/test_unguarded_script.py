"""A script that starts workers at its top level, without ``if __name__ == "__main__":``.

Each spawned worker runs the script's top level again; it now leaves as soon as it reaches
a dispatchlab call (core.signals.leave_if_importing_the_main_script), and the script stops
with one traceback whose last line says to add the guard (184 lines of stderr before, from
every worker, for a two-worker sweep).
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from dispatchlab.core.pools import BROKEN_POOL

SYSTEM = 'dl.System.build("4x0.5", load=0.5)'


@pytest.mark.parametrize("call", [
    f'dl.sweep({SYSTEM}, ["jsq", "rand"], load=[0.5, 0.7], slots=2000, workers=2)',
    f'dl.simulate({SYSTEM}, "jsq", slots=2000, replications=4, workers=2)',
], ids=["sweep", "simulate"])
def test_an_unguarded_script_stops_with_one_traceback_naming_the_guard(
        tmp_path: Path, call: str) -> None:
    script = tmp_path / "unguarded.py"
    script.write_text(f"import dispatchlab as dl\nprint({call})\n", encoding="utf-8")
    done = subprocess.run([sys.executable, str(script)], capture_output=True, text=True,
                          timeout=300, check=False, cwd=tmp_path)
    assert done.returncode == 1 and done.stdout == "", done.stderr
    assert done.stderr.count("Traceback") == 1 and "spawn_main" not in done.stderr, done.stderr
    assert done.stderr.splitlines()[-1] == f"RuntimeError: {BROKEN_POOL}"
