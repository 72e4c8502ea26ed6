"""Run an experiment's points on any ``concurrent.futures`` executor and store each result.

The coordinator (this process) owns the store: it skips the points already done,
submits the rest, and writes each result in its own transaction as it arrives, so
an interrupted sweep (Ctrl-C, ``kill -9``, a dead worker) loses at most the points in
flight and resumes where it stopped. Workers only run :func:`run_point`, a pure
function of the point (its seed comes from its identity), so the numbers do not
depend on the executor, the number of workers or the order.

Executors: local processes (``core.pools.process_pool``, every core available, the default), a Dask
cluster (``cluster="tcp://HOST:PORT"``, through ``distributed.Client.get_executor()``),
or any executor passed in.

Local workers are never forked from the coordinator (``fork`` is unsafe on macOS, inside
Jupyter and in any process with threads): they are forked from a clean fork server that
has imported dispatchlab's loop, or spawned where there is none (``core.pools``). A worker
holds none of the coordinator's state, so a policy must be registered by an importable
module, or by the script that runs the sweep (workers re-import it as ``__mp_main__``;
keep the sweep under ``if __name__ == "__main__":``). Compiled code reaches the workers
through numba's disk cache: before starting them the coordinator runs every distinct
(system, policy, options) for a few slots (:func:`warm_compiled_code`), which compiles
and caches what the points need, so each worker loads it (once, for all its points)
instead of compiling it.
"""

from __future__ import annotations

import os
import socket
import sqlite3
import sys
import threading
import time
import traceback
from collections.abc import Callable
from concurrent.futures import FIRST_COMPLETED, Executor, Future, wait
from concurrent.futures.process import BrokenProcessPool
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

from dispatchlab.core.errors import ValidationError, require
from dispatchlab.core.imports import import_in_worker, user_modules
from dispatchlab.core.pools import available_cores, process_pool, stop_pool
from dispatchlab.core.signals import stops_held
from dispatchlab.experiments.store import DEFAULT_STORE, HEARTBEAT_SECONDS, Store
from dispatchlab.specs.experiment import ExperimentSpec, Point

WARM_SLOTS = 200
#: jobs a continuous-time point runs to load its event loop and policy before the workers
WARM_JOBS = 200
#: a point whose worker died this many times is recorded as failed instead of resubmitted
MAX_WORKER_DEATHS = 2


# -- the worker side ---------------------------------------------------------------------------


class PointError(Exception):
    """A point that could not run (sent back from the worker as one line)."""


def run_point(point_data: dict[str, Any]) -> dict[str, Any]:
    """Simulate one point (in a worker): ``{"result": Result.to_dict(), "worker", "seconds"}``."""
    from dispatchlab.simulation.run import simulate
    from dispatchlab.specs.continuous_grid import is_continuous
    from dispatchlab.specs.continuous_grid import run_point as run_continuous_point

    started = time.perf_counter()
    try:
        if is_continuous(point_data):
            result = run_continuous_point(point_data)
        else:
            point = Point.from_dict(point_data)
            result = simulate(point.build_system(), point.policy.name,
                              policy_params=dict(point.policy.params), slots=point.slots,
                              warmup=point.warmup, seed=point.seed, workers=1,
                              **dict(point.options)).to_dict()  # the pool: parallelism
    except ValidationError as error:  # its constructor does not survive pickling
        raise PointError(str(error)) from None
    return {"result": result, "worker": f"{socket.gethostname()}:{os.getpid()}",
            "seconds": time.perf_counter() - started}


def warm_compiled_code(points: list[Point]) -> None:
    """Run each distinct (system, policy, options) for a few slots so numba compiles (and
    caches on disk) before workers start: workers then load the compiled code from the
    cache instead of each compiling it again."""
    from dispatchlab.continuous.run import simulate_continuous
    from dispatchlab.simulation.run import simulate
    from dispatchlab.specs.continuous_grid import ContinuousPoint

    seen: set[str] = set()
    for point in points:
        if isinstance(point, ContinuousPoint):  # one event loop, a choose per policy
            if point.policy.name not in seen:
                seen.add(point.policy.name)
                simulate_continuous(**{**point.run_settings(), "jobs": WARM_JOBS,
                                       "warmup": 0}, workers=1)
            continue
        tag = repr((point.system.identity(), point.policy.identity(), sorted(point.options)))
        if tag in seen:
            continue
        seen.add(tag)
        options = {k: v for k, v in point.options.items() if k != "warmup_method"}
        simulate(point.build_system(), point.policy.name,
                 policy_params=dict(point.policy.params), slots=WARM_SLOTS, seed=0, workers=1,
                 **options)


