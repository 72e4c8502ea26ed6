"""docs/fluid-figures/slopes.png: the gap simulation − fluid against N on log–log axes,
with each row's fitted c·N^s, from the committed results/fluid/slopes.md (nothing is
rerun).

    PYTHONPATH=src python results/fluid/slopes_figure.py
"""

from __future__ import annotations

import re
from pathlib import Path

import matplotlib
import numpy as np

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]
TABLE = ROOT / "results" / "fluid" / "slopes.md"
OUT = ROOT / "docs" / "fluid-figures" / "slopes.png"
ROW = re.compile(r"^\| (pod|jsq) \| ([\d.]+) \| [\d.]+ \| (.+) \| (-[\d.]+) ± [\d.]+ \|", re.M)
CELL = re.compile(r"\+([\d.]+) ± ([\d.]+)")
SIZE = re.compile(r"N = ([\d,]+)")


def main() -> None:
    text = TABLE.read_text(encoding="utf-8")
    sizes = np.array([int(n.replace(",", "")) for n in SIZE.findall(text.split("\n|---")[0])])
    fig, ax = plt.subplots(figsize=(6.4, 4.4), dpi=110)
    for k, (policy, load, cells, slope) in enumerate(ROW.findall(text)):
        gaps, halves = np.array([tuple(map(float, c)) for c in CELL.findall(cells)]).T
        color = f"C{k}"
        ax.errorbar(sizes, gaps, yerr=halves, fmt="o", color=color, capsize=3, markersize=4,
                    label=f"{'Po-2' if policy == 'pod' else 'JSQ'}, ρ = {load}: s = {slope}")
        s, a = np.polyfit(np.log(sizes), np.log(gaps), 1, w=gaps / halves)
        ax.plot(sizes, np.exp(a) * sizes**s, color=color, linewidth=1)
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("N (servers μ = 0.5), per-job dispatch, M = 10")
    ax.set_ylabel("E[Q] per server: simulation − fluid")
    ax.set_title("The gap to the fluid limit closes like 1/N", fontsize=11)
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(fontsize=8)
    fig.tight_layout()
    OUT.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(OUT)
    print(OUT)


if __name__ == "__main__":
    main()
