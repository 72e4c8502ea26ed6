"""``dispatchlab experiment | sweep | results | report``: experiments at scale.

``experiment NAME`` runs a catalog experiment, ``sweep SPEC.toml`` a spec file; both
run on all local cores (or ``--cluster tcp://HOST:PORT``), show progress, store every
point in the project's store (resuming where an interrupted sweep stopped), and write
the points as CSV and the figures as PNG to ``results/NAME/``. ``results`` lists and
exports what is stored; ``report`` draws the HTML report from the store.
"""

from __future__ import annotations

import contextlib
import math
import re
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer
from rich.markup import escape
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn
from rich.table import Table

from dispatchlab.cli import options
from dispatchlab.cli.app import app
from dispatchlab.cli.output import MISSING, integer, number, stderr_console, stdout_console
from dispatchlab.core.display import local_time
from dispatchlab.core.errors import ValidationError, require
from dispatchlab.core.paths import require_writable_file, write_whole
from dispatchlab.core.signals import interrupt_saying, stops_held
from dispatchlab.core.spreadsheet import to_csv
from dispatchlab.experiments.store import DEFAULT_STORE, Store

if TYPE_CHECKING:  # specs hold policies (numba): imported where a command needs them
    from dispatchlab.experiments.runner import SweepOutcome
    from dispatchlab.specs.experiment import ExperimentSpec, Point

RESULTS_DIR = Path("results")
CLUSTER_ADDRESS = re.compile(r"^([a-z]+://)?[^\s:/]+:\d+/?$")
EXPORT_FORMATS = ("table", "csv", "parquet", "json")
STATUS_FILTERS = ("done", "failed", "all")
LIST_COLUMNS = ["experiment", "system", "policy_label", "x", "replication", "slots",
                "mean_total_queue", "ci_low", "ci_high", "mean_delay", "messages_per_arrival",
                "stability", "status"]
#: the columns of continuous-time points (dispatchlab.specs.continuous_grid): "slots" holds
#: a point's jobs
CONTINUOUS_COLUMNS = ["mean_response", "mean_response_ci_low", "mean_response_ci_high",
                      "response_p99", "mean_in_system"]
HEADERS = {"policy_label": "policy", "replication": "rep", "mean_total_queue": "E[ΣQ]",
           "ci_low": "CI low", "ci_high": "CI high", "mean_delay": "delay",
           "messages_per_arrival": "msg/arrival", "mean_response": "E[T]",
           "mean_response_ci_low": "E[T] CI low", "mean_response_ci_high": "E[T] CI high",
           "response_p99": "T p99", "mean_in_system": "E[L]"}

StoreOption = Annotated[Path, typer.Option(
    "--store", help="The results database of this project (created if missing).")]
OutOption = Annotated[Path | None, typer.Option(
    "--out", help="Output directory (default: results/NAME/).", show_default=False)]
WorkersOption = Annotated[int | None, typer.Option(
    help="Local worker processes (default: all cores).", show_default=False)]
ClusterOption = Annotated[str | None, typer.Option(
    help="Run on a Dask cluster: the scheduler address, e.g. tcp://10.0.0.5:8786.",
    show_default=False)]
SlotsOption = Annotated[int | None, typer.Option(
    help="Slots per point (overrides the spec's budget).", show_default=False)]
ScaleOption = Annotated[float | None, typer.Option(
    help="Multiply the spec's slot budget by this factor.", show_default=False)]
ProgressOption = Annotated[bool, typer.Option(
    "--progress/--no-progress", help="Show a live progress line.")]
DryRunOption = Annotated[bool, typer.Option(
    "--dry-run", help="Print the plan (points, slots, estimated work and time, what the "
    "store already holds) and run nothing.")]
#: how --list and --dry-run write the work guard's speed
UPDATES_PER_SECOND_TEXT = "3·10⁷"


