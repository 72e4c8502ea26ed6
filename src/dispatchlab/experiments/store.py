"""The results store: one SQLite file per project directory, one row per point.

Why SQLite, and why these settings:

- One file, no server, queryable with SQL from any tool (``sqlite3``, pandas),
  exportable to CSV/Parquet; a sweep needs nothing set up.
- Only the coordinator (the process that runs the sweep) writes, one short
  transaction per finished point; workers never touch the file. Points in flight
  are not in the store, so a crash loses at most those.
- WAL journal mode: readers (``dispatchlab results``, a report) never block the
  writer and vice versa, and a process killed mid-write (``kill -9``) leaves the
  last committed transactions intact — the WAL is replayed on the next open, so
  the file is never left corrupt. ``synchronous=NORMAL`` is durable against
  process crashes (only an OS crash can lose the last transactions, never corrupt).
- ``BEGIN IMMEDIATE`` takes the write lock at the start of each transaction, so
  two sweeps writing into one store serialize cleanly instead of failing with
  "database is locked" on lock upgrade; a ``busy_timeout`` makes the waiting
  writer retry for up to 60 s instead of erroring.
- ``UNIQUE(experiment, point_key)`` with an upsert that never overwrites a
  finished point: two concurrent sweeps cannot duplicate a row, and a point
  already stored is not recomputed (the runner asks :meth:`Store.done_keys` first).
- Claims: a sweep claims the points it is about to compute (table ``claims``, a lease
  of :data:`LEASE_SECONDS` renewed by a heartbeat), so a second sweep of the same spec
  skips them instead of computing them again; a claim whose run died (its heartbeat
  stopped, or its pid is gone on this host) is taken over, so nothing is lost.
- Runs: each run row carries a heartbeat; a run still ``running`` whose process is
  gone is marked ``killed`` by the next sweep that starts (:meth:`Store.mark_dead_runs`).
- Readers (``dispatchlab results``, ``report``) open the file read-only
  (``Store(path, readonly=True)``), so a store on read-only media can be read.
"""

from __future__ import annotations

import json
import math
import os
import socket
import sqlite3
import subprocess
import time
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from functools import cache
from pathlib import Path
from typing import Any

from dispatchlab.core.errors import ValidationError, require
from dispatchlab.simulation.result import flat_row

DEFAULT_STORE = "dispatchlab-results.sqlite"
BUSY_TIMEOUT_MS = 60_000
SCHEMA_VERSION = 1
STATUSES = ("done", "failed")
#: a claim (and a run's liveness) expires this long after its last heartbeat
LEASE_SECONDS = 60.0
#: the coordinator renews its claims and heartbeat this often
HEARTBEAT_SECONDS = 10.0
RUN_STATUSES = ("running", "finished", "interrupted", "killed")
#: the Result scalars copied into columns for querying (the full Result is in result_json)
METRIC_COLUMNS = (
    "mean_total_queue", "ci_low", "ci_high", "mean_delay", "epsilon_total_queue",
    "messages_per_arrival", "delay_p99", "lower_bound_total_queue", "heavy_traffic_limit",
    "slots_per_second",
)
TEXT_METRICS = ("stability",)
#: how far a stored load may sit on the wrong side of 1 for its ε (rounding near ρ = 1)
LOAD_SLACK = 1e-9

