"""The committed Reproductions page is what the committed results store gives: rebuilding it
from ``results/reproductions/store.sqlite`` must reproduce ``docs/reproductions.md`` to the
byte (figures aside: PNG bytes follow the fonts and the matplotlib version)."""

from __future__ import annotations

from pathlib import Path

import pytest

from dispatchlab.experiments.store import Store
from dispatchlab.report import reproductions
from dispatchlab.report.reproductions import CLAIMS, DEFAULT_STORE, render

ROOT = Path(__file__).parents[2]
PAGE = ROOT / "docs" / "reproductions.md"


@pytest.fixture(scope="module")
def rebuilt(tmp_path_factory: pytest.TempPathFactory) -> tuple[str, Path]:
    """The page rebuilt, its figures listed instead of drawn: drawing them is most of the
    rebuild, and report.plots' own tests draw figures (test_report.py)."""
    out = tmp_path_factory.mktemp("page") / "reproductions.md"
    store = Store(ROOT / DEFAULT_STORE, readonly=True)
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(reproductions, "write_figures", _list_figures)
        try:
            text = render(store, out, store_label=DEFAULT_STORE)
        finally:
            store.close()
    return text, out.parent


def _list_figures(spec, frame, directory: Path, formats=("png",)) -> list[Path]:
    """Stands for plots.write_figures: an empty file per figure it would draw."""
    from dispatchlab.report.plots import figures_of

    directory.mkdir(parents=True, exist_ok=True)
    assert len(frame) > 0
    paths = [directory / f"{figure.name}.{fmt}" for figure in figures_of(spec)
             for fmt in formats]
    for path in paths:
        path.touch()
    return paths


def test_the_committed_page_is_rebuilt_from_the_committed_store(rebuilt) -> None:
    text, _ = rebuilt
    assert PAGE.read_text(encoding="utf-8") == text, (
        "docs/reproductions.md differs from the page the committed store gives: run "
        "`make reproductions` and commit the page with the store")


def test_every_claim_has_a_verdict_and_its_figures(rebuilt) -> None:
    text, folder = rebuilt
    assert "not run yet" not in text.split("Verdicts:")[1].split("| claim |")[1]
    for claim in CLAIMS:
        assert claim.statement in text
        assert (folder / "reproductions" / claim.experiment / f"{claim.figure}.png").is_file()
        assert (PAGE.parent / "reproductions" / claim.experiment
                / f"{claim.figure}.png").is_file(), claim.experiment


def test_the_readme_summary_is_the_page_s_verdicts() -> None:
    """One voice: the README's table of claims is the page's, verdicts included."""
    from dispatchlab.report.reproductions import README_BEGIN, README_END, readme_block

    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    block = README_BEGIN + readme.split(README_BEGIN, 1)[1].split(README_END, 1)[0] + README_END
    assert block == readme_block(PAGE.read_text(encoding="utf-8")), (
        "README.md's summary of the claims differs from docs/reproductions.md: run "
        "`make reproductions`")
    assert block.count("\n| ") == len(CLAIMS) + 1  # the header's rule and a row a claim


def test_the_page_lists_every_heavy_traffic_limit(rebuilt) -> None:
    text, _ = rebuilt
    limits = text.split("## Heavy-traffic limits", 1)[1].split("## Figures", 1)[0]
    assert "| system | policy | lim ε·E[X] (95 % CI) |" in limits
    assert "two servers 0.25, Bernoulli | r = 1 (JIQ)" in limits


def test_a_readme_without_its_markers_is_refused_and_left_alone(tmp_path: Path) -> None:
    from dispatchlab.core.errors import ValidationError
    from dispatchlab.report.reproductions import update_readme

    readme = tmp_path / "README.md"
    readme.write_text("# no markers\n", encoding="utf-8")
    with pytest.raises(ValidationError, match="readme"):
        update_readme(readme, PAGE.read_text(encoding="utf-8"))
    assert readme.read_text(encoding="utf-8") == "# no markers\n"
    with pytest.raises(ValidationError, match="no such file"):
        update_readme(tmp_path / "absent.md", "")


def test_an_interval_below_zero_is_not_judged_and_an_exact_value_decides(rebuilt) -> None:
    """SCD against weighted random had been "undecided" at ρ = 0.99 on a t-interval of
    two 40,000-slot runs, [-1.039e+04, 5.323e+04], below 0 for a queue length: such a point
    is not judged, and weighted random's exact E[ΣQ] (independent queues,
    results/exact/random_routing.json) stands for it, saying so."""
    import pandas as pd

    from dispatchlab.report.comparisons import resolved

    text, _ = rebuilt
    row = next(line for line in text.splitlines() if line.startswith(
        "| Stochastically coordinated dispatching"))
    assert "| **held** |" in row
    assert ("vs weighted random: held (SCD: held at every load judged (0.5–0.99); "
            "load = 0.99: SCD 1581 [895.1, 2266] (6.74 msg/arrival) vs weighted random "
            "2.46e+04 (exact; simulated 2.142e+04 [-1.039e+04, 5.323e+04])") in row
    assert not resolved(pd.Series({"stable": True, "ci_low": -1.0}))
    assert not resolved(pd.Series({"stable": True, "ci_low": float("nan")}))
    assert resolved(pd.Series({"stable": True, "ci_low": 0.0}))
    assert resolved(pd.Series({"stable": False, "ci_low": float("nan")}))


