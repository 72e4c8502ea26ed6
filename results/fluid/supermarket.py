"""The small-slot limit of the fluid map against the continuous-time supermarket model
(docs/fluid.md): Po-d's time in system for d = 2 and 3 at several loads, with a Richardson
extrapolation to μ = 0, and the waiting probability of JSQ and JIQ (→ 0) beside Po-d's
(→ λ^d). Writes results/fluid/supermarket.md.

    PYTHONPATH=src python results/fluid/supermarket.py

About 2 CPU-minutes on a 2-core Intel Xeon (fluid fixed points only, no simulation).
"""

from __future__ import annotations

import time
from pathlib import Path

import dispatchlab as dl

OUT = Path(__file__).with_name("supermarket.md")
#: per-slot service probabilities μ → 0, each half the one before (so the gap, O(μ),
#: halves and 2·v(μ/2) − v(μ) removes its first-order term)
RATES = (0.08, 0.04, 0.02, 0.01)
LOADS = (0.5, 0.8, 0.9)
CHOICES = (2, 3)
WAIT_RATES = (0.5, 0.2, 0.08, 0.02)


def supermarket_time(load: float, d: int) -> float:
    """E[T] of the supermarket model (service rate 1, N → ∞): Σ_(i≥1) λ^((dⁱ − d)/(d − 1))
    (Vvedenskaya–Dobrushin–Karpelevich; Mitzenmacher)."""
    return sum(load ** ((d**i - d) // (d - 1)) for i in range(1, 60))


def homogeneous(mu: float, load: float) -> dl.System:
    return dl.System.build(f"100x{mu}", load=load, dispatch="per-job")


def main() -> None:
    started = time.process_time()
    lines = ["# The small-slot limit: the fluid map against the supermarket model", "",
             "Made by `PYTHONPATH=src python results/fluid/supermarket.py`. Homogeneous "
             "servers with per-slot service probability μ, Poisson arrivals at load λ, one "
             "dispatcher, per-job dispatch; fluid fixed points only. The fluid time in system "
             "in units of the mean service time 1/μ is E[T]·μ = E[Q]/(λμ)·μ = E[Q]/λ; as μ → 0 "
             "a slot shrinks to an instant and the map becomes the supermarket model's "
             "differential equation, whose E[T] is Σ_(i≥1) λ^((dⁱ − d)/(d − 1)) [VDK], "
             "[Mitz]. The gap closes like μ, so the Richardson value 2·v(μ) − v(2μ) removes "
             "its first-order term.", "",
             "| d | λ | μ | fluid E[T]·μ | closed form − fluid | Richardson − closed form "
             "| iterations |", "|---|---|---|---|---|---|---|"]
    for d in CHOICES:
        for load in LOADS:
            closed = supermarket_time(load, d)
            previous = None
            for mu in RATES:
                result = dl.fluid(homogeneous(mu, load), "pod", policy_params={"d": d})
                value = result.mean_queue_per_server / load
                richardson = ("—" if previous is None
                              else f"{2 * value - previous - closed:+.2e}")
                lines.append(f"| {d} | {load} | {mu} | {value:.6f} | {closed - value:.6f} | "
                             f"{richardson} | {result.iterations:,} |")
                previous = value
            lines.append(f"| {d} | {load} | → 0 | {closed:.6f} (closed form) | | | |")
    lines += ["", "## Waiting probability", "",
              "The chance that a job's server holds a job when it arrives. In the supermarket "
              "model it is λ^d for Po-d and 0 for JSQ and JIQ (an idle server exists while "
              "λ < 1, and they find it). In the slotted fluid limit theirs is 0 at every μ: "
              "with one job per server the busy share after a slot's arrivals is λ, so the "
              "servers idle at the slot's start, 1 − λ + λμ, always outnumber its λμ jobs. "
              "Po-2's approaches λ² as μ → 0.", "",
              "| λ | μ | JSQ | JIQ | Po-2 | λ² |", "|---|---|---|---|---|---|"]
    for load in (0.8, 0.9):
        for mu in WAIT_RATES:
            system = homogeneous(mu, load)
            waits = [dl.fluid(system, name, policy_params=params).wait_probability
                     for name, params in (("jsq", None), ("jiq", None), ("pod", {"d": 2}))]
            lines.append(f"| {load} | {mu} | " + " | ".join(f"{w:.6f}" for w in waits)
                         + f" | {load ** 2:.6f} |")
    lines += ["", f"CPU: {time.process_time() - started:.0f} s.", ""]
    OUT.write_text("\n".join(lines))
    print(OUT.read_text())


if __name__ == "__main__":
    main()
