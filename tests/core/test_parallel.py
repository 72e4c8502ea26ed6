"""Replications and policies on a process pool: identical to the sequential run; workers
forked from one fork server where the platform has one."""

from __future__ import annotations

import operator
import os
import sys
from pathlib import Path

import numpy as np
import pytest

from dispatchlab import System
from dispatchlab.core.errors import ValidationError
from dispatchlab.core.pools import START_METHOD, map_tasks, resolve_workers
from dispatchlab.engine.raw import default_bound
from dispatchlab.policies.base import make_policy
from dispatchlab.simulation.plan import Replication
from dispatchlab.simulation.replicate import run_replications
from dispatchlab.simulation.run import simulate, simulate_each

TIMING = ("seconds", "slots_per_second")


def _same(a: dict, b: dict) -> None:
    for key in TIMING:
        a.pop(key), b.pop(key)
    assert a == b


def test_replications_on_two_workers_are_bit_identical() -> None:
    system = System.build("2x0.2,2x0.6", load=0.9, dispatchers=2)
    task = Replication(system, make_policy("jsq"), 30_000, 3_000, 5, default_bound(system),
                       True, True)
    one = run_replications(task, range(4), workers=1)
    two = run_replications(task, range(4), workers=2)
    for a, b in zip(one, two, strict=True):
        for name in ("block_sum", "queue_sum", "delay_hist", "queue_hist", "messages",
                     "counters", "moments", "final_queues"):
            assert np.array_equal(getattr(a, name), getattr(b, name)), name
        assert (a.slots_run, a.hit_bound) == (b.slots_run, b.hit_bound)


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc")
def test_workers_of_every_pool_are_forked_by_one_server_that_imported_the_loop() -> None:
    """A spawned worker started an interpreter and imported numba (~0.5 s of CPU) in
    every pool; forked from the server, it starts with what the server imported."""
    assert START_METHOD == "forkserver"
    first = map_tasks(operator.call, [os.getppid] * 2, workers=2)
    second = map_tasks(operator.call, [os.getppid] * 2, workers=2)
    servers = set(first) | set(second)
    assert len(servers) == 1 and os.getpid() not in servers
    server = servers.pop()
    assert b"forkserver" in Path(f"/proc/{server}/cmdline").read_bytes()
    maps = Path(f"/proc/{server}/maps").read_text()
    assert "numba" in maps and "_helperlib" in maps  # numba's compiled helpers are loaded


LOOP_LOADED = """
import dispatchlab as dl
from dispatchlab.core.pools import map_tasks


def loop_loaded(_):
    from dispatchlab.engine.loop import run_slots
    return bool(run_slots.overloads)


if __name__ == "__main__":
    dl.simulate(dl.System.build("4x0.5", load=0.5), "jsq", slots=100)  # (now in the cache)
    print(loop_loaded(0), map_tasks(loop_loaded, [0, 1], workers=2))
"""


@pytest.mark.skipif(START_METHOD != "forkserver", reason="no fork server here")
def test_a_forked_worker_has_the_compiled_loop_before_it_runs_anything(tmp_path) -> None:
    """The server loads the slot loop from the cache once (engine.server_preload); a worker
    loading it itself cost about 0.3 s of CPU, every pool."""
    import subprocess

    script = tmp_path / "loaded.py"
    script.write_text(LOOP_LOADED, encoding="utf-8")
    done = subprocess.run([sys.executable, str(script)], capture_output=True, text=True,
                          timeout=300, check=False)
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["True", "[True,", "True]"], done.stdout + done.stderr


def test_a_worker_sees_the_environment_of_its_pool_s_start(monkeypatch) -> None:
    map_tasks(abs, [1, 2], workers=2)  # (the fork server, if any, has started)
    monkeypatch.setenv("DISPATCHLAB_TEST_SEEN", "now")
    monkeypatch.delenv("HOME", raising=False)
    assert map_tasks(os.getenv, ["DISPATCHLAB_TEST_SEEN", "HOME"], workers=2) == ["now", None]


def test_compare_pool_matches_sequential_simulate() -> None:
    system = System.build("2x0.2,2x0.6", load=0.8, dispatchers=2)
    pooled = simulate_each(system, ["wrand", "jsq"], workers=2, slots=20_000, replications=2)
    for name, result in zip(["wrand", "jsq"], pooled, strict=True):
        _same(result.to_dict(), simulate(system, name, slots=20_000, replications=2).to_dict())


def test_replication_seeds_are_the_spawned_children() -> None:
    children = np.random.SeedSequence(9).spawn(3)
    task = Replication(System.build("0.5", load=0.5), make_policy("rand"), 10, 0, 9, 10, False,
                       False)
    for index, child in enumerate(children):
        assert task.seed_sequence(index).generate_state(4).tolist() == \
            child.generate_state(4).tolist()


def test_workers_validation_and_sizes() -> None:
    assert resolve_workers(8, 3) == 3
    assert resolve_workers(None, 1) == 1
    assert map_tasks(abs, [-1, 2, -3], workers=1) == [1, 2, 3]
    with pytest.raises(ValidationError):
        resolve_workers(0, 4)
