"""A corrupted numba disk cache heals itself with one line saying so (issue 25, item 6).

A truncated ``*.nbc`` made every run exit 1 with no output (EOFError, turned into click's
Abort), random bytes gave an UnpicklingError traceback, and neither ever healed. Each case
runs the real command in a fresh interpreter on a cache folder of its own
(``NUMBA_CACHE_DIR``), so the checkout's cache is never touched.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import built_once

RUN = ("import sys; from dispatchlab.cli import main; "
       "sys.exit(main(['run', '--policy', 'jsq', '--servers', '2x0.5', '--slots', '1000']))")
NOTE = "note: numba cache: an unreadable entry in "


def run(cache: Path, code: str = RUN) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "NUMBA_CACHE_DIR": str(cache)}
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          env=env, timeout=600, check=False)


def entries(cache: Path, pattern: str) -> list[Path]:
    return sorted(cache.rglob(pattern))


def truncate(path: Path) -> None:
    path.write_bytes(path.read_bytes()[:10])


def random_bytes(path: Path) -> None:
    path.write_bytes(os.urandom(200))


def empty(path: Path) -> None:
    path.write_bytes(b"")


@pytest.fixture(scope="session")
def warm_cache(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A cache folder of its own, filled by one cold run for the whole suite (each test
    damages a copy of it)."""
    def fill(folder: Path) -> None:
        first = run(folder / "cache")
        assert first.returncode == 0 and NOTE not in first.stderr, first.stderr

    return built_once(tmp_path_factory, "cache-guard-warm", fill) / "cache"


def copy_of(warm_cache: Path, tmp_path: Path) -> Path:
    import shutil

    return Path(shutil.copytree(warm_cache, tmp_path / "cache"))


#: the entry the single-entry cases damage: jsq's choose adapter, which the run loads itself
#: (a step compiled into the loop is never loaded on its own) and rebuilds in about a second
SMALL_ENTRY = "_jsq_choose"


# the default suite damages an index here and a data file in
# test_the_python_api_heals_as_well; the other kinds of damage take the same two paths, and
# a cache broken everywhere recompiles the whole run (~12 s): in the slow suite
@pytest.mark.parametrize("damage,pattern,every", [
    pytest.param(truncate, "*.nbc", False, marks=pytest.mark.slow),
    pytest.param(random_bytes, "*.nbc", False, marks=pytest.mark.slow),
    pytest.param(random_bytes, "*.nbi", False, marks=pytest.mark.slow),
    (empty, "*.nbi", False),
    pytest.param(truncate, "*.nb?", True, marks=pytest.mark.slow),  # all broken: one line
])
def test_a_damaged_cache_is_rebuilt_with_one_line(warm_cache: Path, tmp_path: Path, damage,
                                                  pattern: str, every: bool) -> None:
    cache = copy_of(warm_cache, tmp_path)
    damaged = [path for path in entries(cache, pattern) if every or SMALL_ENTRY in path.name]
    assert damaged
    for path in damaged:
        damage(path)
    broken = run(cache)
    assert broken.returncode == 0, broken.stderr
    assert "Traceback" not in broken.stderr
    notes = [line for line in broken.stderr.splitlines() if line.startswith(NOTE)]
    assert len(notes) == 1 and broken.stderr.count("numba") == 1, broken.stderr
    assert "E[ΣQ]" in broken.stdout or broken.stdout.strip()  # the run's table was printed
    healed = run(cache)
    assert healed.returncode == 0 and NOTE not in healed.stderr, healed.stderr
    assert healed.stdout.splitlines()[:3] == broken.stdout.splitlines()[:3]


