"""The delay mode (``tagged`` | ``all`` | ``off``, docs/statistics.md#tagged-delays) reaches
every entry point that runs simulations: ``dl.compare`` and ``compare --paired``, ``dl.sweep``,
an experiment spec's ``[options]`` and ``dispatchlab compare --delay``; each refuses a bad
mode naming the field, and the mode changes no number but the delay measurement's."""

from __future__ import annotations

import json

import pytest

import dispatchlab as dl
from dispatchlab.cli import main
from dispatchlab.core.errors import ValidationError
from dispatchlab.specs.experiment import ExperimentSpec

SERVERS = "3x0.3,3x0.6"


def test_compare_measures_delays_as_asked() -> None:
    system = dl.System.build(SERVERS, load=0.8, dispatchers=2)
    modes = {mode: dl.compare(system, "jsq", "pod", slots=150_000, seed=3, delay=mode)
             for mode in ("tagged", "all", "off")}
    for mode, paired in modes.items():
        assert paired.result_a.delay_method == mode == paired.result_b.delay_method
    # the paired difference does not depend on how delays are measured; at 150,000 slots
    # the tag probability is below one (docs/statistics.md#tagged-delays)
    assert len({(p.difference, p.ci_low, p.ci_high) for p in modes.values()}) == 1
    assert modes["all"].result_a.delay_jobs > modes["tagged"].result_a.delay_jobs > 0
    with pytest.raises(ValidationError) as caught:
        dl.compare(system, "jsq", "pod", slots=1000, delay="some")
    assert caught.value.field == "delay"
    with pytest.raises(ValidationError) as caught:
        dl.compare(system, "jsq", "pod", slots=1000, delay="all", track_delay=False)
    assert caught.value.field == "track_delay"


def test_sweep_measures_delays_as_asked_and_keeps_the_default_keys(tmp_path) -> None:
    common = dict(load=[0.7], slots=5_000, dispatchers=2, workers=1)
    default = dl.sweep(SERVERS, ["jsq"], **common)
    tagged = dl.sweep(SERVERS, ["jsq"], delay="tagged", **common)
    # the default mode spelt out is the same point (same key, so the same seed and numbers)
    assert tagged["point_key"].tolist() == default["point_key"].tolist()
    assert tagged["delay_p99"].tolist() == default["delay_p99"].tolist()
    every = dl.sweep(SERVERS, ["jsq"], delay="all", **common)
    assert every["delay_method"].tolist() == ["all"]
    assert every["point_key"].tolist() != default["point_key"].tolist()
    off = dl.sweep(SERVERS, ["jsq"], delay="off", **common)
    assert off["delay_method"].tolist() == ["off"]
    for bad in ("every", 1, True):
        with pytest.raises(ValidationError) as caught:
            dl.sweep(SERVERS, ["jsq"], delay=bad, **common)
        assert caught.value.field == "delay"
    with pytest.raises(ValidationError) as caught:
        dl.sweep(SERVERS, ["jsq"], delay="all", track_delay=False, **common)
    assert caught.value.field == "track_delay"


def _spec(delay: object) -> dict:
    return {"name": "d", "systems": [{"servers": SERVERS, "dispatchers": 2}],
            "policies": [{"name": "jsq"}], "loads": [0.7], "slots": 2000,
            "options": {"delay": delay}}


def test_an_experiment_spec_takes_the_delay_mode() -> None:
    spec = ExperimentSpec.from_dict(_spec("all"))
    spec.validate()
    assert all(dict(point.options)["delay"] == "all" for point in spec.points())
    with pytest.raises(ValidationError, match="delay"):
        ExperimentSpec.from_dict(_spec("some")).validate()


def test_cli_compare_takes_delay(capsys: pytest.CaptureFixture[str]) -> None:
    args = ["compare", "--servers", SERVERS, "--dispatchers", "2", "--load", "0.8",
            "--slots", "20000", "-p", "jsq", "-p", "pod", "--json"]
    assert main([*args, "--delay", "all"]) == 0
    assert {r["delay_method"] for r in json.loads(capsys.readouterr().out)["results"]} == {"all"}
    assert main([*args, "--paired", "--delay", "off"]) == 0
    assert {r["delay_method"] for r in json.loads(capsys.readouterr().out)["results"]} == {"off"}
    assert main([*args, "--delay", "every"]) == 2
    captured = capsys.readouterr()
    assert captured.out == "" and captured.err.startswith("error: ")
    assert "delay" in captured.err and "Traceback" not in captured.err