class RichProgress:
    """Points done/running/failed, slots/s and ETA on stderr."""

    def __init__(self, name: str) -> None:
        self.console = stderr_console()
        self._progress = Progress(
            TextColumn("[bold]{task.description}"), MofNCompleteColumn(),
            TextColumn("{task.fields[info]}"), BarColumn(bar_width=20), TimeElapsedColumn(),
            console=self.console, transient=False)
        self._task = self._progress.add_task(name[:24], total=None, info="starting")

    def __enter__(self) -> RichProgress:
        self._progress.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._progress.stop()

    def update(self, snapshot) -> None:  # runner.Snapshot
        eta = snapshot.eta_seconds
        eta_text = "—" if eta is None else _duration(eta)
        info = (f"done · {snapshot.running} running · {snapshot.failed} failed · "
                f"{number(snapshot.slots_per_second, 3)} slots/s · ETA {eta_text}")
        self._progress.update(self._task, total=snapshot.total,
                              completed=snapshot.skipped + snapshot.done + snapshot.failed,
                              info=info)

    def point_failed(self, point: Point, error: str) -> None:
        from dispatchlab.experiments.runner import describe_point

        self.console.print(f"[red]failed[/red] {escape(describe_point(point))}: {escape(error)}")


def _duration(seconds: float) -> str:
    seconds = int(math.ceil(seconds))
    hours, rest = divmod(seconds, 3600)
    minutes, secs = divmod(rest, 60)
    return f"{hours}:{minutes:02d}:{secs:02d}" if hours else f"{minutes}:{secs:02d}"


def _adjust(spec: ExperimentSpec, *, quick: bool, slots: int | None,
            scale: float | None) -> ExperimentSpec:
    if quick:
        spec = spec.scaled(spec.quick_scale)
    if scale is not None:
        spec = spec.scaled(scale)
    if slots is not None:
        spec = spec.with_slots(slots)
    spec.validate()
    return spec


def sweep_work(spec: ExperimentSpec, done: int = 0) -> float:
    """Server-slot updates of the grid of ``spec`` (see dispatchlab.simulation.work_guard), computed
    from its shape, without listing its points (10^8 replications must not hang here);
    ``done`` points already stored are taken off pro rata."""
    from dispatchlab.simulation.work_guard import system_work

    points = len(spec.systems) * len(spec.policies) * len(spec.values) * spec.replications
    if points == 0:
        return 0.0
    work = 0.0
    for system_spec in spec.systems:
        for value in spec.values:
            system = system_spec.build(**{spec.axis: value})
            slots = spec._resolve_slots(system)
            work += system_work(system, slots, spec.replications) * len(spec.policies)
    return work * max(0.0, 1.0 - done / points)


@dataclass(frozen=True)
class SweepSize:
    """A grid's size from its shape: points, slots over all points, server-slot updates."""

    points: int
    slots: float
    work: float


def sweep_size(spec: ExperimentSpec) -> SweepSize:
    """The size of ``spec``'s grid without listing its points (see :func:`sweep_work`)."""
    points = len(spec.systems) * len(spec.policies) * len(spec.values) * spec.replications
    slots = 0.0
    for system_spec in spec.systems:
        for value in spec.values:
            system = system_spec.build(**{spec.axis: value})
            slots += float(spec._resolve_slots(system)) * spec.replications * len(spec.policies)
    return SweepSize(points, slots, sweep_work(spec))


def _rough_duration(work: float, workers: int = 1) -> str:
    """The work guard's duration of ``work`` on ``workers`` cores (about)."""
    from dispatchlab.simulation.work_guard import UPDATES_PER_SECOND

    seconds = int(math.ceil(work / UPDATES_PER_SECOND / max(workers, 1)))
    hours, rest = divmod(seconds, 3600)
    minutes, secs = divmod(rest, 60)
    if hours:
        return f"{hours} h {minutes:02d} min"
    return f"{minutes} min {secs:02d} s" if minutes else f"{secs} s"


def print_plan(spec: ExperimentSpec, store: Path, workers: int | None) -> None:
    """``--dry-run``: what the sweep would run, and nothing run (no store is created)."""
    from dispatchlab.core.pools import available_cores

    size = sweep_size(spec)
    done = 0
    if store.is_file():
        with Store(store) as db:
            done = db.count(spec.name)
    cores = workers or available_cores()
    console = stdout_console()
    console.print(f"[bold]{escape(spec.name)}[/bold] (dry run: nothing is run)")
    values = ", ".join(number(v) for v in spec.values)
    console.print(f"  axis {escape(spec.axis)}: {escape(values)}")
    for system_spec in spec.systems:
        console.print(f"  system {escape(str(system_spec.servers))}, "
                      f"M = {system_spec.dispatchers}")
    console.print("  policies: " + escape(", ".join(p.label or p.name for p in spec.policies)))
    system = spec.systems[0]
    table = Table(spec.axis, "slots a point" + (f" ({system.label or system.servers})"
                                                if len(spec.systems) > 1 else ""))
    for value in spec.values:
        table.add_row(number(value), integer(spec._resolve_slots(system.build(
            **{spec.axis: value}))))
    console.print(table)
    left = max(0.0, 1.0 - done / size.points) if size.points else 0.0
    console.print(
        f"  {integer(size.points)} points ({spec.replications} replication(s) each), "
        f"{size.slots:.3g} slots, {size.work:.3g} server-slot updates; "
        f"{integer(done)} already in {escape(str(store))}")
    console.print(
        f"  estimated time: {_rough_duration(size.work * left)} of CPU, about "
        f"{_rough_duration(size.work * left, cores)} on {cores} worker(s) "
        f"(at {UPDATES_PER_SECOND_TEXT} updates/s a core)")


