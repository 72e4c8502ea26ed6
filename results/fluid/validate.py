"""The fluid limit against simulations as N grows, and against the supermarket model in
the small-slot limit (docs/fluid.md). Writes results/fluid/validation.md.

    PYTHONPATH=src python results/fluid/validate.py

About 3 CPU-minutes on a 2-core Intel Xeon (every simulation 20,000 slots × 4
replications, per-job dispatch, M = 10, seed 1).
"""

from __future__ import annotations

import time
from pathlib import Path

import numpy as np

import dispatchlab as dl

OUT = Path(__file__).with_name("validation.md")
SIZES = (100, 1_000, 10_000)
LOADS = (0.5, 0.9, 0.95)
PROFILES = {"homogeneous μ = 0.5": lambda n: f"{n}x0.5",
            "half μ = 0.3, half μ = 0.6": lambda n: f"{n // 2}x0.3,{n // 2}x0.6"}
POLICIES = ("wrand", "pod", "jsq")
SLOTS, REPLICATIONS, SEED = 20_000, 4, 1


def system(servers: str, load: float) -> dl.System:
    return dl.System.build(servers, load=load, dispatch="per-job", dispatchers=10)


def slope(sizes: list[int], gaps: list[float], halves: list[float]) -> str:
    """The fitted exponent of |gap| ∝ N^slope over the sizes where the gap exceeds twice
    the CI's half-width (a gap inside the noise says nothing of its rate)."""
    kept = [(n, g) for n, g, h in zip(sizes, gaps, halves, strict=True) if abs(g) > 2 * h]
    if len(kept) < 2:
        return "— (gap within the noise at ≥ 2 sizes)"
    x = np.log([n for n, _ in kept])
    y = np.log([abs(g) for _, g in kept])
    return f"{np.polyfit(x, y, 1)[0]:.2f} (N = {', '.join(f'{n:,}' for n, _ in kept)})"


def main() -> None:
    started = time.process_time()
    lines = ["# The fluid limit against simulations and the supermarket model", "",
             "Made by `PYTHONPATH=src python results/fluid/validate.py` "
             f"(simulations: {SLOTS:,} slots × {REPLICATIONS} replications, per-job dispatch, "
             f"M = 10, seed {SEED}; E[Q] per server = E[ΣQ]/N with its 95 % CI). The gap is "
             "simulation − fluid; the slope is that of log |gap| against log N where the gap "
             "is resolved (−1: a 1/N correction).", ""]
    for profile, servers in PROFILES.items():
        lines += [f"## {profile}", "",
                  "| policy | ρ | fluid E[Q] | " + " | ".join(f"N = {n:,}: sim − fluid"
                                                            for n in SIZES) + " | slope |",
                  "|---|---|---|" + "---|" * len(SIZES) + "---|"]
        for policy in POLICIES:
            for load in LOADS:
                fluid = dl.fluid(system(servers(SIZES[0]), load), policy)
                gaps, halves, cells = [], [], []
                for n in SIZES:
                    result = dl.simulate(system(servers(n), load), policy, slots=SLOTS,
                                         replications=REPLICATIONS, seed=SEED,
                                         delay="off")
                    mean = result.mean_total_queue / n
                    half = (result.ci_high - result.ci_low) / 2 / n
                    gaps.append(mean - fluid.mean_queue_per_server)
                    halves.append(half)
                    cells.append(f"{gaps[-1]:+.4f} ± {half:.4f}")
                lines.append(f"| {policy} | {load} | {fluid.mean_queue_per_server:.5f} | "
                             + " | ".join(cells) + f" | {slope(list(SIZES), gaps, halves)} |")
        lines.append("")
    closed = sum(0.9 ** (2**i - 2) for i in range(1, 40))
    lines += ["## The small-slot limit: Po-2 against the supermarket model", "",
              "Homogeneous servers, per-slot service μ → 0 at λ = ρ = 0.9, Poisson arrivals: "
              "the fluid time in system in units of 1/μ, E[Q]/λ̄·μ, against "
              f"Σ_(i≥1) λ^(2^i − 2) = {closed:.6f} (the continuous-time supermarket model, "
              "[VDK], [Mitz]).", "", "| μ | fluid E[T]·μ | closed form − fluid | iterations |",
              "|---|---|---|---|"]
    for mu in (0.08, 0.04, 0.02, 0.01):
        result = dl.fluid(dl.System.build(f"100x{mu}", load=0.9, dispatch="per-job"), "pod")
        value = result.mean_queue_per_server / (0.9 * mu) * mu
        lines.append(f"| {mu} | {value:.6f} | {closed - value:.6f} | {result.iterations:,} |")
    lines += ["", f"CPU: {time.process_time() - started:.0f} s.", ""]
    OUT.write_text("\n".join(lines))
    print(OUT.read_text())


if __name__ == "__main__":
    main()
