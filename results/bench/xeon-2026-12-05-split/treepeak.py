"""Run a command; sample the summed RSS of its process tree every 0.1 s; print wall and peak."""
import os
import subprocess
import sys
import time


def tree_rss(root):
    children = {}
    for pid in filter(str.isdigit, os.listdir('/proc')):
        try:
            stat = open(f'/proc/{pid}/stat').read().rsplit(')', 1)[1].split()
            children.setdefault(int(stat[1]), []).append(int(pid))
        except OSError: pass
    total, stack = 0, [root]
    while stack:
        p = stack.pop()
        try:
            for line in open(f'/proc/{p}/status'):
                if line.startswith('VmRSS:'): total += int(line.split()[1])
        except OSError: pass
        stack += children.get(p, [])
    return total
start = time.time()
proc = subprocess.Popen(sys.argv[1:])
peak = 0
while proc.poll() is None:
    peak = max(peak, tree_rss(proc.pid)); time.sleep(0.1)
print(f"WALL {time.time()-start:.1f} s, peak tree RSS {peak/1024:.0f} MB, exit {proc.returncode}", file=sys.stderr)
