"""The many-server experiments (docs/model.md#many-servers): their grids, and the
committed large-system table rebuilt from the committed store."""

from __future__ import annotations

import importlib.util
import re
from pathlib import Path

from dispatchlab.experiments.catalog import build_experiment

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "results" / "many_servers" / "large_system.py"


def _script():
    spec = importlib.util.spec_from_file_location("large_system", SCRIPT)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_grids_grow_n_with_m_fixed_and_in_proportion() -> None:
    large = build_experiment("large-system", pilots=False)
    sizes = {(s.family, s.dispatchers, s.servers) for s in large.systems}
    assert ("M = 10", 10, "5000x0.1,5000x0.5") in sizes
    assert ("M = N/100", 100, "5000x0.1,5000x0.5") in sizes
    identities = [repr(sorted(s.identity().items())) for s in large.systems]
    assert len(set(identities)) == len(identities) == 5  # N = 1000, M = 10 is in both
    assert "CPU-minutes" in (large.description or "")
    hw = build_experiment("halfin-whitt", pilots=False)
    assert hw.axis == "beta" and hw.values == (0.5, 1.0, 2.0)
    assert {s.servers for s in hw.systems} == {"100x0.1", "1000x0.1", "10000x0.1"}
    for point in hw.points()[:12]:
        built = point.build_system()
        assert built.load == 1 - point.value / built.n_servers ** 0.5 or abs(
            built.load - (1 - point.value / built.n_servers ** 0.5)) < 1e-12


def test_the_committed_table_is_rebuilt_from_the_committed_store() -> None:
    committed = (SCRIPT.with_name("large_system.md")).read_text(encoding="utf-8")
    assert _script().table() == committed
    # E[Q] per server meets the fluid limit (M = 10, ρ = 0.9): JSQ's within 2 % at N = 10⁴
    # and 10⁵, JIQ's approaching it (2.4 % above at 10⁴) and within 1 % at 10⁵
    section = committed.split("## M = 10, ρ = 0.9\n")[1].split("##")[0]

    def gaps(policy: str) -> list[float]:
        row = re.search(rf"^\| {policy} \| (.*)$", section, re.M).group(1).split(" | ")
        fluid = float(row[4])
        return [abs(float(cell.split(" ± ")[0]) - fluid) / fluid for cell in row[2:4]]

    assert max(gaps("JSQ")) < 0.02
    at_10k, at_100k = gaps("JIQ")
    assert at_100k < 0.01 and at_100k < at_10k


def test_the_committed_halfin_whitt_table_is_rebuilt_from_the_committed_store() -> None:
    """And what the closing note reads from it: JIQ's waiting probability falls with N at
    every β (about as 1/√N from N = 10³ to 10⁴) while JSQ's rises in the slotted model."""
    script = SCRIPT.with_name("halfin_whitt.py")
    spec = importlib.util.spec_from_file_location("halfin_whitt", script)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    committed = script.with_suffix(".md").read_text(encoding="utf-8")
    assert module.table() == committed
    waits = committed.split("## P(wait)\n")[1].split("##")[0]
    for beta in ("0.5", "1", "2"):
        jiq = [float(cell.split(" ± ")[0]) for cell in re.search(
            rf"^\| JIQ \| {beta} \| (.*) \|$", waits, re.M).group(1).split(" | ")]
        jsq = [float(cell.split(" ± ")[0]) for cell in re.search(
            rf"^\| JSQ \| {beta} \| (.*) \|$", waits, re.M).group(1).split(" | ")]
        assert jiq[0] > jiq[1] > jiq[2] and 2 < jiq[1] / jiq[2] < 4.5
        assert jsq[0] < jsq[1] < jsq[2]


def test_the_gallery_shows_the_many_server_figures() -> None:
    gallery = (ROOT / "docs" / "gallery.md").read_text(encoding="utf-8")
    for name in ("large_system", "halfin_whitt"):
        assert f"(many-servers/{name}.png)" in gallery
        assert (ROOT / "docs" / "many-servers" / f"{name}.png").stat().st_size > 10_000