def _run_and_write(spec: ExperimentSpec, *, store: Path, out: Path | None, workers: int | None,
                   cluster: str | None, progress: bool, yes: bool = False) -> None:
    from dispatchlab.specs.continuous_grid import is_continuous

    console = stderr_console()
    directory = _check_run_options(spec, out=out, workers=workers, cluster=cluster)
    created = not store.exists()
    try:
        with Store(store) as db:
            outcome, figures = _sweep_and_draw(spec, db, directory, workers=workers,
                                               cluster=cluster, progress=progress, yes=yes)
    except ValidationError:  # refused (an unreachable cluster): no new, empty store left
        if created:
            _remove_empty_store(store)
        raise
    rate = outcome.slots / outcome.seconds if outcome.seconds > 0 else math.nan
    console.print(
        f"{outcome.computed} computed, {outcome.skipped} already stored, "
        f"{len(outcome.failed)} failed, in {outcome.seconds:.1f} s ({number(rate, 3)} "
        f"{'jobs' if is_continuous(spec) else 'slots'}/s)")
    for description, error in outcome.failed:
        console.print(f"[red]failed[/red] {escape(description)}: {escape(error)}")
    console.print(f"wrote {escape(str(directory / 'points.csv'))} and {len(figures)} figure(s) "
                  f"in {escape(str(directory))}/")
    if outcome.failed:
        raise typer.Exit(1)


def _check_run_options(spec: ExperimentSpec, *, out: Path | None, workers: int | None,
                       cluster: str | None) -> Path:
    """What a run checks before any work, and ``--dry-run`` as well (a dry run with
    ``--workers 0`` had printed a plan "on 2 worker(s)"): the output folder."""
    require(workers is None or workers >= 1, "workers", f"must be ≥ 1 (got {workers})")
    require(cluster is None or CLUSTER_ADDRESS.match(cluster) is not None, "cluster",
            f"give a scheduler address like tcp://HOST:PORT (got {cluster!r})")
    directory = out or RESULTS_DIR / spec.name
    _check_output_directory(directory)
    return directory


def _sweep_and_draw(spec: ExperimentSpec, db: Store, directory: Path, *, workers: int | None,
                    cluster: str | None, progress: bool, yes: bool
                    ) -> tuple[SweepOutcome, list[Path]]:
    """Run the points of ``spec`` not yet in ``db``, then write its points and figures."""
    from dispatchlab.cli.sweep_files import continuous_work
    from dispatchlab.experiments.runner import run_experiment
    from dispatchlab.report.plots import write_figures
    from dispatchlab.simulation.work_guard import check_work
    from dispatchlab.specs.continuous_grid import is_continuous

    console = stderr_console()
    work = (continuous_work if is_continuous(spec) else sweep_work)(
        spec, db.count(spec.name))
    check_work(work, confirmed=yes, what=f"the sweep of {spec.name!r} (points not yet stored)")
    console.print(f"[bold]{escape(spec.name)}[/bold]: {len(spec.points())} points → "
                  f"{escape(str(db.path))}")
    try:
        if progress:
            with RichProgress(spec.name) as display:
                outcome = run_experiment(spec, store=db, workers=workers,
                                         cluster=cluster, progress=display)
        else:
            outcome = run_experiment(spec, store=db, workers=workers, cluster=cluster)
    except KeyboardInterrupt as interrupt:  # the run is marked interrupted; its points stay
        with stops_held():
            stored = db.count(spec.name)
        raise interrupt_saying(interrupt, f"{stored} point(s) of {spec.name} stored in "
                               f"{db.path}; the same command resumes") from None
    frame = db.frame(spec.name)
    directory.mkdir(parents=True, exist_ok=True)
    write_whole("out", directory / "points.csv", lambda path: to_csv(frame, path))
    try:
        figures = write_figures(spec, frame, directory, formats=("png",))
    except KeyError as error:  # the points are stored; only the figure cannot be drawn
        raise ValidationError("figures", f"unknown y quantity {error} (the points are "
                              "stored; fix the figure and run `dispatchlab report`)") from None
    return outcome, figures


