"""A continuous-time run stops within a second on Ctrl-C and on SIGTERM, from the command
line (one line, exit 130 or 143, no traceback) and from a script; kill -9 of a script
takes its pool's workers with it."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from processes import pool_workers, wait_for_cpu
from sigint import default_sigint


@pytest.fixture(scope="module", autouse=True)
def compiled_engine() -> None:
    """The event loop compiled into the cache first (a fresh clone's first run compiles
    for ~10 s): the children below then load it and are running when the signal comes."""
    from dispatchlab.continuous import simulate_continuous

    simulate_continuous("2x1", "jsq", load=0.5, jobs=10, workers=1)


HUGE = ["run", "--time", "continuous", "--servers", "10x1", "--load", "0.9", "--jobs",
        str(10**9), "--json"]


def start(arguments: list[str]) -> subprocess.Popen[str]:
    return subprocess.Popen([sys.executable, "-m", "dispatchlab", *arguments],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            preexec_fn=default_sigint)  # (Ctrl-C as from a terminal)


def stop_after_start(child: subprocess.Popen[str], signum: int,
                     after: float = 2.0) -> tuple[str, str, float]:
    # started, the event loop loaded, and running: ``after`` seconds of the child's CPU (a
    # fixed sleep had sent the stop before the run began on a loaded machine: "interrupted")
    wait_for_cpu(child.pid, after)
    assert child.poll() is None, child.communicate()
    sent = time.perf_counter()
    child.send_signal(signum)
    out, err = child.communicate(timeout=60)
    return out, err, time.perf_counter() - sent


@pytest.mark.parametrize(("signum", "status", "says"), [
    (signal.SIGINT, 130, "interrupted: at job "),
    # SIGTERM from a script: test_a_script_stops_by_sigterm_with_one_line
    pytest.param(signal.SIGTERM, 143, "stopped by SIGTERM: at job ", marks=pytest.mark.slow)])
def test_the_command_stops_within_a_second(signum, status, says) -> None:
    child = start(HUGE)
    try:
        out, err, waited = stop_after_start(child, signum)
    finally:
        child.kill()
    assert child.returncode == status, err
    assert waited < 1.5, f"took {waited:.2f} s to stop"
    assert out == "" and "Traceback" not in err
    assert says in err and "of 1,000,000,000 (jsq, continuous time)" in err, err


def test_a_stop_while_the_event_loop_compiles_is_taken_at_once(tmp_path: Path) -> None:
    """A cold run (a numba cache of its own, empty) stopped while it compiles: the compile
    (~10 s) runs beside the main thread, which stops at once. It had waited for the compile
    to end, then said "at job 4 of 2" (the loading run's count)."""
    env = {**os.environ, "NUMBA_CACHE_DIR": str(tmp_path / "cache")}
    child = subprocess.Popen([sys.executable, "-m", "dispatchlab", *HUGE], env=env,
                             preexec_fn=default_sigint,
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        # compiling: the imports take ~0.8 s of CPU, the event loop's compile ~6 s
        out, err, waited = stop_after_start(child, signal.SIGINT, after=2.5)
    finally:
        child.kill()
    assert child.returncode == 130 and "Traceback" not in err, err
    assert waited < 1.5, f"took {waited:.2f} s to stop ({err.strip()})"
    assert err.strip() == "interrupted: while loading the event loop (jsq, continuous time)"


def test_a_script_stops_by_sigterm_with_one_line() -> None:
    code = ("from dispatchlab.continuous import simulate_continuous\n"
            "simulate_continuous('10x1', 'lwl', load=0.9, jobs=10**9)\n")
    child = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE,
                             stderr=subprocess.PIPE, text=True)
    try:
        _, err, waited = stop_after_start(child, signal.SIGTERM)
    finally:
        child.kill()
    assert child.returncode == -signal.SIGTERM, err  # ended by the signal, as it would have
    assert waited < 1.5 and "Traceback" not in err
    assert err.strip().startswith("stopped by SIGTERM: at job ") and "(lwl," in err, err


def _alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (OSError, IndexError):
        return False
    return state != "Z"


def test_the_workers_of_a_script_killed_by_sigkill_go_with_it(tmp_path: Path) -> None:
    """kill -9 of a script whose continuous-time replications run on two workers: the
    workers watch their coordinator (core.pools) and leave with it."""
    script = tmp_path / "run.py"
    script.write_text("from dispatchlab.continuous import simulate_continuous\n"
                      "if __name__ == '__main__':\n"
                      "    simulate_continuous('10x1', 'jsq', load=0.9, jobs=10**9,\n"
                      "                        replications=4, workers=2)\n")
    child = subprocess.Popen([sys.executable, str(script)], cwd=tmp_path,
                             stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                             start_new_session=True)
    try:
        deadline = time.monotonic() + 120
        while len(pool_workers(child.pid)) < 2 and time.monotonic() < deadline:
            time.sleep(0.1)
        workers = pool_workers(child.pid)
        assert len(workers) >= 2
        time.sleep(1.0)  # the workers at work
        child.send_signal(signal.SIGKILL)
        child.wait(timeout=30)
        deadline = time.monotonic() + 15
        while any(_alive(pid) for pid in workers) and time.monotonic() < deadline:
            time.sleep(0.2)
        assert not [pid for pid in workers if _alive(pid)]
    finally:
        if child.poll() is None:
            child.kill()
        for pid in pool_workers(child.pid):
            os.kill(pid, signal.SIGKILL)
