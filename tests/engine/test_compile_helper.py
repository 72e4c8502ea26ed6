"""A cold run compiles beside a helper process (engine.compile_helper): same numbers, no
process left behind whatever happens to the run, and nothing imported but dispatchlab."""

from __future__ import annotations

import importlib
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest

from dispatchlab import System, simulate
from dispatchlab.engine import compile_helper, loop
from dispatchlab.engine.compile_helper import Piece, pieces_to_compile
from dispatchlab.engine.interface import choose_function, no_hook
from sigint import default_sigint

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"),
                                reason="the helper's lifetime checks read /proc")

COLD_RUN = """
import importlib, json, os, sys
from dispatchlab.cli import main
from dispatchlab.engine import compile_helper
status = main(["run", "--policy", {policy!r}, "--servers", "50x0.3,50x0.6", "--dispatchers",
               "10", "--load", "0.9", "--slots", "1000", "--seed", "3", "--json"])
def parent(pid):
    try:  # (a process may end between the listing and the read)
        return open(f'/proc/{{pid}}/stat').read().rsplit(')', 1)[1].split()[1]
    except OSError:
        return None
children = [p for p in os.listdir('/proc') if p.isdigit() and parent(p) == str(os.getpid())]
# the types the loop and the policy's choose called their callees with, whichever process
# compiled them: each callee's cache holds the signatures compiled (one more if a call's
# types were not those its module declares, which the helper compiles ahead)
def cached(function):
    return sorted(list(map(str, key[0])) for key in function._cache._cache_file._load_index())
modules = [importlib.import_module(name) for name in {callers!r}]
called = {{name: cached(getattr(module, name)) for module in modules for name in module.CALLEES}}
print(json.dumps({{"status": status, "helper": compile_helper.last_helper,
                  "children": children, "called": called}}))
"""
#: the cold runs: the policy, the modules whose callees it calls, and what it says it compiles
COLD_RUNS = {
    "jsq": (["dispatchlab.engine.loop"], "the slot loop, policies.classic._jsq_choose"),
    "lsq": (["dispatchlab.engine.loop", "dispatchlab.policies.led.ahead",
             "dispatchlab.policies.led.min_tree"],
            "the slot loop, policies.led.choose._lsq_tree_choose, "
            "policies.led.updates.push_end_slot"),
}


def _cold_environment(tmp_path: Path) -> dict[str, str]:
    return {**os.environ, "NUMBA_CACHE_DIR": str(tmp_path / "cache"),
            compile_helper.SWITCH: "1"}


# LSQ's cold run (its choose and the look-ahead's and min tree's callees: 12 s of CPU where
# jsq's takes 6 s) in the slow suite
@pytest.mark.parametrize("policy", ["jsq", pytest.param("lsq", marks=pytest.mark.slow)])
def test_a_cold_run_compiles_beside_a_helper_says_so_and_leaves_none_behind(
        tmp_path: Path, policy: str) -> None:
    """On a stderr that is no terminal (a log, CI, ``make demo`` piped), one plain line;
    then a warm run: nothing compiled, the same numbers; and every callee compiled for the
    types its module declares, which the helper compiles ahead."""
    callers, pieces = COLD_RUNS[policy]
    code = COLD_RUN.format(policy=policy, callers=callers)
    cold, warm = (subprocess.run([sys.executable, "-c", code],
                                 env=_cold_environment(tmp_path), capture_output=True,
                                 text=True, timeout=600, check=False) for _ in range(2))
    assert cold.returncode == 0 and warm.returncode == 0, cold.stderr + warm.stderr
    (cold_run, cold_report), (warm_run, warm_report) = (
        [json.loads(line) for line in done.stdout.splitlines()[-2:]] for done in (cold, warm))
    assert cold_report["status"] == warm_report["status"] == 0
    assert f"compiling {pieces} (once: cached for the next runs)" in cold.stderr
    assert cold_report["helper"]["peak_kb"] > 0 and cold_report["helper"]["cpu_seconds"] > 0
    assert cold_report["children"] == []  # the helper was stopped with the compiling
    assert "compiling" not in warm.stderr and warm_report["helper"] == {}
    assert cold_run["mean_total_queue"] == warm_run["mean_total_queue"]
    modules = [importlib.import_module(name) for name in callers]
    assert cold_report["called"] == {name: [list(map(str, types))] for module in modules
                                     for name, types in module.CALLEES.items()}


def _helper_of(parent: int, within: float) -> int | None:
    deadline = time.monotonic() + within
    while time.monotonic() < deadline:
        for pid in filter(str.isdigit, os.listdir("/proc")):
            try:
                stat = Path(f"/proc/{pid}/stat").read_text()
                command = Path(f"/proc/{pid}/cmdline").read_bytes()
            except OSError:
                continue
            if (stat.rsplit(")", 1)[1].split()[1] == str(parent)
                    and b"dispatchlab.engine.compile_helper" in command):
                return int(pid)
        time.sleep(0.05)
    return None


def _gone(pid: int, within: float) -> bool:
    deadline = time.monotonic() + within
    while time.monotonic() < deadline:
        try:
            state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
        except OSError:
            return True
        if state == "Z":  # dead, not yet reaped
            return True
        time.sleep(0.05)
    return False


