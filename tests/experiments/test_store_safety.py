"""The store and the sweep coordinator under failure: read-only media, a killed
coordinator (its workers exit, its run is marked killed), claims between concurrent
sweeps and their takeover when the claimant dies."""

from __future__ import annotations

import os
import signal
import socket
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import psutil
import pytest

from dispatchlab.core.errors import ValidationError
from dispatchlab.experiments.runner import run_experiment
from dispatchlab.experiments.store import LEASE_SECONDS, Store
from sweeps import numbers, small_spec, start_sweep, wait_for_points


def _stored_store(path: Path) -> None:
    with Store(path) as db:
        db.save_experiment("e", "{}")


def test_readonly_open_changes_nothing_and_refuses_writes(tmp_path):
    path = tmp_path / "s.sqlite"
    _stored_store(path)
    before = path.read_bytes()
    with Store(path, readonly=True) as db:
        assert db.experiment_names() == ["e"]
        with pytest.raises(ValidationError, match="read-only"):
            db.save_experiment("f", "{}")
    assert path.read_bytes() == before


def test_readonly_open_of_something_else_is_a_clean_error(tmp_path):
    other = tmp_path / "other.sqlite"
    sqlite3.connect(other).execute("CREATE TABLE t (x)").connection.close()
    with pytest.raises(ValidationError, match="not a dispatchlab store"):
        Store(other, readonly=True)
    text = tmp_path / "text.sqlite"
    text.write_text("hello")
    with pytest.raises(ValidationError, match="store"):
        Store(text, readonly=True)


def test_a_store_on_readonly_media_can_be_read(tmp_path):
    source = tmp_path / "src"
    source.mkdir()
    _stored_store(source / "s.sqlite")
    mounted = tmp_path / "ro"
    mounted.mkdir()
    # a read-only bind mount in a private mount namespace: it vanishes with the process
    script = (f"mount --bind {source} {mounted} && mount -o remount,ro,bind {mounted} && "
              f"! touch {mounted}/probe 2>/dev/null && "
              f"{Path(sys.executable).parent / 'dispatchlab'} results --store {mounted}/s.sqlite")
    done = subprocess.run(["unshare", "--mount", "--propagation", "private", "sh", "-c", script],
                          capture_output=True, text=True, timeout=300)
    if done.returncode != 0 and ("Operation not permitted" in done.stderr
                                 or "permission denied" in done.stderr.lower()
                                 or "unshare: " in done.stderr):
        pytest.skip(f"cannot make a read-only mount here: {done.stderr.strip()[:200]}")
    assert done.returncode == 0, done.stderr
    assert "no stored points match" in done.stdout


def _children(pid: int) -> list[psutil.Process]:
    try:
        return psutil.Process(pid).children(recursive=True)
    except psutil.NoSuchProcess:
        return []


def test_workers_exit_when_the_coordinator_is_killed_and_its_run_is_marked(tmp_path):
    spec = small_spec("orphans", slots=200_000, loads=(0.4, 0.6, 0.8, 0.9))
    store = tmp_path / "store.sqlite"
    process = start_sweep(tmp_path, spec, store, workers=2)
    wait_for_points(store, "orphans", 1, process)
    workers = _children(process.pid)
    assert workers, "the sweep has no worker processes"
    os.kill(process.pid, signal.SIGKILL)  # the coordinator only: its workers must follow
    process.wait()
    deadline = time.time() + 20
    while time.time() < deadline and any(w.is_running() and w.status() != "zombie"
                                         for w in workers):
        time.sleep(0.1)
    alive = [w.pid for w in workers if w.is_running() and w.status() != "zombie"]
    for pid in alive:  # clean up before failing
        os.kill(pid, signal.SIGKILL)
    assert not alive, f"workers {alive} outlived their coordinator"
    with Store(store) as db:
        assert db.runs("orphans")[0]["status"] == "running"  # nobody has looked yet
    outcome = run_experiment(spec, store=store, workers=1)
    assert outcome.complete
    with Store(store) as db:
        statuses = [r["status"] for r in db.runs("orphans")]
    assert statuses == ["killed", "finished"]


def _dead_pid() -> int:
    child = subprocess.Popen([sys.executable, "-c", "pass"])
    child.wait()
    return child.pid


def test_a_run_with_a_stale_heartbeat_or_a_dead_pid_is_marked_killed(tmp_path):
    with Store(tmp_path / "s.sqlite") as db:
        here = db.start_run("e", "test", 1)
        gone = db.start_run("e", "test", 1)
        far = db.start_run("e", "test", 1)
        db._db.execute("UPDATE runs SET pid = ? WHERE run_id = ?", (_dead_pid(), gone))
        db._db.execute("UPDATE runs SET host = 'elsewhere', heartbeat = ? WHERE run_id = ?",
                       (time.time() - 2 * LEASE_SECONDS, far))
        assert sorted(db.mark_dead_runs()) == sorted([gone, far])
        status = {r["run_id"]: r["status"] for r in db.runs("e")}
    assert status == {here: "running", gone: "killed", far: "killed"}


def test_claims_skip_a_live_claimant_and_take_over_a_dead_one(tmp_path):
    with Store(tmp_path / "s.sqlite") as db:
        first = db.start_run("e", "test", 3)
        second = db.start_run("e", "test", 3)
        assert db.claim("e", first, ["a", "b"]) == {"a", "b"}
        assert db.claim("e", second, ["a", "b", "c"]) == {"c"}  # a, b held by a live run
        assert db.claim("e", first, ["a"]) == {"a"}  # renewing one's own claim
        db._db.execute("UPDATE claims SET expires = ? WHERE run_id = ?", (time.time() - 1, first))
        assert db.claim("e", second, ["a", "b"]) == {"a", "b"}  # expired leases: taken over
        db.finish_run(second, "interrupted")  # releases its claims
        assert db.claim("e", first, ["a", "b", "c"]) == {"a", "b", "c"}


def test_a_sweep_takes_over_the_points_of_a_dead_claimant(tmp_path):
    spec = small_spec("takeover")
    store = tmp_path / "store.sqlite"
    keys = [p.key for p in spec.points()]
    with Store(store) as db:
        dead = db.start_run("takeover", "test", len(keys))
        assert db.claim("takeover", dead, keys) == set(keys)
        db._db.execute("UPDATE runs SET pid = ?, host = ? WHERE run_id = ?",
                       (_dead_pid(), socket.gethostname(), dead))
    outcome = run_experiment(spec, store=store, workers=1)
    assert (outcome.skipped, outcome.computed) == (0, len(keys))
    run_experiment(spec, store=tmp_path / "alone.sqlite", workers=1)
    assert numbers(store, "takeover") == numbers(tmp_path / "alone.sqlite", "takeover")
