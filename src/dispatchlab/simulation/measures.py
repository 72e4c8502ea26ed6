"""What a run measures beyond ΣQ, named once for every layer (API, spec file, CLI, store).

Each concept has one name: the :func:`~dispatchlab.simulate` keyword, the ``[run]`` key or
table of a spec file, and the command-line option spelled from its dotted field name:

- ``delay="tagged" | "all" | "off"``: ``delay``, ``--delay``;
- ``imbalance=True | False`` (DQI₁, DQI₂ every slot): ``imbalance``, ``--no-imbalance``;
- ``per_server=PerServer(bins=64)`` (or ``True``): ``per_server = true`` or
  ``[run.per_server]``, ``--per-server``, ``--per-server-bins``;
- ``trajectory=Trajectory(every=k, servers=[…])``: ``[run.trajectory]``,
  ``--trajectory-every``, ``--trajectory-servers``;
- ``precision=Precision(rel=…, abs=…, max_slots=…)``: ``[run.precision]``,
  ``--precision-rel``, ``--precision-abs``, ``--precision-max-slots`` (in continuous time
  ``max_jobs``, ``--precision-max-jobs``; the record and its rounds are
  :mod:`dispatchlab.core.precision_target`'s, shared by both models).

A sweep's store records ``delay`` and ``imbalance`` in a point's options. Each record
checks itself against the system and run length (``check``), raising
:class:`~dispatchlab.core.errors.ValidationError` named by its dotted field
(``trajectory.every``), and reads a spec file's table (``from_table``). :data:`RENAMED`
maps each keyword of earlier versions to the line that names its replacement.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import MISSING, dataclass, fields, replace
from typing import Any

import numpy as np

from dispatchlab.core.convert import as_int, as_ints, as_table, check_keys
from dispatchlab.core.errors import ValidationError, require

#: how delays are measured (docs/statistics.md#tagged-delays): ``tagged``, a sample of
#: tagged jobs followed through their FIFOs (O(tags) a slot); ``all``, every job timed
#: through a FIFO of batches; ``off``, none (the mean delay by Little's law stays)
DELAY_MODES = ("tagged", "all", "off")
#: bins of each server's queue-length histogram unless given
SERVER_BINS = 64
#: the most numbers (8 bytes each) the per-server histograms, or the trajectory, may hold
MAX_OBSERVED_ENTRIES = 10_000_000

#: keywords of earlier versions → what to write now (refused with this line)
RENAMED = {
    "track_delay": 'now delay="off" (delay="tagged" | "all" | "off")',
    "detail": "now imbalance=True | False",
    "per_server_bins": "now per_server=PerServer(bins=…)",
    "trajectory_servers": "now trajectory=Trajectory(every=k, servers=[…])",
    "precision_abs": "now precision=Precision(abs=…)",
    "max_slots": "now precision=Precision(…, max_slots=…)",
}


def refuse_renamed(given: Mapping[str, Any], prefix: str = "") -> None:
    """A ValidationError naming the first keyword of ``given`` that :data:`RENAMED` lists."""
    for name in sorted(given):
        if name in RENAMED:
            raise ValidationError(f"{prefix}{name}", f"renamed: {RENAMED[name]}")


def _is_int(value: object) -> bool:
    return isinstance(value, int | np.integer) and not isinstance(value, bool)


def check_delay(delay: Any) -> str:
    """``delay`` as one of :data:`DELAY_MODES`."""
    require(isinstance(delay, str) and delay in DELAY_MODES, "delay",
            f"allowed: {', '.join(DELAY_MODES)} (got {delay!r})")
    return delay


def check_flag(value: Any, name: str) -> bool:
    """``value`` if it is a bool (no truthy coercion)."""
    require(isinstance(value, bool), name, f"expected True or False (got {value!r})")
    return value


@dataclass(frozen=True)
class PerServer:
    """Each server's utilisation, idle fraction and queue-length histogram over the measured
    window (docs/statistics.md#per-server).

    Attributes:
        bins: bins of each Q_n histogram: Q_n = 0 … bins − 2, and the last for Q_n ≥ bins − 1.
    """

    bins: int = SERVER_BINS

    def check(self, n_servers: int) -> PerServer:
        require(_is_int(self.bins) and self.bins >= 2, "per_server.bins",
                f"must be an integer ≥ 2 (Q_n = 0 … bins − 2, and one bin for the rest; "
                f"got {self.bins!r})")
        require(n_servers * self.bins <= MAX_OBSERVED_ENTRIES, "per_server.bins",
                f"N × bins = {n_servers} × {self.bins} histogram entries; at most "
                f"{MAX_OBSERVED_ENTRIES:,}")
        return PerServer(int(self.bins))

    @staticmethod
    def from_table(value: Any, name: str = "per_server") -> PerServer | None:
        """A spec file's ``per_server = true | false`` or ``[run.per_server]`` table."""
        if isinstance(value, bool):
            return PerServer() if value else None
        data = as_table(value, name)
        check_keys(data, name, ("bins",))
        return PerServer(as_int(data.get("bins", SERVER_BINS), f"{name}.bins", low=2))

    @staticmethod
    def of(value: Any) -> PerServer | None:
        """``per_server`` as given: ``None``/``False`` (off), ``True`` (default bins) or a
        :class:`PerServer`."""
        if value is None or value is False:
            return None
        if value is True:
            return PerServer()
        require(isinstance(value, PerServer), "per_server",
                f"expected True, False or PerServer(bins=…) (got {value!r})")
        return value


@dataclass(frozen=True)
class Trajectory:
    """ΣQ(t) and the pooled q(t), and Q_n(t) of ``servers``, every ``every`` slots of the
    first replication, warm-up included (``Result.trajectory_frame()``).

    Attributes:
        every: k: a point at t = 0, k, 2k, … (``slots // 1000`` gives about 1000 points).
        servers: server indices n whose Q_n(t) is recorded too.
    """

    every: int
    servers: Sequence[int] = ()

    def check(self, n_servers: int, slots: int) -> Trajectory:
        require(_is_int(self.every) and 1 <= self.every <= slots, "trajectory.every",
                f"must be an integer k in [1, slots = {slots}], a point every k slots "
                f"(got {self.every!r})")
        servers = self.servers
        require(isinstance(servers, Sequence | np.ndarray) and not isinstance(servers, str | bytes),
                "trajectory.servers", f"expected a list of server indices (got {servers!r})")
        servers = list(servers)
        for i, server in enumerate(servers):
            require(_is_int(server) and 0 <= server < n_servers, f"trajectory.servers[{i}]",
                    f"must be a server index in 0 … N − 1 = {n_servers - 1} (got {server!r})")
        require(len(set(servers)) == len(servers), "trajectory.servers",
                f"a server given twice ({servers!r})")
        points = slots // self.every + 1
        require(points * (3 + len(servers)) <= MAX_OBSERVED_ENTRIES, "trajectory.every",
                f"a point every {self.every} slots of {slots} is {points:,} points × "
                f"{3 + len(servers)} numbers; at most {MAX_OBSERVED_ENTRIES:,} (take k ≥ "
                f"{-(-slots * (3 + len(servers)) // MAX_OBSERVED_ENTRIES)})")
        return Trajectory(int(self.every), tuple(int(server) for server in servers))

    @staticmethod
    def from_table(value: Any, name: str = "trajectory") -> Trajectory:
        """A spec file's ``[run.trajectory]`` table: ``every`` (required) and ``servers``."""
        data = as_table(value, name)
        check_keys(data, name, ("every", "servers"))
        require("every" in data, f"{name}.every", "a trajectory needs every = k (a point "
                "every k slots)")
        return Trajectory(as_int(data["every"], f"{name}.every", low=1),
                          as_ints(data.get("servers", []), f"{name}.servers"))

    @staticmethod
    def of(value: Any) -> Trajectory | None:
        if value is None:
            return None
        require(isinstance(value, Trajectory), "trajectory",
                f"expected Trajectory(every=k, servers=[…]) or None (got {value!r})")
        return value


def merged(record: Any, kind: type, name: str, overrides: Mapping[str, Any]) -> Any:
    """``record`` (a :class:`PerServer`, :class:`Trajectory` or :class:`Precision`, or
    ``None``) with the given fields replaced: how command-line options such as
    ``--trajectory-servers`` amend a spec file's table. ``None`` values are not given."""
    given = {key: value for key, value in overrides.items() if value is not None}
    assert set(given) <= {f.name for f in fields(kind)}, given
    if not given:
        return record
    if record is not None:
        return replace(record, **given)
    missing = [f.name for f in fields(kind) if f.default is MISSING and f.name not in given]
    if missing:  # e.g. --trajectory-servers without --trajectory-every
        raise ValidationError(f"{name}.{missing[0]}", f"{name} needs {missing[0]} too")
    return kind(**given)
