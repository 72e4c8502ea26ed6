"""Jobs per second of the continuous-time engine against Ciw, on workloads both express.

    .venv/bin/pip install -e '.[bench]'      # Ciw, for this benchmark only
    .venv/bin/python benchmarks/continuous_vs_ciw.py [N] [LOAD] [CIW_JOBS] [OUR_JOBS]

Then the cost per job of JSQ(d) (d = 2) and LWL, which look at the servers (2 of them, or
all N), at N = 10² and 10⁴, same load, exponential sizes, FIFO.

The workloads: Poisson arrivals (rate λ = ρ·N), N FIFO servers with exponential service of
rate 1, and the jobs routed
* at random: for Ciw, N independent Poisson streams of rate λ/N (the same law, and Ciw's
  cheapest way to write it: no routing step), for us ``random`` with one dispatcher;
* by round robin: for Ciw, a dispatching node with no service time and a ``Cycle`` router
  (how Ciw routes), for us ``rr`` with one dispatcher.
Each side runs in this process, one after the other, on the same machine in the same minute;
the ratio is ours over Ciw's jobs per second of wall time (each side's own compile or set-up
excluded: ours is loaded first by a short run). Ciw's E[T] is printed beside ours as a
check that both simulated the same system.
"""

from __future__ import annotations

import platform
import sys
import time

import ciw

from dispatchlab.continuous import simulate_continuous


def processor() -> str:
    """The processor's model name (Linux), else the platform's."""
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as cpuinfo:
            for line in cpuinfo:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def ciw_run(servers: int, load: float, jobs: int, routing: str) -> tuple[float, float]:
    """(jobs per second, mean response time) of Ciw on the workload."""
    rate = load * servers
    service = [ciw.dists.Exponential(1.0)] * servers
    if routing == "random":
        network = ciw.create_network(
            arrival_distributions=[ciw.dists.Exponential(rate / servers)] * servers,
            service_distributions=service, number_of_servers=[1] * servers,
            routing=[[0.0] * servers for _ in range(servers)])  # every job leaves
    else:
        destinations = list(range(2, servers + 2))
        network = ciw.create_network(
            arrival_distributions=[ciw.dists.Exponential(rate)] + [None] * servers,
            service_distributions=[ciw.dists.Deterministic(0.0)] + service,
            number_of_servers=[float("inf")] + [1] * servers,
            routing=ciw.routing.NetworkRouting(
                routers=[ciw.routing.Cycle(cycle=destinations)]
                + [ciw.routing.Leave()] * servers))
    ciw.seed(1)
    simulation = ciw.Simulation(network)
    horizon = jobs / rate
    started = time.perf_counter()
    simulation.simulate_until_max_time(horizon)
    seconds = time.perf_counter() - started
    records = [r for r in simulation.get_all_records() if r.record_type == "service"
               and r.node > (0 if routing == "random" else 1)]
    warm = [r for r in records if r.arrival_date > horizon / 10]
    # (a job's time at the dispatching node is 0: its arrival there is its arrival here)
    response = sum(r.exit_date - r.arrival_date for r in warm) / len(warm)
    return len(records) / seconds, response


def ours(servers: int, load: float, jobs: int, routing: str) -> tuple[float, float]:
    """(jobs per second, mean response time) of ``simulate_continuous``."""
    result = simulate_continuous(f"{servers}x1", routing, load=load, jobs=jobs, dispatchers=1)
    return result.jobs_per_second, result.mean_response.mean


def main() -> None:
    servers = int(sys.argv[1]) if len(sys.argv) > 1 else 10
    load = float(sys.argv[2]) if len(sys.argv) > 2 else 0.8
    ciw_jobs = int(sys.argv[3]) if len(sys.argv) > 3 else 100_000
    our_jobs = int(sys.argv[4]) if len(sys.argv) > 4 else 4_000_000
    print(f"processor: {processor()}; N = {servers} FIFO exponential servers, rho = {load}; "
          f"Ciw {ciw.__version__} on {ciw_jobs:,} jobs, ours on {our_jobs:,}")
    print(f"{'routing':8} {'Ciw jobs/s':>12} {'ours jobs/s':>13} {'ratio':>8} "
          f"{'Ciw E[T]':>9} {'our E[T]':>9}")
    for routing in ("random", "rr"):
        ours(servers, load, 1000, routing)  # loads (or compiles) the event loop
        ciw_speed, ciw_response = ciw_run(servers, load, ciw_jobs, routing)
        our_speed, our_response = ours(servers, load, our_jobs, routing)
        print(f"{routing:8} {ciw_speed:12,.0f} {our_speed:13,.0f} {our_speed / ciw_speed:8.0f} "
              f"{ciw_response:9.3f} {our_response:9.3f}")
    print(f"{'policy':8} {'N':>7} {'ns/job':>8} {'E[T]':>8}")
    for policy in ("jsq-d", "lwl"):
        for size in (100, 10_000):
            jobs = our_jobs if policy == "jsq-d" or size <= 100 else our_jobs // 50
            speed, response = ours(size, load, jobs, policy)
            print(f"{policy:8} {size:7,} {1e9 / speed:8.1f} {response:8.3f}")


if __name__ == "__main__":
    main()
