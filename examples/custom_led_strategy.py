"""Plug your own dispatching strategy into LED without touching the engine.

A strategy is a compiled function with the fixed signature
``(estimates, mu, rng, params, scratch) -> server`` (see
``dispatchlab.policies.led.strategies``): it sees only the dispatcher's own local
estimates Q̃^m and the service rates μ. Decorate it with ``strategy_function``, then

* check its dispatching preference Δ (Monte Carlo) with ``check_tilt``, or on the
  command line: ``dispatchlab check tilt --strategy custom_led_strategy:uniform_below_average``
  (with ``examples/`` on PYTHONPATH);
* simulate it with ``LEDPolicy(strategy=..., update=..., p=...)``.

The rule below — a *uniform* choice among the servers whose estimate is below the
plain average — is the counter-example of THEORY.md §2.3: tilted for homogeneous
servers, not tilted for μ = (8, 1, 1), which is why L-JBA weights its choice by μ.

Run: ``.venv/bin/python examples/custom_led_strategy.py``
"""

from __future__ import annotations

from dispatchlab import System, simulate
from dispatchlab.compiled.kernels import argmin_random_ties
from dispatchlab.compiled.rng import randint
from dispatchlab.policies.led import LEDPolicy, strategy_function
from dispatchlab.theory.tilt import check_tilt


@strategy_function
def uniform_below_average(estimates, mu, rng, params, scratch):
    """Uniform over {n : Q̃_n < mean Q̃}; the smallest estimate when all are equal."""
    n_servers = estimates.size
    total = 0.0
    for n in range(n_servers):
        total += estimates[n]
    average = total / n_servers
    count = 0
    for n in range(n_servers):
        if estimates[n] < average:
            scratch[count] = n
            count += 1
    if count == 0:
        return argmin_random_ties(estimates, rng)
    return scratch[randint(rng, count)]


def main() -> None:
    for rates in ([1.0, 1.0, 1.0], [8.0, 1.0, 1.0]):
        report = check_tilt(uniform_below_average, rates, samples=20_000)
        print(f"μ = {rates}: tilted={report.tilted}, δ-tilted={report.delta_tilted}, "
              f"first failing state: {report.failing_case.label if report.failing_case else '—'}")

    system = System.build("10x0.3", load=0.9, dispatchers=4)
    policy = LEDPolicy(strategy=uniform_below_average, update="pull", p=0.2)
    result = simulate(system, policy, slots=100_000, seed=1)
    print(f"{policy}: E[ΣQ] = {result.mean_total_queue:.2f} "
          f"[{result.ci_low:.2f}, {result.ci_high:.2f}], "
          f"messages/arrival = {result.messages_per_arrival:.3f}, "
          f"E|Q − Q̃| = {result.diagnostics['estimation_error']:.3f}")


if __name__ == "__main__":
    main()
