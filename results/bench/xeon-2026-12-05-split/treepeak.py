"""Run a command; sample the summed RSS of its process tree every 0.1 s; print wall and peak."""
import os
import subprocess
import sys
import time
from pathlib import Path


def tree_rss(root: int) -> int:
    """The summed VmRSS (kB) of process ``root`` and its descendants."""
    children: dict[int, list[int]] = {}
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            stat = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        children.setdefault(int(stat[1]), []).append(int(pid))
    total, stack = 0, [root]
    while stack:
        pid = stack.pop()
        try:
            status = Path(f"/proc/{pid}/status").read_text()
        except OSError:
            status = ""
        for line in status.splitlines():
            if line.startswith("VmRSS:"):
                total += int(line.split()[1])
        stack += children.get(pid, [])
    return total


start = time.time()
proc = subprocess.Popen(sys.argv[1:])
peak = 0
while proc.poll() is None:
    peak = max(peak, tree_rss(proc.pid))
    time.sleep(0.1)
print(f"WALL {time.time() - start:.1f} s, peak tree RSS {peak / 1024:.0f} MB, "
      f"exit {proc.returncode}", file=sys.stderr)
