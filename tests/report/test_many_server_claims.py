"""The rules of the many-server claims (report.many_server_claims) on small frames whose
answer is known: a falling waiting probability is a trend bounded by its last interval, a
flat one contradicts "vanishes", a policy unstable at every N is not judged, and two
curves whose gap closes within their intervals match."""

from __future__ import annotations

import pandas as pd

from dispatchlab.report.many_server_claims import matches, per_value, waiting_vanishes


def frame(curves: dict[str, list[float]], unstable: tuple[str, ...] = ()) -> pd.DataFrame:
    """Two replications per (policy, N = 10², 10³, 10⁴), ±0.002 around each value."""
    rows = []
    for label, values in curves.items():
        for n, value in zip((100, 1_000, 10_000), values, strict=True):
            for offset in (-0.002, 0.002):
                rows.append({"policy_label": label, "system.n_servers": n, "x": 0.9,
                             "waiting_probability": value + offset, "system.dispatchers": 10,
                             "stability": "unstable" if label in unstable else "stable"})
    return pd.DataFrame(rows)


def test_a_falling_curve_is_a_trend_and_a_flat_one_is_not() -> None:
    data = frame({"JIQ": [0.3, 0.1, 0.01], "JSQ": [0.41, 0.41, 0.41], "Po-2": [0.9, 0.9, 0.9]})
    every = data["x"] == 0.9
    verdict = waiting_vanishes(data, ["JIQ"], ["Po-2"], every, "ρ = 0.9")
    assert verdict.status == "trend" and "the limit ≤ " in verdict.numbers
    verdict = waiting_vanishes(data, ["JIQ", "JSQ"], ["Po-2"], every, "ρ = 0.9")
    assert verdict.status == "held in part" and "does not fall" in verdict.numbers
    assert waiting_vanishes(data, ["JSQ"], [], every, "").status == "not held"


def test_an_unstable_policy_is_named_not_judged() -> None:
    data = frame({"JIQ": [0.3, 0.1, 0.01], "Po-2": [0.9, 0.9, 0.9]}, unstable=("Po-2",))
    verdict = waiting_vanishes(data, ["JIQ"], ["Po-2"], data["x"] == 0.9, "")
    assert verdict.status == "trend" and "not judged" in verdict.numbers


def test_curves_match_when_their_gap_closes_within_the_intervals() -> None:
    closing = frame({"JIQ": [0.3, 0.1, 0.05], "JSQ": [0.2, 0.08, 0.051]})
    assert matches(closing, "JIQ", "JSQ", closing["x"] == 0.9, "").status == "held"
    parting = frame({"JIQ": [0.3, 0.1, 0.05], "JSQ": [0.35, 0.45, 0.55]})
    assert matches(parting, "JIQ", "JSQ", parting["x"] == 0.9, "").status == "not held"
    combined = per_value(parting, lambda chosen, scope: matches(parting, "JIQ", "JSQ",
                                                                chosen, scope), [0.9], "β")
    assert combined.status == "not held" and combined.numbers.startswith("β = 0.9")