class _Heartbeat:
    """Renews the run's heartbeat and claims every HEARTBEAT_SECONDS from a thread with
    its own connection, so a long warm-up or a slow point never lets the lease lapse."""

    def __init__(self, path: Path, run_id: str) -> None:
        self._path, self._run_id = path, run_id
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._beat, name="dispatchlab-heartbeat",
                                        daemon=True)
        self._thread.start()

    def _beat(self) -> None:
        db: Store | None = None
        try:
            while not self._stop.wait(HEARTBEAT_SECONDS):
                try:
                    db = db or Store(self._path)
                    db.heartbeat(self._run_id)
                except (sqlite3.Error, ValidationError):
                    continue  # a busy or vanished store: the next beat tries again
        finally:
            if db is not None:
                db.close()

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(timeout=5 + HEARTBEAT_SECONDS)


# -- progress ----------------------------------------------------------------------------------


@dataclass
class Snapshot:
    """Where a sweep stands: shown by the CLI's progress display."""

    total: int  # points in the grid
    skipped: int  # already in the store before this run
    done: int = 0  # finished in this run
    failed: int = 0
    running: int = 0
    slots_done: int = 0
    slots_left: int = 0
    elapsed: float = 0.0

    @property
    def slots_per_second(self) -> float:
        return self.slots_done / self.elapsed if self.elapsed > 0 else 0.0

    @property
    def eta_seconds(self) -> float | None:
        rate = self.slots_per_second
        return self.slots_left / rate if rate > 0 else None


class Progress(Protocol):
    """What a sweep reports to while it runs: a :class:`Snapshot` after every event
    (``update``) and each point that failed, with its error (``point_failed``)."""

    def update(self, snapshot: Snapshot) -> None: ...

    def point_failed(self, point: Point, error: str) -> None: ...


@dataclass
class SweepOutcome:
    """What a sweep did."""

    experiment: str
    run_id: str
    store: Path
    total: int
    skipped: int
    computed: int
    failed: list[tuple[str, str]] = field(default_factory=list)  # (point description, error)
    seconds: float = 0.0
    slots: int = 0

    @property
    def complete(self) -> bool:
        return not self.failed and self.skipped + self.computed == self.total


def describe_point(point: Point) -> str:
    """A point in one line: its policy on its system at ``axis=value``, and its replication."""
    return (f"{point.policy.display} on {point.system.name} at {point.axis}={point.value:g} "
            f"rep {point.replication}")


# -- the coordinator ---------------------------------------------------------------------------


