"""Start-up cost of the command line in CPU seconds (user + sys of the child): warm
``--help`` and friends, the first run after an install (``make venv`` runs ``dispatchlab
warm``, which fills numba's cache, then the user's first run starts a fresh process) and a
cold first run (an empty ``NUMBA_CACHE_DIR``: a plain ``pip install`` without ``warm``, or
an invalidated cache; everything compiles). Medians of ``--rounds`` runs; on a shared
machine compare figures of one run: ``--against SRC`` measures another source tree (e.g.
``git archive main`` unpacked, its ``src``) in alternating rounds and prints the paired
ratios this/other.

    python benchmarks/startup.py                      # all cases, 3 rounds (~3 min of CPU)
    python benchmarks/startup.py --warm               # no compiling cases (seconds)
    python benchmarks/startup.py --against /tmp/main/src --rounds 5
"""

from __future__ import annotations

import argparse
import os
import resource
import statistics
import subprocess
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path

DISPATCHLAB = str(Path(sys.executable).with_name("dispatchlab"))
README_RUN = ["run", "--policy", "jsq", "--servers", "50x0.1,50x0.5", "--dispatchers", "10",
              "--load", "0.95", "--slots", "1000000", "--seed", "7", "--json"]
JSQ_RUN = ["run", "--policy", "jsq", "--json"]
#: a short run: its CPU is start-up, not slots
SHORT_RUN = ["run", "--policy", "jsq", "--slots", "1000", "--json"]
WARM = {
    "dispatchlab --help": ["--help"],
    "dispatchlab run --help": ["run", "--help"],
    "dispatchlab policies": ["policies"],
    "run --policy jsq --slots 1000 (warm cache)": SHORT_RUN,
    "run --policy jsq (warm cache, 10^6 slots)": JSQ_RUN,
}
#: the first run after `make venv` (`dispatchlab warm` filled an empty cache)
INSTALLED = {
    "first run after install: jsq --slots 1000": SHORT_RUN,
    "first run after install: pod --slots 1000": ["run", "--policy", "pod", "--slots", "1000",
                                                  "--json"],
}
COLD = {
    "cold: README's run line": README_RUN,
    "cold: run --policy jsq --slots 1000": SHORT_RUN,
}


def cpu_seconds(args: list[str], env: dict[str, str]) -> float:
    """CPU time (user + sys) of one ``dispatchlab ARGS`` process; it must succeed."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    done = subprocess.run([DISPATCHLAB, *args], capture_output=True, text=True, env=env,
                          check=False)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if done.returncode != 0:
        raise SystemExit(f"dispatchlab {' '.join(args)} failed:\n{done.stderr}")
    return (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def warm_seconds(args: list[str], env: dict[str, str]) -> float:
    return cpu_seconds(args, env)


def installed_seconds(args: list[str], env: dict[str, str]) -> float:
    """The first run in a fresh process after ``dispatchlab warm`` filled an empty cache."""
    with tempfile.TemporaryDirectory() as cache:
        cpu_seconds(["warm"], {**env, "NUMBA_CACHE_DIR": cache})
        return cpu_seconds(args, {**env, "NUMBA_CACHE_DIR": cache})


def cold_seconds(args: list[str], env: dict[str, str]) -> float:
    with tempfile.TemporaryDirectory() as cache:
        return cpu_seconds(args, {**env, "NUMBA_CACHE_DIR": cache})


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--warm", action="store_true", help="no compiling cases")
    parser.add_argument("--against", metavar="SRC", type=Path,
                        help="another tree's src folder, measured in alternating rounds")
    options = parser.parse_args()
    trees = {"this": {**os.environ}}
    if options.against is not None:
        trees["other"] = {**os.environ, "PYTHONPATH": str(options.against.resolve())}
    for env in trees.values():
        cpu_seconds(SHORT_RUN, env)  # fill each tree's own cache (numba's __pycache__)
    cases: list[tuple[str, list[str], Callable[[list[str], dict[str, str]], float]]] = [
        (label, args, warm_seconds) for label, args in WARM.items()]
    if not options.warm:
        cases += [(label, args, installed_seconds) for label, args in INSTALLED.items()]
        cases += [(label, args, cold_seconds) for label, args in COLD.items()]
    for label, args, measure in cases:
        times: dict[str, list[float]] = {name: [] for name in trees}
        for _ in range(options.rounds):
            for name, env in trees.items():  # alternating: the machine's load moves both
                times[name].append(measure(args, env))
        shown = "  ".join(f"{name} {statistics.median(t):6.2f} s "
                          f"({' '.join(f'{x:.2f}' for x in t)})" for name, t in times.items())
        if "other" in times:
            ratios = [a / b for a, b in zip(times["this"], times["other"], strict=True)]
            shown += f"  this/other {statistics.median(ratios):.2f}"
        print(f"{label:45s} {shown}", flush=True)


if __name__ == "__main__":
    main()
