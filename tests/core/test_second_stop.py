"""A second Ctrl-C during the clean-up of the first (core.signals.stops_held).

A terminal's user who presses Ctrl-C twice sends the second while the first one's clean-up
runs. A pooled sweep stopped twice 0.05 s apart, under load, once ended with a bare
"interrupted": the second stop had cut the clean-up where it landed (the heartbeat's
stop, the pool's reaping, the count of stored points), which could also skip reaping the
workers. Here the second stop is sent at each of those points, every time.
"""

from __future__ import annotations

import os
import signal
import sqlite3
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from dispatchlab.core.pools import stop_pool
from dispatchlab.core.signals import stops_held
from dispatchlab.experiments import runner
from dispatchlab.specs.experiment import ExperimentSpec
from dispatchlab.specs.run import PolicySpec, SystemSpec


@pytest.fixture(autouse=True)
def _ctrl_c_as_in_a_terminal() -> Iterator[None]:
    """Python's own SIGINT handler while the test runs (the suite's runner has one of its
    own, which would stop the session)."""
    previous = signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, previous)


def ctrl_c() -> None:
    os.kill(os.getpid(), signal.SIGINT)


def test_a_stop_inside_waits_for_the_end_of_the_block() -> None:
    done = []
    with pytest.raises(KeyboardInterrupt) as raised, stops_held():
        ctrl_c()
        done.append("the rest of the block")
    assert done == ["the rest of the block"]
    assert str(raised.value) == ""  # Ctrl-C's own, as Python raises it


def test_in_the_clean_up_of_a_stop_the_second_is_dropped_for_the_first() -> None:
    done = []
    with pytest.raises(KeyboardInterrupt) as raised:
        try:
            raise KeyboardInterrupt("interrupted: 3 point(s) stored")
        finally:
            with stops_held():
                ctrl_c()
                done.append("clean-up")
    assert done == ["clean-up"]
    assert str(raised.value) == "interrupted: 3 point(s) stored"


def test_in_the_clean_up_of_an_error_the_stop_is_raised() -> None:
    with pytest.raises(KeyboardInterrupt):
        try:
            raise ValueError("an error, not a stop")
        except ValueError:
            with stops_held():
                ctrl_c()


def test_a_block_without_a_stop_changes_nothing() -> None:
    with stops_held():
        pass
    assert signal.getsignal(signal.SIGINT) is signal.default_int_handler


class _Worker:
    def __init__(self, calls: list[str], name: str) -> None:
        self.calls, self.name, self.pid, self.alive = calls, name, 1, True

    def is_alive(self) -> bool:
        return self.alive

    def terminate(self) -> None:
        self.calls.append(f"terminate {self.name}")
        self.alive = False

    def join(self, timeout: float) -> None:
        self.calls.append(f"join {self.name}")


class _Pool:
    """What :func:`stop_pool` reads of a process pool; its shutdown meets a second Ctrl-C."""

    def __init__(self, calls: list[str]) -> None:
        self.calls = calls
        self._processes = {1: _Worker(calls, "a"), 2: _Worker(calls, "b")}

    def shutdown(self, wait: bool, cancel_futures: bool) -> None:
        ctrl_c()
        self.calls.append("shutdown")


def test_a_second_stop_waits_until_the_workers_are_reaped() -> None:
    calls: list[str] = []
    with pytest.raises(KeyboardInterrupt) as raised:
        try:
            raise KeyboardInterrupt("interrupted: the first")
        except KeyboardInterrupt:
            stop_pool(_Pool(calls))  # type: ignore[arg-type]
            raise
    assert calls == ["shutdown", "terminate a", "terminate b", "join a", "join b"]
    assert str(raised.value) == "interrupted: the first"


def test_a_second_stop_waits_until_the_sweep_s_pool_is_shut_and_its_run_marked(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The first stop in the middle of the points, the second as the heartbeat stops: the
    pool was still shut and the run marked interrupted (the shutdown had been skipped)."""
    calls: list[object] = []
    heartbeat_stop = runner._Heartbeat.stop

    def stop_heartbeat(self: runner._Heartbeat) -> None:
        ctrl_c()
        heartbeat_stop(self)
        calls.append("heartbeat stopped")

    shutdown = runner._Executor.shutdown

    def shut(self: runner._Executor, cancel: bool) -> None:
        shutdown(self, cancel)
        calls.append(("pool shut", cancel))

    class FirstCtrlC:
        def update(self, snapshot: runner.Snapshot) -> None:
            raise KeyboardInterrupt("the first")

    monkeypatch.setattr(runner._Heartbeat, "stop", stop_heartbeat)
    monkeypatch.setattr(runner._Executor, "shutdown", shut)
    spec = ExperimentSpec("twice", systems=(SystemSpec("2x0.5"),),
                          policies=(PolicySpec("rand"),), loads=(0.5,), slots=1_000)
    store = tmp_path / "s.sqlite"
    with ThreadPoolExecutor(1) as pool, pytest.raises(KeyboardInterrupt) as raised:
        runner.run_experiment(spec, store=store, executor=pool, progress=FirstCtrlC(),
                              warm=False)
    assert str(raised.value) == "the first"
    assert calls == ["heartbeat stopped", ("pool shut", True)]
    with sqlite3.connect(store) as db:
        assert [row[0] for row in db.execute("SELECT status FROM runs")] == ["interrupted"]


def test_a_second_stop_while_the_stored_points_are_counted_keeps_the_line(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    """The line a stopped sweep ends with says how many points are stored and that the
    same command resumes; a second stop while it counted them had left only "interrupted"."""
    from dispatchlab.cli import main
    from dispatchlab.experiments.store import Store

    stopped = []

    def first_ctrl_c(*args: object, **kwargs: object) -> None:
        stopped.append(True)
        raise KeyboardInterrupt

    count = Store.count

    def count_then_ctrl_c(self: Store, *args: object) -> int:
        if stopped:  # (the sweep counts its stored points before it runs, too)
            ctrl_c()
        return count(self, *args)

    spec = tmp_path / "spec.toml"
    spec.write_text('name = "twice"\nslots = 1000\nloads = [0.5]\n[[systems]]\n'
                    'servers = "2x0.5"\n[[policies]]\nname = "rand"\n', encoding="utf-8")
    monkeypatch.setattr(runner, "run_experiment", first_ctrl_c)
    monkeypatch.setattr(Store, "count", count_then_ctrl_c)
    code = main(["sweep", str(spec), "--store", str(tmp_path / "s.sqlite"), "--no-progress",
                 "--out", str(tmp_path / "out")])
    err = capsys.readouterr().err
    assert code == 130
    assert "interrupted: 0 point(s) of twice stored in " in " ".join(err.split())


def test_a_sigterm_inside_waits_too_and_comes_out_as_terminated() -> None:
    """SIGTERM inside :func:`signals_as_interrupts` is held the same way and raised after
    the block as ``Terminated`` (exit 143); its arrival restores the default action at
    once, so a second SIGTERM during the clean-up kills (core.signals: the clean-up is
    the first one's)."""
    from dispatchlab.core.signals import Terminated, signals_as_interrupts

    done = []
    with signals_as_interrupts(), pytest.raises(Terminated) as raised, stops_held():
        os.kill(os.getpid(), signal.SIGTERM)
        done.append("the rest of the block")
        assert signal.getsignal(signal.SIGTERM) is signal.SIG_DFL  # (a second kills)
    assert done == ["the rest of the block"]
    assert raised.value.exit_status == 143
