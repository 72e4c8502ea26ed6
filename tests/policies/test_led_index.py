"""LED's per-dispatcher indexes (layout.write_estimate): the L-JSQ block minima and L-JBA's
kept sum. The block minima must give the scan's draws exactly; L-JBA's rejection sampler
the scan's law."""

from __future__ import annotations

import numpy as np
import pytest
from numba import njit
from scipy import stats

from dispatchlab import System, simulate
from dispatchlab.compiled.alias import alias_draw, alias_table
from dispatchlab.compiled.argmin import argmin_random_ties, shorter_of_two
from dispatchlab.compiled.rng import make_rng_state, randint, sample_distinct_row
from dispatchlab.policies.led import LEDPolicy
from dispatchlab.policies.led.ahead import looks_ahead
from dispatchlab.policies.led.layout import INDEX_BLOCKS, INDEX_SUM, write_estimate
from dispatchlab.policies.led.min_blocks import (
    HEADER,
    block_argmin,
    block_shift,
    group_shift,
    new_block_rows,
)
from dispatchlab.policies.led.min_tree import (
    BLOCK,
    FAN,
    NODES,
    TREE_MIN_SERVERS,
    group_select,
    mark_dirty,
    new_tree_rows,
    rebuild,
    refresh,
    tree_argmin,
    tree_depth,
    tree_leaves,
    tree_min,
    tree_select,
    tree_ties,
    tree_width,
    uses_tree,
    write_through,
)
from dispatchlab.policies.led.strategies import (
    JBA_WEIGHTED,
    alias_step,
    builtin_strategy,
    l_jba,
    l_jba_pick,
    l_jba_pick_by_sum,
    l_jsq,
    l_pod,
    pod_pair,
)


@pytest.mark.parametrize("policy, params, dispatch", [
    ("l-jsq-pull", {"p": 0.2}, "batch"),
    ("l-jsq-push", {"p": 0.5, "d": 7}, "batch"),
    ("lsq", {"p": 0.1}, "per_job"),
    ("lsq", {"p": 0.05, "learn_on_send": True}, "batch"),
    ("lsq", {"p": 0.1, "update": "pull"}, "per_job"),
    ("lsq", {"p": 0.05, "update": "pull", "learn_on_send": True}, "batch"),
])
@pytest.mark.parametrize("servers", [100, 300])
def test_min_tree_draws_like_the_scan(policy, params, dispatch, servers):
    """The built-in L-JSQ (push: min tree over several blocks; pull: block minima) and the
    plug-in l_jsq (a scan of the N estimates) consume the same random numbers: identical
    trajectories."""
    system = System.build(f"{servers // 2}x0.2,{servers - servers // 2}x0.6", load=0.7,
                          dispatchers=3, dispatch=dispatch)
    options = {"increment": policy == "lsq", "update": "pull" if "pull" in policy else "push",
               **params}
    # (LSQ with rare pushes drifts on N = 300: compare what an unstable run reports too)
    assert_same_runs(system, LEDPolicy(strategy="jsq", **options),
                     LEDPolicy(strategy=l_jsq, **options), slots=3_000, seed=8)


def assert_same_runs(system, policy, other, *, slots, seed):
    """``policy`` and ``other`` run on ``system`` to the same trajectory: the same counts,
    ΣQ, herding, messages and diagnostics (NaN equal to NaN)."""
    runs = [simulate(system, each, slots=slots, seed=seed, delay="off")
            for each in (policy, other)]
    for field in ("jobs_departed", "jobs_in_system", "idle_while_busy", "mean_total_queue",
                  "herding_fraction"):
        assert np.array_equal(getattr(runs[0], field), getattr(runs[1], field),
                              equal_nan=True), field
    assert runs[0].messages_by_kind == runs[1].messages_by_kind
    assert runs[0].diagnostics == runs[1].diagnostics


