"""Tags sleep until the first slot that can see their departure (engine/tags.py, the tag
table's wake-up slots): with p = 1 every measured job is tagged, so the tagged delay
histogram must equal the exact FIFO's under every service law, whatever bound (K jobs a
slot for binomial:K, none for Poisson and geometric, μ_n for deterministic) sets the
wake-up slots, and under batch and per-job dispatch."""

import numpy as np
import pytest

from dispatchlab.engine.raw import default_bound, run_once
from dispatchlab.model.system import System
from dispatchlab.policies import make_policy


@pytest.mark.parametrize(("service", "servers", "dispatch"), [
    ("binomial:3", "4x0.9,4x2.5", "batch"),
    ("poisson", "4x0.5,4x1.5", "batch"),
    ("geometric", "4x0.5,4x0.9", "per-job"),
    ("deterministic", "4x1,4x2", "batch"),
    ("bernoulli", "4x0.3,4x0.9", "per-job"),
])
def test_every_job_tagged_gives_the_fifo_histogram_exactly(service, servers, dispatch):
    system = System.build(servers, load=0.97, dispatchers=3, service=service,
                          dispatch=dispatch)
    kernel = make_policy("pod", d=2).kernel(system)
    common = dict(slots=20_000, warmup=2_000, seed=np.random.SeedSequence(11),
                  bound=default_bound(system), imbalance=False)
    exact = run_once(system, kernel, time_every_job=True, **common)
    tagged = run_once(system, kernel, time_every_job=False, tag_probability=1.0, **common)
    assert exact.delay_hist.sum() > 10_000
    assert np.flatnonzero(exact.delay_hist).size > 5  # delays of several slots, not all 0
    np.testing.assert_array_equal(tagged.delay_hist, exact.delay_hist)
    np.testing.assert_array_equal(tagged.moments, exact.moments)


def test_a_tag_table_that_grows_many_times_keeps_every_tag(monkeypatch):
    """The tag table starts at 64 rows here (a run's default is ≥ 1024) and doubles each
    time a chunk ends with it more than half full: tags in use keep their rows and the new
    rows join the free list, so the histogram still equals the FIFO's job for job."""
    from dispatchlab.engine import raw, tags

    monkeypatch.setattr(raw, "tag_rows", lambda system, probability: 64)
    sizes = []
    grow_tags = tags.grow_tags

    def grow(table, carry):
        sizes.append(table.shape[0])
        return grow_tags(table, carry)

    monkeypatch.setattr(tags, "grow_tags", grow)
    system = System.build("4x0.3,4x0.9", load=0.98, dispatchers=3)
    kernel = make_policy("rand").kernel(system)
    common = dict(slots=30_000, warmup=1_000, seed=np.random.SeedSequence(5),
                  bound=default_bound(system), imbalance=False)
    exact = run_once(system, kernel, time_every_job=True, **common)
    tagged = run_once(system, kernel, time_every_job=False, tag_probability=1.0, **common)
    assert sizes[:3] == [64, 128, 256]  # the table doubled, with tags in use
    np.testing.assert_array_equal(tagged.delay_hist, exact.delay_hist)
    np.testing.assert_array_equal(tagged.moments, exact.moments)
