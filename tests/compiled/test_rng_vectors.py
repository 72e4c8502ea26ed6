"""Known answers of the random-number core (``dispatchlab.compiled.rng``).

The compiled generators are checked two ways:

(a) against an independent pure-Python implementation (``tests/naive.py``) written from
    the published algorithms: xoshiro256++ and SplitMix64 (Blackman & Vigna, "Scrambled
    linear pseudorandom number generators", and their reference C code),
    SplittableRandom's ``mixGamma`` (Steele, Lea & Flood, "Fast splittable pseudorandom
    number generators"), NumPy's ``SeedSequence`` (O'Neill's ``seed_seq_fe`` hash as NumPy
    implements it), and the samplers as ``compiled/rng.py`` documents them (53-bit
    uniform, Lemire's multiply-shift, inversion and Hörmann's PTRS for Poisson, …); the
    Python reference itself is first pinned to the outputs the algorithms' authors
    publish;
(b) against committed vectors: the first outputs for fixed seeds, written below as
    literals. A change that alters them changes every simulation's draws: the fingerprint
    (``tests/simulation/test_fingerprint.py``) changes with it, and both are rewritten on purpose.
"""

from __future__ import annotations

import numpy as np
import pytest

from dispatchlab.compiled import rng
from naive import (
    GOLDEN_GAMMA,
    MASK64,
    Xoshiro256PlusPlus,
    mix_gamma,
    reference_exogenous_stream,
    reference_rng_state,
    reference_service_stream,
    seed_sequence_words,
    splitmix64_outputs,
)


def compiled_state(words) -> np.ndarray:
    return np.array([int(w) for w in words], np.uint64)


# -- (a0) the reference reproduces the published outputs ---------------------------------------


def test_the_reference_gives_the_published_outputs() -> None:
    # xoshiro256++ from the state {1, 2, 3, 4}: the reference C code's first outputs (also
    # the test vector of rand_xoshiro's Xoshiro256PlusPlus)
    x = Xoshiro256PlusPlus([1, 2, 3, 4])
    assert [x.next() for _ in range(10)] == [
        41943041, 58720359, 3588806011781223, 3591011842654386, 9228616714210784205,
        9973669472204895162, 14011001112246962877, 12406186145184390807,
        15849039046786891736, 10450023813501588000,
    ]
    # SplitMix64 seeded with 0: the reference splitmix64.c's first outputs
    assert splitmix64_outputs(0, 3) == [0xE220A8397B1DCDAF, 0x6E789E6AA1B965F4,
                                        0x06C45D188009454F]


@pytest.mark.parametrize("entropy, spawn_key", [
    (0, ()), (1, ()), (7, ()), (2026, ()), (2**64 + 3, ()), (2**200 - 1, ()),
    (2026, (2,)), (12345, (0, 7)), (5, (2**40,)),
])
def test_the_seed_sequence_reference_agrees_with_numpy(entropy, spawn_key) -> None:
    numpy_words = np.random.SeedSequence(entropy, spawn_key=spawn_key).generate_state(
        6, np.uint64)
    assert [int(w) for w in numpy_words] == seed_sequence_words(entropy, spawn_key, 6)


# -- (a) the compiled code against the reference --------------------------------------------


SEEDS = (0, 1, 7, 2026, 2**63 + 1)


@pytest.mark.parametrize("seed", SEEDS)
def test_the_seeding_is_the_seed_sequence(seed: int) -> None:
    assert [int(w) for w in rng.make_rng_state(seed)] == reference_rng_state(seed)
    assert [int(w) for w in rng.make_service_stream(seed)] == reference_service_stream(seed)
    assert [int(w) for w in rng.make_exogenous_stream(seed)] == reference_exogenous_stream(seed)
    # a spawned child (the replications' seeds) seeds both streams the same way
    child = np.random.SeedSequence(seed).spawn(3)[2]
    assert [int(w) for w in rng.make_rng_state(child)] == reference_rng_state(seed, (2,))
    assert [int(w) for w in rng.make_service_stream(child)] == reference_service_stream(
        seed, (2,))
    assert [int(w) for w in rng.make_exogenous_stream(child)] == reference_exogenous_stream(
        seed, (2,))


def test_the_service_increment_is_mix_gamma() -> None:
    # both branches of mixGamma: most words, and the ones whose finalised value has
    # fewer than 24 bit transitions (flipped in alternate bits)
    flipped = 0
    for word in [*range(2000), 0x5555555555555555, MASK64, 0x0123456789ABCDEF]:
        gamma = rng._mix_gamma(word)
        assert gamma == mix_gamma(word)
        assert gamma & 1
        finalised = _finalised(word) | 1
        flipped += gamma != finalised
        assert gamma == finalised or bin(finalised ^ (finalised >> 1)).count("1") < 24
    assert flipped > 0


def _finalised(z: int) -> int:
    z = ((z ^ (z >> 33)) * 0xFF51AFD7ED558CCD) & MASK64
    z = ((z ^ (z >> 33)) * 0xC4CEB9FE1A85EC53) & MASK64
    return z ^ (z >> 33)


