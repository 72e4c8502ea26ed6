"""A stop that reaches the coordinator while it starts a worker (core.pools).

Ctrl-C landing between the spawn of a worker and the write of the pickled process object
it reads had cut that write: the worker died with an ``EOFError: Ran out of input``
traceback on the terminal, and, never recorded by its pool, outlived the clean-up (seen
as a flaky ``test_cli_interrupt`` case, 1 run in 12 under load). Here the stop is sent at
exactly that point, every time: once the fork server has forked the worker (or the worker
is spawned) and before it is sent what to run.
"""

from __future__ import annotations

import subprocess
import sys
import textwrap

import pytest

from sigint import default_sigint

SCRIPT = textwrap.dedent("""
    import os, signal, sys, time
    import multiprocessing.forkserver as forkserver
    import multiprocessing.util as util
    from dispatchlab.core.pools import START_METHOD, map_tasks
    from dispatchlab.core.signals import signals_as_interrupts

    def stop_now():
        os.kill(os.getpid(), getattr(signal, sys.argv[1]))  # before it has its data
        time.sleep(0.2)  # (the handler runs here, at the latest)

    if START_METHOD == "forkserver":  # the server has forked the worker, which waits
        ask = forkserver.connect_to_new_process

        def ask_then_stop(fds):
            answer = ask(fds)
            stop_now()
            return answer

        forkserver.connect_to_new_process = ask_then_stop
    else:
        spawn = util.spawnv_passfds

        def spawn_then_stop(path, args, passfds):
            pid = spawn(path, args, passfds)
            if "--multiprocessing-fork" in args:  # a worker (not the resource tracker)
                stop_now()
            return pid

        util.spawnv_passfds = spawn_then_stop

    def workers():
        parents, commands = {}, {}
        for pid in filter(str.isdigit, os.listdir("/proc")):
            try:
                parents[pid] = open(f"/proc/{pid}/stat").read().rsplit(")", 1)[1].split()[1]
                commands[pid] = open(f"/proc/{pid}/cmdline").read()
            except OSError:
                continue
        helpers = {pid for pid, command in commands.items()
                   if parents[pid] == str(os.getpid())
                   and ("resource_tracker" in command or "forkserver" in command)}
        return [pid for pid, parent in parents.items()
                if pid not in helpers and (parent == str(os.getpid()) or parent in helpers)]

    with signals_as_interrupts():
        try:
            map_tasks(abs, [1, 2, 3], workers=2)
        except KeyboardInterrupt as stop:
            print(type(stop).__name__)
    time.sleep(1)
    print("workers", len(workers()))
""")


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc")
@pytest.mark.parametrize("stop, raised", [("SIGINT", "KeyboardInterrupt"),
                                          ("SIGTERM", "Terminated")])
def test_a_stop_while_a_worker_starts_lets_it_start_then_stops_it(stop: str,
                                                                  raised: str) -> None:
    # (SIGINT as from a terminal, whatever the runner's: a background job ignores it)
    done = subprocess.run([sys.executable, "-c", SCRIPT, stop], capture_output=True,
                          text=True, timeout=120, check=False, preexec_fn=default_sigint)
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == [raised, "workers", "0"], done.stdout + done.stderr
    assert "Traceback" not in done.stderr and "leaked" not in done.stderr, done.stderr



FOREIGN_SERVER = textwrap.dedent("""
    import multiprocessing, signal
    from concurrent.futures import ProcessPoolExecutor
    from dispatchlab.core.pools import map_tasks

    def sigint_blocked(_):
        return signal.SIGINT in signal.pthread_sigmask(signal.SIG_BLOCK, [])

    if __name__ == "__main__":
        # the caller's own pool starts the fork server, with SIGINT as it has it
        context = multiprocessing.get_context("forkserver")
        with ProcessPoolExecutor(1, mp_context=context) as own:
            print(own.submit(sigint_blocked, 0).result())
        print(map_tasks(sigint_blocked, [0, 1], workers=2))
""")


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="a fork server")
def test_workers_block_sigint_whoever_started_the_fork_server(tmp_path) -> None:
    """A fork server started by the caller's own pool passes SIGINT on to what it forks
    (a worker the pool forks from it would take a terminal's Ctrl-C): workers block it
    themselves."""
    script = tmp_path / "foreign.py"
    script.write_text(FOREIGN_SERVER, encoding="utf-8")
    done = subprocess.run([sys.executable, str(script)], capture_output=True, text=True,
                          timeout=120, check=False, preexec_fn=default_sigint)
    assert done.returncode == 0, done.stderr
    assert done.stdout.split("\n")[:2] == ["False", "[True, True]"], done.stdout