def _remove_empty_store(store: Path) -> None:
    """Remove ``store`` (and SQLite's side files) if it holds no point."""
    with Store(store, readonly=True) as db:
        empty = db.query("SELECT COUNT(*) AS n FROM points")[0]["n"] == 0
    if empty:
        for path in (store, *(store.with_name(store.name + end)
                              for end in ("-wal", "-shm", "-journal"))):
            with contextlib.suppress(OSError):
                path.unlink()


def _check_output_directory(directory: Path) -> None:
    """Fail before any work when the output directory cannot be made; the folders made to
    find out are removed again (a run stopped or refused later left an empty folder)."""
    existing = directory
    while not existing.exists() and existing != existing.parent:
        existing = existing.parent
    try:
        directory.mkdir(parents=True, exist_ok=True)
    except OSError as error:
        raise ValidationError("out", f"cannot write to {str(directory)!r}: "
                              f"{error.strerror or error}") from None
    made = directory
    while made != existing:  # deepest first; only what this check made
        with contextlib.suppress(OSError):
            made.rmdir()
        made = made.parent


def _check_output_file(path: Path | None) -> None:
    if path is not None:
        require_writable_file(path, "output")


@app.command("experiment")
def experiment_command(
    name: Annotated[str | None, typer.Argument(
        help="A catalog experiment (see --list).", show_default=False)] = None,
    list_: Annotated[bool, typer.Option("--list", help="List the catalog and exit.")] = False,
    quick: Annotated[bool, typer.Option(
        "--quick", help="A small version: fewer points and slots (smoke runs, tests).")] = False,
    slots: SlotsOption = None,
    scale: ScaleOption = None,
    store: StoreOption = Path(DEFAULT_STORE),
    out: OutOption = None,
    workers: WorkersOption = None,
    cluster: ClusterOption = None,
    progress: ProgressOption = True,
    dry_run: DryRunOption = False,
    import_: options.Import = None,
    yes: options.Yes = False,
) -> None:
    """Run a catalog experiment of the papers; resumes if interrupted."""
    from dispatchlab.core.imports import import_user_modules
    from dispatchlab.experiments.catalog import build_experiment, catalog_entry, entries

    import_user_modules(import_ or [])
    if list_ or name is None:
        table = Table("experiment", "what", "paper", "points", "slots", "work",
                      "CPU time", title="Catalog experiments (estimated size of the full "
                      "run; --quick is smaller)")
        for entry in entries():
            size = sweep_size(build_experiment(entry.name, pilots=False))
            table.add_row(entry.name, escape(entry.title), escape(entry.paper),
                          integer(size.points), f"{size.slots:.3g}", f"{size.work:.3g}",
                          _rough_duration(size.work))
        stdout_console().print(table)
        stdout_console().print(
            "work: server-slot updates (N + M a slot); CPU time at "
            f"{UPDATES_PER_SECOND_TEXT} updates/s on one core, split over the workers")
        return
    spec = _adjust(build_experiment(name, quick=quick), quick=quick, slots=slots, scale=scale)
    if dry_run:
        _check_run_options(spec, out=out, workers=workers, cluster=cluster)
        print_plan(spec, store, workers)
        return
    _run_and_write(spec, store=store, out=out, workers=workers, cluster=cluster,
                   progress=progress, yes=yes)
    summary = catalog_entry(name).summary
    if summary is not None:  # the experiment's closing note, from the stored points
        with Store(store) as db:
            note = summary(db.frame(spec.name), out or RESULTS_DIR / spec.name)
        stdout_console().print(escape(note))


