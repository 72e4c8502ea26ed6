"""``dispatchlab bench`` end to end on a tiny slot count."""

from __future__ import annotations

import gc
import json
import math
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from numba import njit

from dispatchlab.bench import workloads as bench_workloads
from dispatchlab.bench.machine import processor
from dispatchlab.bench.workloads import (
    REFSIM_ENV,
    REFSIM_MISSING,
    WORKLOAD_NAMES,
    WORKLOADS,
    c_compiler,
    find_refsim_source,
    reference_agreement,
)
from dispatchlab.cli import main
from dispatchlab.compiled.alias import alias_draw, alias_table
from dispatchlab.compiled.argmin import (
    argmin_random_ties,
    argmin_random_ties_per_slot,
    shortest_of_row,
    slot_argmin_cache,
)
from dispatchlab.compiled.histogram import DELAY_BINS, EXACT_DELAY_BINS
from dispatchlab.compiled.rng import (
    bernoulli_thresholds,
    make_rng_state,
    make_service_stream,
    uniform,
    weighted_index,
)
from dispatchlab.core.errors import ValidationError
from dispatchlab.engine.arrivals import _draw_split_poisson, poisson_tables, ptrs_draw
from dispatchlab.engine.fifo import FREE_COUNT, _fifo_append, grow_pool, new_pool
from dispatchlab.engine.layout import SUM_DELAY
from dispatchlab.engine.service import _serve_bernoulli, _serve_bernoulli_fifo, serve_other_law

REQUIRED = ("name", "slots_per_second", "jobs_per_second", "slots_per_second_full",
            "mean_total_queue", "ci_low", "ci_high", "messages_per_arrival",
            "reference_mean_total_queue", "reference_agrees")
REFSIM_KEYS = ("refsim_slots_per_second", "speed_ratio", "speed_ratio_full",
               "refsim_mean_total_queue")


def _rows(capsys: pytest.CaptureFixture[str], argv: list[str]) -> list[dict]:
    assert main(argv) == 0
    lines = [line for line in capsys.readouterr().out.splitlines() if line.strip()]
    return [json.loads(line) for line in lines]


def test_bench_json_without_refsim(capsys: pytest.CaptureFixture[str]) -> None:
    rows = _rows(capsys, ["bench", "--slots", "20000", "--no-refsim", "--json"])
    assert [row["name"] for row in rows] == list(WORKLOAD_NAMES)
    ran = [row for row in rows if "skipped" not in row]
    assert {"wrand", "jsq", "pod2"} <= {row["name"] for row in ran}
    for row in ran:
        for key in REQUIRED:
            assert key in row, key
        assert row["slots_per_second"] > 0 and row["slots_per_second_full"] > 0
        assert row["jobs_per_second"] > row["slots_per_second"]  # λ_Σ ≈ 28.5 jobs per slot
        # at 2·10⁴ slots wrand's slow queues (μ = 0.1, ρ = 0.95) may still be climbing: a run
        # judged unstable reports no mean (null); a short one no CI against τ̂
        if row["stability"] == "unstable":
            assert row["mean_total_queue"] is None
        elif row["ci_low"] is None:
            assert "too short to say" in row["ci_method"], row["ci_method"]
        else:
            assert row["ci_low"] <= row["mean_total_queue"] <= row["ci_high"]
        assert row["refsim"] == "off"
        assert not any(key in row for key in REFSIM_KEYS)
        assert row["processor"] == processor() and row["processor"]  # every result names it
        assert row["delay_method"] == "tagged"  # the full run measures as simulate does
    for row in rows:
        if "skipped" in row:
            assert row["skipped"] == "policy not registered"
    by_name = {row["name"]: row for row in ran}
    # message accounting of the classical rules is exact per dispatch event
    assert by_name["wrand"]["messages_per_arrival"] == 0.0
    assert by_name["pod2"]["messages_per_arrival"] == pytest.approx(1.322, rel=0.02)
    assert by_name["jsq"]["messages_per_arrival"] == pytest.approx(66.11, rel=0.02)


@pytest.mark.skipif(find_refsim_source() is None or c_compiler() is None,
                    reason="refsim.c or a C compiler is not available")
def test_bench_with_refsim(capsys: pytest.CaptureFixture[str]) -> None:
    rows = _rows(capsys, ["bench", "--slots", "20000", "--workload", "jsq", "--json"])
    (row,) = rows
    for key in REQUIRED + REFSIM_KEYS:
        assert key in row, key
    assert row["speed_ratio"] == pytest.approx(
        row["slots_per_second"] / row["refsim_slots_per_second"], rel=1e-9)
    # refsim simulates the same model: JSQ's ΣQ is about 361 in both
    assert 300 < row["refsim_mean_total_queue"] < 430
    assert 300 < row["mean_total_queue"] < 430


def test_bench_table_output(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["bench", "--slots", "5000", "--workload", "pod2", "--no-refsim"]) == 0
    err = capsys.readouterr().err
    assert "pod2" in err and "reference" in err


