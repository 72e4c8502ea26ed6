"""Overhead of running the slot loop in chunks (Ctrl-C, progress) against one chunk.

Each bench workload runs the same seed chunked (the default, ~0.2 s a chunk) and in one
chunk, alternately, ``--repeats`` times each, timed in process CPU time (less noisy on a
shared machine than wall time); printed: chunked / one chunk for the medians and for the
minima (1.00: no overhead), and the overhead accounted as chunks per run × the cost of
one extra chunk (robust to the noise of a shared machine). Results are checked identical.
Usage: ``python benchmarks/chunk_overhead.py [--slots N] [--repeats R]``.
"""

from __future__ import annotations

import argparse
import statistics
import time

import numpy as np

from dispatchlab.bench.workloads import WORKLOADS
from dispatchlab.engine import loop
from dispatchlab.engine.interface import compiled
from dispatchlab.engine.raw import default_bound, run_once
from dispatchlab.policies import make_policy


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--slots", type=int, default=300_000)
    parser.add_argument("--repeats", type=int, default=5)
    args = parser.parse_args()
    for workload in WORKLOADS:
        system = workload.system()
        policy = make_policy(workload.policy, **{**workload.params, **workload.lean_params})
        kernel = policy.kernel(system)

        def once(chunk: int | None, slots: int = args.slots, kernel=kernel, system=system):
            return run_once(system, kernel, slots=slots, warmup=slots // 10, seed=1,
                            bound=default_bound(system), time_every_job=False, imbalance=False,
                            chunk=chunk)

        once(None)  # compile
        times: dict[str, list[float]] = {"chunked": [], "one": []}
        runs = {}
        for _ in range(args.repeats):
            for label, chunk in (("chunked", None), ("one", args.slots)):
                started = time.process_time()  # CPU time: less noisy on a shared machine
                runs[label] = once(chunk)
                times[label].append(time.process_time() - started)
        assert np.array_equal(runs["chunked"].block_sum, runs["one"].block_sum)
        calls = _count_chunks(once)
        per_call = _per_call_seconds(once)
        median = statistics.median(times["chunked"]) / statistics.median(times["one"])
        best = min(times["chunked"]) / min(times["one"])
        print(f"{workload.name:14s} chunked/one: {median:.4f} (medians), {best:.4f} (minima) "
              f"of {args.repeats}; one chunk {min(times['one']):.3f} s; {calls} chunks × "
              f"{1e3 * per_call:.2f} ms a call = {calls * per_call / min(times['one']):.2%}",
              flush=True)


def _count_chunks(once) -> int:
    """How many chunks the default sizing cuts one run into."""
    calls = 0
    run_slots = compiled(loop.run_slots, only=True)

    def counted(*args):
        nonlocal calls
        calls += 1
        return run_slots(*args)

    loop.run_slots = counted
    try:
        once(None)
    finally:
        loop.run_slots = run_slots
    return calls


def _per_call_seconds(once, slots: int = 2000) -> float:
    """CPU seconds one extra chunk costs: a run in 1-slot chunks minus one in one chunk,
    per call (over ``slots`` slots)."""
    def cpu(chunk: int) -> float:
        started = time.process_time()
        once(chunk, slots)
        return time.process_time() - started

    return (min(cpu(1) for _ in range(3)) - min(cpu(slots) for _ in range(3))) / (slots - 1)


if __name__ == "__main__":
    main()