@app.command("sweep")
def sweep_command(
    spec_file: Annotated[Path, typer.Argument(
        help="An experiment spec: TOML (see examples/sweep.toml) or the JSON of a report.",
        show_default=False)],
    slots: SlotsOption = None,
    scale: ScaleOption = None,
    store: StoreOption = Path(DEFAULT_STORE),
    out: OutOption = None,
    workers: WorkersOption = None,
    cluster: ClusterOption = None,
    progress: ProgressOption = True,
    dry_run: DryRunOption = False,
    import_: options.Import = None,
    yes: options.Yes = False,
) -> None:
    """Run the grid of a spec file; resumes if interrupted."""
    from dispatchlab.cli import sweep_files
    from dispatchlab.core.imports import import_user_modules
    from dispatchlab.specs.continuous_grid import is_continuous

    import_user_modules(import_ or [])  # asked for here; a spec file never imports
    spec = sweep_files.read_sweep_file(spec_file)
    continuous = is_continuous(spec)
    spec = (sweep_files.adjusted(spec, slots=slots, scale=scale) if continuous
            else _adjust(spec, quick=False, slots=slots, scale=scale))
    if dry_run:
        _check_run_options(spec, out=out, workers=workers, cluster=cluster)
        if continuous:
            done = 0
            if store.is_file():
                with Store(store) as db:
                    done = db.count(spec.name)
            sweep_files.print_continuous_plan(spec, done, store)
        else:
            print_plan(spec, store, workers)
        return
    _run_and_write(spec, store=store, out=out, workers=workers, cluster=cluster,
                   progress=progress, yes=yes)


@app.command("results")
def results_command(
    experiment: Annotated[str | None, typer.Argument(
        help="Only this experiment (default: all).", show_default=False)] = None,
    policy: Annotated[str | None, typer.Option(
        help="Only this policy (its label or its name).", show_default=False)] = None,
    system: Annotated[str | None, typer.Option(
        help="Only this system label.", show_default=False)] = None,
    status: Annotated[str, typer.Option(help="done, failed or all.")] = "done",
    format_: Annotated[str, typer.Option(
        "--format", help="table, csv, parquet or json.")] = "table",
    output: Annotated[Path | None, typer.Option(
        "--output", "-o", help="Write to this file (csv/json default to stdout).",
        show_default=False)] = None,
    runs: Annotated[bool, typer.Option(
        "--runs", help="List the runs instead: when each started and ended, its status "
        "(running, finished, interrupted, killed), executor and points.")] = False,
    store: StoreOption = Path(DEFAULT_STORE),
) -> None:
    """List, filter and export the stored points (or, with --runs, the runs).

    In CSV, a text cell that begins with = + - @ (or a tab / CR) is written with a leading
    apostrophe, so that a spreadsheet shows it as text and never runs it as a formula;
    numbers are written as they are."""
    require(format_ in EXPORT_FORMATS, "format", f"allowed: {', '.join(EXPORT_FORMATS)}")
    require(status in STATUS_FILTERS, "status", f"allowed: {', '.join(STATUS_FILTERS)}")
    require(store.is_file(), "store", f"no store at {store} (run an experiment first)")
    _check_output_file(output)
    with Store(store, readonly=True) as db:
        _note_schema(db)
        if experiment is not None:
            require(experiment in db.experiment_names(), "experiment",
                    f"{experiment!r} is not stored; stored: "
                    + (", ".join(db.experiment_names()) or "nothing"))
        if runs:
            _print_runs(db.runs(experiment), show_experiment=experiment is None)
            return
        frame = db.frame(experiment, status=None if status == "all" else status,
                         policy=policy, system=system)
    if format_ == "parquet":
        require(output is not None, "output", "parquet needs --output FILE")
        assert output is not None
        write_whole("output", output, lambda path: frame.to_parquet(path, index=False))
    elif format_ in ("csv", "json"):
        text = (to_csv(frame) if format_ == "csv"
                else frame.to_json(orient="records", lines=True))
        if output is not None:
            write_whole("output", output, lambda path: path.write_text(text, encoding="utf-8"))
        else:
            sys.stdout.write(text)
    else:
        _print_table(frame, show_experiment=experiment is None)
        return
    if output is not None:
        stderr_console().print(f"wrote {len(frame)} rows to {escape(str(output))}")


