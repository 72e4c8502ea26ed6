"""System families (server classes in fixed shares at several sizes N) and the
Halfin–Whitt axis β (ε = β·μ_Σ/√N), in the Python API, sweep files, the CLI and the store."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest

import dispatchlab as dl
from cli_contract import run_clean
from dispatchlab.core.errors import ValidationError
from dispatchlab.experiments.store import Store
from dispatchlab.specs.experiment import ExperimentSpec, Point
from dispatchlab.specs.family import SystemFamily
from dispatchlab.specs.run import PolicySpec, SystemSpec, halfin_whitt_epsilon

HALF = SystemFamily("0.5x0.2,0.5x0.8", sizes=(10, 40), dispatchers_per_server=0.1,
                    label="half slow")


def test_a_family_expands_into_one_ordinary_system_per_size() -> None:
    small, large = HALF.systems()
    assert (small.servers, small.dispatchers) == ("5x0.2,5x0.8", 1)
    assert (large.servers, large.dispatchers) == ("20x0.2,20x0.8", 4)
    assert (large.label, large.family) == ("half slow, N=40", "half slow")
    fixed = SystemFamily("0.25x0.5,0.75x1", sizes=(4, 400), dispatchers=7).systems()
    assert [(s.servers, s.dispatchers) for s in fixed] == [("1x0.5,3x1", 7),
                                                           ("100x0.5,300x1", 7)]
    # a size of a family is the same system as one written by hand: same store key and seed
    by_hand = SystemSpec("20x0.2,20x0.8", dispatchers=4)
    policy = PolicySpec("jsq")
    keys = [Point("e", system, policy, "load", 0.9, 0, 1000, None, 3)
            for system in (large, by_hand)]
    assert keys[0].key == keys[1].key and keys[0].seed == keys[1].seed


def test_the_halfin_whitt_axis_sets_epsilon_from_beta_and_n() -> None:
    for system in HALF.systems():
        built = system.build(beta=1.5)
        n = built.n_servers
        assert built.epsilon == pytest.approx(1.5 * built.mu_sum / math.sqrt(n))
        assert built.epsilon == pytest.approx(halfin_whitt_epsilon(1.5, built.mu_sum, n))
    # unit rates: ε = β√N, so 1 − ρ = β/√N
    unit = SystemSpec("100x1").build(beta=2.0)
    assert unit.epsilon == pytest.approx(20.0) and unit.load == pytest.approx(0.8)


@pytest.mark.parametrize(("family", "field", "words"), [
    (SystemFamily("0.5x0.2,0.4x0.8", (10,), dispatchers=1), "classes", "sum to 1"),
    (SystemFamily("0.5x0.2,0.5", (10,), dispatchers=1), "classes", "SHARExRATE"),
    (SystemFamily("half x 0.2", (10,), dispatchers=1), "classes", "SHARExRATE"),
    (SystemFamily("1.5x0.2", (10,), dispatchers=1), "classes", "share"),
    (SystemFamily("1x1.5", (10,), dispatchers=1), "classes", "rate"),
    (SystemFamily("1xnan", (10,), dispatchers=1), "classes", "rate"),
    (SystemFamily("0.5x0.2,0.5x0.8", (3,), dispatchers=1), "sizes", "whole number"),
    (SystemFamily("0.5x0.2,0.5x0.8", (10, 10), dispatchers=1), "sizes", "distinct"),
    (SystemFamily("0.5x0.2,0.5x0.8", (), dispatchers=1), "sizes", "give the sizes"),
    (SystemFamily("0.5x0.2,0.5x0.8", (0,), dispatchers=1), "sizes[0]", "≥ 1"),
    (SystemFamily("1x0.5", (2_000_000,), dispatchers=1), "sizes[0]", "at most"),
    (SystemFamily("0.5x0.2,0.5x0.8", (10,)), "dispatchers", "one of them"),
    (SystemFamily("0.5x0.2,0.5x0.8", (10,), dispatchers=1, dispatchers_per_server=0.1),
     "dispatchers", "one of them"),
    (SystemFamily("0.5x0.2,0.5x0.8", (10,), dispatchers_per_server=0.15),
     "dispatchers_per_server", "whole number"),
    (SystemFamily("1x0.5", (10,), dispatchers_per_server=math.nan), "dispatchers_per_server",
     "finite"),
    (SystemFamily("1x0.5", (10,), dispatchers_per_server=math.inf), "dispatchers_per_server",
     "finite"),
    (SystemFamily("1x0.5", (10,), dispatchers_per_server=-0.5), "dispatchers_per_server",
     "> 0"),
    (SystemFamily("1x0.5", (10,), dispatchers=True), "dispatchers", "integer"),
    (SystemFamily("1x0.5", (10,), dispatchers=0), "dispatchers", "≥ 1"),
    (SystemFamily("1x0.5", 10, dispatchers=1), "sizes", "give the sizes"),
    (SystemFamily(5, (10,), dispatchers=1), "classes", "SHARExRATE"),
])
def test_a_bad_family_is_refused_naming_its_field(family: SystemFamily, field: str,
                                                  words: str) -> None:
    with pytest.raises(ValidationError, match=words) as error:
        family.systems()
    assert error.value.field == field


@pytest.mark.parametrize(("beta", "words"), [(0.0, "> 0"), (-1.0, "> 0"), (4.0, "< √N"),
                                             (1e-300, "resolution"), (1e-17, "resolution"),
                                             (math.nan, "finite"), (True, "number")])
def test_a_bad_beta_is_refused(beta: float, words: str) -> None:
    with pytest.raises(ValidationError, match=words) as error:
        SystemSpec("10x0.5").build(beta=beta)
    assert error.value.field == "beta"


SWEEP = """name = "hw"
betas = [0.5, 1.0]
slots = 2000
[[families]]
classes = "0.5x0.2,0.5x0.8"
sizes = [10, 40]
dispatchers_per_server = 0.1
label = "half slow"
[[systems]]
servers = "4x0.5"
[[policies]]
name = "jsq"
"""


def test_a_sweep_file_takes_families_and_betas(tmp_path: Path) -> None:
    path = tmp_path / "hw.toml"
    path.write_text(SWEEP, encoding="utf-8")
    spec = ExperimentSpec.from_toml(path)
    assert spec.axis == "beta" and spec.values == (0.5, 1.0)
    assert [s.name for s in spec.systems] == ["4x0.5, M=1", "half slow, N=10",
                                              "half slow, N=40"]
    points = spec.points()
    assert len(points) == 6
    for point in points:
        built = point.build_system()
        assert built.epsilon == pytest.approx(
            point.value * built.mu_sum / math.sqrt(built.n_servers))
    assert ExperimentSpec.from_json(spec.to_json()) == spec  # what the store keeps


@pytest.mark.parametrize(("edit", "field"), [
    (("sizes = [10, 40]", "sizes = [10, 41]"), "families[0].sizes"),
    (("sizes = [10, 40]", "sizes = \"10\""), "families[0].sizes"),
    (("classes = \"0.5x0.2,0.5x0.8\"", "classes = \"1x0.2,1x0.8\""), "families[0].classes"),
    (("label = \"half slow\"", "labels = \"x\""), "families[0].labels"),
    (("betas = [0.5, 1.0]", "betas = [0.5, 1.0]\nloads = [0.5]"), "loads"),
    (("betas = [0.5, 1.0]", "betas = [-1.0]"), "beta"),
    (("betas = [0.5, 1.0]", "betas = [2.0]"), "beta"),  # β ≥ √N of the 4-server system
])
def test_a_bad_sweep_file_names_the_field(tmp_path: Path, edit: tuple[str, str],
                                          field: str) -> None:
    path = tmp_path / "bad.toml"
    path.write_text(SWEEP.replace(*edit), encoding="utf-8")
    with pytest.raises(ValidationError) as error:
        ExperimentSpec.from_toml(path)
    assert error.value.field == field


def test_sweep_runs_a_family_on_the_beta_axis_and_the_store_records_it(tmp_path) -> None:
    store = tmp_path / "s.sqlite"
    frame = dl.sweep(HALF, ["jsq"], beta=[1.0], slots=2_000, workers=1, store=store,
                     experiment="hw")
    assert list(frame["family"]) == ["half slow", "half slow"]
    assert list(frame["system.n_servers"]) == [10, 40]
    assert list(frame["axis"]) == ["beta", "beta"] and list(frame["x"]) == [1.0, 1.0]
    with Store(store) as db:
        stored = db.frame("hw")
    assert sorted(stored["family"]) == ["half slow", "half slow"]
    assert sorted(stored["epsilon"]) == pytest.approx(sorted(frame["epsilon"]))
    with pytest.raises(ValidationError) as error:
        dl.sweep(HALF, ["jsq"], beta=[1.0], load=[0.5])
    assert error.value.field == "load"
    with pytest.raises(ValidationError) as error:
        dl.sweep(HALF, ["jsq"], beta=[1.0], dispatchers=2)
    assert error.value.field == "dispatchers"


def test_the_cli_sweeps_a_family_file(tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    path = tmp_path / "hw.toml"
    path.write_text(SWEEP.replace("[[systems]]\nservers = \"4x0.5\"\n", ""), encoding="utf-8")
    store = tmp_path / "s.sqlite"
    code, _, err = run_clean(capsys, ["sweep", str(path), "--store", str(store),
                                      "--no-progress", "--workers", "1", "--out",
                                      str(tmp_path / "out")])
    assert code == 0, err
    code, out, _ = run_clean(capsys, ["results", "hw", "--store", str(store), "--format",
                                      "json"])
    rows = [json.loads(line) for line in out.splitlines()]
    assert {row["system"] for row in rows} == {"half slow, N=10", "half slow, N=40"}
    assert {row["axis"] for row in rows} == {"beta"}


def test_the_run_command_takes_beta(capsys: pytest.CaptureFixture) -> None:
    code, out, err = run_clean(capsys, ["run", "--policy", "jsq", "--servers", "100x0.1",
                                        "--beta", "1", "--slots", "2000", "--json"])
    assert code == 0, err
    assert json.loads(out)["load"] == pytest.approx(0.9)
    for extra, field in ((["--load", "0.5"], "load"), (["--beta", "10"], "beta"),
                         (["--beta", "0"], "beta")):
        argv = ["run", "--policy", "jsq", "--servers", "100x0.1", "--slots", "2000", *extra]
        if "--beta" not in extra:
            argv += ["--beta", "1"]
        code, _, err = run_clean(capsys, argv)
        assert code == 2 and err.startswith(f"error: {field}: "), err


def test_a_run_spec_takes_beta_in_its_system_table(tmp_path: Path) -> None:
    from dispatchlab.specs.run import RunSpec

    spec = RunSpec.from_mapping({"system": {"servers": "100x0.1", "beta": 2.0},
                                 "policy": {"name": "jsq"}})
    assert spec.build_system().load == pytest.approx(0.8)
    assert spec.with_overrides(load=0.5).build_system().load == pytest.approx(0.5)
    with pytest.raises(ValidationError) as error:
        RunSpec.from_mapping({"system": {"servers": "4x0.5", "beta": 1.0, "load": 0.5}})
    assert error.value.field == "system.load"