# SIGTERM and Ctrl-C each wait out a cold compile (≈ 10 s): in the slow suite
@pytest.mark.parametrize("how", [signal.SIGKILL,
                                 pytest.param(signal.SIGTERM, marks=pytest.mark.slow),
                                 pytest.param(signal.SIGINT, marks=pytest.mark.slow)])
def test_the_helper_goes_with_its_run(tmp_path: Path, how: signal.Signals) -> None:
    """kill -9 and SIGTERM of the run (it dies at once; the kernel kills the helper,
    PR_SET_PDEATHSIG) and Ctrl-C (the run stops it on its way out): no helper outlives
    the run."""
    # long enough to be running still when the signal comes; SIGINT at its default action
    # (a pytest-xdist worker passes it on ignored: the run had ended cleanly, exit 0)
    code = ("from dispatchlab import System, simulate\n"
            "simulate(System.build('50x0.3,50x0.6', load=0.9, dispatchers=4), 'l-jsq-push',"
            " slots=10_000_000)\n")
    run = subprocess.Popen([sys.executable, "-c", code], env=_cold_environment(tmp_path),
                           stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
                           preexec_fn=default_sigint)
    try:
        helper = _helper_of(run.pid, within=60)
        assert helper is not None, "no helper started beside a cold run"
        run.send_signal(how)
        run.wait(timeout=60)
        assert _gone(helper, within=10), "the helper outlived its run"
    finally:
        run.kill()
        run.wait()
    stderr = run.stderr.read()
    assert run.returncode != 0, stderr
    if how == signal.SIGINT:
        assert "KeyboardInterrupt" in stderr


def _user_choose(m, jobs, slot, memory, ctx):  # pragma: no cover - never compiled
    return 0


def test_only_dispatchlab_functions_still_to_compile_are_pieces() -> None:
    simulate(System.build("4x0.5", load=0.5), "jsq", slots=100, seed=1)  # the loop compiled
    user = choose_function(_user_choose)
    assert pieces_to_compile([loop.run_slots, user, no_hook, np.sum]) == []


def test_the_callees_of_a_run_s_pieces_go_first_with_the_types_they_are_called_with(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """The out-of-line functions an LSQ run's loop and ``choose`` call (the modules'
    ``CALLEES``) are pieces the helper compiles ahead, the loop's first, each once; once
    compiled, none."""
    from dispatchlab.engine.compile_helper import callees_to_compile

    run = [Piece("dispatchlab.engine.loop", "run_slots"),
           Piece("dispatchlab.policies.led.choose", "_lsq_tree_choose")]
    loop_callees = [Piece("dispatchlab.engine.loop", name) for name in loop.CALLEES]
    led_callees = [Piece("dispatchlab.policies.led.min_tree", "_refresh_dirty"),
                   Piece("dispatchlab.policies.led.ahead", "_group_choice")]
    with monkeypatch.context() as patched:  # as on an empty cache, in a fresh process
        patched.setattr(compile_helper, "needs_compiling", lambda function, types: True)
        found = callees_to_compile(run)
        assert found[:len(loop_callees)] == loop_callees
        assert sorted(found[len(loop_callees):], key=repr) == sorted(led_callees, key=repr)
        assert sorted(callees_to_compile(run[1:]), key=repr) == sorted(led_callees, key=repr)
    # compiled as the helper compiles them (an LSQ run had done it, unless its pieces loaded
    # from the cache while a callee's own entry was stale, as after a checkout touched
    # ahead.py; that the run calls them with these types is the cold run's test)
    for piece in callees_to_compile(run):
        compile_helper._compile(piece)
    assert callees_to_compile(run) == []


def test_the_helper_imports_nothing_outside_dispatchlab(monkeypatch) -> None:
    imported = []
    monkeypatch.setattr(compile_helper.importlib, "import_module", imported.append)
    compile_helper._compile(Piece("os", "system"))
    compile_helper._compile(Piece("dispatchlabx.evil", "f"))
    assert imported == []


def test_a_hostile_piece_list_imports_nothing_and_ends_cleanly(monkeypatch, capsys) -> None:
    """The helper's argument is data: pieces outside dispatchlab, unknown names and
    malformed entries are skipped; it still reports and exits 0."""
    imported = []
    real_import = compile_helper.importlib.import_module

    def recording(name: str):
        imported.append(name)
        return real_import(name)

    monkeypatch.setattr(compile_helper.importlib, "import_module", recording)
    monkeypatch.setattr(compile_helper, "_die_with", lambda parent: None)
    monkeypatch.setattr(compile_helper.signal, "signal", lambda *args: None)
    from dispatchlab.compiled import compile_once

    monkeypatch.setitem(compile_once._state, "skip_busy", False)  # restored afterwards
    pieces = [{"module": "os", "name": "system"}, {"module": "dispatchlab.nope", "name": "x"},
              {"module": "dispatchlab.engine.loop", "name": "no_such_step"}, {"bad": 1}]
    assert compile_helper.main(["1", json.dumps(pieces)]) == 0
    assert "os" not in imported
    report = json.loads(capsys.readouterr().out.splitlines()[-1])
    assert report["peak_kb"] >= 0 and report["cpu_seconds"] >= 0
