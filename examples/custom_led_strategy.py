"""A new LED dispatching strategy in one module: its compiled rule, its theory, its name.

A strategy is a compiled function with the fixed signature
``(estimates, mu, rng, params, scratch) -> server`` (see
``dispatchlab.policies.led.strategies``): it sees only the dispatcher's own local
estimates Q̃^m and the service rates μ. Decorate it with ``strategy_function``; then

* give it what the theory knows, as capability methods of a ``Strategy`` subclass:
  ``exact_probabilities(estimates, mu, order)`` (P_n with ties broken by σ = ``order``)
  and, when the theory quotes one, ``delta(mu)``; without them the tilt check estimates
  P_n by Monte Carlo with the compiled rule;
* register it by name with ``register_strategy``: ``LEDPolicy(strategy="below-average")``
  and ``check_tilt`` then use it, and nothing else in dispatchlab changes. A bare rule
  also works: ``LEDPolicy(strategy=uniform_below_average)`` or, on the command line,
  ``dispatchlab check tilt --strategy custom_led_strategy:uniform_below_average`` (with
  ``examples/`` on PYTHONPATH; checked by Monte Carlo).

The rule below — a *uniform* choice among the servers whose estimate is below the
plain average — is the counter-example of docs/model.md#led-strategies: tilted for homogeneous
servers, not tilted for μ = (8, 1, 1), which is why L-JBA weights its choice by μ.

Run: ``.venv/bin/python examples/custom_led_strategy.py``
"""

from __future__ import annotations

from typing import Any

import numpy as np

from dispatchlab import System, simulate
from dispatchlab.compiled.argmin import argmin_random_ties
from dispatchlab.compiled.rng import randint
from dispatchlab.policies.led import (
    LEDPolicy,
    Strategy,
    as_strategy,
    register_strategy,
    strategy_function,
)
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


class BelowAverage(Strategy):
    """P_n = 1/|B| on B = {n : Q̃_n < mean Q̃}; all on σ(1) when B is empty."""

    def exact_probabilities(self, estimates: np.ndarray, mu: np.ndarray,
                            order: np.ndarray) -> np.ndarray:
        probabilities = np.zeros(mu.size)
        below = estimates < estimates.mean()
        if below.any():
            probabilities[below] = 1.0 / below.sum()
        else:
            probabilities[order[0]] = 1.0
        return probabilities


@register_strategy("below-average")
def below_average(**options: Any) -> Strategy:
    """The registered strategy (it takes none of the ``led`` policy's options)."""
    return BelowAverage("below-average", uniform_below_average,
                        summary="uniform below the plain average")


def main(slots: int = 100_000) -> dict[str, float]:
    strategy = as_strategy("below-average")
    for rates in ([1.0, 1.0, 1.0], [8.0, 1.0, 1.0]):
        report = check_tilt(strategy, rates)
        print(f"μ = {rates} ({report.method}): tilted={report.tilted}, "
              f"δ-tilted={report.delta_tilted}, first failing state: "
              f"{report.failing_case.label if report.failing_case else '—'}")

    system = System.build("10x0.3", load=0.9, dispatchers=4)
    policy = LEDPolicy(strategy="below-average", update="pull", p=0.2)
    result = simulate(system, policy, slots=slots, seed=1)
    print(f"{policy}: E[ΣQ] = {result.mean_total_queue:.2f} "
          f"[{result.ci_low:.2f}, {result.ci_high:.2f}], "
          f"messages/arrival = {result.messages_per_arrival:.3f}, "
          f"E|Q − Q̃| = {result.diagnostics['estimation_error']:.3f}")
    return {"mean_total_queue": result.mean_total_queue, "stable": float(result.stable)}


if __name__ == "__main__":
    main()
