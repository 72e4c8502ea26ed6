"""Ctrl-C on ``dispatchlab sweep`` while points run in worker processes (issue 25, item 11).

A terminal's Ctrl-C is SIGINT to the whole foreground process group: the coordinator and
every worker. It sometimes ended with multiprocessing's resource tracker reporting a
leaked semaphore: the interrupted pool was shut down without waiting, so its management
thread was still releasing the pool's queues while the interpreter left; workers hit while
importing numba printed tracebacks. Now workers start with SIGINT blocked, the coordinator
stops the pool whole (workers reaped, its thread joined) and a second Ctrl-C does not cut
the clean-up short. Each case: exit status 130, no traceback, nothing "leaked", the run
marked interrupted, no worker left behind.
"""

from __future__ import annotations

import os
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pytest

from processes import pool_workers
from sigint import default_sigint

SPEC = """
name = "ctrl-c"
seed = 1
replications = 2
loads = [0.9, 0.95]
slots = 50_000_000
[[systems]]
servers = "10x0.5"
[[policies]]
name = "jsq"
[[policies]]
name = "pod"
params = { d = 2 }
"""


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc")
@pytest.mark.parametrize(("after", "twice"), [(0.0, False), (2.0, True)],
                         ids=["as-workers-start", "running-then-twice"])
def test_ctrl_c_on_a_pooled_sweep_is_clean(tmp_path: Path, after: float, twice: bool) -> None:
    spec = tmp_path / "spec.toml"
    spec.write_text(SPEC, encoding="utf-8")
    store = tmp_path / "s.sqlite"
    command = [str(Path(sys.executable).with_name("dispatchlab")), "sweep", str(spec),
               "--store", str(store), "--workers", "2", "--no-progress",
               "--out", str(tmp_path / "out")]
    child = subprocess.Popen(  # a session of its own: SIGINT goes to the group, as from a tty
        command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        start_new_session=True, preexec_fn=default_sigint)
    try:
        deadline = time.monotonic() + 180
        while not pool_workers(child.pid) and time.monotonic() < deadline:
            time.sleep(0.05)
        workers = pool_workers(child.pid)
        assert workers, "no worker process started"
        time.sleep(after)
        os.killpg(child.pid, signal.SIGINT)
        if twice:
            time.sleep(0.05)
            try:
                os.killpg(child.pid, signal.SIGINT)
            except ProcessLookupError:
                pass
        _, err = child.communicate(timeout=60)  # EOF: every process holding stderr is gone
    finally:
        if child.poll() is None:
            os.killpg(child.pid, signal.SIGKILL)
    assert child.returncode == 130, err
    assert "leaked" not in err and "Traceback" not in err and "Warning" not in err, err
    assert "interrupted: 0 point(s) of ctrl-c stored in " in err, err
    assert err.rstrip().endswith("; the same command resumes"), err
    assert not any(Path(f"/proc/{pid}").exists() for pid in workers)
    with sqlite3.connect(store) as db:
        assert [row[0] for row in db.execute("SELECT status FROM runs")] == ["interrupted"]


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc")
def test_ctrl_c_on_pooled_replications_says_how_far_it_got() -> None:
    """``run --replications 2 --workers 2``: the replications run in workers, so there is no
    one slot to report; the line says how many pooled runs had finished (it said only
    "interrupted")."""
    command = [str(Path(sys.executable).with_name("dispatchlab")), "run", "--policy", "jsq",
               "--servers", "10x0.5", "--slots", str(10**11), "--replications", "2",
               "--workers", "2", "--delay", "off", "--yes"]
    child = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                             text=True, start_new_session=True, preexec_fn=default_sigint)
    try:
        deadline = time.monotonic() + 180
        while len(pool_workers(child.pid)) < 2 and time.monotonic() < deadline:
            time.sleep(0.05)
        workers = pool_workers(child.pid)
        assert workers, "no worker process started"
        os.killpg(child.pid, signal.SIGINT)
        out, err = child.communicate(timeout=60)
    finally:
        if child.poll() is None:
            os.killpg(child.pid, signal.SIGKILL)
    assert child.returncode == 130, err
    assert out == "" and "Traceback" not in err and "leaked" not in err, err
    assert err.strip().endswith("interrupted: 0 of 2 pooled runs had finished (none is kept)"), err
    assert not any(Path(f"/proc/{pid}").exists() for pid in workers)


EARLY_STOP = """
import os, signal, sys

STOP = getattr(signal, sys.argv[1])


class StopWhileLoading:
    def find_spec(self, name, path=None, target=None):
        if name == "typer":  # the command line is loading its modules
            os.kill(os.getpid(), STOP)
        return None


sys.meta_path.insert(0, StopWhileLoading())
sys.argv = ["dispatchlab", "run", "--policy", "jsq", "--servers", "2x0.5"]
from dispatchlab.__main__ import main
main()
"""


@pytest.mark.parametrize(("how", "status", "said"), [
    ("SIGINT", 130, "interrupted"), ("SIGTERM", 143, "stopped by SIGTERM"),
    ("SIGHUP", 129, "stopped by SIGHUP")])
def test_a_stop_while_the_command_line_loads_is_one_line(how: str, status: int,
                                                         said: str) -> None:
    """A stop in the command's first few tenths of a second, while Typer, rich and the
    commands' modules load, had been a KeyboardInterrupt traceback (Ctrl-C) or a death
    without a word (SIGTERM): the installed command now loads them inside its handling."""
    done = subprocess.run([sys.executable, "-c", EARLY_STOP, how], capture_output=True,
                          text=True, timeout=120, preexec_fn=default_sigint)
    assert done.returncode == status, done.stderr
    assert done.stderr == said + "\n" and done.stdout == ""


def test_a_second_ctrl_c_while_the_line_is_written_does_not_cut_it(monkeypatch) -> None:
    """A second Ctrl-C that arrives while the first one's line is being written (a pooled
    sweep stopped twice, on a loaded machine, once exited 130 with no line at all): the line
    is written whole, then the second stop goes on as the first."""
    import io
    import os
    import signal
    import threading

    import typer

    from dispatchlab import cli

    class Interrupting(io.StringIO):
        """stderr that receives a second Ctrl-C as the line starts to be written."""

        def write(self, text: str) -> int:
            if not self.getvalue():
                os.kill(os.getpid(), signal.SIGINT)
            return super().write(text)

    def command() -> None:
        raise KeyboardInterrupt("interrupted: 3 point(s) of x stored in s.sqlite")

    commands = typer.Typer()
    commands.command()(command)
    cli._say_interrupts(commands)
    stderr = Interrupting()
    monkeypatch.setattr(sys, "stderr", stderr)
    # another thread, as a pool's: the kernel may hand the process's signal to it
    done = threading.Event()
    other = threading.Thread(target=done.wait, daemon=True)
    other.start()
    previous = signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        with pytest.raises(KeyboardInterrupt):
            commands.registered_commands[0].callback()
    finally:
        signal.signal(signal.SIGINT, previous)
        done.set()
        other.join()
    assert stderr.getvalue() == "interrupted: 3 point(s) of x stored in s.sqlite\n"
