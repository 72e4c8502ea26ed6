"""Where the test suite's CPU goes: py-spy samples of every process it starts, by kind of
work; and what it compiles, by test.

    .venv/bin/python benchmarks/suite_profile.py record suite.raw [PYTEST ARGS]
    .venv/bin/python benchmarks/suite_profile.py report suite.raw
    .venv/bin/python benchmarks/suite_profile.py record-compiles compiles.tsv [PYTEST ARGS]
    .venv/bin/python benchmarks/suite_profile.py report-compiles compiles.tsv

``record`` runs ``pytest -q -n auto --dist worksteal`` (or the arguments given) under
``py-spy record --subprocesses`` at 50 samples a second, so that the CLI subprocesses, the
pools' workers and the xdist workers are all sampled (py-spy is not a dependency:
``pip install py-spy``). ``report`` sorts the samples into the kinds of work below, the
first that matches a sample's stack, and prints each kind's share, then the tests whose
own process spent most samples. A sample is a stack of one thread at one instant, so a
share is a share of the CPU the suite used (py-spy's own overhead slows the run by about
a fifth; the shares are what to compare).

``record-compiles`` runs the same pytest with a ``sitecustomize`` on ``PYTHONPATH`` that,
in every Python process that imports numba's cache, records each compile (the function,
its argument types and its seconds, exclusive of a callee compiled inside it: wall time,
so keep the machine otherwise idle) and each cache load, with the test that was running
(``PYTEST_CURRENT_TEST``, which subprocesses inherit). Run it on an empty cache (delete
``*.nbi``/``*.nbc`` outside ``.venv``) to see a clean clone's compiles. A test that checks
what a process imports or prints may fail under the recorder; a subprocess started with an
environment of its own is not recorded, nor one killed (rows are written at exit).
``report-compiles`` prints the seconds in all; the functions compiled more than once (a
cache of their own, a closure numba cannot cache); and, by test, the seconds of functions
that no other test compiles or loads from the cache. That bounds what a test alone needs
from above: a later test of the same process calls the compiled function from memory,
which leaves no record.
"""

from __future__ import annotations

import collections
import os
import re
import subprocess
import sys
import tempfile
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
#: what ``record`` and ``record-compiles`` run pytest with, unless told otherwise
PYTEST_ARGS = ["-q", "-n", "auto", "--dist", "worksteal"]
OTHER = "everything else (test bodies, pytest and xdist, waiting)"
#: the root frame of a stack, the suite's first process (py-spy names a process by its
#: command line, which may hold newlines, or be empty when py-spy could not read it): a
#: record starts at this frame, found by its process id, not at a line
_ROOT = re.compile(r"process (\d+):")
_TEST = re.compile(r"(test_\w+) \((test_\w+\.py)")


def samples(raw: str) -> Iterator[tuple[str, int]]:
    """(stack, count) of each record of py-spy's raw (collapsed-stack) output."""
    root = _ROOT.match(raw)
    if root is None:
        return
    for record in re.split(rf"\n(?=process {root.group(1)}:)", raw):
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
    args = pytest_args or PYTEST_ARGS
    command = ["py-spy", "record", "--subprocesses", "--nonblocking", "-r", "50", "-f",
               "raw", "-o", str(out), "--", sys.executable, "-m", "pytest", *args]
    try:
        return subprocess.run(command, check=False).returncode
    except FileNotFoundError:
        print("error: py-spy: not found (pip install py-spy)", file=sys.stderr)
        return 2