@njit(cache=True)
def _block_and_scan_picks(values, index, writes, levels, rng_writes, rng_a, rng_b):
    """``writes`` random writes of values in [0, levels); after each, the block index's pick
    (drawing from rng_a) and the scan's (from rng_b), and whether the index is exact."""
    out = np.zeros((writes, 2), np.int64)
    for i in range(writes):
        n = randint(rng_writes, values.size)
        write_estimate(values, index, INDEX_BLOCKS, n, randint(rng_writes, levels))
        out[i, 0] = block_argmin(values, index, rng_a)
        out[i, 1] = argmin_random_ties(values, rng_b)
    return out


@pytest.mark.parametrize("servers, levels", [(64, 2), (100, 3), (1000, 2), (1000, 40),
                                             (4097, 5), (10_000, 2), (40_000, 3),
                                             (300_000, 2)])
def test_block_minima_pick_like_the_scan(servers, levels):
    """Random writes (few levels: many ties, blocks and groups whose last minimiser rises,
    a partial last block and group, blocks of 64 at N = 3·10⁵): the block index picks the
    scan's server with the scan's draws, and its rows stay the exact (min, count) of every
    group and (min, minimisers' mask) of every block that is not marked for recomputing."""
    values = np.zeros(servers, np.int64)
    index = new_block_rows(servers, 1, servers)[0]
    picks = _block_and_scan_picks(values, index, 3_000, levels, make_rng_state(1),
                                  make_rng_state(2), make_rng_state(2))
    assert (picks[:, 0] == picks[:, 1]).all()
    size = 1 << block_shift(servers)
    group_size = size << group_shift(servers)
    assert (index[0], index[2]) == (block_shift(servers), group_shift(servers))
    assert index[1] == -(-servers // size) and index[3] == -(-servers // group_size)
    for j in range(index[3]):
        part = values[j * group_size:(j + 1) * group_size]
        if index[HEADER + 2 * j + 1] != -1:
            assert (index[HEADER + 2 * j], index[HEADER + 2 * j + 1]) == (
                part.min(), (part == part.min()).sum())
    first = HEADER + 2 * index[3]
    for k in range(index[1]):
        part = values[k * size:(k + 1) * size]
        if index[first + 2 * k + 1] != 0:
            mask = sum(1 << int(i) for i in np.flatnonzero(part == part.min()))
            assert (index[first + 2 * k], int(index[first + 2 * k + 1]) % 2**64) == (
                part.min(), mask)


@njit(cache=True)
def _tree_and_scan_picks(values, tree, writes, levels, burst, rng_writes, rng_a, rng_b):
    """Bursts of up to ``burst`` random writes marked dirty (coalescing in the tree until
    the next pick); after each burst the tree's pick (rng_a) and the scan's (rng_b), then
    two writes through: the pick's estimate + 1 (LSQ) and a random one (every third
    burst, one more into a tree made dirty first)."""
    out = np.zeros((writes, 2), np.int64)
    for i in range(writes):
        for _ in range(randint(rng_writes, burst + 1)):
            n = randint(rng_writes, values.size)
            mark_dirty(tree, n)
            values[n] = randint(rng_writes, levels)
        out[i, 0] = tree_argmin(values, tree, rng_a, i % 2 == 0)
        out[i, 1] = argmin_random_ties(values, rng_b)
        write_through(values, tree, out[i, 0], values[out[i, 0]], values[out[i, 0]] + 1)
        n = randint(rng_writes, values.size)
        write_through(values, tree, n, values[n], randint(rng_writes, levels))
        if i % 3 == 0:  # a write through into a dirty tree only marks the block
            n = randint(rng_writes, values.size)
            mark_dirty(tree, n)
            values[n] = randint(rng_writes, levels)
            n = randint(rng_writes, values.size)
            write_through(values, tree, n, values[n], randint(rng_writes, levels))
    return out


@pytest.mark.parametrize("servers, levels, burst", [
    (64, 2, 3), (100, 3, 1), (129, 2, 5), (1000, 40, 2), (5000, 2, 400), (40_000, 3, 30),
    (40_000, 2, 3_000)])
def test_min_tree_picks_like_the_scan(servers, levels, burst):
    """Random writes (few levels: many ties; a partial last block, bursts that rebuild,
    LSQ's increment of the chosen server, writes through into clean and dirty trees): the
    tree picks the scan's server with the scan's draws, and every node and mask ends as a
    rebuild from the estimates makes it."""
    values = np.zeros(servers, np.int64)
    tree = new_tree_rows(servers, 1, tree_width(servers))[0]
    picks = _tree_and_scan_picks(values, tree, 2_000, levels, burst, make_rng_state(1),
                                 make_rng_state(2), make_rng_state(2))
    assert (picks[:, 0] == picks[:, 1]).all()
    refresh(values, tree)  # (the last write may have left blocks dirty)
    assert (tree_min(tree), tree_ties(tree)) == (values.min(), (values == values.min()).sum())
    fresh = new_tree_rows(servers, 1, tree_width(servers))[0]
    rebuild(values, fresh)
    P, blocks, masks = tree_leaves(servers), -(-servers // BLOCK), tree[4]
    assert (tree[NODES:masks] == fresh[NODES:masks]).all()  # every node's (min, count)
    assert (tree[masks:masks + blocks] == fresh[masks:masks + blocks]).all()  # the minimisers
    assert FAN ** tree_depth(tree) == P >= blocks == tree[5]


def test_every_number_of_servers_from_64_keeps_a_tree():
    """A dispatcher's tree row fits in its N entries for every N ≥ TREE_MIN_SERVERS (with a
    mask and a dirty entry for each padding leaf too, N = 65 or 4097 … 4779 needed more
    than N, and L-JSQ fell back to its scan of N a choice)."""
    servers = np.arange(TREE_MIN_SERVERS, 400_000)
    assert all(uses_tree(int(n), int(n)) for n in servers)
    assert not uses_tree(TREE_MIN_SERVERS - 1, TREE_MIN_SERVERS - 1)


@pytest.mark.parametrize("servers", [64, 65, 100, 129, 1000, 1024, 4097, 4779, 10_000,
                                     100_000])
def test_a_new_tree_row_is_the_rebuild_of_zero_estimates(servers):
    """new_tree_rows makes its inner nodes in NumPy, level by level (nothing compiled): the
    row is exactly what rebuild makes from Q̃^m(0) = 0, partial last blocks and padding
    leaves included."""
    width = tree_width(servers)
    rows = new_tree_rows(servers, 2, width)
    fresh = rows[0].copy()
    rebuild(np.zeros(servers, np.int64), fresh)
    assert (rows[0] == fresh).all() and (rows[1] == fresh).all()
    assert (tree_min(fresh), tree_ties(fresh)) == (0, servers)


@njit(cache=True)
def _jba_counts(estimates, mu, table, draws, rng):
    by_sum = np.zeros(estimates.size, np.int64)
    by_scan = np.zeros(estimates.size, np.int64)
    total = estimates.sum()
    for _ in range(draws):
        by_sum[l_jba_pick_by_sum(estimates, total, mu, table, rng)] += 1
        by_scan[l_jba_pick(estimates, mu, rng, False)] += 1
    return by_sum, by_scan


JBA_STATES = [
    # a typical state: about half the servers below the mean
    ([3, 0, 5, 2, 7, 1, 4, 4, 9, 0], [0.2] * 5 + [0.6] * 5),
    # B = one slow server (μ-share 0.2/18.2): the rejection loop mostly falls back to the scan
    ([0] + [5] * 30, [0.2] + [0.6] * 30),
    # B empty (all equal): JBA_TRIES misses, then L-JSQ's uniform tie
    ([4] * 6, [0.2, 0.2, 0.2, 0.6, 0.6, 0.6]),
    # all 0 (nothing learnt yet): B empty, the uniform tie at once
    ([0] * 6, [0.2, 0.2, 0.2, 0.6, 0.6, 0.6]),
    # N·Q̃_n = Σ Q̃ exactly for n = 1 (on the average, not below it)
    ([0, 2, 4, 2], [1.0, 0.5, 0.25, 0.25]),
]


@pytest.mark.parametrize("values, rates", JBA_STATES)
def test_jba_by_sum_has_the_exact_law(values, rates):
    """χ² of both L-JBA picks (rejection sampling with the kept sum, and the scan) against
    the exact law of docs/model.md#led-strategies (JBAStrategy.exact_probabilities)."""
    estimates = np.array(values, np.int64)
    mu = np.array(rates)
    order = np.argsort(estimates, kind="stable")
    exact = builtin_strategy("jba").exact_probabilities(estimates, mu, order)
    if (estimates == estimates[0]).all():  # the fallback σ(1) is uniform over the ties
        exact = np.full(mu.size, 1.0 / mu.size)
    draws = 60_000
    for counts in _jba_counts(estimates, mu, alias_table(mu), draws, make_rng_state(17)):
        expected = draws * exact
        assert counts[expected == 0].sum() == 0
        live = expected > 0
        if live.sum() > 1:
            chi2 = float((((counts - expected) ** 2)[live] / expected[live]).sum())
            assert stats.chi2.sf(chi2, df=live.sum() - 1) > 1e-4


@njit(cache=True)
def _kept_sum(writes, n_servers):
    values = np.zeros(n_servers, np.int64)
    cell = np.zeros(1, np.int64)
    for k in range(writes.shape[0]):
        write_estimate(values, cell, INDEX_SUM, writes[k, 0], writes[k, 1])
    return cell[0], values.sum()


def test_jba_sum_follows_every_write():
    generator = np.random.default_rng(3)
    writes = np.column_stack([generator.integers(0, 50, 5_000),
                              generator.integers(0, 1_000, 5_000)]).astype(np.int64)
    kept, actual = _kept_sum(writes, 50)
    assert kept == actual


@pytest.mark.parametrize("dispatchers", [1, pytest.param(4, marks=pytest.mark.slow)])
def test_jba_plain_and_weighted_runs_agree_with_the_scan_statistically(dispatchers):
    """Same law, different draws: the plain L-JBA (kept sum) against the plug-in l_jba
    (scan), whose runs agree in mean ΣQ within their confidence intervals."""
    system = System.build("10x0.2,10x0.6", load=0.9, dispatchers=dispatchers)
    fast = simulate(system, LEDPolicy(strategy="jba", update="pull", p=0.2), slots=20_000,
                    seed=2, replications=4, delay="off")
    scan = simulate(system, LEDPolicy(strategy=l_jba, strategy_params=(0.0,), update="pull",
                                      p=0.2), slots=20_000, seed=3, replications=4,
                    delay="off")
    assert fast.ci_low <= scan.ci_high and scan.ci_low <= fast.ci_high


@njit(cache=True)
def _pod_pairs_peeked_and_drawn(rng, n, choices):
    """``choices`` L-Pod choices in a row: the pairs :func:`pod_pair` peeks from a copy of
    the state, and those Floyd's sampler draws (then the tie-break draw) from the stream,
    with the state left by shorter_of_two on a third copy."""
    peeked = np.zeros((choices, 2), np.int64)
    drawn = np.zeros((choices, 2), np.int64)
    s0, s1, s2, s3 = rng[0], rng[1], rng[2], rng[3]
    compared = rng.copy()
    table = np.zeros((1, 2), np.int64)
    values = np.zeros(n, np.int64)
    for c in range(choices):
        first, second, s0, s1, s2, s3 = pod_pair(s0, s1, s2, s3, np.uint64(n))
        # (entry by entry: a row assignment compiles numba's shape-mismatch error, ~6 s)
        peeked[c, 0], peeked[c, 1] = first, second
        sample_distinct_row(rng, n, 2, table, 0)
        randint(rng, 2)
        drawn[c, 0], drawn[c, 1] = table[0, 0], table[0, 1]
        shorter_of_two(values, compared)
    return peeked, drawn, np.array([s0, s1, s2, s3]), compared


@pytest.mark.parametrize("servers", [2, 3, 10, 10_000])
def test_pod_lookahead_peeks_the_next_choices_pairs(servers):
    """The pairs an L-Pod choice prefetches for the next dispatchers are the pairs they
    compare: Floyd's draw (shorter_of_two's), and the state after each peeked choice is the
    state shorter_of_two leaves."""
    rng = make_rng_state(5)
    peeked, drawn, state, compared = _pod_pairs_peeked_and_drawn(rng, servers, 500)
    assert (peeked == drawn).all()
    assert (state == compared).all() and (state == rng).all()
    assert (peeked[:, 0] != peeked[:, 1]).all()


@njit(cache=True)
def _alias_peeked_and_drawn(rng, table, draws):
    peeked = np.zeros(draws, np.int64)
    drawn = np.zeros(draws, np.int64)
    s0, s1, s2, s3 = rng[0], rng[1], rng[2], rng[3]
    for i in range(draws):
        peeked[i], s0, s1, s2, s3 = alias_step(s0, s1, s2, s3, table)
        drawn[i] = alias_draw(rng, table)
    return peeked, drawn, np.array([s0, s1, s2, s3])


def test_jba_lookahead_peeks_the_next_alias_draws():
    """The servers an L-JBA choice prefetches for the next dispatcher are its next alias
    draws, and peeking leaves the state where the draws leave it."""
    rng = make_rng_state(9)
    table = alias_table(np.array([0.2] * 7 + [0.6] * 5 + [1.3]))
    peeked, drawn, state = _alias_peeked_and_drawn(rng, table, 2_000)
    assert (peeked == drawn).all() and (state == rng).all()
    assert len(set(drawn.tolist())) == 13


@pytest.mark.parametrize("strategy, options, servers, choose", [
    ("pod", {"pod_d": 2}, 20, "_pod2_choose"),
    ("pod", {"pod_d": 2}, 20_000, "_pod_choose"),  # M·N = 80 000: the look-ahead
    ("pod", {"pod_d": 2}, 2, "_pod_choose"),  # d = N: every server
    ("pod", {"pod_d": 3, "update": "pull"}, 20, "_pod_choose"),
    ("pod", {"pod_d": 1, "trigger": "arrival"}, 20, "_pod_choose"),
    ("pod", {"pod_d": 2, "increment": True}, 20, "_pod_written_choose"),
    ("pod", {"pod_d": 2, "learn_on_send": True}, 20, "_pod_written_choose"),
    ("jsq", {"update": "pull"}, 200, "_blocks_choose"),
    ("jsq", {"update": "pull"}, 20, "_jsq_scan_choose"),  # N < 64: the scan
    ("jsq", {"update": "pull", "increment": True}, 200, "_jsq_written_choose"),
    ("jsq", {"update": "pull", "increment": True}, 20, "_jsq_written_choose"),
    ("jsq", {"update": "push"}, 200, "_tree_choose"),
    ("jsq", {"update": "push"}, 20, "_jsq_scan_choose"),  # N < 64: the scan
    ("jsq", {"update": "push", "increment": True}, 200, "_lsq_tree_choose"),
    ("jsq", {"update": "push", "learn_on_send": True}, 200, "_lsq_tree_choose"),
    ("jba", {}, 20, "_jba_choose"),  # the plain average from the sum
    ("jba", {"jba_average": "weighted"}, 20, "_jba_choose"),  # the scan
    ("jba", {"increment": True}, 20, "_jba_written_choose"),
    ("jba", {"jba_average": "weighted", "learn_on_send": True}, 20, "_jba_written_choose"),
])
@pytest.mark.parametrize("dispatch", ["batch", "per_job"])
def test_specialised_choose_draws_like_the_plugin(strategy, options, servers, choose,
                                                  dispatch):
    """Each configuration runs a ``choose`` of its own (one strategy on one index, the LSQ
    write at dispatch or not; L-Pod with d = 2 on estimates in cache, nothing but the
    pair); each consumes the plug-in rule's random numbers (l_pod, l_jba, l_jsq's scan)
    and writes as it does: identical trajectories, diagnostics and messages."""
    from dispatchlab.policies.led import choose as led_choose

    system = System.build(f"{servers}x0.3", load=0.9, dispatchers=4, dispatch=dispatch)
    builtin = LEDPolicy(strategy=strategy, p=0.2, **options)
    assert builtin.kernel(system).choose is getattr(led_choose, choose)
    if strategy == "jba" and options.get("jba_average") != "weighted":
        return  # the kept sum draws by alias tables, not as the scan: same law, other draws
    rules = {"pod": (l_pod, (options.get("pod_d"),)), "jsq": (l_jsq, ()),
             "jba": (l_jba, (float(JBA_WEIGHTED),))}
    rule = rules[strategy]
    plugin = LEDPolicy(strategy=rule[0], strategy_params=rule[1], p=0.2,
                       **{k: v for k, v in options.items() if k not in ("pod_d", "jba_average")})
    assert_same_runs(system, builtin, plugin, slots=3_000 if servers < 1000 else 100, seed=4)


@njit(cache=True)
def _group_and_single_walks(table, first_tree, count, work, rng):
    """Server pairs (group_select's, tree_select's) for random ranks on ``count`` trees."""
    out = np.zeros((count, 2), np.int64)
    for k in range(count):
        work[count + k] = randint(rng, tree_ties(table[first_tree + k]))
    for k in range(count):
        out[k, 1] = tree_select(table[k], table[first_tree + k], work[count + k], False)
    group_select(table, first_tree, count, work, 0, True, 0)
    for k in range(count):
        out[k, 0] = work[k]
    return out


@pytest.mark.parametrize("servers, levels", [(64, 2), (1000, 2), (4097, 3), (10_000, 40)])
def test_group_walk_picks_like_single_walks(servers, levels):
    """The lockstep walk of several trees ends where each tree's own walk does."""
    count = 6
    generator = np.random.default_rng(servers)
    table = np.zeros((2 * count + 1, servers), np.int64)
    table[count:2 * count] = new_tree_rows(servers, count, servers)
    for k in range(count):
        table[k] = generator.integers(0, levels, servers)
        rebuild(table[k], table[count + k])
    rng = make_rng_state(4)
    for _ in range(50):
        picks = _group_and_single_walks(table, count, count, table[2 * count], rng)
        assert (picks[:, 0] == picks[:, 1]).all()


@pytest.mark.parametrize("policy, params, load", [
    ("l-jsq-push", {}, 0.9),
    ("l-jsq-push", {"p": 0.5, "d": 7}, 0.02),  # few jobs: dispatchers without any between
    ("lsq", {}, 0.9),
    ("lsq", {"learn_on_send": True}, 0.5),
])
def test_look_ahead_draws_like_the_scan(policy, params, load):
    """With M·N large enough (choices made a group of dispatchers at a time, ahead.py) the
    built-in L-JSQ still consumes the scan's random numbers: identical trajectories."""
    system = System.build("5000x0.2,5000x0.6", load=load, dispatchers=48)
    options = {"increment": policy == "lsq", "update": "push", **params}
    assert looks_ahead(LEDPolicy(strategy="jsq", **options).kernel(system).memory(), 10_000)
    assert_same_runs(system, LEDPolicy(strategy="jsq", **options),
                     LEDPolicy(strategy=l_jsq, **options), slots=200, seed=3)
