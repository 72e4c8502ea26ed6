"""The committed Reproductions page is what the committed results store gives: rebuilding it
from ``results/reproductions/store.sqlite`` must reproduce ``docs/reproductions.md`` to the
byte (figures aside: PNG bytes follow the fonts and the matplotlib version)."""

from __future__ import annotations

from pathlib import Path

import pytest

from dispatchlab.experiments.store import Store
from dispatchlab.report.reproductions import CLAIMS, DEFAULT_STORE, render

ROOT = Path(__file__).parent.parent
PAGE = ROOT / "docs" / "reproductions.md"


@pytest.fixture(scope="module")
def rebuilt(tmp_path_factory: pytest.TempPathFactory) -> tuple[str, Path]:
    out = tmp_path_factory.mktemp("page") / "reproductions.md"
    store = Store(ROOT / DEFAULT_STORE, readonly=True)
    try:
        text = render(store, out, store_label=DEFAULT_STORE)
    finally:
        store.close()
    return text, out.parent


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


def test_a_deeper_point_without_an_interval_is_shown_not_judged() -> None:
    import math

    import pandas as pd

    from dispatchlab.report.reproductions import _with_interval

    nan = math.nan
    curve = pd.DataFrame({"x": [1e-4, 1e-3, 1e-2], "y": [0.1, 0.2, 0.3],
                          "ci_low": [nan, 0.15, nan], "ci_high": [nan, 0.25, 0.35]})
    judged, deeper = _with_interval(curve)
    assert list(judged["x"]) == [1e-3, 1e-2] and list(deeper["x"]) == [1e-4]
    judged, deeper = _with_interval(curve.iloc[:1])  # no interval anywhere: all judged
    assert len(judged) == 1 and deeper.empty


def test_a_level_below_the_tolerance_is_not_held_only_when_e_x_stays_bounded() -> None:
    import pandas as pd

    from dispatchlab.report.reproductions import _persisting

    small = pd.Series({"y": 0.077, "ci_low": 0.05, "ci_high": 0.10})
    large = pd.Series({"y": 2.0, "ci_low": 1.9, "ci_high": 2.1})
    assert _persisting(small, large, 0.1875, alpha=0.54) == "undecided"  # JIQ at 1e-4
    assert _persisting(small, large, 0.1875, alpha=1.05) == "not held"  # r = 3: E[X] bounded
    high = pd.Series({"y": 0.5, "ci_low": 0.4, "ci_high": 0.6})
    assert _persisting(high, large, 0.1875, alpha=0.1) == "held"
    assert _persisting(high, large, 0.1875, alpha=0.9) == "undecided"  # still falling
