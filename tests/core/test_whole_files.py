"""Every file dispatchlab writes for a user is written whole or not at all (found attacking
issue 25): with a file-size limit (``ulimit -f``, as a full disk would) ``results -o
x.csv`` left 4 KB of a CSV behind, ``report`` half a PNG and an error line naming no file.
Now each is written to a temporary file that replaces the target only once complete: on a
failure the old file is untouched, no temporary file stays, and the one ``error:`` line
names the file. A path that is not a regular file (``/dev/stdout``) is written directly.
"""

from __future__ import annotations

import resource
import subprocess
import sys
from pathlib import Path

import pytest

import dispatchlab as dl

DISPATCHLAB = str(Path(sys.executable).with_name("dispatchlab"))


@pytest.fixture(scope="module")
def store(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("whole") / "s.sqlite"
    dl.sweep("3x0.3", ["jsq", "pod"], load=[0.5, 0.7], slots=2_000, workers=1, store=path,
             experiment="w")
    return path


def _limited(args: list[str], cwd: Path, limit: int = 4096) -> subprocess.CompletedProcess[str]:
    def small_files() -> None:
        resource.setrlimit(resource.RLIMIT_FSIZE, (limit, limit))

    return subprocess.run([DISPATCHLAB, *args], cwd=cwd, capture_output=True, text=True,
                          timeout=300, preexec_fn=small_files)


@pytest.mark.parametrize("format_", ["csv", "json"])
def test_an_export_that_cannot_be_finished_leaves_the_old_file(store: Path, tmp_path: Path,
                                                                format_: str) -> None:
    target = tmp_path / f"x.{format_}"
    target.write_text("old\n", encoding="utf-8")
    done = _limited(["results", "--store", str(store), "--format", format_, "-o",
                     str(target)], tmp_path)
    assert done.returncode == 2, done.stderr
    assert done.stderr.splitlines() == [f"error: output: cannot write {str(target)!r}: "
                                        "File too large"]
    assert target.read_text(encoding="utf-8") == "old\n"
    assert sorted(p.name for p in tmp_path.iterdir()) == [target.name]


def test_a_report_that_cannot_be_finished_names_the_file(store: Path, tmp_path: Path) -> None:
    out = tmp_path / "rep"
    done = _limited(["report", "w", "--store", str(store), "--out", str(out)], tmp_path)
    assert done.returncode == 2, done.stderr
    lines = done.stderr.splitlines()
    assert len(lines) == 1 and lines[0].startswith(f"error: out: cannot write '{out}/"), lines
    assert lines[0].endswith(": File too large")
    assert not [p for p in out.iterdir() if p.name.endswith(".partial")]


def test_dev_stdout_is_written_directly(store: Path, tmp_path: Path) -> None:
    done = subprocess.run([DISPATCHLAB, "results", "--store", str(store), "--format", "csv",
                           "-o", "/dev/stdout"], cwd=tmp_path, capture_output=True, text=True,
                          timeout=300)
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("id,experiment,") and len(done.stdout.splitlines()) == 5
