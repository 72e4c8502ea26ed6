"""Exact two-server curves read as limits (docs/statistics.md#exact-limits): synthetic
curves with known limits get the verdicts the standard promises, the committed tables
decide the rows they cover, and a table from someone else is data."""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pytest

from dispatchlab.report.exact_limits import (
    EXACT_CURVE_TABLES,
    LEVEL_SLOPE,
    ExactCurve,
    exact_persisting,
    exact_vanishing,
    load_exact_curves,
)
from dispatchlab.report.limit_claims import shown_somewhere
from dispatchlab.report.verdicts import LIMIT_TOLERANCE

ROOT = Path(__file__).resolve().parents[2]
EPS = (1e-3, 3e-3, 1e-2, 3e-2, 0.1)
ZETA_HALF = 0.5


def _curve(values) -> ExactCurve:
    return ExactCurve("Poisson", (0.2, 0.8), "r = 3", EPS,
                      tuple(float(v) for v in values), ZETA_HALF, 1e-6)


def _read(function) -> ExactCurve:
    return _curve([function(e) for e in EPS])


@pytest.mark.parametrize("name, function, vanishing, persisting", [
    # a log threshold's approach: ε·log(1/ε), down to 0.7 % of ζ/2: bounded, not reached
    ("ε·log(1/ε)", lambda e: 0.5 * e * math.log(1 / e), "below resolution",
     "below resolution"),
    # a slower approach to 0, as the Poisson tables' ⌈log 1/ε⌉ (local slope ≈ 0.45)
    ("0.3·ε^0.45", lambda e: 0.3 * e ** 0.45, "below resolution", "below resolution"),
    # still falling, but above the tolerance at the smallest ε
    ("√ε", lambda e: 3.0 * math.sqrt(e), "trend", "below resolution"),
    # a gap of 20 % of ζ/2 approached like ε: levelled off above the tolerance
    ("0.1 + ε", lambda e: 0.1 + e, "not held", "held"),
    # a gap of 1 % of ζ/2: levelled off within the tolerance
    ("0.005 + 0.3·ε", lambda e: 0.005 + 0.3 * e, "below resolution", "held"),
    # the same gap approached faster: at ε = 0.001 it still looks like a fall (slope
    # 0.26), and neither reading can tell it from 0
    ("0.005 + ε", lambda e: 0.005 + e, "below resolution", "below resolution"),
])
def test_the_standard_on_exact_curves_with_known_limits(name, function, vanishing,
                                                        persisting) -> None:
    curve = _read(function)
    assert exact_vanishing(curve, LIMIT_TOLERANCE)[0] == vanishing, name
    assert exact_persisting(curve, LIMIT_TOLERANCE)[0] == persisting, name
    # complements: never held both ways
    assert not (vanishing == "held" and persisting == "held")


def test_a_levelled_curve_is_read_at_the_line_through_its_two_smallest_epsilons() -> None:
    curve = _read(lambda e: 0.1 + 2.0 * e)
    assert curve.line_limit == pytest.approx(0.1, rel=1e-9)
    assert curve.slope < LEVEL_SLOPE
    assert "reaches 0.1 at ε = 0" in exact_persisting(curve, LIMIT_TOLERANCE)[1]


def test_a_curve_at_zero_has_no_slope_to_read() -> None:
    curve = _curve([0.0, 0.001, 0.002, 0.003, 0.004])
    assert math.isnan(curve.slope)
    assert exact_vanishing(curve, LIMIT_TOLERANCE)[0] == "undecided"
    assert exact_persisting(curve, LIMIT_TOLERANCE)[0] == "below resolution"


def test_a_coarse_truncation_is_said() -> None:
    curve = ExactCurve("Poisson", (0.5, 0.5), "r = 1 (JIQ)", EPS[:2], (0.16, 0.17), 0.75,
                       1e-4)
    assert "reads low by a few per cent" in curve.describe()
    assert "reads low" not in _curve(np.linspace(0.1, 0.2, 5)).describe()


def test_one_curve_that_resolves_a_claim_holds_it_unless_another_contradicts_it() -> None:
    assert shown_somewhere(["undecided", "held", "below resolution", "trend"]) == "held"
    assert shown_somewhere(["held", "not held"]) == "not held"
    assert shown_somewhere(["undecided", "below resolution"]) == "undecided"
    assert shown_somewhere([]) == "undecided"


