"""A local process pool for independent simulations (replications, policies, points).

Workers are fresh interpreters, never forks of the caller: on Linux and macOS they are
forked from a *fork server*, a clean process started once per coordinator that has
imported numpy, numba and dispatchlab and loaded the compiled slot loop
(``forkserver``; :mod:`dispatchlab.engine.server_preload`), elsewhere they are spawned
(``spawn``). Either way a worker holds none of the caller's threads or state (``fork`` is
unsafe on macOS and copies a Jupyter kernel's threads), imports the caller's main module
as ``__mp_main__`` and loads compiled code from numba's on-disk cache (the policies', and
the loop's when the server could not). The fork server makes a worker cost a fork instead
of an interpreter start that imports numba and loads the loop (about 0.8 s of CPU per
worker, every pool; the server pays it once). Tasks and the function must be picklable:
a module-level function and plain arguments. A worker starts with its coordinator's
environment as it is when the pool starts; what the server imported once (numpy, numba,
dispatchlab) it does not import again, so settings those read at import (``NUMBA_*``) are
the ones of the server's start, as in the coordinator.

Results come back in task order and do not depend on the number of workers: every task
carries its own seed, so a run on 2 workers is bit-identical to the sequential run.

Ctrl-C belongs to the coordinator (this process). A terminal sends SIGINT to the whole
foreground process group, workers included; a worker hit while it imports numba printed a
traceback, and one that died that way broke the pool under the coordinator's clean-up. So
workers start with SIGINT blocked (as multiprocessing starts its resource tracker: the
fork server is started with the signal blocked, and its children keep its mask; each
worker blocks it again as it starts, for a server the caller's own pools started), and a
pool left by an exception or an interrupt (``with process_pool(…)``, :func:`map_tasks`)
is stopped with :func:`stop_pool`: workers terminated and reaped, the pool's management
thread joined, before anything else runs. A pool shut down without waiting left that thread
running while the interpreter exited, and the semaphores of the pool's queues it was
releasing were reported as leaked by the resource tracker.
"""

from __future__ import annotations

import multiprocessing
import multiprocessing.connection
import multiprocessing.context
import os
import signal
import threading
import time
from collections.abc import Callable, Iterable
from concurrent.futures import Executor, ProcessPoolExecutor
from concurrent.futures.process import BrokenProcessPool
from typing import Any, TypeVar

from dispatchlab.core.errors import require
from dispatchlab.core.signals import (
    interrupt_saying,
    leave_if_importing_the_main_script,
    leave_stops_to_the_coordinator,
    stops_held,
)

T = TypeVar("T")
R = TypeVar("R")
#: how workers start: forked from a fork server where the platform has one (POSIX)
START_METHOD = ("forkserver" if "forkserver" in multiprocessing.get_all_start_methods()
                else "spawn")
#: what the fork server imports once, for every worker it forks: the replications' task
#: (numpy, numba, the policies' registry), the experiments' points and the compiled loop
_SERVER_IMPORTS = ["dispatchlab.simulation.plan", "dispatchlab.experiments.runner",
                   "dispatchlab.engine.server_preload"]
if START_METHOD == "forkserver":
    _BaseProcess: type = multiprocessing.context.ForkServerProcess
    _BaseContext: type = multiprocessing.context.ForkServerContext
else:  # Windows
    _BaseProcess, _BaseContext = (multiprocessing.context.SpawnProcess,
                                  multiprocessing.context.SpawnContext)
#: what a dead worker most often means, said when a pool breaks
BROKEN_POOL = ("a worker process died; from a script, call dispatchlab under "
               "`if __name__ == \"__main__\":` (workers import the main module), or "
               "pass workers=1")


def available_cores() -> int:
    """CPU cores this process may run on (its affinity mask where the OS has one)."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except AttributeError:  # macOS, Windows
        return max(1, os.cpu_count() or 1)


def resolve_workers(workers: int | None, tasks: int) -> int:
    """Worker processes for ``tasks`` tasks: ``workers`` (default: every core), never more
    than there are tasks, at least 1."""
    require(workers is None or (isinstance(workers, int) and not isinstance(workers, bool)
                                and workers >= 1),
            "workers", f"must be an integer ≥ 1 (got {workers!r})")
    wanted = available_cores() if workers is None else workers
    return max(1, min(wanted, tasks))


class _WorkerProcess(_BaseProcess):  # type: ignore[valid-type,misc]
    """A worker that never sees SIGINT: the signal is blocked in the thread that starts it
    (and so in the fork server, which that start launches the first time), and a child
    keeps its parent's signal mask through fork and exec.

    A stop that reaches the coordinator while it starts a worker waits until the start is
    done: raised in the middle, it cut the pickled process object the child reads, and
    the child died with an ``EOFError`` traceback on the terminal. The worker then exists
    before the pool records it, so its context keeps it for :func:`stop_pool`."""

    def start(self) -> None:
        if not hasattr(signal, "pthread_sigmask"):  # Windows: no process groups to signal
            super().start()
            return
        with stops_held():
            old = signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT})
            try:
                super().start()
            finally:
                signal.pthread_sigmask(signal.SIG_SETMASK, old)


class _WorkerContext(_BaseContext):  # type: ignore[valid-type,misc]
    """The start context of one pool: makes its workers, and keeps each it made (the pool
    records a worker only once its start returns)."""

    def __init__(self) -> None:
        super().__init__()
        self.made: list[_WorkerProcess] = []
        if START_METHOD == "forkserver":  # (read when the server starts, once a process)
            self.set_forkserver_preload(_SERVER_IMPORTS)

    def Process(self, *args: Any, **kwargs: Any) -> _WorkerProcess:  # noqa: N802 (mp's name)
        process = _WorkerProcess(*args, **kwargs)
        self.made.append(process)
        return process


class Pool(ProcessPoolExecutor):
    """A ``ProcessPoolExecutor`` whose ``with`` block, left by an exception (Ctrl-C
    included), stops the workers (:func:`stop_pool`) instead of waiting for their tasks.

    Its workers all start at the first submit, before the pool's management thread: started
    one a submit, a worker that died at once (a script without the ``__main__`` guard)
    could be noticed by that thread while the next submit was adding a worker, and the
    thread died on "dictionary changed size during iteration" (CPython's
    ``get_n_children_alive``, Python 3.11; bpo-43498 fixed its other loop), a second
    traceback on the user's terminal."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._safe_to_dynamically_spawn_children = False  # (read by submit)

    def __exit__(self, exc_type: Any, exc: Any, traceback: Any) -> bool:
        if exc_type is None:
            self.shutdown(wait=True)
        else:
            stop_pool(self)
        return False