#: the recorder each Python process of the suite runs at start (``sitecustomize``)
RECORDER = r'''
import atexit, importlib.abc, importlib.util, os, sys, time

_PATH = os.environ.get("DISPATCHLAB_SUITE_COMPILES")
_rows = []


def _test():
    return os.environ.get("PYTEST_CURRENT_TEST", "-").rsplit(" ", 1)[0]


def _name(function):
    return f"{getattr(function, '__module__', '?')}.{getattr(function, '__qualname__', '?')}"


def _types(types):
    return "(" + ", ".join(map(str, types)) + ")"


def _record(caching):
    from numba.core import event

    inner = caching.Cache._load_overload

    def load(self, sig, target_context):
        data = inner(self, sig, target_context)
        if data is not None:
            function = _name(getattr(self, "_py_func", None))
            types = _types(getattr(sig, "args", sig))
            _rows.append(f"load\t{function}\t{types}\t0\t{_test()}\n")
        return data

    caching.Cache._load_overload = load
    open_spans = []

    class Listener(event.Listener):
        def on_start(self, e):
            open_spans.append([time.perf_counter(), 0.0])

        def on_end(self, e):
            start, inside = open_spans.pop()
            spent = time.perf_counter() - start
            if open_spans:
                open_spans[-1][1] += spent
            function = _name(e.data["dispatcher"].py_func)
            types = _types(e.data.get("args", ()))
            _rows.append(f"compile\t{function}\t{types}\t{spent - inside:.4f}\t{_test()}\n")

    event.register("numba:compile", Listener())


class _AfterCachingImports(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path, target=None):
        if name != "numba.core.caching":
            return None
        sys.meta_path.remove(self)
        spec = importlib.util.find_spec(name)
        run = spec.loader.exec_module

        def exec_module(module):
            run(module)
            _record(module)

        spec.loader.exec_module = exec_module
        return spec


if _PATH:
    sys.meta_path.insert(0, _AfterCachingImports())

    @atexit.register
    def _write():
        with open(_PATH, "a", encoding="utf-8") as out:
            out.writelines(_rows)
'''


def record_compiles(out: Path, pytest_args: list[str]) -> int:
    args = pytest_args or PYTEST_ARGS
    out.unlink(missing_ok=True)
    with tempfile.TemporaryDirectory() as folder:
        Path(folder, "sitecustomize.py").write_text(RECORDER, encoding="utf-8")
        path = os.pathsep.join(p for p in (folder, os.environ.get("PYTHONPATH", "")) if p)
        env = dict(os.environ, PYTHONPATH=path, DISPATCHLAB_SUITE_COMPILES=str(out.resolve()))
        return subprocess.run([sys.executable, "-m", "pytest", *args], env=env,
                              check=False).returncode


def compiles_report(rows: list[list[str]], top: int = 25) -> str:
    """The summary of ``rows`` (kind, function, argument types, seconds, test)."""
    compiles: dict[tuple[str, str], list[tuple[str, float]]] = collections.defaultdict(list)
    users: dict[tuple[str, str], set[str]] = collections.defaultdict(set)
    for kind, function, types, seconds, test in rows:
        key = (function, types)
        users[key].add(test)
        if kind == "compile":
            compiles[key].append((test, float(seconds)))
    total = sum(s for runs in compiles.values() for _, s in runs)
    again = {key: runs for key, runs in compiles.items() if len(runs) > 1}
    lines = [f"{sum(map(len, compiles.values())):,} compiles of {len(compiles):,} distinct "
             f"functions, {total:.1f} s (each exclusive of what it compiled inside)",
             "", f"compiled more than once: {sum(s for r in again.values() for _, s in r[1:]):.1f}"
             " s beyond the first"]
    for (function, _), runs in sorted(again.items(),
                                      key=lambda kv: -sum(s for _, s in kv[1][1:]))[:top // 2]:
        lines.append(f"  {sum(s for _, s in runs[1:]):6.2f} s  {len(runs)}×  {function}")
    alone: dict[str, float] = collections.defaultdict(float)
    for key, runs in compiles.items():
        if len(users[key]) == 1:
            for test, seconds in runs:
                alone[test] += seconds
    lines += ["", f"compiled by a test, loaded by no other: {sum(alone.values()):.1f} s"]
    lines += [f"  {seconds:6.2f} s  {test}"
              for test, seconds in sorted(alone.items(), key=lambda kv: -kv[1])[:top]]
    return "\n".join(lines)


def read_compiles(path: Path) -> list[list[str]]:
    """The rows ``record-compiles`` wrote (a row cut short by a killed process is skipped)."""
    return [line.split("\t") for line in path.read_text(encoding="utf-8").splitlines()
            if line.count("\t") == 4]


def main(argv: list[str]) -> int:
    commands = ("record", "report", "record-compiles", "report-compiles")
    if len(argv) < 2 or argv[0] not in commands:
        print(__doc__, file=sys.stderr)
        return 2
    path = Path(argv[1])
    if argv[0] == "record":
        return record(path, argv[2:])
    if argv[0] == "record-compiles":
        return record_compiles(path, argv[2:])
    if not path.is_file():
        print(f"error: {argv[0]}: no file {str(path)!r} (record it first)", file=sys.stderr)
        return 2
    if argv[0] == "report":
        print(report(path.read_text(encoding="utf-8", errors="replace")))
    else:
        print(compiles_report(read_compiles(path)))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
