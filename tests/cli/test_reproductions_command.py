"""`dispatchlab reproductions` (what `make reproductions` runs) as a hostile
user meets it (issue 48): every bad store or output is one line and exit 2, a signal one
line and 128 + its number, and the page is written whole or not at all."""

from __future__ import annotations

import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from dispatchlab.cli import main
from sigint import default_sigint

ROOT = Path(__file__).parents[2]
STORE = ROOT / "results" / "reproductions" / "store.sqlite"
COMMAND = [sys.executable, "-m", "dispatchlab", "reproductions"]


def _main(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str],
          *args: str) -> tuple[int, str]:
    """The command in this process (its imports are paid once): exit status, stderr."""
    monkeypatch.chdir(tmp_path)
    status = main(["reproductions", *args])
    return status, capsys.readouterr().err


@pytest.mark.parametrize(("store", "out", "said"), [
    ("garbage", "p.md", "error: store: garbage.sqlite cannot be read as a dispatchlab store"),
    ("empty", "p.md", "error: store: empty.sqlite is not a dispatchlab store"),
    ("real", "a-folder", "error: out: cannot write 'a-folder': Is a directory"),
    ("real", "/proc/none/p.md", "error: out: cannot write '/proc/none/p.md': No such file"),
    # (no store: the empty page, written at once)
    ("none", "/dev/full", "error: out: cannot write '/dev/full': No space left on device"),
], ids=["garbage-store", "empty-store", "out-a-folder", "out-nowhere", "out-dev-full"])
def test_bad_input_is_one_line(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                               capsys: pytest.CaptureFixture[str], store: str, out: str,
                               said: str) -> None:
    (tmp_path / "garbage.sqlite").write_bytes(b"garbage")
    (tmp_path / "empty.sqlite").write_bytes(b"")
    (tmp_path / "a-folder").mkdir()
    path = str(STORE) if store == "real" else f"{store}.sqlite"
    status, err = _main(tmp_path, monkeypatch, capsys, "--store", path, "--out", out)
    assert status == 2, err
    assert err.startswith(said) and err.count("\n") == 1, err
    assert not (tmp_path / "p.md").exists()


def test_a_readme_that_is_missing_is_one_line(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                              capsys: pytest.CaptureFixture[str]) -> None:
    status, err = _main(tmp_path, monkeypatch, capsys, "--store", "none.sqlite", "--out",
                        "p.md", "--readme", "README.md")
    assert status == 2 and err == "error: readme: README.md: no such file\n"


@pytest.mark.slow  # the whole page's judging first (≈ 10 s); SIGTERM's path is test_signals'
def test_sigterm_while_it_draws_leaves_no_page_and_no_partial_file(tmp_path: Path) -> None:
    child = subprocess.Popen([*COMMAND, "--store", str(STORE), "--out", "p.md"], cwd=tmp_path,
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                             preexec_fn=default_sigint)
    deadline = time.monotonic() + 120
    while not (tmp_path / "reproductions").exists() and time.monotonic() < deadline:
        time.sleep(0.05)  # it has started drawing
    child.send_signal(signal.SIGTERM)
    _, err = child.communicate(timeout=120)
    assert child.returncode == 143, err
    assert err == "stopped by SIGTERM\n"
    assert not (tmp_path / "p.md").exists()
    assert not [path for path in tmp_path.rglob("*") if ".partial" in path.name]