def run_experiment(
    spec: ExperimentSpec,
    *,
    store: Store | str | Path = DEFAULT_STORE,
    executor: Executor | None = None,
    workers: int | None = None,
    cluster: str | None = None,
    progress: Progress | None = None,
    warm: bool = True,
) -> SweepOutcome:
    """Run every point of ``spec`` not yet in ``store``; return what was done.

    Args:
        spec: the experiment (validated here, before any point runs).
        store: a :class:`Store` or the path of its file.
        executor: any ``concurrent.futures.Executor`` (left open); by default local
            processes, or a Dask client's executor when ``cluster`` is given.
        workers: local processes (default: every core this process may run on,
            ``core.pools.available_cores``).
        cluster: a Dask scheduler address, e.g. ``tcp://10.0.0.5:8786``.
        progress: receives a :class:`Snapshot` after every event.
        warm: compile the policies in this process before starting local workers.

    A failed point is recorded with its error and does not stop the others;
    Ctrl-C cancels what is queued, marks the run interrupted and re-raises.
    """
    points = spec.points()
    require(workers is None or workers >= 1, "workers", f"must be ≥ 1 (got {workers})")
    require(executor is None or cluster is None, "cluster",
            "give an executor or a cluster address, not both")
    own_store = not isinstance(store, Store)
    db = Store(store) if own_store else store
    assert isinstance(db, Store)
    try:
        db.save_experiment(spec.name, spec.to_json())
        done = db.done_keys(spec.name)
        todo = [p for p in points if p.key not in done]
        snapshot = Snapshot(total=len(points), skipped=len(points) - len(todo),
                            slots_left=sum(p.slots for p in todo))
        outcome = SweepOutcome(spec.name, "", db.path, len(points), snapshot.skipped, 0)
        if not todo:
            _notify(progress, snapshot)
            return outcome
        pool = _Executor(executor, workers, cluster, len(todo))
        status = "interrupted"
        run_id = db.start_run(spec.name, pool.kind, len(todo))
        heartbeat: _Heartbeat | None = None
        try:  # Ctrl-C in the warm-up too marks the run interrupted (the loop stops in chunks)
            outcome.run_id = run_id
            heartbeat = _Heartbeat(db.path, run_id)
            mine = db.claim(spec.name, run_id, [p.key for p in todo])
            claimed = [p for p in todo if p.key in mine]
            if warm and pool.local and claimed:
                warm_compiled_code(claimed)
            if claimed:
                _coordinate(claimed, pool, db, run_id, snapshot, outcome, progress)
            _finish_claimed_elsewhere([p for p in todo if p.key not in mine], pool, db, run_id,
                                      snapshot, outcome, progress)
            status = "finished"
        finally:  # a second Ctrl-C waits for the workers to go and the run to be marked
            with stops_held():
                try:
                    if heartbeat is not None:
                        heartbeat.stop()
                    pool.shutdown(cancel=status != "finished")
                finally:
                    db.finish_run(run_id, status)
        return outcome
    finally:
        if own_store:
            db.close()


CLAIM_POLL_SECONDS = 1.0


def _finish_claimed_elsewhere(waiting: list[Point], pool: _Executor, db: Store, run_id: str,
                              snapshot: Snapshot, outcome: SweepOutcome,
                              progress: Progress | None) -> None:
    """Wait for the points another live sweep claimed; take over any whose claimant died.

    A point the other sweep stores counts as skipped here; one whose lease expired (or
    whose run was marked killed) is claimed and computed by this run.
    """
    spec_name = waiting[0].experiment if waiting else ""
    while waiting:
        time.sleep(CLAIM_POLL_SECONDS)
        done = db.done_keys(spec_name)
        finished = [p for p in waiting if p.key in done]
        snapshot.skipped += len(finished)
        snapshot.slots_left -= sum(p.slots for p in finished)
        outcome.skipped += len(finished)
        waiting = [p for p in waiting if p.key not in done]
        _notify(progress, snapshot)
        if not waiting:
            return
        db.mark_dead_runs()
        taken = db.claim(spec_name, run_id, [p.key for p in waiting])
        if taken:
            _coordinate([p for p in waiting if p.key in taken], pool, db, run_id, snapshot,
                        outcome, progress)
            waiting = [p for p in waiting if p.key not in taken]


