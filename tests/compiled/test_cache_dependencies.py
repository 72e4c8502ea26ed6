"""An edit recompiles what depends on it, and nothing else (issue 45).

Each case runs a real simulation in a fresh interpreter on a copy of the package (its
numba cache copied too, so the copy starts warm), edits one source file, runs again and
reads numba's compile events: which functions were compiled rather than loaded.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from compile_events import RECORD_COMPILES

RUN = RECORD_COMPILES + """
import dispatchlab as dl

system = dl.System.build([0.5, 0.5], load=0.5)
dl.simulate(system, "jsq", slots=2_000, seed=1)
print(json.dumps(compiled))
"""


@pytest.fixture(scope="module")
def package_copy(tmp_path_factory: pytest.TempPathFactory) -> Path:
    import dispatchlab

    root = tmp_path_factory.mktemp("copy")
    shutil.copytree(Path(dispatchlab.__file__).parent, root / "src" / "dispatchlab")
    return root


def compiled_by_a_run(root: Path) -> list[str]:
    env = {k: v for k, v in os.environ.items() if k != "NUMBA_CACHE_DIR"}
    env["PYTHONPATH"] = str(root / "src")
    done = subprocess.run([sys.executable, "-c", RUN], capture_output=True, text=True,
                          env=env, timeout=600, check=False, cwd=root)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout.strip().splitlines()[-1])


def append(path: Path, line: str) -> None:
    path.write_text(path.read_text(encoding="utf-8") + line, encoding="utf-8")


def inside(path: Path, definition: str, line: str) -> None:
    """Put ``line`` (indented) first in the body of the top-level ``definition``."""
    text = path.read_text(encoding="utf-8")
    header = f"\ndef {definition}("
    start = text.index(header)
    body = text.index(":\n", start) + 2
    path.write_text(text[:body] + f"    {line}\n" + text[body:], encoding="utf-8")


def test_an_edit_outside_compiled_code_recompiles_nothing(package_copy: Path) -> None:
    package = package_copy / "src" / "dispatchlab"
    compiled_by_a_run(package_copy)  # whatever the copied cache lacked
    assert compiled_by_a_run(package_copy) == []
    for edited in ("report/verdicts.py", "cli/run.py", "stats/__init__.py",
                   "policies/led/policy.py"):  # LED's kernel: jsq does not use it
        append(package / edited, "\n# an edit\n")
    assert compiled_by_a_run(package_copy) == []


def test_an_edit_to_a_helper_the_loop_inlines_recompiles_the_loop(package_copy: Path) -> None:
    """The protection the whole-package digest gave: no stale inlined helper."""
    package = package_copy / "src" / "dispatchlab"
    compiled_by_a_run(package_copy)
    inside(package / "compiled" / "histogram.py", "delay_bin", "# an edit")  # layout's
    compiled = compiled_by_a_run(package_copy)
    assert "_run_slots" in compiled, compiled
    assert not any("_jsq_choose" in name for name in compiled), compiled  # jsq's adapter
    assert compiled_by_a_run(package_copy) == []  # and then from the cache again


def test_an_edit_to_a_policy_recompiles_that_policy_only(package_copy: Path) -> None:
    package = package_copy / "src" / "dispatchlab"
    compiled_by_a_run(package_copy)
    append(package / "policies" / "classic.py", "\n# an edit\n")
    compiled = compiled_by_a_run(package_copy)
    assert any("_jsq_choose" in name for name in compiled), compiled
    assert "_run_slots" not in compiled, compiled


def test_an_edit_to_one_policy_leaves_the_others_of_its_file_alone(package_copy: Path) -> None:
    """``policies/classic.py`` holds ten policies: an edit inside random routing's
    ``choose`` leaves jsq's adapter in the cache; one inside jsq's recompiles it (the
    file's digest had held every policy of the file, and numba's stamp of it the
    adapter's key)."""
    classic = package_copy / "src" / "dispatchlab" / "policies" / "classic.py"
    compiled_by_a_run(package_copy)
    inside(classic, "_rand_choose", "# an edit to random routing")
    assert compiled_by_a_run(package_copy) == []
    inside(classic, "_jsq_choose", "# an edit to jsq")
    compiled = compiled_by_a_run(package_copy)
    assert any("_jsq_choose" in name for name in compiled), compiled
    assert "_run_slots" not in compiled, compiled
