"""dl.sweep with a store behaves like ``dispatchlab sweep`` (issue 25, item 4): Ctrl-C stops
it within a couple of seconds (its workers are stopped, not waited for), the interrupted
run is marked ``interrupted`` (not left ``running``), and its points are an experiment
that ``dispatchlab results`` and ``dispatchlab report`` find."""

from __future__ import annotations

import signal
import sqlite3
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

import dispatchlab as dl
from cli_contract import run_clean
from dispatchlab.experiments.store import Store
from processes import pool_workers

SCRIPT = """
import sys
import dispatchlab as dl

if __name__ == "__main__":
    dl.sweep("10x0.5", ["jsq", "pod"], load=[0.9, 0.95], slots=50_000_000, workers=2,
             store=sys.argv[1], dispatchers=2)
"""


def _running(store: Path) -> bool:
    try:
        with sqlite3.connect(store) as db:
            return bool(db.execute("SELECT count(*) FROM runs WHERE status = 'running'")
                        .fetchone()[0])
    except sqlite3.Error:
        return False


def test_ctrl_c_stops_a_pooled_sweep_at_once_and_marks_the_run(tmp_path: Path) -> None:
    script = tmp_path / "long_sweep.py"
    script.write_text(textwrap.dedent(SCRIPT), encoding="utf-8")
    store = tmp_path / "s.sqlite"
    child = subprocess.Popen(  # SIGINT as a notebook's kernel gets it: this process only
        [sys.executable, str(script), str(store)], stderr=subprocess.PIPE, text=True,
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    try:
        deadline = time.monotonic() + 120
        while not _running(store) and time.monotonic() < deadline:
            time.sleep(0.2)
        assert _running(store), "the sweep never started"
        # its two workers started (read in /proc, where there is one), then at work: each
        # point takes minutes
        while (Path("/proc/self").exists() and len(pool_workers(child.pid)) < 2
               and time.monotonic() < deadline):
            time.sleep(0.1)
        time.sleep(1.0)
        sent = time.monotonic()
        child.send_signal(signal.SIGINT)
        _, err = child.communicate(timeout=60)
        stopped = time.monotonic() - sent
    finally:
        child.kill()
    assert stopped < 5, f"Ctrl-C took {stopped:.1f} s"
    assert err.rstrip().endswith("KeyboardInterrupt: interrupted: 0 point(s) of notebook stored "
                                 f"in {store}; the same call resumes"), err[-500:]
    assert "leaked" not in err
    with sqlite3.connect(store) as db:
        assert [row[0] for row in db.execute("SELECT status FROM runs")] == ["interrupted"]


@pytest.fixture(scope="module")
def swept(tmp_path_factory: pytest.TempPathFactory) -> Path:
    store = tmp_path_factory.mktemp("nb") / "nb.sqlite"
    dl.sweep("3x0.3", ["jsq", dl.policies.PowerOfD(d=2)], load=[0.5, 0.7], slots=2_000,
             workers=1, store=store, dispatchers=2)
    return store


def test_notebook_points_are_an_experiment(swept: Path) -> None:
    with Store(swept, readonly=True) as db:
        assert db.experiment_names() == ["notebook"]
        assert db.count("notebook") == 4
        assert [run["status"] for run in db.runs("notebook")] == ["finished"]


def test_results_and_report_find_the_notebook_experiment(
        swept: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run_clean(capsys, ["results", "notebook", "--store", str(swept),
                                      "--format", "csv"])
    assert code == 0 and len(out.strip().splitlines()) == 5
    code, _, err = run_clean(capsys, ["report", "notebook", "--store", str(swept),
                                      "--out", str(tmp_path / "report")])
    assert code == 0, err
    page = (tmp_path / "report" / "index.html").read_text(encoding="utf-8")
    assert "4 of 4 points" in page


def test_the_stored_grid_has_the_points_keys(swept: Path) -> None:
    from dispatchlab.specs.experiment import ExperimentSpec

    with Store(swept, readonly=True) as db:
        spec = ExperimentSpec.from_json(db.experiment_spec("notebook") or "")
        keys = {row["point_key"] for row in db.points("notebook")}
    assert {point.key for point in spec.points()} == keys  # `dispatchlab sweep` would resume


def test_a_failing_sweep_does_not_leave_its_run_running(tmp_path: Path) -> None:
    store = tmp_path / "s.sqlite"

    class Boom(dl.policies.JoinShortestQueue):  # in-process (defined inside a function)
        name = "jsq"

        def kernel(self, system):  # type: ignore[no-untyped-def]
            raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        dl.sweep("3x0.3", {"boom": Boom()}, load=[0.5], slots=2_000, workers=1, store=store)
    with Store(store, readonly=True) as db:
        assert [run["status"] for run in db.runs("notebook")] == ["interrupted"]
