"""Where the test suite's CPU goes: py-spy samples of every process it starts, by kind of work.

    .venv/bin/python benchmarks/suite_profile.py record suite.raw [PYTEST ARGS]
    .venv/bin/python benchmarks/suite_profile.py report suite.raw

``record`` runs ``pytest -q -n auto --dist worksteal`` (or the arguments given) under
``py-spy record --subprocesses`` at 50 samples a second, so that the CLI subprocesses, the
pools' workers and the xdist workers are all sampled (py-spy is not a dependency:
``pip install py-spy``). ``report`` sorts the samples into the kinds of work below, the
first that matches a sample's stack, and prints each kind's share, then the tests whose
own process spent most samples. A sample is a stack of one thread at one instant, so a
share is a share of the CPU the suite used (py-spy's own overhead slows the run by about
a fifth; the shares are what to compare).
"""

from __future__ import annotations

import collections
import re
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

#: (kind of work, substrings of a stack that say it), first match wins
KINDS: list[tuple[str, tuple[str, ...]]] = [
    ("numba: compiling", ("numba/core/compiler.py", "numba/core/typeinfer.py",
                          "numba/core/lowering.py", "numba/core/codegen.py")),
    ("numba: loading the disk cache (target set-up included)", ("numba/core/caching.py",)),
    ("the CLI: building the click command", ("get_command (typer/main.py",)),
    ("compiled code's dependency digests", ("compiled/dependencies.py",)),
    ("importing modules", ("_find_and_load",)),
    ("test collection", ("pytest_collection (",)),
    ("slotted runs (the compiled loop and its driver)", ("engine/raw.py",)),
    ("continuous-time runs", ("dispatchlab/continuous/",)),
    ("exact and fluid solvers", ("dispatchlab/solvers/", "scipy/sparse", "scipy/linalg",
                                 "numpy/linalg")),
    ("hypothesis", ("hypothesis/",)),
    ("figures (matplotlib)", ("matplotlib/",)),
    ("the results store (sqlite)", ("sqlite",)),
    ("Dask", ("distributed/", "dask/", "tornado/")),
]
OTHER = "everything else (test bodies, pytest and xdist, waiting)"
#: the root frame of a stack: the suite's first process (py-spy names a process by its
#: command line, which may hold newlines: a record starts at this frame, not at a line)
_RECORD = re.compile(r'\n(?=process \d+:"[^"]*-m pytest)')
_TEST = re.compile(r"(test_\w+) \((test_\w+\.py)")


def samples(raw: str) -> Iterator[tuple[str, int]]:
    """(stack, count) of each record of py-spy's raw (collapsed-stack) output."""
    for record in _RECORD.split(raw):
        stack, _, count = record.rstrip("\n").rpartition(" ")
        if stack and count.isdigit():
            yield stack, int(count)


def kind_of(stack: str) -> str:
    return next((kind for kind, marks in KINDS if any(mark in stack for mark in marks)),
                OTHER)


def report(raw: str, top: int = 15) -> str:
    """The table of shares by kind, and the tests with most samples."""
    kinds: collections.Counter[str] = collections.Counter()
    tests: collections.Counter[str] = collections.Counter()
    total = 0
    for stack, count in samples(raw):
        total += count
        kinds[kind_of(stack)] += count
        found = _TEST.search(stack)
        tests[f"{found.group(2)}::{found.group(1)}" if found else "(no test frame: "
              "collection, fixtures, pools' workers and other subprocesses)"] += count
    if not total:
        return "no samples"
    lines = [f"{total:,} samples", "", "| kind of work | share |", "|---|---:|"]
    lines += [f"| {kind} | {count / total:.1%} |" for kind, count in kinds.most_common()]
    lines += ["", f"the {top} tests with most samples in their own process:"]
    lines += [f"  {count / total:6.1%}  {test}" for test, count in tests.most_common(top)]
    return "\n".join(lines)


def record(out: Path, pytest_args: list[str]) -> int:
    args = pytest_args or ["-q", "-n", "auto", "--dist", "worksteal"]
    command = ["py-spy", "record", "--subprocesses", "--nonblocking", "-r", "50", "-f",
               "raw", "-o", str(out), "--", sys.executable, "-m", "pytest", *args]
    try:
        return subprocess.run(command, check=False).returncode
    except FileNotFoundError:
        print("error: py-spy: not found (pip install py-spy)", file=sys.stderr)
        return 2


def main(argv: list[str]) -> int:
    if len(argv) < 2 or argv[0] not in ("record", "report"):
        print(__doc__, file=sys.stderr)
        return 2
    path = Path(argv[1])
    if argv[0] == "record":
        return record(path, argv[2:])
    print(report(path.read_text(encoding="utf-8", errors="replace")))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
