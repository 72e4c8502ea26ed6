"""Experiment specs, seeds, the runner on local processes and on a Dask LocalCluster,
resuming after SIGKILL, concurrent sweeps and failed points."""

from __future__ import annotations

import json
import os
import signal
import textwrap
from concurrent.futures import ThreadPoolExecutor
from dataclasses import replace
from pathlib import Path

import pytest

from dispatchlab.cli import main
from dispatchlab.core.errors import ValidationError
from dispatchlab.core.pools import START_METHOD
from dispatchlab.experiments import (
    ExperimentSpec,
    FigureSpec,
    PolicySpec,
    ReferenceLine,
    SlotsRule,
    build_experiment,
    experiment_names,
)
from dispatchlab.experiments import runner as runner_module
from dispatchlab.experiments.runner import run_experiment
from dispatchlab.experiments.store import Store
from sweeps import numbers, small_spec, start_sweep, wait_for_points

ROOT = Path(__file__).resolve().parents[2]
# -- specs ---------------------------------------------------------------------------------------


@pytest.mark.parametrize("change, field", [
    ({"policies": (PolicySpec("no-such-policy"),)}, "policy"),
    ({"slots": -5}, "slots"),
    ({"loads": (0.5, 1.0)}, "load"),
    ({"loads": (0.5, 1.2)}, "load"),
    ({"policies": ()}, "policies"),
    ({"systems": ()}, "systems"),
    ({"loads": ()}, "loads"),
    ({"policies": (PolicySpec("pod", {"d": 0}),)}, "pod.d"),
    ({"replications": 0}, "replications"),
    ({"warmup": 1.5}, "warmup"),
    ({"epsilons": (0.1,)}, "loads"),
])
def test_malformed_specs_fail_before_any_point_runs(tmp_path, change, field):
    store = tmp_path / "store.sqlite"
    with pytest.raises(ValidationError) as error:
        run_experiment(small_spec(**change), store=store)
    assert error.value.field == field, str(error.value)
    assert "\n" not in str(error.value)
    assert not store.exists()  # validated before the store was even opened


def test_reference_lines_must_be_importable_functions():
    spec = small_spec(figures=(FigureSpec("q", references=(
        ReferenceLine("bad", function=lambda system: 1.0),)),))
    with pytest.raises(ValidationError, match="module-level"):
        spec.validate()


def test_seed_depends_on_the_point_not_its_position():
    spec = small_spec()
    bigger = replace(spec, loads=(0.3, 0.5, 0.8), policies=spec.policies[::-1],
                     name="other-name")
    by_identity = {json.dumps(p.identity(), sort_keys=True): p for p in spec.points()}
    matched = 0
    for point in bigger.points():
        twin = by_identity.get(json.dumps(point.identity(), sort_keys=True))
        if twin is not None:
            matched += 1
            assert (twin.seed, twin.key) == (point.seed, point.key)
    assert matched == len(spec.points())
    seeds = [p.seed for p in bigger.points()]
    assert len(set(seeds)) == len(seeds)
    assert small_spec(seed=12).points()[0].seed != spec.points()[0].seed


def test_spec_round_trips_through_json_and_toml(tmp_path):
    spec = small_spec(slots=SlotsRule(coefficient=1e3, power=2, minimum=500), epsilons=(1.0, 2.0),
                      loads=(), figures=(FigureSpec("eps", x="epsilon", y="epsilon_total_queue"),))
    again = ExperimentSpec.from_json(spec.to_json())
    assert again == spec
    assert [p.slots for p in again.points()] == [p.slots for p in spec.points()]
    assert sorted({p.slots for p in spec.points()}) == [500, 1000]  # 1e3/ε² clipped at 500
    loaded = ExperimentSpec.from_toml(ROOT / "examples" / "sweep.toml")
    assert loaded.points()
    bad = tmp_path / "bad.toml"
    bad.write_text("name = 'x'\n[[policies]\nname = 'jsq'\n")
    with pytest.raises(ValidationError, match="is not valid TOML"):
        ExperimentSpec.from_toml(bad)
    bad.write_text("name = 'x'\nloads = [0.5]\nsloths = 3\n")
    with pytest.raises(ValidationError, match="sloths"):
        ExperimentSpec.from_toml(bad)


def test_cli_rejects_a_bad_sweep_with_exit_2(tmp_path, capsys):
    path = tmp_path / "bad.toml"
    path.write_text(textwrap.dedent("""
        name = "bad"
        loads = [0.5, 0.99, 1.0]
        slots = 1000
        [[systems]]
        servers = "2x0.5"
        [[policies]]
        name = "jsq"
    """))
    code = main(["sweep", str(path), "--store", str(tmp_path / "s.sqlite"), "--no-progress"])
    assert code == 2
    assert "load" in capsys.readouterr().err
    assert not (tmp_path / "s.sqlite").exists()


def test_catalog_builds_and_validates():
    assert "classic-load-sweep" in experiment_names()
    for name in experiment_names():
        spec = build_experiment(name, quick=True)
        assert spec.name == name and spec.points()
    with pytest.raises(ValidationError, match="unknown experiment"):
        build_experiment("no-such-experiment")