def test_the_committed_tables_decide_the_jbt_rows_they_cover() -> None:
    """The Poisson and binomial tables: JIQ and r = 3 level off above 0 on every system,
    the logarithmic thresholds still fall, within 5 % of ζ/2 at ε = 0.001 (a bound)."""
    labels = ["r = 1 (JIQ)", "r = 3", "r = ⌈log(1/ε)⌉", "r = ⌈2 log(1/ε)⌉"]
    curves = [c for c in load_exact_curves(labels, ROOT) if c.arrivals != "Bernoulli"]
    assert len(curves) == 2 * 3 * 4  # two laws, three systems, four rules
    for curve in curves:
        assert curve.epsilons[0] == 0.001
        gap, vanishes = (exact_persisting(curve, LIMIT_TOLERANCE)[0],
                         exact_vanishing(curve, LIMIT_TOLERANCE)[0])
        if "log" in curve.label:
            assert (vanishes, gap) == ("below resolution", "below resolution"), curve
            assert curve.slope > 0.4  # a constant threshold's: ≤ 0.22
        else:
            assert gap == "held" and curve.slope < 0.25, curve


def test_a_received_table_is_data(tmp_path: Path) -> None:
    """Rows of the wrong shape, non-numbers, NaN and out-of-range values are skipped; a
    file that is not a table, or absent, gives nothing."""
    good = {"rule": "jbt r=3", "system": [0.2, 0.8], "eps_EX_identity": 0.05,
            "zeta_half": 0.66, "tolerance": 1e-6}
    rows = [dict(good, epsilon=0.001), dict(good, epsilon=0.003),
            dict(good, epsilon="__import__('os')"), dict(good, epsilon=float("nan")),
            dict(good, epsilon=2.0), dict(good, epsilon=0.01, zeta_half=-1),
            dict(good, epsilon=0.02, eps_EX_identity=-0.1), {"rule": "jbt r=3"}, [1, 2], None]
    law = "Poisson"
    path = tmp_path / EXACT_CURVE_TABLES[law]
    path.parent.mkdir(parents=True)
    path.write_text(json.dumps({"rows": rows}), encoding="utf-8")
    curves = load_exact_curves(["r = 3"], tmp_path)
    assert [(c.arrivals, c.epsilons) for c in curves] == [(law, (0.001, 0.003))]
    for text in ("[", "not json", json.dumps({"rows": "x"}), "[" * 100_000):
        path.write_text(text, encoding="utf-8")
        assert load_exact_curves(["r = 3"], tmp_path) == []
    assert load_exact_curves(["r = 3"], tmp_path / "absent") == []
    assert load_exact_curves(["no such rule"], ROOT) == []


def _levelled(label: str, gap: float, arrivals: str = "Poisson") -> ExactCurve:
    return ExactCurve(arrivals, (0.2, 0.8), label, EPS,
                      tuple(gap + 0.3 * e for e in EPS), ZETA_HALF, 1e-6)


def test_the_gap_must_fall_with_r_on_every_system_that_shows_it(monkeypatch) -> None:
    """Theorem 1(1)'s gap against r: kept where each system's levelled curves order their
    gaps by r, not held where a larger r leaves a larger gap; a still-falling curve (no
    gap shown) is left out, and so is a system with one gap."""
    from dispatchlab.report import limit_claims
    from dispatchlab.report.verdicts import Verdict

    verdict = Verdict("held", "simulated")
    still_falling = ExactCurve("Poisson", (0.2, 0.8), "r = 5", EPS,
                               tuple(3.0 * math.sqrt(e) for e in EPS), ZETA_HALF, 1e-6)
    ordered = (_levelled("r = 1 (JIQ)", 0.2), _levelled("r = 3", 0.05), still_falling,
               _levelled("r = 1 (JIQ)", 0.1, "binomial(2, λ/2)"))
    monkeypatch.setattr(limit_claims, "_exact_curves", lambda labels: ordered)
    kept = limit_claims.gap_falls_with_r(verdict)
    assert kept.status == "held"
    assert "Poisson arrivals (exact): r = 1 0.2 > r = 3 0.05" in kept.numbers
    assert "binomial" not in kept.numbers  # one gap: no order to read
    rising = (_levelled("r = 1 (JIQ)", 0.05), _levelled("r = 3", 0.2))
    monkeypatch.setattr(limit_claims, "_exact_curves", lambda labels: rising)
    refuted = limit_claims.gap_falls_with_r(verdict)
    assert refuted.status == "not held" and "(not falling)" in refuted.numbers
    monkeypatch.setattr(limit_claims, "_exact_curves", lambda labels: ())
    assert limit_claims.gap_falls_with_r(verdict) == verdict
