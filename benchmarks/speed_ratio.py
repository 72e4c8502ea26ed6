"""Speed of this tree against another source tree on the bench workloads, paired in time.

    .venv/bin/python benchmarks/speed_ratio.py [--full] OLD_SRC [slots] [rounds] [workload ...]

OLD_SRC is a ``src`` folder of another checkout (e.g. ``git archive BASE | tar -x -C
/tmp/base`` then ``/tmp/base/src``). Each tree runs in a worker process of its own (the
two trees define numba types of the same names, which one process cannot hold apart),
and every round runs each workload once in each worker, back to back, in alternating
order, so that both see the same load of a shared machine. Speeds are slots per CPU
second of the lean apples-to-apples configuration of ``dispatchlab bench`` (no delay
tracking, no per-slot imbalance pass, no LED error measurement), or with ``--full`` of
its full configuration (delay tracking, the imbalance pass and LED's error on, as
``bench``'s ``full`` column); the report is, per workload, the ratio of the best new to
the best old speed over the rounds, and the median of the per-round ratios.
"""

from __future__ import annotations

import statistics
import subprocess
import sys
from pathlib import Path

# The worker: reads "WORKLOAD SEED" lines, answers with slots per CPU second.
WORKER = r"""
import importlib, sys, time
slots, full = int(sys.argv[1]), sys.argv[2] == "full"
try:  # the workloads' module: bench/workloads.py since the reshape, bench.py before
    bench = importlib.import_module("dispatchlab.bench.workloads")
except ModuleNotFoundError:
    bench = importlib.import_module("dispatchlab.bench")
from dispatchlab import simulate
from dispatchlab.policies import make_policy
import inspect  # the measurement keywords were renamed (track_delay, detail before)
measures = ({"delay": "tagged" if full else "off", "imbalance": full}
            if "imbalance" in inspect.signature(simulate).parameters
            else {"track_delay": full, "detail": full})
workloads = {w.name: w for w in getattr(bench, 'ALL_WORKLOADS', bench.WORKLOADS)}
ready = {}
for line in sys.stdin:
    name, seed = line.split()
    if name not in ready:
        w = workloads[name]
        policy = make_policy(w.policy, **w.params, **({} if full else w.lean_params))
        ready[name] = (w.system(), policy)
        simulate(*ready[name], slots=2_000, seed=1, **measures)
    start = time.process_time()
    simulate(*ready[name], slots=slots, seed=int(seed), **measures)
    print(slots / (time.process_time() - start), flush=True)
"""


class Worker:
    """One tree's ``dispatchlab`` in a process of its own."""

    def __init__(self, src: Path, slots: int, full: bool) -> None:
        env = {"PYTHONPATH": str(src.resolve()), "PATH": "/usr/bin:/bin"}
        self.process = subprocess.Popen(
            [sys.executable, "-c", WORKER, str(slots), "full" if full else "lean"],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, env=env)

    def speed(self, workload: str, seed: int) -> float:
        assert self.process.stdin is not None and self.process.stdout is not None
        self.process.stdin.write(f"{workload} {seed}\n")
        self.process.stdin.flush()
        return float(self.process.stdout.readline())

    def close(self) -> None:
        assert self.process.stdin is not None
        self.process.stdin.close()
        self.process.wait()


def main() -> None:
    args = sys.argv[1:]
    full = "--full" in args
    args = [arg for arg in args if arg != "--full"]
    old_src, new_src = Path(args[0]), Path(__file__).resolve().parents[1] / "src"
    slots = int(args[1]) if len(args) > 1 else 100_000
    rounds = int(args[2]) if len(args) > 2 else 5
    from dispatchlab.bench.workloads import WORKLOAD_NAMES

    old, new = Worker(old_src, slots, full), Worker(new_src, slots, full)
    try:
        for name in args[3:] or WORKLOAD_NAMES:
            speeds_old, speeds_new = [], []
            for i in range(rounds):
                if i % 2 == 0:
                    speeds_old.append(old.speed(name, 7 + i))
                    speeds_new.append(new.speed(name, 7 + i))
                else:
                    speeds_new.append(new.speed(name, 7 + i))
                    speeds_old.append(old.speed(name, 7 + i))
            ratios = [b / a for a, b in zip(speeds_old, speeds_new, strict=True)]
            print(f"{name:14s} best new/best old = {max(speeds_new) / max(speeds_old):.3f}, "
                  f"median of rounds = {statistics.median(ratios):.3f} "
                  f"({', '.join(f'{r:.2f}' for r in ratios)})", flush=True)
    finally:
        old.close()
        new.close()


if __name__ == "__main__":
    main()
