"""SIGTERM and SIGHUP stop a command as Ctrl-C does (core/signals.py, issue 48).

Each had killed the command by its default action: no line, the pool's workers and
multiprocessing's resource tracker left running under PID 1, an experiment's run left
`running` with its claims. Here real processes get the signal while their workers run;
the process table of the command's session must be empty within 2 s of its end.
"""

from __future__ import annotations

import os
import pickle
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pytest

from dispatchlab.core.signals import Terminated, interrupt_saying, signals_as_interrupts
from processes import loop_compiled, pool_workers, wait_for_cpu
from sigint import default_sigint

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"),
                                reason="reads the process table in /proc")

COMMAND = "import sys; from dispatchlab.cli import entry_point; entry_point()"


def _session(leader: int) -> list[str]:
    """Command lines of the processes in session ``leader`` (itself excluded)."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit() or int(entry.name) == leader:
            continue
        try:
            fields = (entry / "stat").read_text().rsplit(")", 1)[1].split()
            if int(fields[3]) == leader and fields[0] != "Z":  # (session id, not a zombie)
                found.append((entry / "cmdline").read_bytes().replace(b"\0", b" ").decode())
        except (OSError, ValueError, IndexError):
            continue
    return found


def _stop_when_working(argv: list[str], how: signal.Signals, cwd: Path,
                       workers: int = 2, code: str = COMMAND) -> tuple[int, str, list[str]]:
    """Start the command (or the Python ``code``), signal it once ``workers`` worker
    processes run, and return its exit status, its stderr and what of its session is left
    2 s after it ended (nothing, as soon as nothing is)."""
    child = subprocess.Popen([sys.executable, "-c", code, *argv], cwd=cwd, text=True,
                             stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                             start_new_session=True, preexec_fn=default_sigint)
    try:
        deadline = time.monotonic() + 120
        while len(pool_workers(child.pid)) < workers and time.monotonic() < deadline:
            time.sleep(0.1)
        time.sleep(1.0)  # the workers at work
        child.send_signal(how)
        _, err = child.communicate(timeout=60)
    finally:
        if child.poll() is None:
            os.killpg(child.pid, signal.SIGKILL)
            child.wait()
    return child.returncode, err, _left_within(child.pid, seconds=2)


def _left_within(leader: int, seconds: float) -> list[str]:
    """What of session ``leader`` is still running ``seconds`` after its leader ended:
    nothing as soon as the table shows nothing (a clean stop leaves no worker to wait
    for), else the table at the deadline."""
    deadline = time.monotonic() + seconds
    while (left := _session(leader)) and time.monotonic() < deadline:
        time.sleep(0.1)
    return left


# SIGHUP takes SIGTERM's path (core.signals): its end-to-end runs are in the slow suite
@pytest.mark.parametrize(("how", "status"), [
    (signal.SIGTERM, 143), pytest.param(signal.SIGHUP, 129, marks=pytest.mark.slow)],
    ids=["SIGTERM", "SIGHUP"])
def test_a_pooled_run_stops_with_one_line_and_leaves_no_process(
        how: signal.Signals, status: int, tmp_path: Path) -> None:
    code, err, left = _stop_when_working(
        ["run", "--policy", "jsq", "--servers", "10x0.5", "--slots", "100000000",
         "--replications", "4", "--workers", "2"], how, tmp_path)
    assert code == status, err
    assert err.strip().splitlines()[-1] == (f"stopped by {how.name}: 0 of 4 pooled runs had "
                                            "finished (none is kept)"), err
    assert "Traceback" not in err
    assert left == []  # (the two workers and the resource tracker had stayed, under PID 1)


def test_an_experiment_stopped_by_sigterm_marks_its_run_and_releases_its_claims(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, err, left = _stop_when_working(
        ["experiment", "classic-load-sweep", "--store", "s.sqlite", "--workers", "2",
         "--out", "out"], signal.SIGTERM, tmp_path)
    assert code == 143, err
    assert "stopped by SIGTERM: " in err and "the same command resumes" in err, err
    assert left == []
    with sqlite3.connect(tmp_path / "s.sqlite") as db:
        assert db.execute("SELECT status FROM runs").fetchall() == [("interrupted",)]
        assert db.execute("SELECT COUNT(*) FROM claims").fetchone() == (0,)
    assert not (tmp_path / "out").exists()  # nothing written half-way
    # `results --runs` shows it (`results` had no way to show a run's status)
    from dispatchlab.cli import main

    assert main(["results", "--runs", "--store", str(tmp_path / "s.sqlite")]) == 0
    shown = capsys.readouterr().out
    assert "1 run" in shown and "classic-load-sweep" in shown and "interrupted" in shown


def test_terminated_keeps_its_signal_through_a_rewording_and_a_pickle() -> None:
    terminated = interrupt_saying(Terminated(signal.SIGHUP), "3 of 8 pooled runs had finished")
    assert isinstance(terminated, Terminated) and terminated.exit_status == 129
    assert str(terminated) == "stopped by SIGHUP: 3 of 8 pooled runs had finished"
    assert str(pickle.loads(pickle.dumps(terminated))) == str(terminated)
    plain = interrupt_saying(KeyboardInterrupt(), "3 of 8 pooled runs had finished")
    assert type(plain) is KeyboardInterrupt
    assert str(plain) == "interrupted: 3 of 8 pooled runs had finished"


def test_the_handlers_come_back_and_a_signal_is_an_interrupt() -> None:
    before = signal.getsignal(signal.SIGTERM)
    with pytest.raises(Terminated) as raised, signals_as_interrupts() as received:
        os.kill(os.getpid(), signal.SIGTERM)
        time.sleep(1)  # the handler raises here
    assert raised.value.exit_status == 143 and received.exit_status(130) == 143
    assert signal.getsignal(signal.SIGTERM) == before


def test_a_stop_inside_the_multilevel_cycles_ends_between_two_of_them(monkeypatch) -> None:
    """Ctrl-C or SIGTERM during a cycle had been numba's `SystemError: CPUDispatcher(…
    _jacobi) returned a result with an exception set`, exit 1: the stop is noted and the
    solve ends after the cycle, saying where."""
    from dispatchlab.model import System
    from dispatchlab.policies import make_policy
    from dispatchlab.solvers import multilevel

    system = System.build([0.5, 0.5], epsilon=0.05, arrivals="bernoulli", service="bernoulli")
    rule = make_policy("jbt", r=2).exact_memory(system)
    step = multilevel._accelerated_step

    def step_then_signal(*args):
        os.kill(os.getpid(), signal.SIGTERM)  # arrives while the cycle runs
        return step(*args)

    monkeypatch.setattr(multilevel, "_accelerated_step", step_then_signal)
    before = signal.getsignal(signal.SIGTERM)
    with (pytest.raises(Terminated, match=r"^stopped by SIGTERM: the multilevel solve at "
                        r"cycle 1 \(K = \d+, [\d,]+ states\)$"), signals_as_interrupts()):
        multilevel.solve_two_server(system, rule)
    assert signal.getsignal(signal.SIGTERM) == before



def test_a_stop_during_the_chain_s_linear_solve_ends_it_at_once(monkeypatch) -> None:
    """SuperLU's factorisation (seconds in C, no signal check) held Ctrl-C until it ended:
    7 s after the signal on a 573,800-state chain. The solve now runs beside a waiting main
    thread (core.signals.call_interruptibly), which takes the stop within 0.1 s."""
    import threading

    from numba import njit

    from dispatchlab.model import System
    from dispatchlab.policies import make_policy
    from dispatchlab.solvers import chain

    @njit(nogil=True)
    def busy(steps):  # seconds in machine code that releases the GIL, as SuperLU does
        x = 0.0
        for _ in range(steps):
            x = x * 1.0000001 + 1e-9
        return x

    busy(10)  # compiled before the clock starts
    test_over = threading.Event()

    def slow_solve(*args):
        # the signal arrives while the "factorisation" runs (a signal sent from here would
        # be handled before busy starts)
        threading.Timer(0.2, os.kill, (os.getpid(), signal.SIGTERM)).start()
        # ≥ 2 s on any machine of today, in calls of ~0.1 s: the thread left behind by the
        # stop ends with the test (one call had computed on for seconds, a core taken from
        # the rest of the suite)
        x = 0.0
        for _ in range(20):
            if test_over.is_set():
                break
            x += busy(100_000_000)
        return x

    monkeypatch.setattr(chain, "_linear_solve", slow_solve)
    system = System.build([0.5, 0.5], load=0.5, arrivals="bernoulli")
    started = time.perf_counter()
    try:
        with (pytest.raises(Terminated, match=r"^stopped by SIGTERM: the chain at K = \d+ "
                            r"\([\d,]+ states\)$"), signals_as_interrupts()):
            chain.solve(system, make_policy("jsq"))
        assert time.perf_counter() - started < 1.5
    finally:
        test_over.set()


def test_an_interruptible_call_returns_raises_and_runs_plainly_off_the_main_thread() -> None:
    import threading

    from dispatchlab.core.signals import call_interruptibly

    assert call_interruptibly(divmod, 7, 2) == (3, 1)
    with pytest.raises(ZeroDivisionError):
        call_interruptibly(divmod, 1, 0)
    names: list[str] = []
    worker = threading.Thread(target=lambda: names.append(
        call_interruptibly(lambda: threading.current_thread().name)), name="caller")
    worker.start()
    worker.join()
    assert names == ["caller"]  # no helper thread off the main thread

# (Ctrl-C of a run in this process is tests/core/test_stop.py's)
@pytest.mark.parametrize(("how", "status"), [
    (signal.SIGTERM, 143), pytest.param(signal.SIGINT, 130, marks=pytest.mark.slow)],
    ids=["SIGTERM", "SIGINT"])
def test_a_long_run_in_this_process_stops_with_one_line(how: signal.Signals, status: int,
                                                        tmp_path: Path) -> None:
    loop_compiled("10x0.5")
    child = subprocess.Popen(
        [sys.executable, "-c", COMMAND, "run", "--policy", "jsq", "--servers", "10x0.5",
         "--slots", "1000000000"], cwd=tmp_path, text=True, stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE, start_new_session=True, preexec_fn=default_sigint)
    wait_for_cpu(child.pid, 1.5)  # the loop loaded (~0.7 s of CPU) and running
    child.send_signal(how)
    _, err = child.communicate(timeout=60)
    assert child.returncode == status, err
    assert err.count("\n") == 1 and "Traceback" not in err, err
    assert err.startswith("stopped by SIGTERM" if how == signal.SIGTERM else "interrupted")


SWEEP_SCRIPT = """
import dispatchlab as dl
if __name__ == "__main__":
    dl.sweep(dl.System.build("10x0.5", load=0.9), ["jsq", "rand"], load=[0.5, 0.6, 0.7, 0.8],
             slots=30_000_000, store="s.sqlite", workers=2)
"""


@pytest.mark.parametrize("how", [signal.SIGTERM,
                                 pytest.param(signal.SIGHUP, marks=pytest.mark.slow)],
                         ids=["SIGTERM", "SIGHUP"])
def test_a_script_s_sweep_cleans_up_then_dies_by_the_signal(how: signal.Signals,
                                                              tmp_path: Path) -> None:
    """The Python API in a script (nothing handles SIGTERM): the coordinator had died at
    once, its two workers computing on under PID 1 and holding the caller's stderr, the
    store's run left `running`. Now the call cleans up as for Ctrl-C, says so in one line,
    and the process ends by the signal all the same."""
    (tmp_path / "sweep_script.py").write_text(SWEEP_SCRIPT, encoding="utf-8")
    code, err, left = _stop_when_working([], how, tmp_path, code=(
        "import runpy; runpy.run_path('sweep_script.py', run_name='__main__')"))
    assert code == -how, err  # killed by the signal, after the clean-up
    assert err.strip().splitlines() == [err.strip().splitlines()[0]], err  # one line
    assert err.startswith(f"stopped by {how.name}: ") and err.rstrip().endswith(
        " point(s) of notebook stored in s.sqlite; the same call resumes"), err
    assert left == []
    with sqlite3.connect(tmp_path / "s.sqlite") as db:
        assert [row[0] for row in db.execute("SELECT status FROM runs")] == ["interrupted"]
        assert db.execute("SELECT COUNT(*) FROM claims").fetchone() == (0,)


def test_the_workers_of_a_killed_script_go_with_it(tmp_path: Path) -> None:
    """kill -9 of a script whose simulate runs replications on two workers: every pool's
    workers watch their coordinator (they had stayed, computing, under PID 1)."""
    code, _, left = _stop_when_working([], signal.SIGKILL, tmp_path, code=(
        "import dispatchlab as dl\n"
        "if __name__ == '__main__':\n"
        "    dl.simulate(dl.System.build('10x0.5', load=0.9), 'jsq', slots=10**8,"
        " replications=4, workers=2)\n"))
    assert code == -signal.SIGKILL
    assert left == []


def test_a_script_s_own_handler_is_left_alone(tmp_path: Path) -> None:
    script = ("import signal, sys, time\n"
              "import dispatchlab as dl\n"
              "signal.signal(signal.SIGTERM, lambda *_: print('mine', flush=True))\n"
              "system = dl.System.build('10x0.5', load=0.9)\n"
              "dl.simulate(system, 'jsq', slots=1000)\n"
              "print('started', flush=True)\n"
              "dl.simulate(system, 'jsq', slots=3 * 10**6, seed=1)\n"
              "print('done', flush=True)\n")
    child = subprocess.Popen([sys.executable, "-c", script], cwd=tmp_path, text=True,
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    try:
        assert child.stdout is not None and child.stdout.readline() == "started\n"
        child.send_signal(signal.SIGTERM)
        out, err = child.communicate(timeout=120)
    finally:
        if child.poll() is None:
            child.kill()
    assert child.returncode == 0, err
    assert out.split() == ["mine", "done"], out + err
