"""The fluid page's figures, from the committed tables (nothing is rerun):
docs/fluid-figures/approach.png, simulated E[Q] per server (95 % CI) against N beside the
fluid limit's value (results/fluid/validation.md), and docs/fluid-figures/slopes.png, the
gap simulation − fluid against N on log–log axes with each row's fitted c·N^s
(results/fluid/slopes.md).

    PYTHONPATH=src python results/fluid/figure.py
"""

from __future__ import annotations

import re
from pathlib import Path

import matplotlib
import numpy as np

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]
TABLE = ROOT / "results" / "fluid" / "validation.md"
OUT = ROOT / "docs" / "fluid-figures" / "approach.png"
SLOPES_TABLE = ROOT / "results" / "fluid" / "slopes.md"
SLOPES_OUT = ROOT / "docs" / "fluid-figures" / "slopes.png"
SIZES = (100, 1_000, 10_000)
ROW = re.compile(r"^\| (pod|jsq) \| (0\.9|0\.95) \| ([\d.]+) \| (.+?) \| (.+?) \| (.+?) \|",
                 re.M)
CELL = re.compile(r"([+-][\d.]+) ± ([\d.]+)")
COLORS = {("jsq", "0.9"): "C0", ("jsq", "0.95"): "C1", ("pod", "0.9"): "C2",
          ("pod", "0.95"): "C3"}
SLOPE_ROW = re.compile(r"^\| (pod|jsq) \| ([\d.]+) \| [\d.]+ \| (.+) \| (-[\d.]+) ± [\d.]+ \|",
                       re.M)
GAP = re.compile(r"\+([\d.]+) ± ([\d.]+)")
SIZE = re.compile(r"N = ([\d,]+)")


def draw_approach() -> None:
    sections = TABLE.read_text(encoding="utf-8").split("\n## ")[1:3]  # the two systems
    fig, axes = plt.subplots(1, 2, figsize=(10, 4.2), dpi=110, sharey=True)
    for ax, section in zip(axes, sections, strict=True):
        for policy, load, fluid, *cells in ROW.findall(section):
            color = COLORS[(policy, load)]
            value = float(fluid)
            gaps = [tuple(map(float, CELL.match(cell.strip()).groups())) for cell in cells]
            ax.errorbar(SIZES, [value + g for g, _ in gaps], yerr=[h for _, h in gaps],
                        fmt="o", color=color, capsize=3, markersize=4,
                        label=f"{policy}, ρ = {load}: simulated")
            ax.axhline(value, color=color, linestyle="--", linewidth=1)
        ax.set_xscale("log")
        ax.set_yscale("log")
        ax.set_xlabel("N (servers), per-job dispatch, M = 10")
        ax.set_title(section.splitlines()[0], fontsize=10)
        ax.grid(True, which="both", alpha=0.3)
    axes[0].set_ylabel("E[Q] per server")
    axes[1].legend(fontsize=8, loc="upper right")
    fig.suptitle("Simulations approach the fluid limit (dashed) as N grows", fontsize=11)
    save(fig, OUT)


def draw_slopes() -> None:
    text = SLOPES_TABLE.read_text(encoding="utf-8")
    sizes = np.array([int(n.replace(",", "")) for n in SIZE.findall(text.split("\n|---")[0])])
    fig, ax = plt.subplots(figsize=(6.4, 4.4), dpi=110)
    for policy, load, cells, slope in SLOPE_ROW.findall(text):
        gaps, halves = np.array([tuple(map(float, c)) for c in GAP.findall(cells)]).T
        color = COLORS[(policy, load)]
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
    save(fig, SLOPES_OUT)


def save(fig: plt.Figure, out: Path) -> None:
    fig.tight_layout()
    out.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(out)
    print(out)


def main() -> None:
    draw_approach()
    draw_slopes()


if __name__ == "__main__":
    main()
