"""docs/fluid-figures/approach.png: simulated E[Q] per server (95 % CI) against N, beside the
fluid limit's value, from the committed results/fluid/validation.md (nothing is rerun).

    PYTHONPATH=src python results/fluid/figure.py
"""

from __future__ import annotations

import re
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]
TABLE = ROOT / "results" / "fluid" / "validation.md"
OUT = ROOT / "docs" / "fluid-figures" / "approach.png"
SIZES = (100, 1_000, 10_000)
ROW = re.compile(r"^\| (pod|jsq) \| (0\.9|0\.95) \| ([\d.]+) \| (.+?) \| (.+?) \| (.+?) \|",
                 re.M)
CELL = re.compile(r"([+-][\d.]+) ± ([\d.]+)")
COLORS = {("jsq", "0.9"): "C0", ("jsq", "0.95"): "C1", ("pod", "0.9"): "C2",
          ("pod", "0.95"): "C3"}


def main() -> None:
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
    fig.tight_layout()
    OUT.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(OUT)
    print(OUT)


if __name__ == "__main__":
    main()