@pytest.mark.parametrize("start", [[1, 2, 3, 4], "seed:0", "seed:2026", [MASK64] * 4])
def test_xoshiro_steps_match_the_reference(start) -> None:
    words = (reference_rng_state(int(start[5:])) if isinstance(start, str) else start)
    reference = Xoshiro256PlusPlus(words)
    state = compiled_state(words)
    registers = tuple(np.uint64(w) for w in words)
    for _ in range(1000):
        expected = reference.next()
        assert int(rng.next_u64(state)) == expected
        bits, *registers = rng.xoshiro_step(*registers)
        registers = [np.uint64(w) for w in registers]  # (returned as Python ints)
        assert int(bits) == expected
    assert [int(w) for w in state] == reference.s == [int(w) for w in registers]


def test_the_service_stream_matches_splitmix64() -> None:
    # the k-th output of the stream (start, γ) is mix(start + k·γ): the reference
    # generator seeded with start and incremented by γ
    for seed in (0, 2026):
        start, gamma = (int(w) for w in rng.make_service_stream(seed))
        expected = splitmix64_outputs(start, 64, gamma)
        found = [int(rng.splitmix64(np.uint64((start + k * gamma) & MASK64)))
                 for k in range(1, 65)]
        assert found == expected
    assert [int(rng.splitmix64(np.uint64((k * GOLDEN_GAMMA) & MASK64))) for k in (1, 2, 3)] \
        == splitmix64_outputs(0, 3)


def test_bernoulli_service_thresholds_are_the_uniform_compare() -> None:
    # the loop serves server n when (bits >> 11) < ⌈μ_n·2⁵³⌉, which must be uniform < μ_n:
    # on the service stream's outputs and on the 53-bit values at each threshold's edge
    mu = np.array([0.0, 2.0**-53, 0.1, 0.25, 0.5, 1 / 3, 0.9, 1.0 - 2.0**-53, 1.0])
    thresholds = [int(t) for t in rng.bernoulli_thresholds(mu)]
    start, gamma = (int(w) for w in rng.make_service_stream(11))
    values = [bits >> 11 for bits in splitmix64_outputs(start, 2000, gamma)]
    values += [v for t in thresholds for v in (t - 1, t, t + 1) if 0 <= v < 2**53]
    for value in values:
        for p, threshold in zip(mu, thresholds, strict=True):
            assert (value < threshold) == (value * 2.0**-53 < p)


@pytest.mark.parametrize("seed", [3, 2026])
def test_the_samplers_match_the_reference(seed: int) -> None:
    words = reference_rng_state(seed)
    reference = Xoshiro256PlusPlus(words)
    state = compiled_state(words)
    for _ in range(200):
        assert rng.uniform(state) == reference.uniform()
    for n in (1, 2, 3, 10, 100, 12345, 2**31 - 1, 2**32 - 1):
        for _ in range(20):
            assert rng.randint(state, n) == reference.randint(n)
    for p in (0.0, 0.1, 0.5, 0.9, 1.0):
        for _ in range(50):
            assert rng.bernoulli(state, p) == reference.bernoulli(p)
    for lam in (0.0, 0.05, 0.5, 3.0, 9.99, 10.0, 36.0, 590.0, 650.0, 1e5):
        for _ in range(50):
            assert rng.poisson(state, lam) == reference.poisson(lam)
    for mean in (0.0, 0.1, 1.0, 9.0):
        for _ in range(50):
            assert rng.geometric0(state, mean) == reference.geometric0(mean)
    for trials, p in ((1, 0.5), (10, 0.3), (40, 0.9), (1000, 0.2), (500, 0.95), (7, 1.0)):
        for _ in range(30):
            assert rng.binomial(state, trials, p) == reference.binomial(trials, p)
    assert [int(w) for w in state] == reference.s  # the same number of draws in all


# -- (b) committed vectors ------------------------------------------------------------------------

