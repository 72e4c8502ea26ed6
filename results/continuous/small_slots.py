"""The slotted model with small slots approaches the continuous one: Po-2 on 10 servers in
slots of length δ (Bernoulli(δ) service, Poisson(λδ) arrivals, each job dispatched alone)
against JSQ(2) in continuous time (unit-rate exponential sizes, Poisson arrivals at rate
λ = 8, ρ = 0.8). The slotted response time is E[ΣQ]/λ by Little's law, in units of 1/δ
slots. Writes results/continuous/small_slots.md.

    PYTHONPATH=src python results/continuous/small_slots.py

About a minute of CPU on a 2-core AMD EPYC (the δ = 0.01 runs are 2.5·10⁷ slots each).
"""

from __future__ import annotations

import time
from pathlib import Path

import dispatchlab as dl
from dispatchlab.continuous import simulate_continuous

HERE = Path(__file__).parent
SERVERS, LOAD, JOBS, REPLICATIONS, SEED = 10, 0.8, 2_000_000, 4, 1
DELTAS = (0.1, 0.03, 0.01)
COMMAND = "PYTHONPATH=src python results/continuous/small_slots.py"


def slotted(delta: float) -> tuple[float, float, float]:
    """E[T] (in units of 1/δ slots) of slotted Po-2 with slot length δ, with its 95 %
    interval: E[ΣQ] and its interval over λ."""
    system = dl.System.build([delta] * SERVERS, load=LOAD, dispatchers=1, arrivals="poisson",
                             service="bernoulli", dispatch="per_job")
    slots = int(JOBS / (LOAD * SERVERS * delta))
    result = dl.simulate(system, "pod", policy_params={"d": 2}, slots=slots,
                         replications=REPLICATIONS, seed=SEED, delay="off", workers=1,
                         estimator="plain")
    rate = LOAD * SERVERS  # jobs per unit of time, a unit being 1/δ slots
    return (result.mean_total_queue / rate, result.ci_low / rate, result.ci_high / rate)


def main() -> None:
    started = time.process_time()
    exact = simulate_continuous(f"{SERVERS}x1", "jsq-d", load=LOAD, jobs=JOBS,
                                replications=REPLICATIONS, seed=SEED).mean_response
    rows = []
    for delta in DELTAS:
        mean, low, high = slotted(delta)
        gap, spread = exact.mean - mean, exact.half_width + (high - low) / 2
        rows.append(f"| {delta:g} | {mean:.4f} [{low:.4f}, {high:.4f}] | "
                    f"{gap:.4f} ± {spread:.4f} | {gap / delta:.2f} ± {spread / delta:.2f} |")
    cpu = time.process_time() - started
    text = (
        "# Small slots approach continuous time\n\n"
        f"`{COMMAND}` ({cpu:.0f} CPU-seconds). Po-2 on {SERVERS} servers at ρ = {LOAD}, "
        f"{REPLICATIONS} replications of about {JOBS:,} jobs each, seed {SEED}. Continuous "
        f"time, JSQ(2) with unit exponential sizes: E[T] = {exact.mean:.4f} "
        f"[{exact.ci_low:.4f}, {exact.ci_high:.4f}]. Slotted, in slots of length δ "
        "(Bernoulli(δ) service, Poisson(λδ) arrivals, each job dispatched alone; E[T] = "
        "E[ΣQ]/λ, in units of 1/δ slots):\n\n"
        "| δ | slotted E[T] [95 % CI] | continuous − slotted | gap / δ |\n|---|---|---|---|\n"
        + "\n".join(rows) + "\n\n"
        "(± the two intervals' half-widths added.) The gap shrinks in proportion to δ, "
        "gap/δ staying between 1.5 and 2 (its uncertainty grows as δ shrinks): the slotted "
        "model with small slots is the continuous one up to O(δ) — a slot or two of each "
        "job's time in system, which the slot's order of events (arrivals, then service, "
        "then ΣQ counted) takes off. At δ = 0.01 the gap is barely resolved; a finer δ "
        "needs longer runs than this table's minute.\n")
    (HERE / "small_slots.md").write_text(text)
    print(text)


if __name__ == "__main__":
    main()