# -- running -------------------------------------------------------------------------------------


def test_local_processes_and_dask_give_identical_numbers(tmp_path):
    distributed = pytest.importorskip("distributed")
    spec = small_spec()
    local = run_experiment(spec, store=tmp_path / "local.sqlite", workers=2)
    assert local.computed == len(spec.points()) and local.complete
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                                  dashboard_address=None) as cluster:
        remote = run_experiment(spec, store=tmp_path / "dask.sqlite",
                                cluster=cluster.scheduler_address)
    assert remote.computed == len(spec.points())
    with Store(tmp_path / "dask.sqlite") as store:
        assert store.runs()[0]["executor"].startswith("dask")
        workers = {row["worker"] for row in store.points("small")}
    assert all(w and ":" in w for w in workers)
    one_worker = run_experiment(spec, store=tmp_path / "one.sqlite", workers=1)
    assert one_worker.computed == len(spec.points())
    reference = numbers(tmp_path / "local.sqlite", "small")
    assert len(reference) == len(spec.points())
    assert numbers(tmp_path / "dask.sqlite", "small") == reference
    assert numbers(tmp_path / "one.sqlite", "small") == reference
    # a point stored is not recomputed
    again = run_experiment(spec, store=tmp_path / "local.sqlite", workers=2)
    assert (again.skipped, again.computed) == (len(spec.points()), 0)


def test_local_workers_are_never_forks_of_the_coordinator():
    pool = runner_module._Executor(None, 1, None, 1)
    try:
        assert pool._executor._mp_context.get_start_method() == START_METHOD
        assert START_METHOD in {"forkserver", "spawn"}
    finally:
        pool.shutdown(cancel=False)


def test_local_workers_follow_the_cpu_affinity(monkeypatch):
    # the sweep's own pool is core.pools.process_pool, sized by the cores this process may
    # run on (its affinity mask), not by every core of the machine
    monkeypatch.setattr(os, "sched_getaffinity", lambda pid: {0, 1, 2}, raising=False)
    monkeypatch.setattr(os, "cpu_count", lambda: 64)
    pool = runner_module._Executor(None, None, None, 10)
    try:
        assert pool._workers == pool.capacity == 3
        assert pool._executor._max_workers == 3
        assert pool._executor._mp_context.get_start_method() == START_METHOD
        # the worker's start watches the coordinator, then imports the --import modules
        assert pool._executor._initargs[0] == os.getpid()
        assert pool._executor._initargs[2] == runner_module.import_in_worker
    finally:
        pool.shutdown(cancel=False)
    few = runner_module._Executor(None, None, None, 2)  # never more workers than points
    try:
        assert few._workers == 2
    finally:
        few.shutdown(cancel=False)


def test_sweep_killed_with_sigkill_resumes_without_recomputing(tmp_path):
    spec = small_spec("killed", slots=30_000, loads=(0.4, 0.6, 0.8, 0.9))  # 16 points
    total = len(spec.points())
    store = tmp_path / "store.sqlite"
    process = start_sweep(tmp_path, spec, store, workers=1)
    wait_for_points(store, "killed", 3, process)
    os.killpg(process.pid, signal.SIGKILL)  # the coordinator and its workers, mid-sweep
    process.wait()
    with Store(store) as db:
        assert db.integrity_ok()
        stored_before = {r["point_key"]: r["run_id"] for r in db.points("killed")}
        first_run = db.runs("killed")[0]
    assert 3 <= len(stored_before) < total, "the kill came too late to test resuming"
    assert first_run["status"] == "running"  # killed: never marked finished

    outcome = run_experiment(spec, store=store, workers=2)
    assert (outcome.skipped, outcome.computed) == (len(stored_before), total - len(stored_before))
    with Store(store) as db:
        rows = db.points("killed", status=None)
        keys = [r["point_key"] for r in rows]
        assert len(keys) == len(set(keys)) == total  # every point exactly once
        for row in rows:
            if row["point_key"] in stored_before:  # finished before the kill: not recomputed
                assert row["run_id"] == stored_before[row["point_key"]]
                assert row["attempts"] == 1
            else:
                assert row["run_id"] == outcome.run_id
        second_run = db.runs("killed")[-1]
        assert second_run["points_computed"] == total - len(stored_before)
        assert second_run["status"] == "finished"
    run_experiment(spec, store=tmp_path / "clean.sqlite", workers=2)
    assert numbers(store, "killed") == numbers(tmp_path / "clean.sqlite", "killed")


