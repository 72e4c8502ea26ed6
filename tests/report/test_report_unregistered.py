"""``dispatchlab report`` on a store whose experiment names a policy this installation does
not register (issue 25, item 11): the points of the registered policies are rendered, with
their figures and tables; one ``note:`` line on stderr and a line on the page name the
policy left out and why ("not registered in this installation"). ``--import`` of the
module that registers it renders it too; a store where no policy is registered is one
``error: policy:`` line.

The store is made as a user would: ``dispatchlab sweep --import examples/pod_memory.py``
in a process of its own; the reports run in fresh processes where that module is not
imported (this test process imports nothing of it either).
"""

from __future__ import annotations

import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
POD_MEMORY = ROOT / "examples" / "pod_memory.py"
DISPATCHLAB = str(Path(sys.executable).with_name("dispatchlab"))

SPEC = """
name = "mem"
seed = 1
replications = 2
loads = [0.5, 0.8]
slots = 3000
[[systems]]
servers = "5x0.5"
[[policies]]
name = "jsq"
label = "JSQ"
[[policies]]
name = "pod-memory"
params = { k = 1 }
label = "SQ(2,1)"
[[figures]]
name = "queue"
x = "load"
y = "mean_total_queue"
"""


def _dispatchlab(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([DISPATCHLAB, *args], cwd=cwd, capture_output=True, text=True,
                          timeout=300)


@pytest.fixture(scope="module")
def store(tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp("unregistered")
    (folder / "mem.toml").write_text(SPEC, encoding="utf-8")
    done = _dispatchlab("sweep", "mem.toml", "--import", str(POD_MEMORY), "--store",
                        "mem.sqlite", "--workers", "1", "--no-progress", "--out", "swept",
                        cwd=folder)
    assert done.returncode == 0, done.stderr
    return folder / "mem.sqlite"


def test_report_renders_the_registered_policies_and_says_what_it_left_out(store: Path) -> None:
    done = _dispatchlab("report", "mem", "--store", str(store), "--out", "rep",
                        cwd=store.parent)
    assert done.returncode == 0, done.stderr
    assert done.stdout == "" and "Traceback" not in done.stderr
    notes = [line for line in done.stderr.splitlines() if line.startswith("note:")]
    assert notes == ["note: report: not rendered (not registered in this installation; "
                     "--import the module that registers it): policy 'pod-memory' (SQ(2,1))"]
    page = (store.parent / "rep" / "index.html").read_text(encoding="utf-8")
    assert ("<b>Not shown:</b> policy &#x27;pod-memory&#x27; (SQ(2,1), 4 stored point(s)) "
            "not rendered: not registered in this installation") in page
    assert "<td class='text'>JSQ</td>" in page  # JSQ's table rows are rendered
    assert "<td class='text'>SQ(2,1)</td>" not in page
    assert (store.parent / "rep" / "queue.png").stat().st_size > 0
    assert (store.parent / "rep" / "queue.svg").stat().st_size > 0
    # spec.json is the whole stored experiment: sweeping it with --import reproduces all
    assert "pod-memory" in (store.parent / "rep" / "spec.json").read_text(encoding="utf-8")


def test_import_renders_the_user_policy_too(store: Path) -> None:
    done = _dispatchlab("report", "mem", "--store", str(store), "--out", "rep-all",
                        "--import", str(POD_MEMORY), cwd=store.parent)
    assert done.returncode == 0, done.stderr
    assert "note:" not in done.stderr
    page = (store.parent / "rep-all" / "index.html").read_text(encoding="utf-8")
    assert "Not shown" not in page and "<td class='text'>SQ(2,1)</td>" in page


def test_no_registered_policy_at_all_is_one_error_line(store: Path, tmp_path: Path) -> None:
    copy = tmp_path / "only-mine.sqlite"
    copy.write_bytes(store.read_bytes())
    with sqlite3.connect(copy) as db:  # the JSQ half renamed to another unregistered policy
        (text,) = db.execute("SELECT spec_json FROM experiments WHERE name = 'mem'").fetchone()
        db.execute("UPDATE experiments SET spec_json = ? WHERE name = 'mem'",
                   (text.replace('"name": "jsq"', '"name": "gone"'),))
    done = _dispatchlab("report", "mem", "--store", str(copy), "--out", "none",
                        cwd=tmp_path)
    assert done.returncode == 2, done.stderr
    assert done.stderr.splitlines() == [
        "error: policy: no stored policy of 'mem' is registered in this installation "
        "('gone', 'pod-memory'); --import the module that registers them"]
    assert not (tmp_path / "none").exists()
