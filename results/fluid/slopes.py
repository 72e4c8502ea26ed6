"""The rate at which simulations approach the fluid limit, resolved: Po-2 and JSQ on
homogeneous servers at ρ = 0.9 and 0.95, N from 100 to 1,600, runs long enough that the
gap sim − fluid exceeds its CI at every N (docs/fluid.md). Writes results/fluid/slopes.md.

    PYTHONPATH=src python results/fluid/slopes.py

About 5 CPU-minutes on a 2-core Intel Xeon (200,000 slots × 8 replications per point,
per-job dispatch, M = 10, seed 1).
"""

from __future__ import annotations

import time
from pathlib import Path

import numpy as np

import dispatchlab as dl

OUT = Path(__file__).with_name("slopes.md")
SIZES = (100, 200, 400, 800, 1_600)
LOADS = (0.9, 0.95)
POLICIES = ("pod", "jsq")
SLOTS, REPLICATIONS, SEED = 200_000, 8, 1


def system(n: int, load: float) -> dl.System:
    return dl.System.build(f"{n}x0.5", load=load, dispatch="per-job", dispatchers=10)


def fit(sizes: list[int], gaps: list[float], halves: list[float]) -> tuple[float, float, float]:
    """log gap = a + s·log N by weighted least squares (weights from the CIs: the half-width
    over the gap is the log's standard error up to the t quantile); returns s, its standard
    error and c = e^a, the gap at N = 1 (so gap ≈ c·N^s)."""
    x = np.log(sizes)
    y = np.log(gaps)
    se = np.asarray(halves) / np.asarray(gaps) / 1.96
    w = 1 / se**2
    design = np.column_stack([np.ones_like(x), x])
    cov = np.linalg.inv(design.T @ (design * w[:, None]))
    a, s = cov @ design.T @ (w * y)
    return float(s), float(np.sqrt(cov[1, 1])), float(np.exp(a))


def main() -> None:
    started = time.process_time()
    lines = ["# How fast simulations approach the fluid limit", "",
             "Made by `PYTHONPATH=src python results/fluid/slopes.py` (homogeneous servers "
             f"μ = 0.5, Poisson arrivals, per-job dispatch, M = 10; {SLOTS:,} slots × "
             f"{REPLICATIONS} replications per point, seed {SEED}; E[Q] per server = E[ΣQ]/N "
             "with its 95 % CI). The gap is simulation − fluid; the slope s and the constant "
             "c of gap ≈ c·N^s are a weighted least-squares fit of log gap on log N (s = −1: "
             "a 1/N correction), with the slope's standard error.", "",
             "| policy | ρ | fluid E[Q] | " + " | ".join(f"N = {n:,}" for n in SIZES)
             + " | slope s | c = N·gap at s = −1 |",
             "|---|---|---|" + "---|" * len(SIZES) + "---|---|"]
    for policy in POLICIES:
        for load in LOADS:
            fluid = dl.fluid(system(SIZES[0], load), policy).mean_queue_per_server
            gaps, halves = [], []
            for n in SIZES:
                result = dl.simulate(system(n, load), policy, slots=SLOTS,
                                     replications=REPLICATIONS, seed=SEED, delay="off")
                gaps.append(result.mean_total_queue / n - fluid)
                halves.append((result.ci_high - result.ci_low) / 2 / n)
            cells = [f"{g:+.5f} ± {h:.5f}" for g, h in zip(gaps, halves, strict=True)]
            if all(g > 2 * h for g, h in zip(gaps, halves, strict=True)):
                s, se, _ = fit(list(SIZES), gaps, halves)
                slope = f"{s:.3f} ± {se:.3f}"
                scaled = [n * g for n, g in zip(SIZES, gaps, strict=True)]
                constant = f"{min(scaled):.2f} to {max(scaled):.2f}"
            else:
                slope = constant = "— (a gap within twice its CI)"
            lines.append(f"| {policy} | {load} | {fluid:.5f} | " + " | ".join(cells)
                         + f" | {slope} | {constant} |")
    lines += ["", f"CPU: {time.process_time() - started:.0f} s.", ""]
    OUT.write_text("\n".join(lines))
    print(OUT.read_text())


if __name__ == "__main__":
    main()
