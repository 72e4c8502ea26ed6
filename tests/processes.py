"""The process table, as the tests that stop pools read it (Linux /proc)."""

from __future__ import annotations

from pathlib import Path


def _table() -> dict[int, tuple[int, str, bytes]]:
    """PID → (parent PID, state, command line) of every live process."""
    table = {}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            fields = (entry / "stat").read_text().rsplit(")", 1)[1].split()
            table[int(entry.name)] = (int(fields[1]), fields[0], (entry / "cmdline").read_bytes())
        except (OSError, ValueError, IndexError):
            continue
    return table


def pool_workers(coordinator: int) -> list[int]:
    """The pool workers of process ``coordinator`` (zombies left out): children of its
    fork server, or its own spawned children (core.pools)."""
    table = _table()
    servers = {pid for pid, (parent, _, command) in table.items()
               if parent == coordinator and b"forkserver" in command}
    return [pid for pid, (parent, state, command) in table.items()
            if state != "Z" and (parent in servers
                                 or (parent == coordinator and b"spawn_main" in command))]