def test_two_concurrent_sweeps_lose_and_duplicate_nothing(tmp_path):
    # 16 points, long enough (seconds per sweep) that the two sweeps really overlap
    spec = small_spec("concurrent", slots=100_000, loads=(0.3, 0.5, 0.7, 0.8))
    store = tmp_path / "store.sqlite"
    Store(store).close()  # both sweeps open an existing store
    first = start_sweep(tmp_path, spec, store, workers=1)
    second = start_sweep(tmp_path, spec, store, workers=1)
    for process in (first, second):
        assert process.wait(timeout=300) == 0, process.stderr.read().decode()
    with Store(store) as db:
        assert db.integrity_ok()
        rows = db.query("SELECT point_key, COUNT(*) AS n FROM points GROUP BY point_key")
        runs = db.runs("concurrent")
    assert len(rows) == len(spec.points()) and all(r["n"] == 1 for r in rows)
    assert len(runs) == 2 and all(r["status"] == "finished" for r in runs)
    assert max(r["started"] for r in runs) < min(r["finished"] for r in runs)  # overlapped
    assert sum(r["points_stored"] for r in runs) == len(spec.points())
    # claims: a point claimed by a live sweep is not computed by the other one
    assert sum(r["points_computed"] for r in runs) == len(spec.points())
    run_experiment(spec, store=tmp_path / "alone.sqlite", workers=1)
    assert numbers(store, "concurrent") == numbers(tmp_path / "alone.sqlite", "concurrent")


def test_a_failed_point_is_recorded_and_does_not_stop_the_others(tmp_path, monkeypatch):
    spec = small_spec("failing")
    doomed = spec.points()[3].key
    real_run_point = runner_module.run_point

    def sometimes_failing(point_data):
        if point_data["key"] == doomed:
            raise RuntimeError("injected failure")
        return real_run_point(point_data)

    monkeypatch.setattr(runner_module, "run_point", sometimes_failing)
    failures = []

    class Recorder:
        def update(self, snapshot):
            assert snapshot.done + snapshot.failed <= snapshot.total

        def point_failed(self, point, error):
            failures.append((point.key, error))

    with ThreadPoolExecutor(2) as pool:  # any concurrent.futures executor works
        outcome = run_experiment(spec, store=tmp_path / "s.sqlite", executor=pool,
                                 progress=Recorder())
    assert outcome.computed == len(spec.points()) - 1
    assert len(outcome.failed) == 1 and "injected failure" in outcome.failed[0][1]
    assert failures and failures[0][0] == doomed
    with Store(tmp_path / "s.sqlite") as store:
        failed = store.points("failing", status="failed")
        assert [r["point_key"] for r in failed] == [doomed]
        assert "RuntimeError: injected failure" in failed[0]["error"]
    monkeypatch.setattr(runner_module, "run_point", real_run_point)
    with ThreadPoolExecutor(2) as pool:  # the failed point is retried, the rest skipped
        retry = run_experiment(spec, store=tmp_path / "s.sqlite", executor=pool)
    assert (retry.skipped, retry.computed, retry.failed) == (len(spec.points()) - 1, 1, [])
    with Store(tmp_path / "s.sqlite") as store:
        assert store.count("failing", "failed") == 0
        row = next(r for r in store.points("failing") if r["point_key"] == doomed)
        assert row["attempts"] == 2


def _die_once_then_run(point_data):
    """Kill the worker process the first time the marked point runs (a dead worker)."""
    marker = Path(os.environ["DISPATCHLAB_TEST_DIE_MARKER"])
    if point_data["key"] == os.environ["DISPATCHLAB_TEST_DIE_KEY"] and not marker.exists():
        marker.write_text("died")
        os._exit(1)
    return _real_run_point(point_data)


_real_run_point = runner_module.run_point


def test_a_dead_worker_loses_only_the_points_in_flight(tmp_path, monkeypatch):
    spec = small_spec("dead-worker")
    doomed = spec.points()[2].key
    monkeypatch.setenv("DISPATCHLAB_TEST_DIE_KEY", doomed)
    monkeypatch.setenv("DISPATCHLAB_TEST_DIE_MARKER", str(tmp_path / "died"))
    monkeypatch.setattr(runner_module, "run_point", _die_once_then_run)
    outcome = run_experiment(spec, store=tmp_path / "s.sqlite", workers=2)
    assert (tmp_path / "died").exists()  # the worker did die
    assert outcome.complete and outcome.computed == len(spec.points())
    assert numbers(tmp_path / "s.sqlite", "dead-worker").keys() == {p.key for p in spec.points()}


def test_a_pool_that_breaks_while_points_are_submitted_is_restarted(tmp_path, monkeypatch):
    """A worker that dies at once (forked workers start fast) breaks the pool while the
    coordinator still submits points: submit itself raises. The pool is restarted and the
    points resubmitted, as when a queued future fails."""
    from concurrent.futures.process import BrokenProcessPool

    from dispatchlab.core.pools import Pool

    spec = small_spec("broken-submit")
    real = Pool.submit
    calls = []

    def submit_breaking_once(self, function, *args, **kwargs):
        calls.append(function)
        if len(calls) == 2:
            raise BrokenProcessPool("A child process terminated abruptly")
        return real(self, function, *args, **kwargs)

    monkeypatch.setattr(Pool, "submit", submit_breaking_once)
    outcome = run_experiment(spec, store=tmp_path / "s.sqlite", workers=2)
    assert outcome.complete and outcome.computed == len(spec.points())
    assert len(calls) > len(spec.points())  # (the pool was restarted and points resubmitted)