def process_pool(workers: int, initializer: Callable[..., Any] | None = None,
                 initargs: tuple[Any, ...] = ()) -> Pool:
    """A process pool of ``workers`` processes (SIGINT blocked in each), each with this
    process's environment as it is now, watching this process (:func:`watch_coordinator`)
    and running ``initializer(*initargs)`` first when one is given."""
    leave_if_importing_the_main_script()
    return Pool(max_workers=workers, mp_context=_WorkerContext(), initializer=_start_worker,
                initargs=(os.getpid(), dict(os.environ), initializer, initargs))


def _start_worker(coordinator_pid: int, environment: dict[str, str],
                  initializer: Callable[..., Any] | None, initargs: tuple[Any, ...]) -> None:
    # a fork server someone else started (the caller's own pools) passes SIGINT on
    if hasattr(signal, "pthread_sigmask"):
        signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT})
    # a forked worker has its server's environment, from when the server started
    if environment != os.environ:
        os.environ.clear()
        os.environ.update(environment)
    watch_coordinator(coordinator_pid)
    leave_stops_to_the_coordinator()
    if initializer is not None:
        initializer(*initargs)


def watch_coordinator(coordinator_pid: int, interval: float = 1.0) -> None:
    """In a worker: exit as soon as the coordinator (``coordinator_pid``) is gone.

    When the coordinator dies (``kill -9``, a crash, a SIGTERM with nothing to catch it, as
    in a script that calls the Python API) its end of the pipe multiprocessing keeps to
    each worker closes at once, zombie or not (``parent_process().sentinel``). A daemon
    thread waits on it, so that no orphan keeps computing (and holding memory and the
    caller's output: a caller that reaps its child only once the child's output closes
    would wait for ever) for a result nobody will read. Where there is no sentinel the
    thread checks every ``interval`` seconds whether the worker was re-parented."""
    parent = multiprocessing.parent_process()
    sentinel = getattr(parent, "sentinel", None)

    def watch() -> None:
        if sentinel is not None:
            multiprocessing.connection.wait([sentinel])
            os._exit(1)
        while os.getppid() == coordinator_pid:
            time.sleep(interval)
        os._exit(1)

    threading.Thread(target=watch, name="dispatchlab-coordinator-watch", daemon=True).start()


def stop_pool(pool: Executor) -> None:
    """Stop a pool now (Ctrl-C, an error): cancel what is queued, terminate the workers
    (their points are abandoned, not waited for) and reap them, so that no process, queue
    or semaphore outlives the pool. A second Ctrl-C waits until they are gone (the joins
    are bounded)."""
    with stops_held():
        recorded = list((getattr(pool, "_processes", None) or {}).values())
        made = getattr(getattr(pool, "_mp_context", None), "made", [])
        processes = list({id(p): p for p in [*recorded, *made] if p.pid is not None}.values())
        # shutdown(wait=False) forgets the pool's management thread: keep it to join it below
        manager = getattr(pool, "_executor_manager_thread", None)
        pool.shutdown(wait=False, cancel_futures=True)
        for process in processes:
            if process.is_alive():
                process.terminate()
        for process in processes:
            process.join(timeout=5)
        if manager is not None:  # it sees the workers gone, closes the queues and ends
            manager.join(timeout=10)


def map_tasks(function: Callable[[T], R], tasks: Iterable[T], *,
              workers: int | None = None, pool: Executor | None = None) -> list[R]:
    """``[function(t) for t in tasks]``, on ``workers`` processes when > 1.

    With one worker (or one task) everything runs in this process, without a pool; a
    given ``pool`` (left open) is used as it is, e.g. across the rounds of a precision run.
    """
    items = list(tasks)
    count = resolve_workers(workers, len(items))
    if count == 1 and pool is None:
        return [function(item) for item in items]
    try:
        if pool is not None:
            return _gather(pool, function, items)
        with process_pool(count) as own:
            return _gather(own, function, items)
    except BrokenProcessPool:
        raise RuntimeError(BROKEN_POOL) from None  # (its cause says no more)


def _gather(pool: Executor, function: Callable[[T], R], items: list[T]) -> list[R]:
    """The results in order; Ctrl-C says how many tasks had finished (a pooled run has no
    single slot to report, unlike one in this process)."""
    futures = [pool.submit(function, item) for item in items]
    try:
        return [future.result() for future in futures]
    except KeyboardInterrupt as interrupt:  # Ctrl-C, or SIGTERM/SIGHUP (core.signals)
        finished = sum(future.done() and not future.cancelled() for future in futures)
        for future in futures:
            future.cancel()
        raise interrupt_saying(interrupt, f"{finished} of {len(items)} pooled runs had "
                               "finished (none is kept)") from None
