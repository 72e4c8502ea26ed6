"""Start-up cost of the command line in CPU seconds (user + sys of the child): warm
``--help`` and friends, and a cold first run (an empty ``NUMBA_CACHE_DIR``: everything
compiles). Medians of ``--rounds`` runs; on a shared machine compare figures of one run.

    python benchmarks/startup.py            # warm and cold, 3 rounds (~2 min of CPU)
    python benchmarks/startup.py --warm     # warm only (seconds)
"""

from __future__ import annotations

import argparse
import os
import resource
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

DISPATCHLAB = str(Path(sys.executable).with_name("dispatchlab"))
README_RUN = ["run", "--policy", "jsq", "--servers", "50x0.1,50x0.5", "--dispatchers", "10",
              "--load", "0.95", "--slots", "1000000", "--seed", "7", "--json"]
WARM = {
    "dispatchlab --help": ["--help"],
    "dispatchlab run --help": ["run", "--help"],
    "dispatchlab policies": ["policies"],
    "dispatchlab run --policy jsq (warm cache)": ["run", "--policy", "jsq", "--json"],
}
COLD = {
    "README's run line (cold)": README_RUN,
    "dispatchlab run --policy jsq (cold)": ["run", "--policy", "jsq", "--json"],
}


def cpu_seconds(args: list[str], env: dict[str, str] | None = None) -> float:
    """CPU time (user + sys) of one ``dispatchlab ARGS`` process; it must succeed."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    done = subprocess.run([DISPATCHLAB, *args], capture_output=True, text=True, env=env,
                          check=False)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if done.returncode != 0:
        raise SystemExit(f"dispatchlab {' '.join(args)} failed:\n{done.stderr}")
    return (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def cold_seconds(args: list[str]) -> float:
    with tempfile.TemporaryDirectory() as cache:
        return cpu_seconds(args, env={**os.environ, "NUMBA_CACHE_DIR": cache})


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--warm", action="store_true", help="warm figures only")
    options = parser.parse_args()
    cpu_seconds(["run", "--policy", "jsq", "--slots", "1000", "--json"])  # fill the cache
    cases = [(label, args, cpu_seconds) for label, args in WARM.items()]
    if not options.warm:
        cases += [(label, args, cold_seconds) for label, args in COLD.items()]
    for label, args, measure in cases:
        times = [measure(args) for _ in range(options.rounds)]
        shown = " ".join(f"{t:.2f}" for t in times)
        print(f"{label:45s} median {statistics.median(times):6.2f} s CPU  ({shown})",
              flush=True)


if __name__ == "__main__":
    main()