def test_the_python_api_heals_as_well(warm_cache: Path, tmp_path: Path) -> None:
    cache = copy_of(warm_cache, tmp_path)
    # the command's run (ρ = 0.9, M = 10): the copied cache holds all it needs
    code = ("from dispatchlab import System, simulate\n"
            "r = simulate(System.build('2x0.5', load=0.9, dispatchers=10), 'jsq', slots=1000,\n"
            "             seed=3)\n"
            "print(repr(r.mean_total_queue))")
    first = run(cache, code)
    assert first.returncode == 0 and NOTE not in first.stderr, first.stderr
    for path in entries(cache, "*.nbc"):
        if SMALL_ENTRY in path.name:
            truncate(path)
    again = run(cache, code)
    assert again.returncode == 0 and again.stdout == first.stdout, again.stderr
    assert again.stderr.count(NOTE) == 1


def test_the_guard_is_installed_before_anything_compiles() -> None:
    code = ("import dispatchlab.engine.loop\nfrom numba.core import caching\n"
            "print(caching.Cache.load_overload.__name__)")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          timeout=300, check=False)
    assert done.stdout.strip() == "guarded_load", done.stderr


def test_an_abort_from_an_error_is_never_a_silent_exit(monkeypatch: pytest.MonkeyPatch,
                                                       capsys: pytest.CaptureFixture[str]
                                                       ) -> None:
    """click turns an EOFError raised anywhere into Abort; main says what it was."""
    import typer

    import dispatchlab.cli as cli

    def aborts(**_: object) -> None:
        try:
            raise EOFError
        except EOFError as error:
            raise typer.Abort() from error

    monkeypatch.setattr(cli, "app", aborts)
    assert cli.main(["run"]) == 1
    err = capsys.readouterr().err
    assert err == "error: internal: EOFError: unexpected end of input (a bug: please report it)\n"

    def interrupted(**_: object) -> None:
        try:
            raise KeyboardInterrupt
        except KeyboardInterrupt as error:
            raise typer.Abort() from error

    monkeypatch.setattr(cli, "app", interrupted)  # (a Ctrl-C while click parses: said)
    assert cli.main(["run"]) == 130 and capsys.readouterr().err == "interrupted\n"


PROBE_CALLER = """
from numba import njit

from dispatchlab.compiled import _probe_callee


@njit(cache=True)
def probe():
    return _probe_callee.value() + 1
"""
PROBE_CALLEE = """
from numba import njit


@njit(inline="always")
def value():
    return {value}
"""
CALL = ("import dispatchlab.compiled; from dispatchlab.compiled._probe_caller import probe; "
        "print(probe())")


def test_a_change_in_another_module_compiles_afresh(tmp_path: Path) -> None:
    """numba keys an entry by its own file alone: a changed helper it inlines from another
    module was served stale (wrong numbers, silently). The key now holds a digest of
    dispatchlab's sources. A copy of the package with a probe: the caller's file is not
    touched, only the callee's."""
    import shutil

    import dispatchlab

    package = tmp_path / "src" / "dispatchlab"
    shutil.copytree(Path(dispatchlab.__file__).parent, package,
                    ignore=shutil.ignore_patterns("__pycache__"))
    (package / "compiled" / "_probe_caller.py").write_text(PROBE_CALLER, encoding="utf-8")
    callee = package / "compiled" / "_probe_callee.py"
    env = {k: v for k, v in os.environ.items() if k != "NUMBA_CACHE_DIR"}
    env["PYTHONPATH"] = str(tmp_path / "src")

    def call() -> str:
        done = subprocess.run([sys.executable, "-c", CALL], capture_output=True, text=True,
                              env=env, timeout=600, check=False, cwd=tmp_path)
        assert done.returncode == 0, done.stderr
        return done.stdout.strip()

    callee.write_text(PROBE_CALLEE.format(value=1), encoding="utf-8")
    assert call() == "2"
    assert sorted(package.rglob("_probe_caller*.nbi")), "the caller was not cached"
    assert call() == "2"  # from the cache
    callee.write_text(PROBE_CALLEE.format(value=41), encoding="utf-8")
    assert call() == "42"
