"""Plain vs coupled standard error of E[ΣQ] on the same runs (results/variance/table.md).

For each policy and ε: R independent runs (seeds 0 … R−1) of T slots from a stationary
start; each run gives both estimates of E[ΣQ] (the plain time average of ΣQ and the
coupled E[q] + mean X). The standard error of each estimator is the between-run SD of its
R estimates over √R (no batch-means assumption), and the table shows their variance ratio.

    .venv/bin/python results/variance/make_table.py            # about 5 CPU-minutes
"""

from __future__ import annotations

import json
import math
import sys
import time
from pathlib import Path

import numpy as np

from dispatchlab import System, simulate

EPSILONS = (0.1, 0.03, 0.01, 0.003, 0.001)
RUNS = 8
SLOTS = 10_000_000
CASES = (
    ("JSQ", "jsq", "10x0.5", 1, {}),
    ("JBT r = 3", "jbt", "10x0.5", 1, {"r": 3}),
    ("L-JBA-Pull (p̂ = 0.2)", "l-jba-pull", "5x0.2,5x0.8", 3, {"p": 0.2,
                                                             "measure_error": False}),
)
HERE = Path(__file__).parent


def measure(policy: str, servers: str, dispatchers: int, params: dict, epsilon: float
            ) -> dict:
    system = System.build(servers, epsilon=epsilon, dispatchers=dispatchers)
    plain, coupled, seconds = [], [], 0.0
    for seed in range(RUNS):
        result = simulate(system, policy, policy_params=params, slots=SLOTS, seed=seed,
                          delay="off", imbalance=False, start="stationary")
        plain.append(result.plain_mean_total_queue)
        coupled.append(result.coupled_mean_total_queue)
        seconds += result.seconds
    se = {name: float(np.std(values, ddof=1) / math.sqrt(RUNS))
          for name, values in (("plain", plain), ("coupled", coupled))}
    return {"epsilon": epsilon, "plain_mean": float(np.mean(plain)),
            "coupled_mean": float(np.mean(coupled)), "plain_se": se["plain"],
            "coupled_se": se["coupled"], "variance_ratio": (se["plain"] / se["coupled"]) ** 2,
            "pooled_queue_exact": result.pooled_queue_exact, "seconds": seconds}


def main() -> None:
    rows = []
    start = time.time()
    for label, policy, servers, dispatchers, params in CASES:
        for epsilon in EPSILONS:
            row = {"case": label, "servers": servers, "dispatchers": dispatchers,
                   **measure(policy, servers, dispatchers, params, epsilon)}
            rows.append(row)
            print(json.dumps(row), flush=True)
    (HERE / "table.json").write_text(json.dumps(rows, indent=1) + "\n")
    lines = [
        "# Plain vs coupled standard error of E[ΣQ], on the same runs",
        "",
        f"Made by `.venv/bin/python results/variance/make_table.py` ({time.time() - start:.0f} s"
        f" wall on the machine that made it): {RUNS} independent runs of {SLOTS:.0e} slots "
        "per cell, from a stationary start; SE = between-run SD / √R of each estimator's "
        "estimates of the same runs.",
        "",
        "| case | ε | E[q] (exact) | plain mean ± SE | coupled mean ± SE "
        "| var(plain)/var(coupled) |",
        "|---|---|---|---|---|---|",
    ]
    lines += table_rows(rows)
    (HERE / "table.md").write_text("\n".join(lines) + "\n")


def table_rows(rows: list[dict]) -> list[str]:
    """The Markdown rows of ``table.md``, one a measured cell of ``table.json``."""
    return [
        f"| {row['case']} ({row['servers']}, M = {row['dispatchers']}) | {row['epsilon']:g} | "
        f"{row['pooled_queue_exact']:.6g} | {row['plain_mean']:.5g} ± {row['plain_se']:.3g} | "
        f"{row['coupled_mean']:.6g} ± {row['coupled_se']:.3g} | "
        f"{row['variance_ratio']:.3g} |"
        for row in rows]


if __name__ == "__main__":
    sys.exit(main())
