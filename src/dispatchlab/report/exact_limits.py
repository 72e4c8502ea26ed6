"""The exact two-server curves of ε·E[X] read as limits: the committed tables of JIQ/JBT-r
(``results/exact/jbt_two_server*.json``, one per arrival law, solved by
:mod:`dispatchlab.solvers.multilevel`) judged beside the simulated curves of the same
claims (docs/statistics.md#exact-limits).

An exact value has no sampling error, so no interval and no fitted intercept: a curve is
read by its value v at the smallest ε solved and its **local slope** α there, ε·E[X] ∝ ε^α
between the two smallest ε. A curve that approaches a positive limit L like L + c·ε has
α = c·ε/(L + c·ε) → 0; one that vanishes like ε^a·log(1/ε) keeps α near a. Curves levelling
off have α < :data:`LEVEL_SLOPE` (r = 1 and 3 with Poisson and binomial arrivals: α ≤ 0.22
at ε = 0.001), vanishing ones above it (the logarithmic thresholds: 0.44–0.86).

- **"→ 0"**: an exact curve bounds the limit, it does not reach it: below resolution,
  |limit| ≤ v, while the curve still falls or has levelled off within the tolerance (5 %
  of ζ/2, the standard of every limit on the page); a trend when it still falls above the
  tolerance; not held when it has levelled off above it. (Where it still falls, the
  theorem's form a + b·ε·r through the exact values gives no better: the logarithmic
  thresholds' slower approach at these ε, local slope 0.44–0.85 instead of ≈ 1, makes its
  intercept positive.)
- **"> 0"**: held when the curve has levelled off (α < LEVEL_SLOPE) and the line through
  the two smallest ε, a + b·ε (a constant threshold's finite-ε term is of order 2r·ε,
  [JBT] §5), meets ε = 0 above 0, at the level it states; below resolution (|limit| ≤ v)
  while the curve still falls — a finite ε bounds a limit, it cannot refute a positive
  one.

Each table is data: read as JSON, every field checked for its type; a row without the
expected shape is skipped.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path

from dispatchlab.report.exact_evidence import table_rows

#: the committed tables, by the arrival law they were solved with (paths relative to the
#: repository root, where the page is built)
EXACT_CURVE_TABLES = {
    "Bernoulli": "results/exact/jbt_two_server.json",
    "Poisson": "results/exact/jbt_two_server_poisson.json",
    "binomial(2, λ/2)": "results/exact/jbt_two_server_binomial_2.json",
}

#: the tables' name of each rule the claims name
TABLE_RULES = {
    "r = 1 (JIQ)": "jbt r=1",
    "r = 2": "jbt r=2",
    "r = 3": "jbt r=3",
    "r = 5": "jbt r=5",
    "r = ⌈log(1/ε)⌉": "jbt r=⌈1·log 1/ε⌉",
    "r = ⌈2 log(1/ε)⌉": "jbt r=⌈2·log 1/ε⌉",
}

#: the local slope below which a curve has levelled off (see the module docstring)
LEVEL_SLOPE = 0.25

#: the truncation at and below which an exact value is read as it is (P(ΣQ = K));
#: above it the identity's value reads low by a few per cent (docs/exact.md)
FULL_TRUNCATION = 1e-6


@dataclass(frozen=True)
class ExactCurve:
    """One rule's exact ε·E[X] on one two-server system under one arrival law, ε
    ascending (``truncation``: P(ΣQ = K) of the solve at the smallest ε)."""

    arrivals: str
    servers: tuple[float, ...]
    label: str
    epsilons: tuple[float, ...]
    values: tuple[float, ...]
    zeta_half: float
    truncation: float

    @property
    def system(self) -> str:
        """"two servers 0.2 + 0.8, Poisson arrivals (exact)"."""
        rates = " + ".join(f"{rate:g}" for rate in self.servers)
        return f"two servers {rates}, {self.arrivals} arrivals (exact)"

    @property
    def slope(self) -> float:
        """α: ε·E[X] ∝ ε^α between the two smallest ε (NaN when a value is not > 0)."""
        (e1, e2), (v1, v2) = self.epsilons[:2], self.values[:2]
        if v1 <= 0 or v2 <= 0:
            return math.nan
        return math.log(v2 / v1) / math.log(e2 / e1)

    @property
    def line_limit(self) -> float:
        """The line through the two smallest ε extrapolated to ε = 0."""
        (e1, e2), (v1, v2) = self.epsilons[:2], self.values[:2]
        return v1 - (v2 - v1) * e1 / (e2 - e1)

    def describe(self) -> str:
        """"ε·E[X] = 0.0241 at ε = 0.001 (3.7 % of ζ/2 = 0.66), local slope 0.44"."""
        value = self.values[0]
        text = (f"ε·E[X] = {value:.4g} at ε = {self.epsilons[0]:g} "
                f"({value / self.zeta_half:.1%} of ζ/2 = {self.zeta_half:.4g}), local "
                f"slope {self.slope:.2f}")
        if self.truncation > FULL_TRUNCATION:
            text += (f" (solved at P(ΣQ = K) ≤ {self.truncation:.0e}: reads low by a few "
                     "per cent)")
        return text


def load_exact_curves(labels: list[str], root: Path = Path(".")) -> list[ExactCurve]:
    """The exact curves of the rules ``labels`` name (:data:`TABLE_RULES`) in every table
    of :data:`EXACT_CURVE_TABLES` under ``root`` that holds at least two ε of them; a
    missing table contributes nothing."""
    labels = [label for label in labels if label in TABLE_RULES]
    curves: list[ExactCurve] = []
    for arrivals, path in EXACT_CURVE_TABLES.items() if labels else ():
        rows = _rows(root / path)
        for label in labels:
            rule = TABLE_RULES[label]
            by_system: dict[tuple[float, ...], list[tuple[float, float, float, float]]] = {}
            for row in rows:
                if row[0] == rule:
                    by_system.setdefault(row[1], []).append(row[2:])
            for servers, points in sorted(by_system.items()):
                points.sort()
                if len(points) < 2:
                    continue
                epsilons, values, zeta_halves, truncations = zip(*points, strict=True)
                curves.append(ExactCurve(arrivals, servers, label, epsilons, values,
                                         zeta_halves[0], truncations[0]))
    return curves


def _rows(path: Path) -> list[tuple[str, tuple[float, ...], float, float, float, float]]:
    """(rule, servers, ε, ε·E[X] by the drift identity, ζ/2, truncation) of every
    well-formed row of one table; empty when the file is absent or not a table."""
    out = []
    for row in table_rows(path):
        try:
            rule, servers = str(row["rule"]), tuple(float(s) for s in row["system"])
            numbers = tuple(float(row[field]) for field in
                            ("epsilon", "eps_EX_identity", "zeta_half", "tolerance"))
        except (KeyError, TypeError, ValueError, OverflowError):
            continue
        epsilon, value, zeta_half, truncation = numbers
        if (all(map(math.isfinite, (*servers, *numbers))) and 0 < epsilon < 1
                and value >= 0 and zeta_half > 0 and truncation >= 0):
            out.append((rule, servers, *numbers))
    return out


def exact_vanishing(curve: ExactCurve, tolerance: float) -> tuple[str, str]:
    """"→ 0" on an exact curve (``tolerance``: the fraction of ζ/2 a limit counts as reached
    within): see the module docstring."""
    value, slope, within = curve.values[0], curve.slope, tolerance * curve.zeta_half
    if not math.isfinite(slope):
        return "undecided", "ε·E[X] is 0 at the smallest ε: no slope to read"
    falling = slope >= LEVEL_SLOPE
    if value > within:
        return (("trend", f"still falling, above {tolerance:.0%} of ζ/2") if falling else
                ("not held", f"levelled off above {tolerance:.0%} of ζ/2"))
    how = "still falling" if falling else "levelled off"
    return "below resolution", f"{how}: |limit| ≤ {value:.3g}"


def exact_persisting(curve: ExactCurve, tolerance: float) -> tuple[str, str]:
    """"> 0" on an exact curve: see the module docstring (``tolerance`` unused: a curve that
    has levelled off is read at its level, however small)."""
    value, slope = curve.values[0], curve.slope
    if math.isfinite(slope) and slope < LEVEL_SLOPE and curve.line_limit > 0:
        return "held", (f"levelled off: the line through the two smallest ε reaches "
                        f"{curve.line_limit:.3g} at ε = 0")
    return "below resolution", f"still falling: |limit| ≤ {value:.3g}"
