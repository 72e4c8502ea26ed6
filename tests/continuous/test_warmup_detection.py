"""MSER-5 warm-up detection in continuous time (``warmup_method="mser5"``, as in the
slotted model, continuous.summary.truncated): it drops whole sections of measured jobs up
to its truncation point, blocks and histograms alike; a paired comparison refuses it (the
pairs need the same jobs); the default stays the fixed warm-up, and why (measured below
and in docs/continuous.md#measurement)."""

from __future__ import annotations

import json

import numpy as np
import pytest

from cli_contract import run_clean
from dispatchlab.continuous import compare_continuous, engine, simulate_continuous
from dispatchlab.continuous.summary import SECTIONS, Replication, truncated
from dispatchlab.core.errors import ValidationError


def replication(response: np.ndarray) -> Replication:
    """256 blocks of 10 jobs whose mean response times are ``response``; a job a section
    per block's worth in the histogram."""
    blocks = np.zeros((engine.N_BLOCK_ROWS, response.size))
    blocks[engine.B_JOBS] = 10
    blocks[engine.B_RESPONSE] = 10 * response
    histogram = np.zeros((SECTIONS, engine.HISTOGRAM_BINS), dtype=np.int64)
    histogram[:, 700] = 10 * response.size // SECTIONS
    return Replication(blocks, histogram, np.zeros(engine.N_COUNTS, dtype=np.int64))


def test_a_transient_is_cut_at_whole_sections() -> None:
    rng = np.random.default_rng(1)
    response = 1 + 0.05 * rng.standard_normal(256)
    response[:40] += np.linspace(5, 0, 40)  # a start far from the stationary level
    kept, dropped = truncated(replication(response))
    sections_dropped = SECTIONS - kept.histogram.shape[0]
    assert 3 <= sections_dropped <= 4  # MSER-5 cuts near block 40: 16 blocks a section
    assert kept.blocks.shape[1] == 256 - 16 * sections_dropped
    assert dropped == 160 * sections_dropped  # the jobs of the dropped sections
    flat, none = truncated(replication(1 + 0.05 * rng.standard_normal(256)))
    assert none == 0 or flat.blocks.shape[1] >= 128  # at most the first half is searched


def test_a_run_says_what_mser5_dropped_and_a_comparison_refuses_it() -> None:
    result = simulate_continuous([1.0], "random", load=0.9, jobs=40_000, warmup=0, seed=3,
                                 workers=1, warmup_method="mser5")
    assert result.warmup_method == "mser5" and result.warmup_dropped >= 0
    assert any("MSER-5 dropped" in note for note in result.notes)
    with pytest.raises(ValidationError, match="warmup_method: allowed: fraction, mser5"):
        simulate_continuous([1.0], "random", load=0.5, jobs=1_000, warmup_method="welch")
    with pytest.raises(ValidationError, match="warmup_method: the pairs need the same jobs"):
        compare_continuous([1.0], "random", "jsq", load=0.5, jobs=1_000,
                           warmup_method="mser5")


def test_the_command_line_takes_it_in_continuous_time(capsys) -> None:
    code, out, err = run_clean(capsys, ["run", "--time", "continuous", "--servers", "2x1",
                                        "--load", "0.8", "--jobs", "20000", "--warmup-method",
                                        "mser5", "--json"])
    assert code == 0, err
    assert json.loads(out)["warmup_method"] == "mser5"


@pytest.mark.slow
def test_mser5_biases_low_where_the_fixed_warm_up_covers() -> None:
    """M/M/1 FIFO at ρ = 0.9 (E[T] = 10) from empty, 200 runs of 20,000 jobs: the fixed
    10 % warm-up covers 10 about as often as it says, MSER-5 cuts where the series sits
    high and biases E[T] low (docs/continuous.md#measurement: 0.925 against 0.850)."""
    covered, bias = {"fraction": 0, "mser5": 0}, {"fraction": [], "mser5": []}
    for method in covered:
        for seed in range(200):
            e = simulate_continuous([1.0], "random", load=0.9, jobs=20_000, seed=seed,
                                    workers=1, warmup_method=method).mean_response
            covered[method] += e.ci_low <= 10 <= e.ci_high
            bias[method].append(e.mean - 10)
    assert covered["fraction"] > covered["mser5"]
    assert np.mean(bias["mser5"]) < np.mean(bias["fraction"])
