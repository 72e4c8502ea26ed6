"""Speed of this tree against another source tree on the bench workloads, in one process.

    .venv/bin/python benchmarks/speed_ratio.py OLD_SRC [slots] [rounds] [workload ...]

OLD_SRC is a ``src`` folder of another checkout (e.g. ``git archive BASE | tar -x -C
/tmp/base`` then ``/tmp/base/src``). Its ``dispatchlab`` package is copied under the name
``dispatchlab_old`` so that both versions load into one process; every round then runs
each workload once with each version, back to back, in alternating order, so that both
see the same load of a shared machine. Speeds are slots per CPU second of the lean
apples-to-apples configuration of ``dispatchlab bench`` (no delay tracking, no per-slot
imbalance pass, no LED error measurement); the report is, per workload, the ratio of the
best new to the best old speed over the rounds, and the median of the per-round ratios.
"""

from __future__ import annotations

import importlib
import re
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path


def _load_old(src: Path, into: Path):
    """Import the ``dispatchlab`` of ``src`` as ``dispatchlab_old``."""
    target = into / "dispatchlab_old"
    shutil.copytree(src / "dispatchlab", target,
                    ignore=shutil.ignore_patterns("__pycache__"))
    for path in target.rglob("*.py"):
        text = path.read_text()
        path.write_text(re.sub(r"\bdispatchlab(?=[.\s])", "dispatchlab_old", text))
    sys.path.insert(0, str(into))
    return importlib.import_module("dispatchlab_old")


def _runner(package: str, workload, slots: int):
    try:  # the workloads' module: bench/workloads.py since the reshape, bench.py before
        bench = importlib.import_module(f"{package}.bench.workloads")
    except ModuleNotFoundError:
        bench = importlib.import_module(f"{package}.bench")
    simulate = importlib.import_module(package).simulate  # the function, old and new layouts
    make_policy = importlib.import_module(f"{package}.policies").make_policy
    w = {x.name: x for x in bench.WORKLOADS}[workload]
    policy = make_policy(w.policy, **w.params, **w.lean_params)
    system = w.system()
    simulate(system, policy, slots=2_000, seed=1, track_delay=False, detail=False)  # compile

    def run(seed: int) -> float:
        start = time.process_time()
        simulate(system, policy, slots=slots, seed=seed, track_delay=False, detail=False)
        return slots / (time.process_time() - start)

    return run


def main() -> None:
    old_src = Path(sys.argv[1])
    slots = int(sys.argv[2]) if len(sys.argv) > 2 else 100_000
    rounds = int(sys.argv[3]) if len(sys.argv) > 3 else 5
    with tempfile.TemporaryDirectory() as tmp:
        _load_old(old_src, Path(tmp))
        from dispatchlab.bench.workloads import WORKLOAD_NAMES

        for name in sys.argv[4:] or WORKLOAD_NAMES:
            old, new = _runner("dispatchlab_old", name, slots), _runner("dispatchlab", name, slots)
            speeds_old, speeds_new = [], []
            for i in range(rounds):
                if i % 2 == 0:
                    speeds_old.append(old(7 + i))
                    speeds_new.append(new(7 + i))
                else:
                    speeds_new.append(new(7 + i))
                    speeds_old.append(old(7 + i))
            ratios = [b / a for a, b in zip(speeds_old, speeds_new, strict=True)]
            print(f"{name:14s} best new/best old = {max(speeds_new) / max(speeds_old):.3f}, "
                  f"median of rounds = {statistics.median(ratios):.3f} "
                  f"({', '.join(f'{r:.2f}' for r in ratios)})", flush=True)


if __name__ == "__main__":
    main()
