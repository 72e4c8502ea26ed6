"""What the test suite compiles, and for which tests: numba's compile events and cache loads
of every process the suite starts, summed by test.

    .venv/bin/python benchmarks/suite_compiles.py record compiles.tsv [PYTEST ARGS]
    .venv/bin/python benchmarks/suite_compiles.py report compiles.tsv

``record`` runs ``pytest -q -n auto --dist worksteal`` (or the arguments given) with a
``sitecustomize`` on ``PYTHONPATH`` that, in every Python process that imports numba's
cache, records each compile (the function, its argument types, its CPU-exclusive seconds:
a callee compiled inside it is its own row; wall seconds, on a machine kept otherwise
idle) and each cache load, with the test that was
running (``PYTEST_CURRENT_TEST``, which subprocesses inherit). Run it on an empty cache
(delete ``*.nbi``/``*.nbc`` outside ``.venv``) to see a clean clone's compiles. A test
that checks what a process imports or prints may fail under the recorder; a subprocess
started with an environment of its own is not recorded.

``report`` prints the compile seconds in all; the functions compiled more than once (a
cache of their own, a closure numba cannot cache); and, by test, the seconds of functions
that no other test compiles or loads — what the suite would save without that test.
"""

from __future__ import annotations

import collections
import os
import subprocess
import sys
import tempfile
from pathlib import Path

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


def record(out: Path, pytest_args: list[str]) -> int:
    args = pytest_args or ["-q", "-n", "auto", "--dist", "worksteal"]
    out.unlink(missing_ok=True)
    with tempfile.TemporaryDirectory() as folder:
        Path(folder, "sitecustomize.py").write_text(RECORDER, encoding="utf-8")
        path = os.pathsep.join(p for p in (folder, os.environ.get("PYTHONPATH", "")) if p)
        env = dict(os.environ, PYTHONPATH=path, DISPATCHLAB_SUITE_COMPILES=str(out.resolve()))
        return subprocess.run([sys.executable, "-m", "pytest", *args], env=env,
                              check=False).returncode


def report(rows: list[list[str]], top: int = 25) -> str:
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
    lines += ["", f"compiled for one test alone: {sum(alone.values()):.1f} s"]
    lines += [f"  {seconds:6.2f} s  {test}"
              for test, seconds in sorted(alone.items(), key=lambda kv: -kv[1])[:top]]
    return "\n".join(lines)


def main(argv: list[str]) -> int:
    if len(argv) < 2 or argv[0] not in ("record", "report"):
        print(__doc__, file=sys.stderr)
        return 2
    path = Path(argv[1])
    if argv[0] == "record":
        return record(path, argv[2:])
    rows = [line.rstrip("\n").split("\t") for line in path.read_text(encoding="utf-8")
            .splitlines() if line.count("\t") == 4]
    print(report(rows))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
