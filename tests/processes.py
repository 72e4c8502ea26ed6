"""The process table, as the tests that stop pools read it (Linux /proc)."""

from __future__ import annotations

import os
import time
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


def cpu_seconds(pid: int) -> float:
    """The CPU time process ``pid`` has used so far (user + system, its own threads), 0 when
    it is gone."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except (OSError, IndexError):
        return 0.0
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def wait_for_cpu(pid: int, seconds: float, timeout: float = 120.0) -> None:
    """Wait until process ``pid`` has used ``seconds`` of CPU (or is gone, or ``timeout``
    passes): on a loaded machine a child's start takes longer in wall time, not in CPU
    time, so a stop sent then finds it where the test means it to be."""
    deadline = time.monotonic() + timeout
    while cpu_seconds(pid) < seconds and time.monotonic() < deadline:
        if not Path(f"/proc/{pid}").exists():
            return
        time.sleep(0.05)


def loop_compiled(servers: str, policy: str = "jsq", dispatchers: int = 10) -> None:
    """Compile (or load) in this process what a run of ``policy`` on ``servers`` needs, so
    that a child started next loads it from the shared cache and is running after about a
    second of CPU (:func:`wait_for_cpu`), not after a compile of unknown length."""
    from dispatchlab import System, simulate

    simulate(System.build(servers, load=0.9, dispatchers=dispatchers), policy, slots=10,
             workers=1)
