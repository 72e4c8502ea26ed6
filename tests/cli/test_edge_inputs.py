"""Small hostile inputs, each with its clean behaviour: stability above capacity, traces of
non-numbers, unknown spec names, missing numbers in a table, a tiny bound."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

import dispatchlab as dl
from cli_contract import run_clean
from dispatchlab.cli.output import MISSING
from dispatchlab.theory.stability import DispatchFractions, induced_threshold, rank_fractions_pod


@pytest.mark.parametrize("load,verdict", [(5, "transient"), (1, "unstable"), (1.5, "transient")])
def test_check_stability_above_capacity(load: float, verdict: str,
                                        capsys: pytest.CaptureFixture[str]) -> None:
    for servers in ("10x0.5", "2x0.5", "5x0.2,5x0.8"):
        code, out, _ = run_clean(capsys, ["check", "stability", "--policy", "pod",
                                          "--servers", servers, "--load", str(load)])
        assert code == 0 and out.strip().endswith(f"at ρ = {load:g}: {verdict}"), out


def test_every_policy_region_says_transient_above_capacity() -> None:
    mu = np.array([0.5, 0.5, 0.5])
    region = induced_threshold(DispatchFractions("rank", rank_fractions_pod(3, 2)), mu)
    assert not region.exact or region.threshold_rate == pytest.approx(1.5)
    assert region.verdict(1.5 * 1.01) == "transient"
    assert region.verdict(1.5) == "unstable"
    assert region.verdict(0.5) == "stable"


@pytest.mark.parametrize("values", [np.array([1 + 2j, 3]), np.array([True, False])])
def test_a_trace_of_non_numbers_is_refused(values: np.ndarray, tmp_path: Path,
                                           capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "trace.npy"
    np.save(path, values)
    code, _, err = run_clean(capsys, ["run", "--policy", "jsq", "--servers", "3x1",
                                      "--arrivals", f"trace:{path}", "--slots", "200"])
    assert code == 2 and err.startswith("error: arrivals: ") and str(values.dtype) in err
    with pytest.raises(dl.ValidationError, match="arrivals"):
        dl.System.build("3x1", arrivals=f"trace:{path}")


def test_a_csv_trace_with_a_complex_value_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "trace.csv"
    path.write_text("1\n1+2j\n", encoding="utf-8")
    with pytest.raises(dl.ValidationError, match="not numeric"):
        dl.System.build("3x1", arrivals=f"trace:{path}")


@pytest.mark.parametrize("name", ["a/b", "..", "x\\y", " ", "line\nbreak"])
def test_a_spec_name_is_told_what_is_allowed(name: str, tmp_path: Path,
                                             capsys: pytest.CaptureFixture[str]) -> None:
    spec = tmp_path / "s.toml"
    quoted = name.replace("\\", "\\\\").replace("\n", "\\n")
    spec.write_text(f'name = "{quoted}"\nloads = [0.5]\nslots = 1000\n[[systems]]\n'
                    'servers = "2x0.5"\n[[policies]]\nname = "jsq"\n', encoding="utf-8")
    code, _, err = run_clean(capsys, ["sweep", str(spec), "--store", str(tmp_path / "s.db")])
    assert code == 2
    assert err.startswith("error: name: an experiment name is printable text without / or \\")
    assert not (tmp_path / "s.db").exists()


def test_results_prints_a_dash_for_a_missing_number(tmp_path: Path,
                                                    capsys: pytest.CaptureFixture[str]) -> None:
    store = tmp_path / "u.sqlite"
    dl.sweep("3x0.3", ["jsq"], load=[0.5, 1.3], slots=3_000, workers=1, store=store,
             allow_unstable=True)
    code, out, _ = run_clean(capsys, ["results", "--store", str(store)])
    assert code == 0
    assert "None" not in out and "nan" not in out.lower()
    unstable = next(line for line in out.splitlines() if "unstable" in line)
    assert MISSING in unstable


def test_simulate_with_a_tiny_bound_warns_nothing() -> None:
    import warnings

    system = dl.System.build("3x0.3", load=0.9)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        for estimator in ("coupled", "plain"):
            for bound in (1, 2, 3):
                result = dl.simulate(system, "jsq", slots=2_000, bound=bound,
                                     estimator=estimator)
                assert result.stability in ("unstable", "stable")
