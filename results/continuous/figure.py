"""The continuous-time figures, from the committed tables (nothing is rerun):
docs/continuous-figures/compare.png, E[T] and the response time's p99 of P2C, JSQ, LWL,
SITA and random routing under bounded Pareto sizes with PS and FIFO servers
(results/continuous/compare.json), and docs/continuous-figures/small_slots.png, the slotted
model's E[T] against the slot length δ beside the continuous value
(results/continuous/small_slots.md).

    PYTHONPATH=src python results/continuous/figure.py
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

HERE = Path(__file__).parent
OUT = HERE.parents[1] / "docs" / "continuous-figures"
#: the policies drawn, left to right (random routing's FIFO values dwarf the rest: left out)
POLICIES = ("jsq", "lwl", "p2c", "sita")


def _save(figure: plt.Figure, name: str) -> None:
    OUT.mkdir(parents=True, exist_ok=True)
    figure.tight_layout()
    figure.savefig(OUT / name, dpi=110, metadata={"Software": None})
    plt.close(figure)


def comparison() -> None:
    """Bars of E[T] and p99 with their 95 % intervals, PS and FIFO side by side."""
    data = json.loads((HERE / "compare.json").read_text())
    cells = {(cell["policy"], cell["discipline"]): cell for cell in data["cells"]}
    figure, axes = plt.subplots(1, 2, figsize=(9, 3.6))
    for axis, key, title in ((axes[0], "mean_response", "mean response time E[T]"),
                             (axes[1], "p99", "response time p99")):
        for offset, (discipline, colour) in enumerate((("ps", "C0"), ("fifo", "C1"))):
            values = [cells[policy, discipline][key] for policy in POLICIES]
            means = [v["mean"] for v in values]
            errors = [(v["ci_high"] - v["ci_low"]) / 2 for v in values]
            axis.bar([k + 0.4 * offset for k in range(len(POLICIES))], means, 0.4,
                     yerr=errors, capsize=3, color=colour, label=discipline.upper())
        axis.set_xticks([k + 0.2 for k in range(len(POLICIES))], POLICIES)
        axis.set_title(title)
        axis.legend()
    figure.suptitle(f"16 servers, ρ = {data['setup']['load']}, sizes "
                    f"{data['setup']['sizes']} (95 % intervals)", fontsize=10)
    _save(figure, "compare.png")


def small_slots() -> None:
    """The slotted E[T] with its interval against δ, the continuous value dashed."""
    page = (HERE / "small_slots.md").read_text()
    exact = float(re.search(r"E\[T\] = ([0-9.]+) \[", page).group(1))
    rows = re.findall(r"\| ([0-9.]+) \| ([0-9.]+) \[([0-9.]+), ([0-9.]+)\]", page)
    deltas = [float(r[0]) for r in rows]
    means = [float(r[1]) for r in rows]
    errors = [(float(r[3]) - float(r[2])) / 2 for r in rows]
    figure, axis = plt.subplots(figsize=(5, 3.4))
    axis.errorbar(deltas, means, yerr=errors, fmt="o-", capsize=3, label="slotted Po-2")
    axis.axhline(exact, ls="--", color="k", label="continuous JSQ(2)")
    axis.set_xscale("log")
    axis.set_xlabel("slot length δ")
    axis.set_ylabel("E[T] (units of 1/δ slots)")
    axis.legend()
    _save(figure, "small_slots.png")


if __name__ == "__main__":
    comparison()
    small_slots()
