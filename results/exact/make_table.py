"""Regenerate results/exact/validation.md: exact E[ΣQ] (dispatchlab.exact) against
simulation for the policies that declare their dispatch law, and the two-server JSQ
ε·E[ΣQ] from the QBD against ζ/2.

    .venv/bin/python results/exact/make_table.py      # a few minutes on one core
"""

from __future__ import annotations

import time
from pathlib import Path

import dispatchlab
from dispatchlab.model import System
from dispatchlab.policies import make_policy
from dispatchlab.solvers.qbd import two_server_qbd
from dispatchlab.theory.bounds import heavy_traffic_limit

SLOTS = 1_000_000
REPLICATIONS = 4

CASES = [  # (policy, params, servers, arrivals, service, extra, load)
    ("jsq", {}, [0.3, 0.5, 0.7], "binomial:2", "bernoulli", {}, 0.5),
    ("jsq", {}, [0.3, 0.5, 0.7], "binomial:2", "bernoulli", {}, 0.8),
    ("jsq", {"ties": "lowest"}, [0.3, 0.6], "bernoulli", "bernoulli", {}, 0.9),
    ("jsq", {"ties": "shared"}, [0.3, 0.5, 0.7], "poisson", "bernoulli", {"dispatchers": 2},
     0.7),
    ("jsed", {}, [0.3, 0.5, 0.7], "binomial:2", "bernoulli", {}, 0.5),
    ("jsed", {}, [0.3, 0.5, 0.7], "binomial:2", "bernoulli", {}, 0.8),
    ("jsed", {"plus_one": False}, [0.4, 0.9], "poisson", "geometric", {}, 0.7),
    ("pod", {"d": 2}, [0.3, 0.5, 0.7], "binomial:2", "bernoulli", {}, 0.5),
    ("pod", {"d": 2}, [0.3, 0.5, 0.7], "binomial:2", "bernoulli", {}, 0.8),
    ("balanced-pod", {}, [0.3, 0.5, 0.7], "binomial:2", "bernoulli", {}, 0.75),
    ("jiq", {}, [0.3, 0.5, 0.7], "binomial:2", "bernoulli", {}, 0.5),
    ("jiq", {}, [0.3, 0.5, 0.7], "binomial:2", "bernoulli", {}, 0.75),
    ("jbt", {"r": 2}, [0.3, 0.6], "bernoulli", "bernoulli", {}, 0.9),
    ("rr", {"weighted": True}, [0.3, 0.6], "bernoulli", "bernoulli", {}, 0.8),
    ("rand", {}, [0.3, 0.6], "bernoulli", "bernoulli", {}, 0.6),
    ("wrand", {}, [0.5, 1.2], "poisson", "poisson", {}, 0.7),
    ("jsq", {}, [1.0, 2.0], "binomial:4", "binomial:2", {}, 0.7),
    ("pod", {}, [0.3, 0.6], "binomial:3", "bernoulli", {"dispatch": "per_job"}, 0.8),
]


def label(policy: str, params: dict) -> str:
    return policy + "".join(f" {k}={v}" for k, v in params.items())


def main() -> None:
    lines = ["# Exact answers against simulation", "",
             "Made by `results/exact/make_table.py`. Exact: `dispatchlab.exact` (truncated "
             "sparse chain, K grown until P(ΣQ = K) ≤ 1e-9). Simulated: "
             f"`simulate(..., slots={SLOTS:,}, replications={REPLICATIONS}, seed=1)`, "
             "95 % CI.", "",
             "| policy | servers μ | M | arrivals / service | dispatch | ρ | exact E[ΣQ] | "
             "K | P(ΣQ=K) | states | solve s | simulated E[ΣQ] [95 % CI] | covered |",
             "|---|---|---|---|---|---|---|---|---|---|---|---|---|"]
    for policy, params, servers, arrivals, service, extra, load in CASES:
        system = System.build(servers, load=load, arrivals=arrivals, service=service, **extra)
        exact = dispatchlab.exact(system, policy, policy_params=params)
        sim = dispatchlab.simulate(system, policy, policy_params=params, slots=SLOTS,
                                   replications=REPLICATIONS, seed=1, workers=1, estimator="plain",
                                   delay="off")
        low, high = sim.mean_total_queue - sim.half_width, sim.mean_total_queue + sim.half_width
        covered = "yes" if low <= exact.mean_total_queue <= high else "**no**"
        lines.append(
            f"| {label(policy, params)} | {','.join(f'{x:g}' for x in servers)} | "
            f"{system.dispatchers} | {arrivals} / {service} | {system.dispatch} | {load:.3g} | "
            f"{exact.mean_total_queue:.6f} | {exact.truncation} | {exact.edge_mass:.1e} | "
            f"{exact.states:,} | {exact.seconds:.2f} | {sim.mean_total_queue:.4f} "
            f"[{low:.4f}, {high:.4f}] | {covered} |")
        print(lines[-1], flush=True)
    mu = [0.3, 0.6]
    zeta_half = heavy_traffic_limit(System.build(mu, epsilon=0.1, arrivals="bernoulli"))
    lines += ["", "## Two servers in heavy traffic: JSQ by the QBD", "",
              f"μ = (0.3, 0.6), Bernoulli arrivals and service, M = 1; ζ/2 = {zeta_half:.6g} "
              "(`theory.bounds.heavy_traffic_limit`). Logarithmic reduction, D = 60 "
              "(the last column: the relative change of E[ΣQ] at D = 90).", "",
              "| ε | E[ΣQ] | ε·E[ΣQ] | ε·E[ΣQ] − ζ/2 | sp(R) | doublings | P(|d| = D) | "
              "rel. change D=90 | solve s |",
              "|---|---|---|---|---|---|---|---|---|"]
    for epsilon in (1e-1, 1e-2, 1e-3, 1e-4):
        system = System.build(mu, epsilon=epsilon, arrivals="bernoulli")
        result = two_server_qbd(system, make_policy("jsq"))
        finer = two_server_qbd(system, make_policy("jsq"), phase_limit=90)
        change = abs(finer.mean_total_queue / result.mean_total_queue - 1)
        scaled = epsilon * result.mean_total_queue
        lines.append(f"| {epsilon:.0e} | {result.mean_total_queue:.10g} | {scaled:.8f} | "
                     f"{scaled - zeta_half:+.2e} | {result.spectral_radius:.8f} | "
                     f"{result.iterations} | {result.edge_mass:.1e} | {change:.1e} | "
                     f"{result.seconds:.3f} |")
        print(lines[-1], flush=True)
    system = System.build(mu, epsilon=1e-2, arrivals="bernoulli")
    started = time.perf_counter()
    chain = dispatchlab.exact(system, "jsq", tolerance=1e-12, max_states=2_000_000)
    qbd = two_server_qbd(system, make_policy("jsq"))
    lines += ["", f"Cross-check at ε = 1e-2: truncated chain {chain.mean_total_queue:.10g} "
              f"(K = {chain.truncation}, {chain.states:,} states, "
              f"{time.perf_counter() - started:.1f} s) vs QBD {qbd.mean_total_queue:.10g}: "
              f"relative difference {abs(chain.mean_total_queue / qbd.mean_total_queue - 1):.1e}."]
    Path(__file__).with_name("validation.md").write_text("\n".join(lines) + "\n")


if __name__ == "__main__":
    main()