def _judge_better(monkeypatch: pytest.MonkeyPatch, points: dict[str, list[tuple]],
                  better: list[str], worse: str):
    """``comparisons.beat`` on a made-up summary: ``points[label]`` = [(load, mean, low, high)] (a
    mean of None: judged unstable)."""
    from types import SimpleNamespace

    import pandas as pd

    rows = [{"policy": label, "x": x, "y": y if y is not None else float("nan"),
             "ci_low": low, "ci_high": high, "stable": y is not None}
            for label, curve in points.items() for x, y, low, high in curve]
    from dispatchlab.report import comparisons

    monkeypatch.setattr(comparisons, "summary_of", lambda spec, frame, y: pd.DataFrame(rows))
    monkeypatch.setattr(comparisons, "_messages", lambda frame, label, x: "")
    return comparisons.beat(SimpleNamespace(axis="load"), pd.DataFrame(), better, worse)


def test_a_comparison_reads_per_policy_and_by_bands_of_load(monkeypatch) -> None:
    """LED Fig. 1's shape: L-JBA wins at every load, L-JSQ up to 0.9 and loses above. The
    row is held in part and says which; all winning is held; a loss at a lower load only
    still shows; none winning is not held; overlapping intervals at the top are undecided."""
    jsq = [(0.5, 100, 99, 101), (0.9, 1300, 1290, 1310), (0.98, 1580, 1575, 1585)]
    jba = [(0.5, 50, 49, 51), (0.9, 500, 490, 510), (0.98, 970, 830, 1110)]
    l_jsq = [(0.5, 60, 59, 61), (0.9, 750, 740, 760), (0.98, 3085, 2855, 3314)]
    verdict = _judge_better(monkeypatch, {"JSQ": jsq, "L-JBA": jba, "L-JSQ": l_jsq},
                            ["L-JBA", "L-JSQ"], "JSQ")
    assert verdict.status == "held in part"
    assert verdict.numbers.startswith(
        "L-JBA: held at every load judged (0.5–0.98); "
        "L-JSQ: held at load 0.5–0.9, not held at 0.98; load = 0.98: L-JBA 970 [830, 1110]")
    assert _judge_better(monkeypatch, {"JSQ": jsq, "L-JBA": jba}, ["L-JBA"], "JSQ"
                         ).status == "held"
    assert _judge_better(monkeypatch, {"JSQ": jsq, "L-JSQ": l_jsq}, ["L-JSQ"], "JSQ"
                         ).status == "held in part"
    assert _judge_better(monkeypatch, {"JSQ": jsq, "L-JBA": jba}, ["JSQ"], "L-JBA"
                         ).status == "not held"
    close = [(0.5, 50, 49, 51), (0.9, 500, 490, 510), (0.98, 1500, 1400, 1600)]
    tied = _judge_better(monkeypatch, {"JSQ": jsq, "X": close}, ["X"], "JSQ")
    assert tied.status == "undecided" and "held at load 0.5–0.9, undecided at 0.98" in \
        tied.numbers
    # an unstable loser counts for the winner; a point below 0 is named, not judged
    unstable = [(0.5, 100, 99, 101), (0.9, None, None, None), (0.98, 2e4, -1e4, 5e4)]
    verdict = _judge_better(monkeypatch, {"W": unstable, "L-JBA": jba}, ["L-JBA"], "W")
    assert verdict.status == "held"
    assert verdict.numbers.startswith("L-JBA: held at every load judged (0.5–0.9)")
    assert "load = 0.98: W 2e+04 [-1e+04, 5e+04] not equilibrated" in verdict.numbers


def test_l_pod_s_non_optimality_is_read_as_instability_with_its_bound(rebuilt) -> None:
    """L-Pod "not heavy-traffic optimal" rests on instability: the row names [HLM]'s bound
    ρ̄ = 0.9 for two uniform samples on 5×0.2 + 5×0.8 (the five slow servers get both
    samples with probability C(5,2)/C(10,2) = 2/9 and serve 1 of 5) and that tilt is
    sufficient, not necessary."""
    import pandas as pd

    from dispatchlab.report import comparisons

    text, _ = rebuilt
    row = next(line for line in text.splitlines() if line.startswith("| L-Pod is not tilted"))
    assert "| **held** |" in row and "ρ̄ = 0.9 of the capacity" in row
    assert "every ε ≤ 0.1 is past the stability region" in row
    assert "tilt is sufficient, not necessary" in row
    # two slow servers of four get a job when both samples fall on them, 1/6 of the time:
    # λ* = 0.2 / (1/6) = 1.2 of μ_Σ = 4, ρ̄ = 0.3; with rates 0.5 and 1.5 no bound below 1
    frame = pd.DataFrame({"system.servers": ["2x0.1,2x1.9"], "params.pod_d": [2]})
    assert "ρ̄ = 0.3 of the capacity" in comparisons.sampling_region(frame)
    assert "every ε ≤ 0.7 is past" in comparisons.sampling_region(frame)
    frame["system.servers"] = "2x0.5,2x1.5"
    assert comparisons.sampling_region(frame) == ""
    assert comparisons.sampling_region(pd.DataFrame()) == ""


def test_scd_as_dispatchers_multiply_is_judged_per_m(rebuilt) -> None:
    """The scd-dispatchers row: SCD against every baseline at each M, and JSQ's herd
    growing from M = 1 to 100 (CIs apart) while SCD's E[ΣQ] stays."""
    text, _ = rebuilt
    row = next(line for line in text.splitlines() if line.startswith(
        "| As dispatchers multiply"))
    assert "| **held** |" in row
    for m in (1, 10, 100):
        assert f"50×1 + 50×5, M = {m}: SCD " in row
    assert row.count("beats every one") == 3
    assert "JSQ (water-filling) 913.1 [901, 925.2] → 2090 [2088, 2091] (grows)" in row
