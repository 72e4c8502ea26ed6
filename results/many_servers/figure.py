"""The many-server figures, from the Reproductions store (nothing is rerun):
docs/many-servers/large_system.png, E[Q] per server and the waiting probability against N
at ρ = 0.9 (M = 10, N = 10² … 10⁵) with the fluid limit's values as dashed lines
(results/many_servers/large_system.md), and docs/many-servers/halfin_whitt.png, the
waiting probability and the jobs waiting per server against N for each β, the latter
beside a 1/√N guide (results/many_servers/halfin_whitt.md).

    PYTHONPATH=src python results/many_servers/figure.py
"""

from __future__ import annotations

import sys
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import pandas as pd  # noqa: E402

sys.path.insert(0, str(Path(__file__).parent))
from large_system import STORE, fluid_values  # noqa: E402

from dispatchlab.experiments.store import Store  # noqa: E402
from dispatchlab.report.derived import jobs_waiting_per_server  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]
OUT = ROOT / "docs" / "many-servers"
#: the curves drawn: policy label → (registered name, colour)
LARGE = {"JSQ": ("jsq", "C0"), "JIQ": ("jiq", "C1"), "JBT-2": ("jbt", "C2"),
         "SCD": ("scd", "C3"), "L-JBA-Pull": ("l-jba-pull", "C4")}
HALFIN = {"JSQ": "C0", "JIQ": "C1", "Po-2": "C2"}


def _means(frame, label: str, column: str):
    rows = frame[frame["policy_label"] == label]
    stable = rows.groupby("system.n_servers")["stability"].apply(
        lambda s: (s != "unstable").all())
    means = rows.groupby("system.n_servers")[column].mean()[stable]
    return means.index.to_numpy(), means.to_numpy()


def _save(fig, name: str) -> Path:
    fig.tight_layout()
    out = OUT / f"{name}.png"
    fig.savefig(out, bbox_inches="tight")
    plt.close(fig)
    return out


def draw_large_system() -> Path:
    with Store(STORE, readonly=True) as db:
        frame = pd.concat([db.frame("large-system"), db.frame("large-system-1e5")],
                          ignore_index=True)
    frame = frame[(frame["system.dispatchers"] == 10) & (frame["load"].round(6) == 0.9)].copy()
    frame["per_server"] = frame["mean_total_queue"] / frame["system.n_servers"]
    fluid = fluid_values(0.9)
    fig, axes = plt.subplots(1, 2, figsize=(10, 4.2), dpi=110)
    for label, (name, color) in LARGE.items():
        for ax, column, index in ((axes[0], "per_server", 0), (axes[1], "waiting_probability", 1)):
            n, values = _means(frame, label, column)
            ax.plot(n, values, marker="o", color=color, label=label)
            if name in fluid:
                ax.axhline(fluid[name][index], color=color, linestyle="--", linewidth=1)
    for ax, ylabel in zip(axes, ("E[Q] per server", "P(wait)"), strict=True):
        ax.set_xscale("log")
        ax.set_xlabel("servers N")
        ax.set_ylabel(ylabel)
        ax.grid(True, which="both", alpha=0.3)
    axes[0].set_yscale("log")
    axes[0].legend(fontsize=8, title="dashed: the fluid limit", title_fontsize=8)
    fig.suptitle("Many servers at ρ = 0.9 (half μ = 0.1, half 0.5; M = 10; per-job dispatch)",
                 fontsize=11)
    return _save(fig, "large_system")


def draw_halfin_whitt() -> Path:
    with Store(STORE, readonly=True) as db:
        frame = db.frame("halfin-whitt")
    frame["waiting_jobs"] = jobs_waiting_per_server(frame)
    fig, axes = plt.subplots(2, 3, figsize=(12, 7.2), dpi=110, sharey="row")
    for top, bottom, beta in zip(axes[0], axes[1], (0.5, 1.0, 2.0), strict=True):
        at = frame[frame["x"] == beta]
        for ax, column in ((top, "waiting_probability"), (bottom, "waiting_jobs")):
            for label, color in HALFIN.items():
                n, values = _means(at, label, column)
                ax.plot(n, values, marker="o", color=color, label=label)
            ax.set_xscale("log")
            ax.grid(True, which="both", alpha=0.3)
        n, values = _means(at, "JIQ", "waiting_jobs")
        bottom.plot(n, values[0] * (n / n[0]) ** -0.5, color="0.4", linestyle="--",
                    linewidth=1, label="∝ 1/√N")
        bottom.set_yscale("log")
        bottom.set_xlabel("servers N")
        top.set_title(f"β = {beta:g}", fontsize=10)
    axes[0][0].set_ylabel("P(wait)")
    axes[1][0].set_ylabel("jobs waiting per server")
    axes[0][0].legend(fontsize=8)
    axes[1][0].legend(fontsize=8)
    fig.suptitle("Halfin–Whitt, 1 − ρ = β/√N (μ = 0.1, M = 10): the waiting probability and "
                 "E[Σ(Q_n + A_n − 1)⁺]/N", fontsize=11)
    return _save(fig, "halfin_whitt")


if __name__ == "__main__":
    OUT.mkdir(parents=True, exist_ok=True)
    print(draw_large_system(), draw_halfin_whitt())
