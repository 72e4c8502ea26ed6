"""``experiment --list`` with each experiment's size and estimated time, and ``--dry-run``
on ``experiment`` and ``sweep``: the plan printed, nothing run, no store created."""

from __future__ import annotations

from pathlib import Path

import pytest

from dispatchlab.cli import main


def run(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    status = main(list(args))
    out, err = capsys.readouterr()
    return status, out, err


def test_the_list_gives_points_slots_work_and_time(capsys, monkeypatch) -> None:
    monkeypatch.setenv("COLUMNS", "250")
    status, out, _ = run(capsys, "experiment", "--list")
    assert status == 0
    assert "points" in out and "CPU time" in out and "server-slot updates" in out
    row = next(line for line in out.splitlines() if "│ led-fig2 " in line)
    cells = [cell.strip() for cell in row.split("│")[1:-1]]
    # 7 loads × 3 policies × 2 replications of 2·10⁵ slots on 100 servers, M = 10
    assert cells[3:] == ["42", "8.4e+06", "9.24e+08", "31 s"]


def test_the_list_runs_no_simulation(capsys, monkeypatch) -> None:
    """Listing sizes every experiment without its pilot runs (LED Fig. 1's calibration ran
    113 simulations, 15 s, to print the catalog)."""
    from dispatchlab.experiments.catalog import led_fig1

    def refuse(*args, **kwargs):
        raise AssertionError("the catalog list ran a simulation")

    monkeypatch.setattr(led_fig1, "simulate", refuse)
    status, out, _ = run(capsys, "experiment", "--list")
    assert status == 0 and "led-fig1-slotted" in out
    spec = led_fig1.led_fig1(quick=True, pilots=False)
    assert led_fig1.NOT_CALIBRATED in spec.description


def test_a_dry_run_prints_the_plan_and_runs_nothing(capsys, tmp_path: Path) -> None:
    store = tmp_path / "never.sqlite"
    status, out, err = run(capsys, "experiment", "led-fig2", "--dry-run", "--store",
                           str(store), "--workers", "2")
    assert status == 0, err
    assert "dry run: nothing is run" in out and "L-JSQ-Push" in out
    assert "42 points (2 replication(s) each), 8.4e+06 slots" in out
    assert "0 already in" in out and "on 2 worker(s)" in out
    assert not store.exists() and not (tmp_path / "results").exists()
    status, out, err = run(capsys, "sweep", "examples/sweep.toml", "--dry-run", "--store",
                           str(store), "--slots", "5000")
    assert status == 0, err
    assert "24 points" in out and "5,000" in out and not store.exists()


def test_a_dry_run_counts_what_the_store_holds(capsys, tmp_path: Path) -> None:
    store = tmp_path / "s.sqlite"
    args = ("sweep", "examples/sweep.toml", "--store", str(store), "--slots", "1000",
            "--out", str(tmp_path / "out"), "--workers", "1", "--no-progress")
    assert run(capsys, *args)[0] == 0
    status, out, _ = run(capsys, *args, "--dry-run")
    assert status == 0 and "24 already in" in out and "estimated time: 0 s" in out


ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.parametrize(("option", "said"), [
    (["--workers", "0"], "error: workers: must be ≥ 1 (got 0)"),
    (["--cluster", "nonsense"], "error: cluster: give a scheduler address like tcp://HOST:PORT"),
    (["--out", "/proc/none/out"], "error: out: cannot write to '/proc/none/out'"),
], ids=["workers-0", "cluster", "out"])
@pytest.mark.parametrize("command", [["experiment", "classic-load-sweep"],
                                     ["sweep", str(ROOT / "examples" / "sweep.toml")]],
                         ids=["experiment", "sweep"])
def test_a_dry_run_refuses_what_a_run_refuses(capsys, tmp_path: Path, option: list[str],
                                              said: str, command: list[str]) -> None:
    """`experiment --workers 0 --dry-run` had printed a plan "on 2 worker(s)", exit 0."""
    store = ["--store", str(tmp_path / "s.sqlite")]
    for dry in (["--dry-run"], []):
        assert main([*command, *store, *option, *dry]) == 2
        err = capsys.readouterr().err
        assert err.startswith(said) and err.count("\n") == 1, err
    assert not (tmp_path / "s.sqlite").exists()


def test_a_refused_cluster_leaves_no_new_store_and_no_folder(capsys, tmp_path: Path,
                                                           monkeypatch) -> None:
    """An unreachable --cluster (refused after dask's 20 s timeout; made at once here) left
    a new store file, holding nothing, and an empty results folder."""
    from dispatchlab.core.errors import ValidationError
    from dispatchlab.experiments import runner

    def unreachable(self, address: str):
        raise ValidationError("cluster", f"cannot reach the Dask scheduler at {address!r}")

    monkeypatch.setattr(runner._Executor, "_connect", unreachable)
    argv = ["experiment", "classic-load-sweep", "--quick", "--cluster", "tcp://127.0.0.1:1",
            "--store", str(tmp_path / "s.sqlite"), "--out", str(tmp_path / "out"),
            "--no-progress"]
    assert main(argv) == 2
    assert capsys.readouterr().err.splitlines()[-1].startswith("error: cluster: cannot reach")
    assert sorted(p.name for p in tmp_path.iterdir()) == []
