"""Compact a results store for committing: drop the bulky per-point arrays of each stored
``Result`` that no claim reads, keep every scalar, CI and spec.

    python -m dispatchlab.experiments.compact STORE [FIELD ...]

The default field is ``total_queue_distribution`` (the ΣQ histogram of every point, up to
4096 bins: ~85 % of a heavy-traffic store's bytes). Dropped fields become empty lists, so
a compacted point still loads as a :class:`~dispatchlab.simulation.result.Result`; the
store's ``meta`` table names what was dropped (key ``dropped_fields``). Compacting twice
changes nothing; new points stored later keep their arrays until the next compaction.
"""

from __future__ import annotations

import json
import sqlite3
import sys
from pathlib import Path

from dispatchlab.core.errors import ValidationError, require
from dispatchlab.experiments.store import Store

#: the Result fields a compaction may drop: lists that no stored claim reads
DROPPABLE_FIELDS = ("total_queue_distribution", "mean_queues")
DEFAULT_FIELDS = ("total_queue_distribution",)
DROPPED_KEY = "dropped_fields"


def compact_store(path: str | Path, fields: tuple[str, ...] = DEFAULT_FIELDS) -> int:
    """Empty ``fields`` in every stored result of the store at ``path`` (in one transaction),
    record them in ``meta`` and reclaim the space (VACUUM). Returns the points changed."""
    for field in fields:
        require(field in DROPPABLE_FIELDS, "field",
                f"{field!r} cannot be dropped; allowed: {', '.join(DROPPABLE_FIELDS)}")
    require(Path(path).is_file(), "store", f"no store at {path}")
    Store(path).close()  # validates the file as a store (and migrates its schema)
    db = sqlite3.connect(path, isolation_level=None)
    try:
        db.execute("BEGIN IMMEDIATE")
        changed = 0
        try:
            rows = db.execute("SELECT id, result_json FROM points "
                              "WHERE result_json IS NOT NULL").fetchall()
            for point_id, text in rows:
                result = json.loads(text)
                if any(result.get(field) for field in fields):
                    for field in fields:
                        if field in result:
                            result[field] = []
                    db.execute("UPDATE points SET result_json = ? WHERE id = ?",
                               (json.dumps(result, sort_keys=True), point_id))
                    changed += 1
            before = db.execute("SELECT value FROM meta WHERE key = ?",
                                (DROPPED_KEY,)).fetchone()
            dropped = sorted(set(json.loads(before[0]) if before else []) | set(fields))
            db.execute("INSERT OR REPLACE INTO meta VALUES (?, ?)",
                       (DROPPED_KEY, json.dumps(dropped)))
        except BaseException:
            db.execute("ROLLBACK")
            raise
        db.execute("COMMIT")
        db.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        db.execute("VACUUM")
    finally:
        db.close()
    return changed


def dropped_fields(path: str | Path) -> list[str]:
    """The Result fields a compaction emptied in the store at ``path`` (none: ``[]``)."""
    with Store(path, readonly=True) as store:
        rows = store.query("SELECT value FROM meta WHERE key = ?", (DROPPED_KEY,))
    return json.loads(rows[0]["value"]) if rows else []


def main(argv: list[str] | None = None) -> int:
    """Command line: compact STORE (default field, or the FIELDs named); the exit status
    (2 with one ``error:`` line for a bad field or a file that is not a store)."""
    args = sys.argv[1:] if argv is None else argv
    if not args:
        print("usage: python -m dispatchlab.experiments.compact STORE [FIELD ...]",
              file=sys.stderr)
        return 2
    try:
        changed = compact_store(args[0], tuple(args[1:]) or DEFAULT_FIELDS)
    except ValidationError as error:
        print(f"error: {error}", file=sys.stderr)
        return 2
    print(f"{args[0]}: {changed} points compacted, {Path(args[0]).stat().st_size:,} bytes")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
