"""``coverage.md`` from ``coverage.json`` (the output of ``dispatchlab check coverage --json``).

    .venv/bin/python results/coverage/make_table.py     # rewrites coverage.md

The binomial SE shown is the JSON's: sqrt(p̂(1 − p̂)/K), at least that of one run in K, so
that a perfect score still has an uncertainty (``testing/coverage_study.py``).
"""

from __future__ import annotations

import json
from pathlib import Path

HERE = Path(__file__).parent


def render(data: dict) -> str:
    """The Markdown table of one ``check coverage --json`` output."""
    runs, seed = data["runs"], data["seed"]
    lines = [
        f"# Coverage of the 95 % CI of E[ΣQ], K = {runs} runs per case "
        f"(seeds {seed} … {seed + runs - 1})",
        "",
        "Made from `coverage.json` by `make_table.py` (see README.md). Coverage ± its "
        "binomial SE; rel. half-width is the mean of the runs'.",
        "",
        "| case | estimator | exact E[ΣQ] | coverage | no CI | mean rel. half-width | rel. bias |",
        "|---|---|---|---|---|---|---|",
    ]
    for case in data["cases"]:
        lines.append(
            f"| {case['case']} ({case['description']}) | {case['estimator']} | "
            f"{case['exact_mean']:.6g} | {case['coverage']:.3f} ± {case['coverage_se']:.3f} | "
            f"{case['no_interval']} | {case['mean_relative_half_width']:.3g} | "
            f"{case['relative_bias']:+.4f} |")
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    (HERE / "coverage.md").write_text(
        render(json.loads((HERE / "coverage.json").read_text())), encoding="utf-8")