_SCHEMA = f"""
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS experiments (
    name TEXT PRIMARY KEY,
    spec_json TEXT NOT NULL,
    created REAL NOT NULL,
    updated REAL NOT NULL,
    code_version TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS runs (
    run_id TEXT PRIMARY KEY,
    experiment TEXT NOT NULL,
    started REAL NOT NULL,
    finished REAL,
    status TEXT NOT NULL,  -- running | finished | interrupted | killed
    executor TEXT NOT NULL,
    host TEXT NOT NULL,
    pid INTEGER NOT NULL,
    code_version TEXT NOT NULL,
    points_planned INTEGER NOT NULL DEFAULT 0,
    points_computed INTEGER NOT NULL DEFAULT 0,   -- results received from workers
    points_stored INTEGER NOT NULL DEFAULT 0,     -- of those, rows written (not already done)
    points_failed INTEGER NOT NULL DEFAULT 0
);
CREATE TABLE IF NOT EXISTS points (
    id INTEGER PRIMARY KEY,
    experiment TEXT NOT NULL,
    point_key TEXT NOT NULL,
    status TEXT NOT NULL CHECK (status IN ('done', 'failed')),
    system TEXT NOT NULL,
    policy TEXT NOT NULL,
    policy_label TEXT NOT NULL,
    axis TEXT NOT NULL,
    x REAL NOT NULL,
    load REAL,
    epsilon REAL,
    replication INTEGER NOT NULL,
    slots INTEGER NOT NULL,
    seed TEXT NOT NULL,
    {", ".join(f"{c} REAL" for c in METRIC_COLUMNS)},
    stability TEXT,
    spec_json TEXT NOT NULL,
    result_json TEXT,
    error TEXT,
    code_version TEXT NOT NULL,
    run_id TEXT NOT NULL,
    attempts INTEGER NOT NULL DEFAULT 1,
    worker TEXT,
    seconds REAL,
    finished REAL NOT NULL,
    UNIQUE (experiment, point_key)
);
CREATE INDEX IF NOT EXISTS points_by_experiment ON points (experiment, status);
CREATE TABLE IF NOT EXISTS claims (
    experiment TEXT NOT NULL,
    point_key TEXT NOT NULL,
    run_id TEXT NOT NULL,
    expires REAL NOT NULL,
    PRIMARY KEY (experiment, point_key)
);
"""
#: columns added after the first release, added to older stores when opened for writing
_ADDED_COLUMNS = {"runs": (("heartbeat", "REAL"),)}
#: what a cell of a declared column type may hold (SQLite keeps any value in any column)
_CELL_TYPES: dict[str, tuple[type, ...]] = {"REAL": (int, float), "INTEGER": (int,),
                                            "TEXT": (str,)}


@cache
def _schema_columns() -> dict[str, dict[str, tuple[tuple[type, ...], bool]]]:
    """table -> column -> (the Python types its cells may have, whether NULL is allowed),
    from this module's own schema (never from the file being read)."""
    db = sqlite3.connect(":memory:")
    try:
        db.executescript(_SCHEMA)
        for table, columns in _ADDED_COLUMNS.items():
            for name, kind in columns:
                db.execute(f"ALTER TABLE {table} ADD COLUMN {name} {kind}")
        return {table: {row[1]: (_CELL_TYPES.get(row[2].upper(), (object,)), not row[3])
                        for row in db.execute(f"PRAGMA table_info({table})")}
                for table in ("experiments", "runs", "points")}
    finally:
        db.close()