def _coordinate(todo: list[Point], pool: _Executor, db: Store, run_id: str, snapshot: Snapshot,
                outcome: SweepOutcome, progress: Progress | None) -> None:
    started = time.perf_counter()
    deaths: dict[str, int] = {}
    pending: dict[Future[dict[str, Any]], Point] = {
        pool.submit(run_point, p.to_dict()): p for p in todo}

    def refresh() -> None:
        snapshot.running = min(pool.capacity, len(pending))
        snapshot.elapsed = time.perf_counter() - started
        _notify(progress, snapshot)

    def record_failure(point: Point, message: str) -> None:
        db.record(run_id, point.to_dict(), error=message)
        snapshot.failed += 1
        snapshot.slots_left -= point.slots
        outcome.failed.append((describe_point(point), message))
        if progress is not None:
            progress.point_failed(point, message)

    refresh()
    while pending:
        finished, _ = wait(pending, timeout=1.0, return_when=FIRST_COMPLETED)
        broken: list[Point] = []
        for future in finished:
            point = pending.pop(future)
            try:
                reply = future.result()
            except BrokenProcessPool:
                broken.append(point)
                continue
            except Exception as error:  # the point failed; the others go on
                record_failure(point, _error_line(error))
                continue
            db.record(run_id, point.to_dict(), result=reply["result"], worker=reply["worker"],
                      seconds=reply["seconds"])
            snapshot.done += 1
            snapshot.slots_done += int(reply["result"].get("slots_run") or point.slots)
            snapshot.slots_left -= point.slots
            outcome.computed += 1
            outcome.slots += int(reply["result"].get("slots_run") or point.slots)
        if broken:
            # a worker process died (killed, out of memory): every queued future of the pool
            # fails with it; restart the pool and resubmit, unless a point keeps killing it
            broken += [pending.pop(f) for f in list(pending)]
            pool.restart()
            for point in broken:
                deaths[point.key] = deaths.get(point.key, 0) + 1
                if deaths[point.key] >= MAX_WORKER_DEATHS:
                    record_failure(point, "worker process died while running this point")
                else:
                    pending[pool.submit(run_point, point.to_dict())] = point
        refresh()
    outcome.seconds += time.perf_counter() - started


def _notify(progress: Progress | None, snapshot: Snapshot) -> None:
    if progress is not None:
        progress.update(snapshot)


def _error_line(error: BaseException) -> str:
    if isinstance(error, PointError | ValidationError):
        return str(error)
    frames = traceback.extract_tb(error.__traceback__)
    where = f" (at {Path(frames[-1].filename).name}:{frames[-1].lineno})" if frames else ""
    return f"{type(error).__name__}: {error}{where}"


class _Executor:
    """The executor a sweep runs on, with what the coordinator needs to know about it."""

    def __init__(self, given: Executor | None, workers: int | None, cluster: str | None,
                 points: int) -> None:
        self._client: Any = None
        self._submitted: list[Future[Any]] = []
        self.local = False
        self._workers = 1
        if given is not None:
            self.kind = type(given).__name__
            self._executor = given
            self.capacity = getattr(given, "_max_workers", None) or workers or available_cores()
        elif cluster is not None:
            self._executor = self._connect(cluster)
        else:
            self.local = True
            self._workers = max(1, min(workers or available_cores(), points))
            self.kind = f"local processes ({self._workers})"
            self.capacity = self._workers
            self._executor = self._local_pool()

    def _connect(self, address: str) -> Executor:
        from distributed import Client

        try:
            self._client = Client(address, timeout="20s")
        except (OSError, ValueError) as error:
            raise ValidationError("cluster", f"cannot reach the Dask scheduler at {address!r} "
                                  f"({error}); give tcp://HOST:PORT") from None
        threads = sum(self._client.nthreads().values())
        self.kind = f"dask {address} ({threads} threads)"
        self.capacity = max(1, threads)
        return self._client.get_executor(pure=False)

    def _local_pool(self) -> Executor:
        return process_pool(self._workers, initializer=import_in_worker,
                            initargs=(user_modules(), tuple(sys.path)))

    def submit(self, function: Callable[..., Any], *args: Any) -> Future[Any]:
        """The task's future; a pool a worker broke while tasks were still being submitted
        gives a future failed with that ``BrokenProcessPool``, like the tasks queued
        before it (the coordinator restarts the pool and resubmits them all)."""
        try:
            future = self._executor.submit(function, *args)
        except BrokenProcessPool as error:
            future = Future()
            future.set_exception(error)
        self._submitted.append(future)
        return future

    def restart(self) -> None:
        require(self.local, "executor", "a worker died in an executor this sweep does not own")
        stop_pool(self._executor)  # its workers, its queues and its thread
        self._executor = self._local_pool()

    def shutdown(self, cancel: bool) -> None:
        if cancel:
            for future in self._submitted:
                future.cancel()
        if self.local:
            # an interrupted sweep must not leave workers computing points nobody will store,
            # nor the pool's thread releasing its queues while the interpreter exits (the
            # resource tracker then reported their semaphores as leaked)
            if cancel:
                stop_pool(self._executor)
            else:
                self._executor.shutdown(wait=True)
        elif self._client is not None:
            self._executor.shutdown(wait=not cancel)
            self._client.close()
