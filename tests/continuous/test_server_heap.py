"""The PS and SRPT servers keep their jobs in a skew heap (continuous.servers): jobs that all
arrive at time 0 complete in the order of their sizes, ties to the earlier arrival, under
both disciplines, through every merge and deletion of the heap (the order a walk through
the jobs gave, which the engine's numbers depend on: the same runs to the last bit)."""

from __future__ import annotations

import numpy as np
import pytest

from dispatchlab.continuous.servers import (
    DISCIPLINES,
    J_INDEX,
    J_SIZE,
    S_NEXT,
    admit,
    complete,
    new_pool,
    new_servers,
)


@pytest.mark.parametrize("discipline", ["ps", "srpt", "fifo"])
@pytest.mark.parametrize("jobs", [1, 2, 7, 500])
def test_jobs_present_together_leave_in_order_of_size(discipline, jobs) -> None:
    rng = np.random.default_rng(jobs)
    sizes = rng.integers(1, 6, jobs).astype(float)  # few values: many ties
    sf, si = new_servers(1)
    jf, ji, free = new_pool(jobs)
    code = DISCIPLINES[discipline]
    for job in range(jobs):
        jf[J_SIZE, job] = sizes[job]
        ji[J_INDEX, job] = job
        admit(code, sf, si, jf, ji, 0, job, 0.0, 1.0)
    order = []
    for _ in range(jobs):
        now = sf[S_NEXT, 0]
        order.append(int(complete(code, sf, si, jf, ji, 0, now, 1.0)))
    expected = (list(range(jobs)) if discipline == "fifo"
                else sorted(range(jobs), key=lambda job: (sizes[job], job)))
    assert order == expected
    assert sf[S_NEXT, 0] == np.inf  # empty
