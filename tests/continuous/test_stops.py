"""A continuous-time run stops within a second on Ctrl-C and on SIGTERM, from the command
line (one line, exit 130 or 143, no traceback) and from a script."""

from __future__ import annotations

import signal
import subprocess
import sys
import time

import pytest


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
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def stop_after_start(child: subprocess.Popen[str], signum: int) -> tuple[str, str, float]:
    time.sleep(3)  # started, the event loop loaded, and running
    assert child.poll() is None, child.communicate()
    sent = time.perf_counter()
    child.send_signal(signum)
    out, err = child.communicate(timeout=60)
    return out, err, time.perf_counter() - sent


@pytest.mark.parametrize(("signum", "status", "says"), [
    (signal.SIGINT, 130, "interrupted: at job "),
    (signal.SIGTERM, 143, "stopped by SIGTERM: at job ")])
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
