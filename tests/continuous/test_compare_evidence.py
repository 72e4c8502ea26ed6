"""results/continuous/compare.md is what its JSON holds, and the reading under its table is
what the numbers show; in the slow suite one cell is rerun and must come back bit for bit."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path

import pytest

from dispatchlab.continuous.closed_forms import mg1_fifo_response, mg1_ps_response
from dispatchlab.continuous.laws import parse_size_law

ROOT = Path(__file__).parents[2]
FOLDER = ROOT / "results" / "continuous"


def script():
    spec = importlib.util.spec_from_file_location("compare", FOLDER / "compare.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def cells() -> dict[tuple[str, str], dict]:
    data = json.loads((FOLDER / "compare.json").read_text())
    return {(cell["policy"], cell["discipline"]): cell for cell in data["cells"]}


def test_the_table_is_the_json_and_the_setup_is_the_script_s() -> None:
    module = script()
    data = json.loads((FOLDER / "compare.json").read_text())
    page = (FOLDER / "compare.md").read_text()
    assert module.table(data["cells"]) in page
    assert module.READING in page and module.closed_forms() in page
    setup = data["setup"]
    assert (setup["servers"], setup["load"], setup["sizes"], setup["jobs"],
            setup["replications"], setup["seed"]) == (
        module.SERVERS, module.LOAD, module.SIZES, module.JOBS, module.REPLICATIONS,
        module.SEED)
    assert {(c["policy"], c["discipline"]) for c in data["cells"]} == {
        (p, d) for p in module.POLICIES for d in module.DISCIPLINES}


def below(first: dict, second: dict, key: str = "mean_response") -> bool:
    """``first``'s interval lies wholly below ``second``'s."""
    return first[key]["ci_high"] < second[key]["ci_low"]


def test_the_reading_holds_on_the_numbers() -> None:
    table, module = cells(), script()
    law = parse_size_law(module.SIZES)
    rate = module.LOAD / law.mean
    for policy in ("jsq", "lwl"):  # PS: JSQ and LWL below P2C, in mean and p99
        for key in ("mean_response", "p99"):
            assert below(table[policy, "ps"], table["p2c", "ps"], key)
    exact_ps = mg1_ps_response(rate, law)
    for policy in ("sita", "random"):  # PS: SITA level with random, both near E[X]/(1 − ρ)
        value = table[policy, "ps"]["mean_response"]
        half = (value["ci_high"] - value["ci_low"]) / 2
        assert abs(value["mean"] - exact_ps) <= 3 * half, (policy, value, exact_ps)
    assert below(table["lwl", "fifo"], table["jsq", "fifo"])  # FIFO: LWL < JSQ < P2C
    assert below(table["jsq", "fifo"], table["p2c", "fifo"])
    assert not below(table["p2c", "fifo"], table["sita", "fifo"])  # SITA not apart from P2C
    # random routing with FIFO: far below Pollaczek–Khinchine, interval and all
    assert table["random", "fifo"]["mean_response"]["ci_high"] < mg1_fifo_response(rate, law) / 2


@pytest.mark.slow
def test_a_cell_reruns_bit_for_bit() -> None:
    rerun = script().cell("jsq", "ps")
    stored = cells()["jsq", "ps"]
    for key in ("mean_response", "p99", "mean_slowdown"):
        assert rerun[key] == stored[key]


def test_small_slots_table_holds_what_it_says() -> None:
    """results/continuous/small_slots.md: each gap is the difference of its row's values,
    the gaps fall with δ, and gap/δ stays within [1, 3]."""
    import re

    page = (FOLDER / "small_slots.md").read_text()
    exact = float(re.search(r"E\[T\] = ([0-9.]+) \[", page).group(1))
    rows = re.findall(r"\| ([0-9.]+) \| ([0-9.]+) \[[0-9., ]+\] \| ([0-9.-]+) ± [0-9.]+ \| "
                      r"([0-9.-]+) ± ", page)
    assert len(rows) == 3, page
    gaps = []
    for delta, slotted, gap, ratio in rows:
        assert float(gap) == pytest.approx(exact - float(slotted), abs=2e-4)
        assert float(ratio) == pytest.approx(float(gap) / float(delta), abs=0.01)
        assert 1 <= float(ratio) <= 3
        gaps.append(float(gap))
    assert gaps == sorted(gaps, reverse=True)


def test_the_gallery_shows_the_continuous_figures() -> None:
    gallery = (ROOT / "docs" / "gallery.md").read_text(encoding="utf-8")
    for name in ("compare", "small_slots"):
        assert (ROOT / "docs" / "continuous-figures" / f"{name}.png").is_file()
        assert f"(continuous-figures/{name}.png)" in gallery
