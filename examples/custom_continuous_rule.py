"""A continuous-time dispatching rule of your own in a few lines: write it, register it,
run it against a built-in rule (docs/continuous.md#user-rules).

The rule below is the shortest expected delay of two choices: two servers at random, the
one where a new job expects to finish first, (jobs present + 1)/speed. On servers of two
speeds it beats P2C, which counts jobs only: E[T] 2.13 against 2.46 on 8 × 1 + 8 × 2 at
ρ = 0.9 (PS, C² = 4), paired difference −0.33 [−0.36, −0.30].

Run it:  .venv/bin/python examples/custom_continuous_rule.py
From the command line:  dispatchlab run --time continuous --import
examples/custom_continuous_rule.py --policy sed-2 --servers 8x1,8x2 --load 0.9
"""

from __future__ import annotations

from dispatchlab.compiled.rng import randint
from dispatchlab.continuous import compare_continuous, simulate_continuous
from dispatchlab.continuous.user_rules import register_continuous_rule


def shortest_expected_delay_of_two(m, size, counts, speeds, params, state, rng):
    """Two servers at random; the smaller (jobs present + 1)/speed, ties to the first."""
    a, b = randint(rng, counts.size), randint(rng, counts.size)
    return a if (counts[a] + 1) / speeds[a] <= (counts[b] + 1) / speeds[b] else b


register_continuous_rule("sed-2", shortest_expected_delay_of_two,
                         "two servers at random, the shorter expected delay (n + 1)/s")


def main(jobs: int = 200_000) -> dict[str, float]:
    settings = dict(load=0.9, sizes="hyperexp:1,4", discipline="ps", jobs=jobs,
                    replications=4, seed=1)
    results = [simulate_continuous("8x1,8x2", name, **settings) for name in ("sed-2", "p2c")]
    for name, result in zip(("sed-2", "p2c"), results, strict=True):
        e = result.mean_response
        print(f"{name:>6}: E[T] = {e.mean:.4g} [{e.ci_low:.4g}, {e.ci_high:.4g}]")
    d = compare_continuous("8x1,8x2", "sed-2", "p2c", **settings).difference
    print(f"E[T] sed-2 − p2c = {d.mean:.4g} [{d.ci_low:.4g}, {d.ci_high:.4g}] (paired)")
    return {"sed_2": results[0].mean_response.mean, "p2c": results[1].mean_response.mean,
            "difference_high": d.ci_high}


if __name__ == "__main__":
    main()