def _print_runs(runs: list[dict], show_experiment: bool) -> None:
    """The runs of a store, oldest first (a run killed without a word stays ``running``
    until the next sweep of its experiment marks it ``killed``)."""
    console = stdout_console()
    if not runs:
        console.print("no stored runs match")
        return
    table = Table(title=f"{len(runs)} run{'s' * (len(runs) != 1)}")
    columns = ["experiment"] * show_experiment + ["started", "finished", "status",
                                                  "executor", "points (planned, stored)"]
    for column in columns:
        table.add_column(column)
    for run in runs:
        cells = [run["experiment"]] * show_experiment + [
            local_time(run["started"]), local_time(run["finished"]), run["status"],
            run["executor"], f"{integer(run['points_planned'])}, "
                             f"{integer(run['points_stored'])}"]
        table.add_row(*(escape(str(cell)) for cell in cells))
    console.print(table)


def _note_schema(db: Store) -> None:
    """Say so when a store of another schema version is read."""
    if db.schema_note is not None:
        stderr_console().print(escape(db.schema_note), soft_wrap=True)


def _print_table(frame, show_experiment: bool) -> None:  # frame: pandas.DataFrame
    console = stdout_console()
    if frame.empty:
        console.print("no stored points match")
        return
    continuous = (frame["time"] == "continuous") if "time" in frame.columns else None
    if continuous is None or not continuous.any():
        listed = LIST_COLUMNS
    elif continuous.all():  # (their budget is jobs)
        listed = [c for c in LIST_COLUMNS[:6] if c != "slots"] + ["jobs"] + CONTINUOUS_COLUMNS \
            + LIST_COLUMNS[-2:]
    else:
        listed = LIST_COLUMNS[:-2] + CONTINUOUS_COLUMNS + LIST_COLUMNS[-2:]
    columns = [c for c in listed if c in frame.columns
               and (show_experiment or c != "experiment")]
    # names are never cut to "pi-col…": a text column is at least as wide as its longest
    # name (up to 40 characters) and folds onto a second line beyond that
    table = Table(title=f"{len(frame)} stored points")
    for column in columns:
        values = frame[column]
        text = values.dtype == object
        widest = max([len(str(v)) for v in values] + [len(HEADERS.get(column, column))])
        table.add_column(HEADERS.get(column, column), overflow="fold",
                         min_width=min(widest, 40) if text else None)
    for row in frame[columns].itertuples(index=False):
        cells = []
        for column, value in zip(columns, row, strict=True):
            if value is None or isinstance(value, float) and math.isnan(value):
                cells.append(MISSING)  # a failed or unstable point's missing number
            elif column in ("replication", "slots", "jobs"):
                cells.append(integer(value))
            elif isinstance(value, float):
                cells.append(number(value))
            else:
                cells.append(escape(str(value)))
        table.add_row(*cells)
    console.print(table)


@app.command("report")
def report_command(
    experiment: Annotated[str, typer.Argument(
        help="A stored experiment (see `dispatchlab results`).", show_default=False)],
    store: StoreOption = Path(DEFAULT_STORE),
    out: OutOption = None,
    import_: options.Import = None,
) -> None:
    """Write the figures (PNG, SVG) and one self-contained HTML page from the store.

    A stored policy not registered here (a user's own: ``--import`` its module) is left
    out, with one ``note:`` line saying so (on the page too); the others are rendered."""
    from dispatchlab.core.imports import import_user_modules
    from dispatchlab.report.stored import stored_spec, unrendered_policies

    require(store.is_file(), "store", f"no store at {store} (run an experiment first)")
    import_user_modules(import_ or [])  # asked for here; a store never imports
    directory = out or RESULTS_DIR / experiment
    with Store(store, readonly=True) as db:
        _note_schema(db)
        stored_spec(db, experiment)  # refused before the output directory is made,
        db.points(experiment, status=None)  # and so is a damaged row (a received store)
        db.runs(experiment)
        _check_output_directory(directory)
        left_out = unrendered_policies(db, experiment)
        if left_out:
            stderr_console().print(
                "note: report: not rendered (not registered in this installation; --import "
                "the module that registers it): "
                + ", ".join(f"policy {escape(repr(p.name))} ({escape(p.display)})"
                            for p in left_out), soft_wrap=True)
        from dispatchlab.report.html import write_report  # pandas, matplotlib: ≈ 2 s

        try:
            path = write_report(db, experiment, directory)
        except KeyError as error:
            raise ValidationError("figures", f"unknown y quantity {error}") from None
    stderr_console().print(f"wrote {escape(str(path))}")