#: make_rng_state(seed) and its first four xoshiro256++ outputs
XOSHIRO_VECTORS = {
    0: ([0xDB2CD7E7B0F478BE, 0xABF4641A2C71BA49, 0x20C6ED6D9D7B8D41, 0x2C4099DE223C39D4],
        [0xBE167040F9F82F76, 0xE9C7636234C08110, 0xE6652A49B34A983C, 0x0D1E90DC33800343]),
    1: ([0x672D8EE56D6791FF, 0x8AE19CA14EB1072C, 0x4915796D1322FC4A, 0xD0CC2BDCABA049BD],
        [0xC83A12D34B838EDC, 0xAC1FECE690AA48A0, 0x7AC6B7411A8272CA, 0x920B4F59A246018B]),
    2026: ([0x838E72EAA293040D, 0x59BF224C1E488BA7, 0x5F633C176582396C, 0x6EBB35E84C2A4205],
           [0xED05D18DAC0C28E1, 0xCC44587AEE78AD05, 0xBF24A2ADF8652FFA, 0xCADE61C28F6BDC60]),
}
#: make_service_stream(seed) = (start, γ) and its first three outputs mix(start + k·γ)
SERVICE_VECTORS = {
    0: ([0x08FED0759AD485FE, 0xF53D86EA35E7E7A5],
        [0xD57B2AE5113F6125, 0x1AB2E19899070524, 0x18D9469D8DED8742]),
    1: ([0xBA254E0D6E408E78, 0x4C0BC5F61D35C5D5],
        [0x5A9A6D3D7B23F443, 0x36C2898DBE3A3237, 0x677FB54722BB7BF7]),
    2026: ([0xC47954FDBC5A78A4, 0x680715646B03A65B],
           [0xF0C9B48EB78BF61E, 0xB2DF99745F9DE30B, 0x74390C70D588D9FD]),
}
#: make_exogenous_stream(seed): the xoshiro256++ state of the arrivals and the other
#: service laws (SeedSequence words 6–9)
EXOGENOUS_VECTORS = {
    0: [0x25D64E3D88E3BDF9, 0x622CA2921FCCE344, 0x2768C1A344194613, 0x126153CFE78418FC],
    1: [0x95D022889E512359, 0x257904C9F09BC986, 0x9095E59D14DB7603, 0x192B09ABEB3B52A6],
    2026: [0xD3499BDD60FE35B0, 0x0B7FC82C6A89D226, 0xBEF0C554660C2C52, 0x12B73DC42581096E],
}
#: SeedSequence(2026).spawn(3)[2]: the xoshiro state, the service stream and the
#: exogenous stream
CHILD_VECTORS = (
    [0x2F6760D46C67F034, 0x4A9B215BAABC0156, 0xBED791A4B9690D9A, 0x6DAB4F3B1F124B48],
    [0x5D8FF1FC290AE459, 0xDDD5EC303656CF3D],
    [0x17E333D0E3C30E30, 0xDCE67BD68CC7D97D, 0x60354106A4DDF28E, 0x99C0C2C06A446B6E],
)


@pytest.mark.parametrize("seed", sorted(XOSHIRO_VECTORS))
def test_the_committed_xoshiro_vectors(seed: int) -> None:
    words, outputs = XOSHIRO_VECTORS[seed]
    state = rng.make_rng_state(seed)
    assert [int(w) for w in state] == words == reference_rng_state(seed)
    assert [int(rng.next_u64(state)) for _ in outputs] == outputs
    reference = Xoshiro256PlusPlus(words)
    assert [reference.next() for _ in outputs] == outputs


@pytest.mark.parametrize("seed", sorted(SERVICE_VECTORS))
def test_the_committed_service_vectors(seed: int) -> None:
    words, outputs = SERVICE_VECTORS[seed]
    assert [int(w) for w in rng.make_service_stream(seed)] == words
    start, gamma = words
    assert [int(rng.splitmix64(np.uint64((start + k * gamma) & MASK64))) for k in (1, 2, 3)] \
        == outputs == splitmix64_outputs(start, 3, gamma)


@pytest.mark.parametrize("seed", sorted(EXOGENOUS_VECTORS))
def test_the_committed_exogenous_vectors(seed: int) -> None:
    # words 6–9: the policy stream (0–3) and the service stream (4–5) are unchanged by it
    words = EXOGENOUS_VECTORS[seed]
    assert [int(w) for w in rng.make_exogenous_stream(seed)] == words
    assert words == reference_exogenous_stream(seed)
    assert [int(w) for w in rng.make_rng_state(seed)] == XOSHIRO_VECTORS[seed][0]


def test_the_committed_child_vectors() -> None:
    child = np.random.SeedSequence(2026).spawn(3)[2]
    assert [int(w) for w in rng.make_rng_state(child)] == CHILD_VECTORS[0]
    assert [int(w) for w in rng.make_service_stream(child)] == CHILD_VECTORS[1]
    assert [int(w) for w in rng.make_exogenous_stream(child)] == CHILD_VECTORS[2]


def test_the_committed_sampler_vectors() -> None:
    # one stream from make_rng_state(5), drawn in this order by every sampler
    state = rng.make_rng_state(5)
    reference = Xoshiro256PlusPlus([int(w) for w in state])
    uniforms = [0.8616911768985321, 0.6604342403295345, 0.2881348651372294]
    assert [rng.uniform(state) for _ in uniforms] == uniforms
    assert [reference.uniform() for _ in uniforms] == uniforms
    bounds, integers = (1, 2, 3, 10, 100, 2**31 + 11), [0, 0, 2, 3, 53, 650270092]
    assert [rng.randint(state, n) for n in bounds] == integers
    assert [reference.randint(n) for n in bounds] == integers
    flips = [1, 0, 1, 0, 1, 0, 0, 1, 0, 0, 1, 1]
    assert [rng.bernoulli(state, 0.3) for _ in flips] == flips
    assert [reference.bernoulli(0.3) for _ in flips] == flips
    rates, counts = (0.0, 0.5, 3.0, 9.5, 10.0, 36.0, 650.0), [0, 1, 3, 3, 10, 37, 648]
    assert [rng.poisson(state, lam) for lam in rates] == counts
    assert [reference.poisson(lam) for lam in rates] == counts
    assert int(rng.next_u64(state)) == reference.next() == 9640099234725503416