@pytest.mark.parametrize("argv, field", [
    (["--workload", "nope"], "workload"),
    (["--slots", "10"], "slots"),
    (["--repeat", "0"], "repeat"),
    (["--refsim", "/no/such/refsim.c"], "refsim"),
])
def test_bench_bad_input(capsys: pytest.CaptureFixture[str], argv: list[str], field: str) -> None:
    assert main(["bench", "--no-refsim", *argv] if field != "refsim" else ["bench", *argv]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith(f"error: {field}:") and "\n" not in err


ROOT = Path(__file__).resolve().parents[2]


def test_refsim_is_the_checkouts_own_source(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(REFSIM_ENV, raising=False)
    assert find_refsim_source() == ROOT / "benchmarks" / "refsim.c"
    assert find_refsim_source(ROOT / "benchmarks" / "refsim.c") == ROOT / "benchmarks" / "refsim.c"


def test_refsim_source_says_what_it_is() -> None:
    source = (ROOT / "benchmarks" / "refsim.c").read_text(encoding="utf-8")
    assert "dispatchlab bench" in source.split("*/")[0]  # the header says what it is for
    assert "../" not in source  # (machine paths: project/test_docs.py, every tracked file)


def test_refsim_variable_naming_no_file_is_one_error_line(
        monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setenv(REFSIM_ENV, "/no/such/refsim.c")
    assert main(["bench", "--slots", "5000", "--workload", "pod2"]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("error: refsim: no such file") and "\n" not in err
    assert REFSIM_ENV in err
    # the library call refuses it as well
    with pytest.raises(ValidationError, match="refsim"):
        find_refsim_source()


@pytest.mark.parametrize("compiler, why", [(None, "no C compiler"), ("cc", None)])
def test_refsim_unavailable_says_why(monkeypatch: pytest.MonkeyPatch, compiler: str | None,
                                     why: str | None) -> None:
    monkeypatch.delenv(REFSIM_ENV, raising=False)
    monkeypatch.setattr(bench_workloads, "c_compiler", lambda: compiler)
    if why is None:  # no checkout beside the package (an installed copy)
        monkeypatch.setattr(bench_workloads, "checkout_root", lambda: None)
    with bench_workloads._refsim_for(True) as (binary, missing):
        assert binary is None
        assert missing.startswith("refsim not available")
        assert (why or "--refsim PATH") in missing
    with bench_workloads._refsim_for(False) as (binary, missing):
        assert binary is None and missing == "off"


def test_bench_without_the_reference_runs_ours_and_says_so_in_one_line(
        monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.delenv(REFSIM_ENV, raising=False)
    monkeypatch.setattr(bench_workloads, "checkout_root", lambda: None)
    assert main(["bench", "--slots", "5000", "--workload", "pod2", "--json"]) == 0
    captured = capsys.readouterr()
    (row,) = [json.loads(line) for line in captured.out.splitlines() if line.strip()]
    assert row["refsim"] == REFSIM_MISSING and row["slots_per_second"] > 0
    notes = [line for line in captured.err.splitlines() if "refsim" in line]
    assert notes == [REFSIM_MISSING]
    assert f"${REFSIM_ENV}" in REFSIM_MISSING and "--refsim PATH" in REFSIM_MISSING


def test_reference_agreement_uses_both_uncertainties() -> None:
    jsq = next(w for w in WORKLOADS if w.name == "jsq")
    assert reference_agreement(jsq, 361.2, 360.9, 361.5)
    assert not reference_agreement(jsq, 365.0, 364.5, 365.5)
    assert not reference_agreement(jsq, math.nan, math.nan, math.nan)


# --- the compiled kernels the benchmark work rewrote: same law as the plain definitions ---

@njit(cache=True)
def _argmin_counts(values, draws, rng):
    counts = np.zeros(values.size, np.int64)
    cache = np.zeros((1, values.size + 2), np.int64)
    cache[0, 0] = -1
    cached = np.zeros(values.size, np.int64)
    for i in range(draws):
        counts[argmin_random_ties(values, rng)] += 1
        cached[argmin_random_ties_per_slot(values, i // 10, cache, 0, rng)] += 1
    return counts, cached


def test_argmin_kernels_uniform_over_minimisers() -> None:
    values = np.array([3, 1, 4, 1, 5, 9, 2, 1, 5, 3], np.int64)
    draws = 30_000
    for counts in _argmin_counts(values, draws, make_rng_state(5)):
        assert set(np.flatnonzero(counts)) == {1, 3, 7}
        assert np.allclose(counts[[1, 3, 7]] / draws, 1 / 3, atol=0.015)


@njit(cache=True)
def _per_slot_follows_values(rng):
    cache = np.zeros((1, 6), np.int64)
    cache[0, 0] = -1
    values = np.array([2, 0, 3, 5], np.int64)
    first = argmin_random_ties_per_slot(values, 0, cache, 0, rng)
    values[1] = 9  # Q changes between slots: slot 1 must see the new minimum
    second = argmin_random_ties_per_slot(values, 1, cache, 0, rng)
    return first, second


def test_argmin_per_slot_recomputes_each_slot() -> None:
    assert _per_slot_follows_values(make_rng_state(1)) == (1, 0)
    assert slot_argmin_cache(4).shape == (1, 6)


@njit(cache=True)
def _shortest_counts(values, candidates, draws, rng):
    counts = np.zeros(values.size, np.int64)
    table = candidates.reshape((1, candidates.size)).copy()
    for _ in range(draws):
        counts[shortest_of_row(values, table, 0, candidates.size, rng)] += 1
    return counts


def test_shortest_of_ties_uniform() -> None:
    values = np.array([4, 2, 7, 2, 2, 0], np.int64)
    counts = _shortest_counts(values, np.array([0, 1, 2, 3, 4], np.int64), 30_000,
                              make_rng_state(2))
    assert set(np.flatnonzero(counts)) == {1, 3, 4}
    assert np.allclose(counts[[1, 3, 4]] / counts.sum(), 1 / 3, atol=0.015)


@njit(cache=True)
def _weighted_vs_uniform(cumulative, draws, rng_a, rng_b):
    picked = np.empty(draws, np.int64)
    u = np.empty(draws)
    for i in range(draws):
        picked[i] = weighted_index(rng_a, cumulative)
        u[i] = uniform(rng_b) * cumulative[cumulative.size - 1]
    return picked, u


@pytest.mark.parametrize("weights", [[1.0], [0.1] * 50 + [0.5] * 50, [0.0, 1.0, 0.0, 2.0, 0.5]])
def test_weighted_index_is_first_cumulative_above_u(weights: list[float]) -> None:
    cumulative = np.cumsum(weights)
    picked, u = _weighted_vs_uniform(cumulative, 20_000, make_rng_state(3), make_rng_state(3))
    expected = np.minimum(np.searchsorted(cumulative, u, side="right"), cumulative.size - 1)
    assert np.array_equal(picked, expected)


@njit(cache=True)
def _alias_draws(table, draws, rng):
    picked = np.empty(draws, np.int64)
    for i in range(draws):
        picked[i] = alias_draw(rng, table)
    return picked


ALIAS_WEIGHTS = [[1.0], [0.1] * 50 + [0.5] * 50, [0.0, 1.0, 0.0, 2.0, 0.5], [1e-9, 1.0, 3.0]]


@pytest.mark.parametrize("weights", ALIAS_WEIGHTS)
def test_alias_table_encodes_the_law_exactly(weights: list[float]) -> None:
    """Column i keeps prob_i/N for i and gives (1 − prob_i)/N to its alias: the sums per
    index are the normalised weights (to rounding)."""
    w = np.array(weights)
    table = alias_table(w)
    n = w.size
    implied = table[0::2] / n
    np.add.at(implied, table[1::2].astype(int), (1.0 - table[0::2]) / n)
    assert np.allclose(implied, w / w.sum(), rtol=0, atol=1e-12)


@pytest.mark.parametrize("weights", ALIAS_WEIGHTS)
def test_alias_draws_follow_the_weights(weights: list[float]) -> None:
    w = np.array(weights)
    draws = 200_000
    counts = np.bincount(_alias_draws(alias_table(w), draws, make_rng_state(9)), minlength=w.size)
    expected = draws * w / w.sum()
    assert counts[expected == 0].sum() == 0
    live = expected > 5
    if live.sum() > 1:
        from scipy import stats

        chi2 = float((((counts - expected) ** 2)[live] / expected[live]).sum())
        assert stats.chi2.sf(chi2, df=live.sum() - 1) > 1e-4


@pytest.mark.parametrize("p", [0.0, 1e-300, 0.1, 0.3, 0.5, 1 / 3, 1 - 2**-53, 1.0, 1.5,
                               -0.5, math.nan])
def test_bernoulli_threshold_matches_float_compare(p: float) -> None:
    threshold = int(bernoulli_thresholds(np.array([p]))[0])
    for k in {0, 1, threshold - 1, threshold, threshold + 1, 2**53 - 1}:
        if 0 <= k < 2**53:
            assert (k < threshold) == (k * 2.0**-53 < p), (p, k)


@njit(cache=True)
def _service_draws(thresholds, slots, stream):
    """S_n(t) of ``slots`` slots of the loop's Bernoulli service (one job at each server
    every slot, so that every draw is served)."""
    N = thresholds.size
    Q, A = np.zeros(N, np.int64), np.zeros(N, np.int64)
    Q_prev, queue_sum = np.zeros(N, np.int64), np.zeros(N, np.int64)
    out = np.zeros((slots, N), np.int64)
    for t in range(slots):
        Q[:] = 0
        A[:] = 1
        _serve_bernoulli(Q, A, Q_prev, thresholds, stream, False, queue_sum, out[t])
    return out


def test_service_stream_is_seeded_per_seed_with_a_good_increment() -> None:
    """(start, γ): the words after the xoshiro state; γ odd with ≥ 24 bit transitions, a
    different γ for each seed (different sequences, not shifts of one)."""
    a, again, b = make_service_stream(7), make_service_stream(7), make_service_stream(8)
    assert (a == again).all() and a[1] != b[1]
    words = np.random.SeedSequence(7).generate_state(6, np.uint64)
    assert (make_rng_state(7) == words[:4]).all() and a[0] == words[4]
    for stream in (a, b, make_service_stream(np.random.SeedSequence(3).spawn(2)[1])):
        gamma = int(stream[1])
        assert gamma % 2 == 1 and bin(gamma ^ (gamma >> 1)).count("1") >= 24
    with pytest.raises(ValidationError, match="seed"):
        make_service_stream(-1)


def test_bernoulli_service_draws_are_bernoulli_and_independent() -> None:
    """S_n(t) from the service stream: each server's frequency is μ_n, neighbouring servers
    and successive slots are uncorrelated (2×2 tables), and the stream advances N a slot."""
    from scipy import stats

    mu = np.array([0.05, 0.3, 0.5, 0.77, 0.999])
    thresholds = bernoulli_thresholds(mu)
    stream = make_service_stream(12)
    start = stream.copy()
    slots = 200_000
    draws = _service_draws(thresholds, slots, stream)
    assert int(stream[0]) == (int(start[0]) + slots * mu.size * int(start[1])) % 2**64
    for n, m in enumerate(mu):
        assert abs(draws[:, n].mean() - m) < 5 * math.sqrt(m * (1 - m) / slots), n
    for x, y in ((draws[:, 1], draws[:, 2]), (draws[:-1, 2], draws[1:, 2])):
        table = np.array([[np.sum((x == i) & (y == j)) for j in (0, 1)] for i in (0, 1)])
        assert stats.chi2_contingency(table).pvalue > 1e-4


def _split_poisson_draws(rates: np.ndarray, slots: int, rng: np.ndarray) -> np.ndarray:
    """``slots`` slots of the loop's per-dispatcher Poisson draws at rates λ_m."""
    return _draws_from_tables(*poisson_tables(rates), rates.size, slots, rng)


@njit(cache=True)
def _draws_from_tables(offsets, table, dispatchers, slots, rng):
    A_m = np.zeros(dispatchers, np.int64)
    out = np.zeros((slots, dispatchers), np.int64)
    for t in range(slots):
        _draw_split_poisson(offsets, table, A_m, rng, ptrs_draw)
        for m in range(dispatchers):  # (not out[t] = A_m: that compiles a shape check, ~5 s)
            out[t, m] = A_m[m]
    return out


def test_poisson_tables_take_any_rate_without_hanging() -> None:
    """Rows for λ = 0 (always 0 arrivals), NaN or negative (treated as 0: no endless CDF
    loop), one ulp under and at the table limit (a CDF row, then a PTRS row: λ and its
    six set-up numbers, which the draw tells apart by the row's length), and a huge λ
    (PTRS, not a CDF of 10¹² entries)."""
    from dispatchlab.engine.arrivals import POISSON_GUIDE, POISSON_TABLE_LIMIT, PTRS_ROW

    below = np.nextafter(POISSON_TABLE_LIMIT, 0.0)
    rates = np.array([0.0, np.nan, -3.0, below, POISSON_TABLE_LIMIT, 1e12])
    offsets, table = poisson_tables(rates)
    sizes = np.diff(offsets)
    assert list(sizes[:3]) == [POISSON_GUIDE + 1] * 3
    assert list(table[offsets[0] + POISSON_GUIDE: offsets[1]]) == [1.0]  # F(0) = 1
    assert POISSON_GUIDE + 600 < sizes[3] < POISSON_GUIDE + 600 + 12 * 25
    cdf = table[offsets[3] + POISSON_GUIDE: offsets[4]]
    assert (np.diff(cdf) >= 0).all() and 1 - 1e-12 < cdf[-1] <= 1.0
    assert list(sizes[4:]) == [PTRS_ROW, PTRS_ROW]
    assert table[offsets[4]] == POISSON_TABLE_LIMIT and table[offsets[5]] == 1e12
    draws = _split_poisson_draws(np.array([0.0, np.nan, below, POISSON_TABLE_LIMIT, 1e12]),
                                 400, make_rng_state(3))
    assert (draws[:, :2] == 0).all()
    for column, lam in ((2, 600.0), (3, 600.0), (4, 1e12)):
        assert abs(draws[:, column].mean() - lam) < 5 * math.sqrt(lam / 400), column


def test_a_run_s_initial_queues_wait_in_the_head_nodes() -> None:
    """init_loop_state: each server's initial queue is one batch "arrived" in slot −1, in
    its head node; empty servers have empty FIFOs; the free nodes all follow; no Poisson
    tables unless the run draws split-Poisson arrivals."""
    from dispatchlab.engine.fifo import COUNT_MASK, FREE_HEAD
    from dispatchlab.engine.layout import CARRY_POOLED
    from dispatchlab.engine.records import init_loop_state

    Q = np.array([3, 0, 2], np.int64)
    rng, stream = make_rng_state(1), make_service_stream(1)
    state = init_loop_state(Q, rng, stream, np.full(3, 0.5), True, 1.2, np.full(4, 0.25), True)
    assert list(state.pool[:3, 0]) == [-1, 0, -1]
    assert [int(x) & int(COUNT_MASK) for x in state.pool[:3, 1]] == [3, 0, 2]
    assert list(state.pool[:3, 1] >> 32) == [-1, -1, -1] and list(state.tails) == [0, 1, 2]
    assert state.pool_free[FREE_HEAD] == 3 and state.pool_free[FREE_COUNT] == 3 * 3 + 16 - 3
    assert state.carry[CARRY_POOLED] == 5 and state.poisson_offsets.size == 5
    assert state.Q is Q and state.A_m.shape == (4,) and state.rng is rng
    none = init_loop_state(Q, rng, stream, np.full(3, 0.5), False, 1.2, np.full(1, 1.0), False)
    assert none.poisson_offsets.size == 1 and none.pool.shape == (2, 2)


def test_poisson_split_by_table_inversion_has_poisson_law() -> None:
    from scipy import stats

    rates = np.array([0.3, 2.85, 9.5, 36.0, 590.0, 650.0])  # the last one is drawn by PTRS
    draws = _split_poisson_draws(rates, 40_000, make_rng_state(11))
    for m, lam in enumerate(rates):
        counts = np.bincount(draws[:, m])
        top = int(stats.poisson.ppf(0.999, lam))
        observed = np.append(counts[:top], counts[top:].sum())
        expected = np.append(stats.poisson.pmf(np.arange(top), lam),
                             stats.poisson.sf(top - 1, lam)) * draws.shape[0]
        chi2 = float((((observed - expected) ** 2) / expected).sum())
        assert stats.chi2.sf(chi2, df=top) > 1e-4, (lam, chi2)
        assert draws[:, m].mean() == pytest.approx(lam, rel=0.03)


def test_repeats_use_successive_seeds_and_a_replication_ci(
        capsys: pytest.CaptureFixture[str]) -> None:
    rows = _rows(capsys, ["bench", "--workload", "jsq", "--slots", "20000", "--repeat", "3",
                          "--no-refsim", "--json"])
    (row,) = rows
    assert row["ci_method"] == "independent replications (3)"
    assert row["ci_low"] < row["mean_total_queue"] < row["ci_high"]
    single = _rows(capsys, ["bench", "--workload", "jsq", "--slots", "20000", "--no-refsim",
                            "--json"])[0]
    assert single["ci_method"].startswith("batch means")
    assert single["mean_total_queue"] != row["mean_total_queue"]  # the mean of seeds 7, 8, 9


def _list_lengths(pool: np.ndarray, tails: np.ndarray, N: int) -> list[int]:
    """Batches in each server's FIFO: the head in node n (when it has jobs left), then the
    list behind it; checks that the list ends at the server's tail and that an empty head
    has nothing behind it."""
    lengths = []
    for n in range(N):
        count, node, last = int(pool[n, 1] & 0xFFFFFFFF > 0), int(pool[n, 1] >> 32), n
        assert count or node < 0
        while node >= 0:
            assert pool[node, 1] & 0xFFFFFFFF > 0
            count, last, node = count + 1, node, int(pool[node, 1] >> 32)
        assert tails[n] == last
        lengths.append(count)
    return lengths


@pytest.mark.parametrize("law", ["bernoulli", "poisson"])
def test_fifo_times_each_job_like_a_plain_fifo(law: str) -> None:
    """The listed FIFOs (Bernoulli: the branch-free pass; Poisson: several departures a slot
    through ``_fifo_update``): every job's delay t − arrival slot as a per-job FIFO computes
    it, through several growths of the shared node pool (a slow server gains a batch almost
    every slot); the FIFOs hold exactly the pending batches (one per arrival slot with jobs
    left). Bernoulli: also the same queues and draws as the service without delay tracking."""
    N, slots, warmup = 8, 600, 40
    mu = np.linspace(0.15, 0.9, N)
    thresholds = bernoulli_thresholds(mu)
    Q = np.array([3, 0, 1, 0, 0, 2, 0, 0], np.int64)
    Q_plain = Q.copy()
    pool, tails, pool_free = new_pool(N, 2 * N + 1)
    jobs: list[list[int]] = [[-1] * int(q) for q in Q]  # arrival slot of each job waiting
    for n in range(N):
        if Q[n] > 0:
            _fifo_append(n, -1, Q[n], pool, tails, pool_free)
    stream, stream_plain = make_service_stream(5), make_service_stream(5)
    rng = make_rng_state(5)
    hist = np.zeros(DELAY_BINS, np.int64)
    moments = np.zeros(8)
    scratch = np.zeros((2, N), np.int64)
    queue_sum = np.zeros(N, np.int64)
    arrivals = np.random.default_rng(3)
    expected: list[int] = []
    grown = 0
    for t in range(slots):
        if pool_free[FREE_COUNT] < N:
            pool = grow_pool(pool, pool_free)
            grown += 1
        A = arrivals.binomial(3, 0.25, N).astype(np.int64)
        before = Q + A
        for n in range(N):
            jobs[n].extend([t] * int(A[n]))
        if law == "bernoulli":
            total, _, departures = _serve_bernoulli_fifo(
                Q, A, scratch[0], thresholds, stream, True, queue_sum, scratch[1], t, warmup,
                pool, tails, pool_free, hist, moments)
            plain_total, _, plain_departures = _serve_bernoulli(
                Q_plain, A, scratch[0], thresholds, stream_plain, True, queue_sum, scratch[1])
            assert (Q == Q_plain).all() and total == plain_total
            assert departures == plain_departures
        else:
            serve_other_law(Q, A, scratch[0], mu, 2, 0, rng, True, queue_sum, True, t, warmup,
                            pool, tails, pool_free, hist, moments, thresholds, stream,
                            scratch[1])
        for n in range(N):
            for _ in range(int(before[n] - Q[n])):
                arrived = jobs[n].pop(0)
                if arrived >= warmup:
                    expected.append(t - arrived)
        pending = [len({*j}) for j in jobs]  # one batch per arrival slot
        assert _list_lengths(pool, tails, N) == pending
        # the heads live in nodes 0..N−1: only the batches behind them take pool nodes
        assert pool_free[FREE_COUNT] == pool.shape[0] - N - sum(max(k - 1, 0) for k in pending)
    assert grown >= 2
    assert len(expected) > 1000 and max(expected) < EXACT_DELAY_BINS
    assert (hist == np.bincount(expected, minlength=DELAY_BINS)).all()
    assert moments[SUM_DELAY] == sum(expected)


def test_scaling_benchmark_quick_prints_a_cell_per_family_and_grid_point(
        capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> None:
    """--quick measures every family on N ∈ {100, 1000} × M ∈ {1, 10} and prints each cell,
    then the M-ratio lines (the cells are stand-ins here: that each cell is measured right
    is the next test's, with real runs; speed targets live in benchmarks/README.md)."""
    from dispatchlab.bench import scaling as bench_scaling

    def cell(family, servers, dispatchers, jobs):
        assert jobs == bench_scaling.QUICK_JOBS
        return {"family": family.label, "policy": family.policy, "dispatch": family.dispatch,
                "servers": servers, "dispatchers": dispatchers, "slots": 10, "jobs": jobs,
                "cpu_seconds": 1e-3 * dispatchers, "ns_per_job": 1e6 * dispatchers / jobs,
                "ns_per_slot": 1e5 * dispatchers}

    monkeypatch.setattr(bench_scaling, "time_cell", cell)
    monkeypatch.setattr(bench_scaling, "warm_family", lambda family: None)
    rows = _rows(capsys, ["bench", "--scaling", "--quick", "--family", "jsq", "--family",
                          "pi-jsq", "--json"])
    assert [(r["family"], r["servers"], r["dispatchers"]) for r in rows] == [
        (f, n, m) for f in ("jsq", "pi-jsq") for n in (100, 1000) for m in (1, 10)]
    assert main(["bench", "--scaling", "--quick", "--family", "rand"]) == 0
    err = capsys.readouterr().err
    assert "rand N=1000 M=10:" in err and "ratio" in err


def test_scaling_benchmark_measures_the_grid_asked(capsys: pytest.CaptureFixture[str]) -> None:
    """--servers and --dispatchers replace the grid (the paired M = 1 / M = 100 cells of
    benchmarks/README.md's scaling table are a CLI line); each cell is a real measurement."""
    rows = _rows(capsys, ["bench", "--scaling", "--quick", "--family", "rand", "--servers",
                          "20", "--dispatchers", "3", "--dispatchers", "1", "--repeat", "2",
                          "--json"])
    assert [(r["servers"], r["dispatchers"], r["round"]) for r in rows] == [
        (20, 3, 0), (20, 1, 0), (20, 3, 1), (20, 1, 1)]
    for row in rows:
        assert row["jobs"] > 0 and row["slots"] >= 1
        assert row["ns_per_job"] > 0 and math.isfinite(row["ns_per_slot"])


def test_the_grid_times_its_cells_with_the_older_heap_frozen(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """Each timed run starts with a collection; the objects alive before the grid are frozen
    out of it while the cells run (each collection walked a test worker's whole heap:
    9.6 s of a 4-cell quick grid), and thawed after, also when a cell fails; a process
    that froze objects itself (this one: tests/conftest.py) keeps them frozen."""
    from dispatchlab.bench import scaling

    def grid(on_cell: Callable[[dict[str, Any]], None] | None = None) -> None:
        scaling.run_scaling(["rand"], servers=[20], dispatchers=[1], jobs=200, on_cell=on_cell)

    frozen_while_timed: list[int] = []
    frozen_by_the_suite = gc.get_freeze_count()
    grid(lambda _: frozen_while_timed.append(gc.get_freeze_count()))
    assert frozen_while_timed[0] >= frozen_by_the_suite > 0
    assert gc.get_freeze_count() >= frozen_by_the_suite  # (nothing thawed)

    def failing(*args: Any) -> dict[str, Any]:
        raise RuntimeError("a cell failed")

    gc.unfreeze()
    try:
        frozen_while_timed.clear()
        grid(lambda _: frozen_while_timed.append(gc.get_freeze_count()))
        assert len(frozen_while_timed) == 1 and frozen_while_timed[0] > 0
        assert gc.get_freeze_count() == 0
        monkeypatch.setattr(scaling, "time_cell", failing)
        with pytest.raises(RuntimeError, match="a cell failed"):
            grid()
        assert gc.get_freeze_count() == 0
    finally:
        gc.freeze()


@pytest.mark.parametrize("argv, field", [
    (["--no-refsim", "--servers", "100"], "servers"),
    (["--no-refsim", "--dispatchers", "1"], "dispatchers"),
    (["--scaling", "--servers", "1"], "servers"),
    (["--scaling", "--servers", "1000001"], "servers"),
    (["--scaling", "--servers", "abc"], "servers"),
    (["--scaling", "--servers", "1e4"], "servers"),
    (["--scaling", "--dispatchers", "0"], "dispatchers"),
    (["--scaling", "--dispatchers", "1001"], "dispatchers"),
    (["--scaling", "--dispatchers", "1", "--dispatchers", "1"], "dispatchers"),
])
def test_scaling_grid_bad_input(capsys: pytest.CaptureFixture[str], argv: list[str],
                                field: str) -> None:
    """A grid value out of range, not an integer, repeated, or given without --scaling: one
    error line naming the option, exit 2, nothing run."""
    assert main(["bench", "--family", "rand", *argv]) == 2
    captured = capsys.readouterr()
    err = captured.err.strip()
    assert err.startswith(f"error: {field}:") and "\n" not in err and captured.out == ""


@pytest.mark.parametrize("keyword, value", [
    ("servers", [True]), ("servers", "100"), ("servers", 100), ("servers", [100.0]),
    ("dispatchers", [1, 1]), ("dispatchers", [0]), ("jobs", True), ("jobs", 2.5)])
def test_run_scaling_refuses_a_bad_grid(keyword: str, value: Any) -> None:
    """The Python API validates the grid as the CLI does: no bool as an integer, no string
    as a list of numbers."""
    from dispatchlab.bench import scaling as bench_scaling

    with pytest.raises(ValidationError, match=keyword):
        bench_scaling.run_scaling(["rand"], quick=True, **{keyword: value})


def test_scaling_benchmark_refuses_an_unknown_family() -> None:
    assert main(["bench", "--scaling", "--quick", "--family", "no-such"]) == 2


@pytest.mark.parametrize("repeat", ["0", "-3"])
def test_scaling_benchmark_refuses_fewer_than_one_round(
        repeat: str, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["bench", "--scaling", "--quick", "--family", "rand", "--repeat", repeat]) == 2
    assert "repeat" in capsys.readouterr().err


def test_scaling_rounds_pair_the_costs_of_a_ratio(monkeypatch: pytest.MonkeyPatch) -> None:
    """With repeats the cells of one N are measured in rounds (every M, then every M
    again), the table's cost is a cell's median, and a ratio the median of the rounds'
    ratios (2, of 2, 3 and 1.5 here), not the ratio of the medians (3/2): a slow spell
    that hits one round (both of its cells, 4× here) does not decide it."""
    from dispatchlab.bench import scaling as bench_scaling

    order: list[tuple[int, int]] = []
    # (M = 1, M = 10) in rounds 0, 1, 2 of each N
    costs = iter([1.0, 2.0, 4.0, 12.0, 2.0, 3.0] * 2)

    def timed(family, servers, dispatchers, jobs):
        order.append((servers, dispatchers))
        cost = next(costs)
        return {"family": family.label, "policy": family.policy, "dispatch": family.dispatch,
                "servers": servers, "dispatchers": dispatchers, "slots": 1, "jobs": 1,
                "cpu_seconds": cost, "ns_per_job": cost, "ns_per_slot": cost}

    monkeypatch.setattr(bench_scaling, "time_cell", timed)
    monkeypatch.setattr(bench_scaling, "warm_family", lambda family: None)
    cells = bench_scaling.run_scaling(["jsq"], quick=True, repeat=3)
    assert order == [(n, m) for n in (100, 1000) for _ in range(3) for m in (1, 10)]
    assert [c["round"] for c in cells[:6]] == [0, 0, 1, 1, 2, 2]
    assert bench_scaling.dispatcher_ratios(cells, servers=1000) == {"jsq": (2.0, 1.5, 3.0)}
    medians = {(c["servers"], c["dispatchers"]): (c["ns_per_job"], c["repeats"])
               for c in bench_scaling.median_cells(cells)}
    assert medians == {(100, 1): (2.0, 3), (100, 10): (3.0, 3), (1000, 1): (2.0, 3),
                       (1000, 10): (3.0, 3)}
    with pytest.raises(ValidationError, match="repeat"):
        bench_scaling.run_scaling(["jsq"], quick=True, repeat=0)


def test_ctrl_c_stops_a_huge_number_of_scaling_rounds() -> None:
    """``--repeat 10**12``: SIGINT after the first measurements ends the benchmark with exit
    status 130 and no traceback, every JSON line printed so far whole."""
    import signal

    child = subprocess.Popen(
        [str(Path(sys.executable).with_name("dispatchlab")), "bench", "--scaling", "--quick",
         "--family",
         "rand", "--repeat", str(10**12), "--json"],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        # (a shell's background job ignores SIGINT, and a child inherits that)
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    try:
        first = child.stdout.readline()
        child.send_signal(signal.SIGINT)
        out, err = child.communicate(timeout=60)
    finally:
        child.kill()
    assert child.returncode == 130, err
    assert "Traceback" not in err
    for line in [first, *out.splitlines()]:
        assert json.loads(line)["family"] == "rand"


def test_scaling_cell_ends_when_its_runs_stop_early(monkeypatch: pytest.MonkeyPatch) -> None:
    """A run that stops at the bound (an unstable family) stays as short whatever the slots
    asked for: the cell must not keep lengthening it (it would never reach the budget)."""
    from types import SimpleNamespace

    from dispatchlab.bench import scaling as bench_scaling

    asked: list[int] = []

    def stopped_at_the_bound(system, policy, *, slots, **options):
        asked.append(slots)
        assert len(asked) <= 5, f"the cell keeps lengthening a stopped run: {asked}"
        start = time.process_time()
        while time.process_time() - start < 0.002:  # the same small cost every call
            pass
        return SimpleNamespace(jobs_arrived=min(slots, 300), slots_run=min(slots, 300))

    monkeypatch.setattr(bench_scaling, "simulate", stopped_at_the_bound)
    family = bench_scaling.select_families(["jsq"])[0]
    cell = bench_scaling.time_cell(family, 100, 1, jobs=10**9)
    assert len(asked) == 3  # two probes and one long run, not a growing series
    assert cell["slots"] == 300 - bench_scaling.MIN_SLOTS


def test_scaling_cell_subtracts_the_cheaper_probe(monkeypatch: pytest.MonkeyPatch) -> None:
    """A process's first call pays more than the fixed cost (the first cell of a grid read
    0 ns per job): the cell subtracts the cheaper of its two probes."""
    from types import SimpleNamespace

    from dispatchlab.bench import scaling as bench_scaling

    costs = iter([0.05, 0.005, 0.025])  # first probe, second probe, the long run

    def timed(system, policy, *, slots, **options):
        start = time.process_time()
        cost = next(costs)
        while time.process_time() - start < cost:
            pass
        return SimpleNamespace(jobs_arrived=slots, slots_run=slots)

    monkeypatch.setattr(bench_scaling, "simulate", timed)
    family = bench_scaling.select_families(["jsq"])[0]
    cell = bench_scaling.time_cell(family, 100, 1, jobs=10_000)
    assert 0.015 < cell["cpu_seconds"] < 0.03  # ≈ 0.025 − 0.005, not max(0.025 − 0.05, 0)


def test_more_served_than_queued_ends_the_fifo_pass() -> None:
    """A state no run reaches by itself (a policy that wrote its queues): Q_n = 5 while
    server n's FIFO holds one job. The Poisson(50) service step times that job and stops,
    instead of popping an empty head forever (the run's invariant check then reports the
    mismatch). In a child process, so that a regression fails by timeout, not a hung suite."""
    script = (
        "import numpy as np\n"
        "from dispatchlab.compiled.rng import make_rng_state\n"
        "from dispatchlab.compiled.histogram import DELAY_BINS\n"
        "from dispatchlab.engine.fifo import _fifo_append, new_pool\n"
        "from dispatchlab.engine.service import serve_other_law\n"
        "pool, tails, free = new_pool(1, 8)\n"
        "_fifo_append(0, 0, 1, pool, tails, free)\n"
        "Q, A, prev = np.array([5]), np.zeros(1, np.int64), np.zeros(1, np.int64)\n"
        "hist, moments = np.zeros(DELAY_BINS, np.int64), np.zeros(8)\n"
        "served = serve_other_law(Q, A, prev, np.array([50.0]), 2, 0, make_rng_state(1),\n"
        "                         True, np.zeros(1, np.int64), True, 5, 0, pool, tails,\n"
        "                         free, hist, moments, np.zeros(1, np.uint64),\n"
        "                         np.zeros(4, np.uint64), np.zeros(1, np.int64))[2]\n"
        "print(served, int(hist.sum()), int(hist[5]))\n")
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                          timeout=300, check=False)
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["5", "1", "1"]  # 5 served, 1 of them timed (delay 5)
