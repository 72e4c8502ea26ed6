"""Run the standard benchmark workloads: the same as ``dispatchlab bench`` (see README.md).

    .venv/bin/python benchmarks/run.py --json                 # all five, 10^6 slots each
    .venv/bin/python benchmarks/run.py --workload jsq --repeat 3
"""

from __future__ import annotations

import sys

from dispatchlab.cli import main

if __name__ == "__main__":
    sys.exit(main(["bench", *sys.argv[1:]]))