def _short(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 40 else text[:37] + "..."


def _integer_text(text: str | None) -> bool:
    """Whether ``text`` is a schema version's integer (digits, no sign, no spaces)."""
    return text is not None and text.isascii() and text.isdigit()


def _pid_alive(pid: int) -> bool:
    """Whether a process ``pid`` exists on this host."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # exists, owned by someone else
        return True
    except OSError:
        return False
    return True


@cache
def code_version() -> str:
    """``dispatchlab.__version__`` plus ``git describe`` of the source tree when available."""
    from dispatchlab.core.version import __version__

    source = Path(__file__).resolve().parent
    try:
        described = subprocess.run(
            ["git", "describe", "--always", "--dirty", "--tags"], cwd=source,
            capture_output=True, text=True, timeout=5, check=True).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        described = ""
    return f"{__version__}+{described}" if described else __version__


class Store:
    """A results database file (created on first use).

    Use as a context manager or call :meth:`close`. All writes go through
    :meth:`_write` (``BEGIN IMMEDIATE`` … ``COMMIT``).
    """

    def __init__(self, path: str | Path = DEFAULT_STORE, *, readonly: bool = False) -> None:
        self.path = Path(path)
        self.readonly = readonly
        self.schema_version: int | str = SCHEMA_VERSION
        require(not self.path.is_dir(), "store", f"{self.path} is a directory, not a file")
        require(self.path.parent.exists() or str(self.path.parent) == "", "store",
                f"directory {self.path.parent} does not exist")
        if readonly:
            require(self.path.is_file(), "store", f"no store at {self.path}")
            self._db = self._open_readonly()
            return
        try:
            self._db = sqlite3.connect(self.path, timeout=BUSY_TIMEOUT_MS / 1000,
                                       isolation_level=None)
            self._db.execute(f"PRAGMA busy_timeout = {BUSY_TIMEOUT_MS}")
            self._refuse_unknown_schema()  # before anything is written, WAL mode included
            self._db.execute("PRAGMA journal_mode = WAL")
            self._db.execute("PRAGMA synchronous = NORMAL")
            with self._write() as db:
                for statement in _SCHEMA.split(";"):
                    if statement.strip():
                        db.execute(statement)
                for table, columns in _ADDED_COLUMNS.items():
                    present = {row[1] for row in db.execute(f"PRAGMA table_info({table})")}
                    for name, kind in columns:
                        if name not in present:
                            db.execute(f"ALTER TABLE {table} ADD COLUMN {name} {kind}")
                db.execute("INSERT OR IGNORE INTO meta VALUES ('schema_version', ?)",
                           (str(SCHEMA_VERSION),))
        except sqlite3.DatabaseError as error:
            raise ValidationError("store", f"{self.path} is not a dispatchlab store "
                                  f"({error})") from None
        except ValidationError:
            self._db.close()
            raise

    def _stored_schema(self, db: sqlite3.Connection) -> str | None:
        """The ``schema_version`` the file records (None for a new file), as stored."""
        tables = {r[0] for r in db.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
        if "meta" not in tables:
            return None
        rows = db.execute("SELECT value FROM meta WHERE key = 'schema_version'").fetchall()
        if not rows:
            return None
        value = rows[0][0]
        return value if isinstance(value, str) else repr(value)

    def _refuse_unknown_schema(self) -> None:
        """Writing a schema this code does not know could break what a newer dispatchlab
        wrote (or damage it further): refused, with one line."""
        version = self._stored_schema(self._db)
        require(version is None or version == str(SCHEMA_VERSION), "store",
                f"{self.path}: schema version {_short(version)} is not one this dispatchlab "
                f"writes (version {SCHEMA_VERSION}): refused for writing; "
                + ("`dispatchlab results` and `report` can still read it"
                   if _integer_text(version) else "not a number: a damaged store"))

    def _check_readable_schema(self, db: sqlite3.Connection) -> None:
        """Reading is safe for any integer version, since every row read is checked
        against this version's columns (:meth:`_checked`); a version that is not an
        integer is a damaged ``meta`` table, refused."""
        version = self._stored_schema(db)
        self.schema_version = SCHEMA_VERSION if version is None else version
        if version is not None and not _integer_text(version):
            raise ValidationError("store", f"{self.path}: schema version {_short(version)} "
                                  "is not a number (a damaged store): refused")

    @property
    def schema_note(self) -> str | None:
        """One line when the store's schema is not this version's (read-only use)."""
        if str(self.schema_version) == str(SCHEMA_VERSION):
            return None
        return (f"note: store: {self.path} has schema version {self.schema_version}, this "
                f"dispatchlab version {SCHEMA_VERSION}: read only, each row checked "
                f"against version {SCHEMA_VERSION}'s columns")

    def _open_readonly(self) -> sqlite3.Connection:
        """Open for reading only. A WAL store needs its -shm file: where it cannot be
        created (read-only media) the file is opened ``immutable`` (nobody can write it)."""
        uri = self.path.resolve().as_uri()
        last: sqlite3.DatabaseError | None = None
        for options in ("mode=ro", "mode=ro&immutable=1"):
            db: sqlite3.Connection | None = None
            try:
                db = sqlite3.connect(f"{uri}?{options}", uri=True,
                                     timeout=BUSY_TIMEOUT_MS / 1000, isolation_level=None)
                db.execute(f"PRAGMA busy_timeout = {BUSY_TIMEOUT_MS}")
                tables = {r[0] for r in db.execute(
                    "SELECT name FROM sqlite_master WHERE type = 'table'")}
            except sqlite3.DatabaseError as error:
                if db is not None:
                    db.close()  # a failed attempt must not keep the file open
                last = error
                continue
            if not {"meta", "experiments", "runs", "points"} <= tables:
                db.close()
                raise ValidationError("store", f"{self.path} is not a dispatchlab store "
                                      "(its tables are missing)")
            try:
                self._check_readable_schema(db)
            except sqlite3.DatabaseError as error:  # a meta table of other columns
                db.close()
                raise ValidationError("store", f"{self.path} is not a dispatchlab store "
                                      f"({error})") from None
            except ValidationError:
                db.close()
                raise
            return db
        raise ValidationError("store", f"{self.path} cannot be read as a dispatchlab store "
                              f"({last})")

    # -- plumbing -------------------------------------------------------------------------

    @contextmanager
    def _write(self) -> Iterator[sqlite3.Connection]:
        """One write transaction: takes the write lock up front (BEGIN IMMEDIATE)."""
        require(not self.readonly, "store", f"{self.path} is open read-only")
        self._db.execute("BEGIN IMMEDIATE")
        try:
            yield self._db
        except BaseException:
            self._db.execute("ROLLBACK")
            raise
        self._db.execute("COMMIT")

    def close(self) -> None:
        self._db.close()

    def __enter__(self) -> Store:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def query(self, sql: str, parameters: tuple[Any, ...] = ()) -> list[sqlite3.Row]:
        cursor = self._db.cursor()
        cursor.row_factory = sqlite3.Row
        return cursor.execute(sql, parameters).fetchall()

    def _checked(self, table: str, row: sqlite3.Row) -> dict[str, Any]:
        """``row`` of ``table`` as a dict, each cell of the type its column declares: a
        store someone sent you (or a hand edit) can hold text in a REAL column, which
        would surface as a traceback far from here; it is one error line instead."""
        data = dict(row)
        added = {name for name, _ in _ADDED_COLUMNS.get(table, ())}
        for column, (types, nullable) in _schema_columns()[table].items():
            if column not in data and column in added:  # an older store, opened read-only
                data[column] = None
            require(column in data, "store", f"{self.path}: table {table} has no column "
                    f"{column!r} (not a dispatchlab store, or a damaged one)")
            value = data[column]
            ok = (nullable if value is None
                  else isinstance(value, types) and not isinstance(value, bool))
            if not ok:
                key = data.get("id", data.get("run_id", data.get("name")))
                raise ValidationError("store", f"{self.path}: {table} row {key!r}: column "
                                      f"{column} holds {_short(value)}, not "
                                      f"{'/'.join(t.__name__ for t in types)} (a damaged or "
                                      "hand-edited store)")
        return data

    # -- experiments and runs -------------------------------------------------------------

    def save_experiment(self, name: str, spec_json: str) -> None:
        """Record (or update) the spec of ``name``; the report redraws from it."""
        now = time.time()
        with self._write() as db:
            db.execute(
                "INSERT INTO experiments VALUES (?, ?, ?, ?, ?) ON CONFLICT(name) DO UPDATE "
                "SET spec_json = excluded.spec_json, updated = excluded.updated, "
                "code_version = excluded.code_version",
                (name, spec_json, now, now, code_version()))

    def experiment_spec(self, name: str) -> str | None:
        rows = self.query("SELECT * FROM experiments WHERE name = ?", (name,))
        return self._checked("experiments", rows[0])["spec_json"] if rows else None

    def experiment_names(self) -> list[str]:
        return [r["name"] for r in self.query("SELECT name FROM experiments ORDER BY name")]

    def start_run(self, experiment: str, executor: str, planned: int) -> str:
        """Record a new ``running`` run (after marking the dead ones ``killed``)."""
        self.mark_dead_runs()
        run_id = uuid.uuid4().hex
        now = time.time()
        with self._write() as db:
            db.execute(
                "INSERT INTO runs (run_id, experiment, started, status, executor, host, pid, "
                "code_version, points_planned, heartbeat) "
                "VALUES (?, ?, ?, 'running', ?, ?, ?, ?, ?, ?)",
                (run_id, experiment, now, executor, socket.gethostname(), os.getpid(),
                 code_version(), planned, now))
        return run_id

    def finish_run(self, run_id: str, status: str) -> None:
        """Mark the run ``status`` and release its claims (its unfinished points are free)."""
        require(status in RUN_STATUSES, "status", f"allowed: {', '.join(RUN_STATUSES)}")
        with self._write() as db:
            db.execute("UPDATE runs SET finished = ?, status = ? WHERE run_id = ?",
                       (time.time(), status, run_id))
            db.execute("DELETE FROM claims WHERE run_id = ?", (run_id,))

    def heartbeat(self, run_id: str) -> None:
        """The run is alive: renew its heartbeat and the leases of its claims."""
        now = time.time()
        with self._write() as db:
            db.execute("UPDATE runs SET heartbeat = ? WHERE run_id = ?", (now, run_id))
            db.execute("UPDATE claims SET expires = ? WHERE run_id = ?",
                       (now + LEASE_SECONDS, run_id))

    def mark_dead_runs(self) -> list[str]:
        """Mark ``killed`` every ``running`` run whose process is gone: its pid no longer
        exists on this host, or its heartbeat is older than LEASE_SECONDS (any host)."""
        now, host = time.time(), socket.gethostname()
        dead = []
        for run in self.query("SELECT run_id, host, pid, heartbeat, started FROM runs "
                              "WHERE status = 'running'"):
            beat = run["heartbeat"] if run["heartbeat"] is not None else None
            gone = run["host"] == host and not _pid_alive(int(run["pid"]))
            stale = beat is not None and now - beat > LEASE_SECONDS
            if gone or stale:
                dead.append(run["run_id"])
        if dead:
            with self._write() as db:
                for run_id in dead:
                    db.execute("UPDATE runs SET status = 'killed' WHERE run_id = ? "
                               "AND status = 'running'", (run_id,))
                    db.execute("DELETE FROM claims WHERE run_id = ?", (run_id,))
        return dead

    def claim(self, experiment: str, run_id: str, keys: list[str]) -> set[str]:
        """Claim the points ``keys`` for ``run_id``; return those it now holds.

        A point already claimed by another live run (lease not expired) is not taken;
        an expired lease, or one whose run is no longer ``running``, is taken over.
        """
        now = time.time()
        with self._write() as db:
            db.executemany(
                "INSERT INTO claims (experiment, point_key, run_id, expires) VALUES (?, ?, ?, ?) "
                "ON CONFLICT(experiment, point_key) DO UPDATE SET run_id = excluded.run_id, "
                "expires = excluded.expires WHERE claims.run_id = excluded.run_id "
                "OR claims.expires < ? OR claims.run_id NOT IN "
                "(SELECT run_id FROM runs WHERE status = 'running')",
                [(experiment, key, run_id, now + LEASE_SECONDS, now) for key in keys])
        rows = self.query("SELECT point_key FROM claims WHERE experiment = ? AND run_id = ?",
                          (experiment, run_id))
        return {r["point_key"] for r in rows} & set(keys)

    def runs(self, experiment: str | None = None) -> list[dict[str, Any]]:
        sql, args = "SELECT * FROM runs", ()
        if experiment is not None:
            sql, args = sql + " WHERE experiment = ?", (experiment,)
        return [self._checked("runs", r) for r in self.query(sql + " ORDER BY started", args)]

    # -- points ---------------------------------------------------------------------------

    def done_keys(self, experiment: str) -> set[str]:
        """Keys of the points of ``experiment`` already finished (failed ones are retried)."""
        rows = self.query("SELECT point_key FROM points WHERE experiment = ? AND status = 'done'",
                          (experiment,))
        return {r["point_key"] for r in rows}

    def record(self, run_id: str, point: dict[str, Any], *, result: dict[str, Any] | None = None,
               error: str | None = None, worker: str = "", seconds: float = 0.0) -> bool:
        """Store one finished (``result``) or failed (``error``) point in one transaction.

        Returns whether a row was written: a point already ``done`` is never
        overwritten (another sweep finished it first); a failed row is replaced.
        """
        from dispatchlab.specs.continuous_grid import ContinuousSystemSpec, is_continuous
        from dispatchlab.specs.run import PolicySpec, SystemSpec  # the policies: numba

        status = "done" if result is not None else "failed"
        metrics = result or {}
        policy = point["policy"]
        system = (ContinuousSystemSpec.from_dict(point["system"], "system")
                  if is_continuous(point) else SystemSpec.from_dict(point["system"]))
        values = {
            "experiment": point["experiment"], "point_key": point["key"], "status": status,
            "system": system.name, "policy": policy["name"],
            "policy_label": PolicySpec.from_dict(policy).display,
            "axis": point["axis"], "x": point["value"],
            "load": metrics.get("load"), "epsilon": metrics.get("epsilon"),
            "replication": point["replication"], "slots": point["slots"],
            "seed": str(point["seed"]),
            **{c: metrics.get(c) for c in METRIC_COLUMNS + TEXT_METRICS},
            "spec_json": json.dumps(point, sort_keys=True),
            "result_json": json.dumps(result, sort_keys=True) if result is not None else None,
            "error": error, "code_version": code_version(), "run_id": run_id,
            "worker": worker, "seconds": seconds, "finished": time.time(),
        }
        columns = ", ".join(values)
        marks = ", ".join("?" for _ in values)
        updates = ", ".join(f"{c} = excluded.{c}" for c in values
                            if c not in ("experiment", "point_key"))
        with self._write() as db:
            cursor = db.execute(
                f"INSERT INTO points ({columns}) VALUES ({marks}) "
                f"ON CONFLICT(experiment, point_key) DO UPDATE SET {updates}, "
                "attempts = points.attempts + 1 WHERE points.status != 'done'",
                tuple(values.values()))
            written = cursor.rowcount > 0
            counter = "points_computed" if result is not None else "points_failed"
            db.execute(f"UPDATE runs SET {counter} = {counter} + 1, "
                       "points_stored = points_stored + ? WHERE run_id = ?",
                       (int(written and result is not None), run_id))
        return written

    def points(self, experiment: str | None = None, *, status: str | None = "done",
               policy: str | None = None, system: str | None = None) -> list[dict[str, Any]]:
        """Stored rows (dicts with the columns; ``result`` parsed), filtered; ``policy``
        matches a point's label or its policy name."""
        clauses, args = [], []
        for column, value in (("experiment", experiment), ("status", status),
                              ("system", system)):
            if value is not None:
                clauses.append(f"{column} = ?")
                args.append(value)
        if policy is not None:  # a label (JSQ) or a registered name (jsq)
            clauses.append("(policy_label = ? OR policy = ?)")
            args.extend([policy, policy])
        where = f" WHERE {' AND '.join(clauses)}" if clauses else ""
        rows = self.query(f"SELECT * FROM points{where} ORDER BY experiment, system, "
                          "policy_label, x, replication", tuple(args))
        out = []
        for row in rows:
            data = self._checked("points", row)
            self._within_model(data)
            data["result"] = self._result(data) if data["result_json"] else None
            out.append(data)
        return out

    def _within_model(self, data: dict[str, Any]) -> None:
        """Refuse a row the model cannot have produced (a hand edit, or a store someone
        sent you): a load ρ that is not a positive number, a slack ε that is not finite or
        whose sign contradicts ρ (ε = μ_Σ(1 − ρ)), or a "stable" run at ρ ≥ 1. Such a row
        (ε = −5) had been the smallest ε of a limit on the Reproductions page."""
        load, epsilon = data["load"], data["epsilon"]
        problem = None
        if load is not None and not (math.isfinite(load) and load > 0):
            problem = f"its load ρ = {load!r} is not a number > 0"
        elif epsilon is not None and not math.isfinite(epsilon):
            problem = f"its ε = {epsilon!r} is not finite"
        elif (load is not None and epsilon is not None
              and (load < 1 - LOAD_SLACK and epsilon <= 0
                   or load > 1 + LOAD_SLACK and epsilon >= 0)):
            problem = (f"its ε = {epsilon:g} contradicts its load ρ = {load:g} "
                       "(ε = μ_Σ(1 − ρ))")
        elif data["stability"] == "stable" and (
                load is not None and load >= 1 or epsilon is not None and epsilon <= 0):
            problem = "it is marked stable at ρ ≥ 1, where no policy is"
        require(problem is None, "store", f"{self.path}: points row {data['id']}: {problem} "
                "(a damaged or hand-edited store)")

    def _result(self, data: dict[str, Any]) -> dict[str, Any]:
        try:
            result = json.loads(data["result_json"])
        except ValueError as error:  # json.JSONDecodeError
            raise ValidationError("store", f"{self.path}: points row {data['id']}: its result "
                                  f"is not JSON ({error})") from None
        require(isinstance(result, dict), "store", f"{self.path}: points row {data['id']}: "
                f"its result is {_short(result)}, not a JSON object")
        return result

    def frame(self, experiment: str | None = None, **filters: Any):  # -> pandas.DataFrame
        """The stored points as a DataFrame: the store's columns plus each Result as the
        flat row of :func:`dispatchlab.simulation.result.flat_row` (``diag.*``, ``params.*``, …)."""
        import pandas as pd

        records = []
        for row in self.points(experiment, **filters):
            record = {k: v for k, v in row.items() if k not in ("result", "result_json",
                                                                 "spec_json")}
            record["family"] = _family(row.get("spec_json"))
            for key, value in flat_row(row["result"] or {}).items():
                record.setdefault(key, value)  # the store's own columns come first
            records.append(record)
        return pd.DataFrame.from_records(records)

    def count(self, experiment: str, status: str = "done") -> int:
        rows = self.query("SELECT COUNT(*) AS n FROM points WHERE experiment = ? AND status = ?",
                          (experiment, status))
        return int(rows[0]["n"])

    def integrity_ok(self) -> bool:
        return self.query("PRAGMA integrity_check")[0][0] == "ok"



def _family(spec_json: Any) -> str:
    """The system family a stored point's system is a size of (specs.family), "" if none or
    if the record does not say (a store is data: nothing in it is trusted)."""
    try:
        family = json.loads(spec_json)["system"].get("family", "")
    except (TypeError, ValueError, KeyError, AttributeError):
        return ""
    return family if isinstance(family, str) else ""
