"""A job trace replayed: a single FIFO server's response times are the trace's own Lindley
recursion, exactly; a hostile file is one line naming it and the line, quoting nothing."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from dispatchlab.continuous import simulate_continuous
from dispatchlab.core.errors import ValidationError


def poisson_trace(path: Path, jobs: int, seed: int, sizes: bool = True,
                  dispatchers: int = 0) -> np.ndarray:
    rng = np.random.default_rng(seed)
    times = np.cumsum(rng.exponential(1 / 0.7, jobs))
    columns = [times]
    if sizes:
        columns.append(rng.exponential(1.0, jobs))
    if dispatchers:
        columns.append(rng.integers(0, dispatchers, jobs).astype(float))
    table = np.column_stack(columns)
    np.savetxt(path, table, delimiter=",", fmt="%.17g")
    return table


def test_one_fifo_server_replays_the_lindley_recursion(tmp_path: Path) -> None:
    table = poisson_trace(tmp_path / "jobs.csv", 5000, seed=1)
    result = simulate_continuous([2.0], "random", arrivals=f"trace:{tmp_path / 'jobs.csv'}",
                                 workers=1)
    times, sizes = table[:, 0], table[:, 1] / 2.0  # service times at speed 2
    response = np.empty(times.size)
    free_at = 0.0
    for k in range(times.size):
        start = max(times[k], free_at)
        free_at = start + sizes[k]
        response[k] = free_at - times[k]
    assert result.jobs == times.size - 1 and result.warmup == (times.size - 1) // 10
    expected = response[result.warmup:result.jobs].mean()
    assert result.mean_response.mean == pytest.approx(expected, rel=1e-9)
    assert result.arrival_rate == pytest.approx((times.size - 1) / (times[-1] - times[0]))
    assert result.sizes == "trace" and result.arrivals.startswith("trace:")


def test_a_trace_without_sizes_draws_them_and_its_dispatchers_are_kept(tmp_path: Path
                                                                        ) -> None:
    poisson_trace(tmp_path / "t.csv", 3000, seed=2, sizes=False)
    drawn = simulate_continuous("2x1", "jsq", arrivals=f"trace:{tmp_path / 't.csv'}",
                                sizes="det:0.5", workers=1)
    assert drawn.sizes == "det:0.5" and drawn.stability != "unstable"
    poisson_trace(tmp_path / "d.csv", 3000, seed=3, dispatchers=3)
    owned = simulate_continuous("4x1", "rr", arrivals=f"trace:{tmp_path / 'd.csv'}",
                                dispatchers=3, jobs=2000, workers=1)
    assert owned.jobs == 2000


@pytest.mark.parametrize(("content", "settings", "field", "says"), [
    ("0,1\n1,abc\n", {}, "arrivals", "line 2"),
    ("0,1\n2,1\n1,1\n", {}, "arrivals", "line 3"),
    ("0,1\n1,-2\n", {}, "arrivals", "line 2"),
    ("0,1,0\n1,1,5\n", {"dispatchers": 2}, "arrivals", "line 2"),
    ("0,1,0,0\n1,1,0,0\n", {}, "arrivals", "three columns"),
    ("0,1\n", {}, "arrivals", "at least two jobs"),
    ("", {}, "arrivals", "at least two jobs"),
    ("0,1\n1,nan\n", {}, "arrivals", "finite"),
    ("0,1\n1,1\n2,1\n", {"sizes": "exp:1"}, "sizes", "leave sizes out"),
    ("0,1\n1,1\n2,1\n", {"load": 0.5}, "load", "its own arrival rate"),
    ("0,1\n1,1\n2,1\n", {"jobs": 3}, "jobs", "≤ 2"),
])
def test_a_bad_trace_is_one_line(tmp_path: Path, content, settings, field, says) -> None:
    path = tmp_path / "bad.csv"
    path.write_text(content)
    with pytest.raises(ValidationError) as caught:
        simulate_continuous("2x1", "random", arrivals=f"trace:{path}", **settings)
    message = str(caught.value)
    assert caught.value.field == field and says in message, message
    assert "abc" not in message and "\n" not in message


def test_files_that_are_not_traces(tmp_path: Path) -> None:
    np.save(tmp_path / "objects.npy", np.array([{"a": 1}, None], dtype=object))
    for path in (tmp_path / "objects.npy", tmp_path / "missing.csv", tmp_path):
        with pytest.raises(ValidationError) as caught:
            simulate_continuous("2x1", "random", arrivals=f"trace:{path}")
        assert caught.value.field == "arrivals", str(caught.value)
