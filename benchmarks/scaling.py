"""The scaling benchmark: the same as ``dispatchlab bench --scaling`` (see README.md).

    .venv/bin/python benchmarks/scaling.py                  # every family, the full grid
    .venv/bin/python benchmarks/scaling.py --quick --json   # a small grid, JSON lines
    .venv/bin/python benchmarks/scaling.py --family jsq --family pi-jsq
"""

from __future__ import annotations

import sys

from dispatchlab.cli import main

if __name__ == "__main__":
    sys.exit(main(["bench", "--scaling", *sys.argv[1:]]))
