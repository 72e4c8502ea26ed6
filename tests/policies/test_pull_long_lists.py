"""JBT-r's μ-weighted pick from a long ID list (more than WEIGHTED_SCAN_MAX IDs): a
uniform position kept with probability μ_n/μ_max, the scan's law ∝ μ without its two
passes of the list; short lists keep the scan and its draws (the fingerprint set)."""

from __future__ import annotations

import numpy as np
from scipy import stats

import dispatchlab as dl
from dispatchlab.compiled.alias import alias_table
from dispatchlab.compiled.rng import make_rng_state
from dispatchlab.policies import make_policy
from dispatchlab.policies.pull import WEIGHTED_SCAN_MAX, rejection_pick


def test_a_long_list_is_picked_in_proportion_to_mu() -> None:
    """300 IDs of μ 0.1, 0.5 and 0.9 in a ring buffer that wraps: 90,000 picks against the
    law μ_n/Σμ, χ² over the 300 servers (a fixed stream: p is fixed)."""
    servers, capacity, head = 300, 512, 400  # positions 400 … 511, then 0 … 187
    mu = np.tile([0.1, 0.5, 0.9], servers // 3)
    order = np.random.default_rng(7).permutation(servers)
    ids = np.full(capacity, -1, np.int64)
    ids[(head + np.arange(servers)) & (capacity - 1)] = order
    rng = make_rng_state(3)
    counts = np.zeros(servers, np.int64)
    for _ in range(90_000):
        i = rejection_pick(ids, head, capacity - 1, servers, mu, mu.max(), rng)
        assert 0 <= i < servers
        counts[ids[(head + i) & (capacity - 1)]] += 1
    expected = 90_000 * mu / mu.sum()
    assert stats.chisquare(counts, expected).pvalue > 1e-3
    slow, fast = counts[mu == 0.1].sum(), counts[mu == 0.9].sum()
    assert abs(fast / slow - 9.0) < 0.6


def test_the_kernel_keeps_mu_max_after_the_alias_table_and_long_lists_run() -> None:
    """The pick's μ_max is the kernel's last float parameter, after the fallback's alias
    table (unchanged); a run whose lists grow long (r far above every queue, N = 400) is
    stable and repeats itself, and sends fast servers more than slow ones."""
    system = dl.System.build("200x0.2,200x0.8", load=0.5, dispatch="per_job")
    kernel = make_policy("jbt", r=1000).kernel(system)
    assert kernel.float_params[-1] == 0.8
    assert np.array_equal(kernel.float_params[:-1], alias_table(system.mu))
    assert system.n_servers > WEIGHTED_SCAN_MAX
    runs = [dl.simulate(system, "jbt", policy_params={"r": 1000}, slots=5_000, seed=5,
                        per_server=True) for _ in range(2)]
    assert runs[0].stability == "stable"
    assert runs[0].mean_total_queue == runs[1].mean_total_queue
    served = runs[0].per_server_frame()["throughput"].to_numpy()
    assert served[200:].mean() > 2 * served[:200].mean()
