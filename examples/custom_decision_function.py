"""A new framework-Π policy in a few lines: write a decision function, register it, use it.

The decision below alternates the cycle's slots between the shortest and the second
shortest scaled queue: a_{N−1} = a_N = 1/2 (docs/model.md#pi-fractions). Eq. (3) then gives
λ̄ = min(2·Σ_{i≤N−1} μ_(i), μ_Σ): throughput optimal unless the fastest server carries
more than half of the total rate.

Run it:  .venv/bin/python examples/custom_decision_function.py
"""

from __future__ import annotations

from dispatchlab import System, simulate
from dispatchlab.policies import make_policy
from dispatchlab.policies.framework import decision_function, register_decision
from dispatchlab.theory.stability import induced_threshold


@decision_function
def two_shortest(eta, mu, int_params, float_params, rng, dest, scratch):
    """Slot i of the cycle goes to the shortest (i even) or second shortest (i odd) queue."""
    n = eta.size
    for i in range(dest.size):
        dest[i] = eta[n - 1 - (i & 1)] if n > 1 else eta[0]


register_decision("two-shortest", two_shortest,
                  "alternate between the shortest and the second shortest scaled queue",
                  rank_symmetric=True)  # a_l(η) depends on the rank l only


def main(slots: int = 200_000) -> dict[str, float]:
    servers = "0.2,0.3,0.5,0.6"
    policy = make_policy("pi-framework", decision="two-shortest", T=2)
    system = System.build(servers, load=0.9)
    region = induced_threshold(policy.dispatch_fractions(system.mu), system.mu)
    result = simulate(system, policy, slots=slots, seed=1)
    print(f"λ̄ = {region.threshold_rate:.4g} (ρ̄ = {region.threshold_load:.3g}), "
          f"throughput optimal: {region.throughput_optimal}")
    print(f"at ρ = 0.9: {result.stability}, E[ΣQ] = {result.mean_total_queue:.4g} "
          f"[{result.ci_low:.4g}, {result.ci_high:.4g}], "
          f"{result.messages_per_arrival:.3g} messages per job")
    return {"threshold_rate": region.threshold_rate, "mean_total_queue": result.mean_total_queue,
            "stable": float(result.stable)}


if __name__ == "__main__":
    main()
