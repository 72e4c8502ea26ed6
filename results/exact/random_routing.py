"""Exact E[ΣQ] of weighted random routing on the systems of the Reproductions page's
comparisons, where simulation is too noisy to say (two 40,000-slot runs at ρ = 0.99 gave a
t-interval below zero), and of the Halfin–Whitt runs, whose 20,000 slots are a transient
for it (it relaxes in ~1/(μ(1 − √ρ)²) slots).

Weighted random routing sends each job to server n with probability p_n = μ_n/μ_Σ,
independently of everything else. With Poisson arrivals and per-job dispatch the servers
then see independent Poisson(λ_Σ·p_n) arrivals (Poisson thinning), whatever the number of
dispatchers: E[ΣQ] = Σ_n E[Q_n], each the single-server chain at the same load ρ, solved by
``dispatchlab.exact`` (its truncation's edge mass is reported).

    PYTHONPATH=src python results/exact/random_routing.py

writes results/exact/random_routing.json next to this script.
"""

from __future__ import annotations

import json
import sys
import time
from collections import Counter
from pathlib import Path

import dispatchlab
from dispatchlab.experiments.catalog.many_servers import halfin_whitt
from dispatchlab.model import System
from dispatchlab.model.service import parse_rates

HERE = Path(__file__).resolve().parent
#: (servers, arrivals, service, dispatch, loads): the scd-loads experiment's system, and
#: the halfin-whitt experiment's at each N with its loads 1 − β/√N (as its spec builds
#: them, so that they match the stored ones to the last digit)
SYSTEMS = (("50x1,50x5", "poisson", "geometric", "per_job", (0.5, 0.7, 0.9, 0.95, 0.99)),
           *((str(system.servers), "poisson", "bernoulli", "per_job",
              tuple(system.build(beta=beta).load for beta in halfin_whitt().betas))
             for system in halfin_whitt().systems))


def row(servers: str, arrivals: str, service: str, dispatch: str, load: float) -> dict:
    """One system at one load: the exact E[ΣQ] and the parts it sums."""
    started = time.perf_counter()
    parts, edge = [], 0.0
    for rate, count in sorted(Counter(parse_rates(servers)).items()):
        single = System.build([rate], load=load, arrivals=arrivals, service=service)
        exact = dispatchlab.exact(single, "wrand")
        parts.append({"rate": rate, "servers": count, "mean_queue": exact.mean_total_queue,
                      "edge_mass": exact.edge_mass})
        edge = max(edge, exact.edge_mass)
    return {"servers": servers, "arrivals": arrivals, "service": service,
            "dispatch": dispatch, "load": load, "policy": "wrand",
            "mean_total_queue": sum(p["servers"] * p["mean_queue"] for p in parts),
            "max_edge_mass": edge, "parts": parts,
            "seconds": round(time.perf_counter() - started, 2)}


def main() -> int:
    rows = [row(servers, arrivals, service, dispatch, load)
            for servers, arrivals, service, dispatch, loads in SYSTEMS for load in loads]
    table = {"command": "PYTHONPATH=src python results/exact/random_routing.py",
             "method": __doc__.split("\n\n")[1].replace("\n", " "), "rows": rows}
    (HERE / "random_routing.json").write_text(json.dumps(table, indent=1, ensure_ascii=False)
                                              + "\n", encoding="utf-8")
    for r in rows:
        print(f"{r['servers']} ρ = {r['load']:g}: E[ΣQ] = {r['mean_total_queue']:.6g} "
              f"(edge mass ≤ {r['max_edge_mass']:.1e}, {r['seconds']} s)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
