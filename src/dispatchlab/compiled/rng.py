"""The random-number core of the compiled engine.

A run draws from four streams, all seeded from one :class:`numpy.random.SeedSequence`,
so that the exogenous draws (the arrivals A^m(t) and the service S_n(t)) are the same for
every policy run with one seed (common random numbers: a paired comparison of two
policies sees the same A(t) and S_n(t)):

* the *policy stream*, xoshiro256++, for the policies' choices and updates alone. Its
  state is a ``uint64[4]`` array passed to every compiled function; policies call these
  helpers from their own compiled code.
* the *exogenous stream*, xoshiro256++ (:func:`make_exogenous_stream`), for the arrivals
  (A_Σ(t) and its split A^m(t)) and the service laws other than Bernoulli. Its draws
  depend on the model alone, never on the queues or the policy.
* the *tag stream*, xoshiro256++ (:func:`make_tag_stream`), for the choice of the tagged
  jobs whose delays are followed (``delay="tagged"``); no other draw comes from it.
* the *service stream*, SplitMix64 (Steele, Lea & Flood 2014, the generator of Java's
  ``SplittableRandom``) for the Bernoulli service draws S_n(t), one per server and slot.
  Its k-th output is a function of k alone, mix(start + k·γ), so the N draws of a slot
  are computed side by side in vector registers instead of one after another (a xoshiro
  step depends on the one before: ~1 ns per server and slot). Its state is
  ``uint64[2]`` = (start, γ), with an odd increment γ drawn per seed (so that different
  seeds give different sequences, not shifts of one) by SplittableRandom's rule.

The same seed therefore gives the same trajectory bit for bit, whatever process,
executor or worker runs it, and independent replications use spawned child sequences.
"""

from __future__ import annotations

import math

import numpy as np
from numba import njit, types
from numba.extending import intrinsic

from dispatchlab.core.errors import require

INV_2_53 = 1.0 / 9007199254740992.0  # 2⁻⁵³


def _seed_words(seed: int | np.random.SeedSequence, count: int) -> np.ndarray:
    """The first ``count`` 64-bit words of ``seed``'s SeedSequence (a prefix of any longer
    request: the policy stream is words 0–3, the service stream words 4–5, the exogenous
    stream words 6–9, the tag stream words 10–13)."""
    if not isinstance(seed, np.random.SeedSequence):
        require(isinstance(seed, int | np.integer) and not isinstance(seed, bool) and seed >= 0,
                "seed", f"must be an integer ≥ 0 (got {seed!r})")
    sequence = seed if isinstance(seed, np.random.SeedSequence) else np.random.SeedSequence(seed)
    return sequence.generate_state(count, np.uint64)


def make_rng_state(seed: int | np.random.SeedSequence) -> np.ndarray:
    """Return a fresh xoshiro256++ state derived from ``seed`` (words 0–3 of its
    SeedSequence): a run's policy stream."""
    state = _seed_words(seed, 4)
    if not state.any():  # the all-zero state is the one forbidden state
        state[0] = np.uint64(1)
    return state


def make_exogenous_stream(seed: int | np.random.SeedSequence) -> np.ndarray:
    """Return a run's exogenous stream, the xoshiro256++ state of words 6–9 of ``seed``'s
    SeedSequence: the arrivals A^m(t) and the non-Bernoulli service S_n(t) draw from it,
    and nothing else, so two policies run with one seed see the same A(t) and S_n(t)."""
    state = _seed_words(seed, 10)[6:].copy()
    if not state.any():
        state[0] = np.uint64(1)
    return state


def make_tag_stream(seed: int | np.random.SeedSequence) -> np.ndarray:
    """Return a run's tag stream, the xoshiro256++ state of words 10–13 of ``seed``'s
    SeedSequence: the geometric gaps between tagged jobs (``delay="tagged"``,
    docs/statistics.md#tagged-delays) draw from it and nothing else, so tagging changes no
    other draw (the other streams are prefixes of the same request)."""
    state = _seed_words(seed, 14)[10:].copy()
    if not state.any():
        state[0] = np.uint64(1)
    return state


_MASK_64 = (1 << 64) - 1


def _mix_gamma(word: int) -> int:
    """An odd SplitMix64 increment γ from a random word, by ``SplittableRandom.mixGamma``:
    MurmurHash3's finaliser, forced odd, and flipped in alternate bits when it has fewer
    than 24 bit transitions (such increments make weak sequences)."""
    z = ((word ^ (word >> 33)) * 0xFF51AFD7ED558CCD) & _MASK_64
    z = ((z ^ (z >> 33)) * 0xC4CEB9FE1A85EC53) & _MASK_64
    z = (z ^ (z >> 33)) | 1
    if bin(z ^ (z >> 1)).count("1") < 24:
        z ^= 0xAAAAAAAAAAAAAAAA
    return z


def make_service_stream(seed: int | np.random.SeedSequence) -> np.ndarray:
    """Return a fresh service stream (start, γ) derived from ``seed`` (see the module
    docstring): the two words after the xoshiro state in the same SeedSequence."""
    words = _seed_words(seed, 6)
    return np.array([int(words[4]), _mix_gamma(int(words[5]))], np.uint64)


@njit(inline="always", cache=True)
def splitmix64(z):
    """SplitMix64's output function (Stafford's Mix13) of the counter value ``z``."""
    z = (z ^ (z >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
    z = (z ^ (z >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
    return z ^ (z >> np.uint64(31))


@intrinsic
def select_unpredictable(typingctx, condition, if_true, if_false):
    """``if_true if condition else if_false`` as an LLVM ``select`` marked ``!unpredictable``.

    For compares on random data inside loops (binary search, argmin): LLVM's x86 backend
    otherwise turns such selects back into branches, which then mispredict about half the
    time (28 ns → 5 ns per weighted draw over 100 servers)."""
    if if_true != if_false or not isinstance(condition, types.Boolean):
        return None
    signature = if_true(condition, if_true, if_false)

    def codegen(context, builder, sig, args):
        chosen = builder.select(*args)
        chosen.set_metadata("unpredictable", builder.module.add_metadata([]))
        return chosen

    return signature, codegen


@njit(inline="always", cache=True)
def _rotl(x, k):
    return (x << np.uint64(k)) | (x >> np.uint64(64 - k))


@njit(inline="always", cache=True)
def next_u64(s):
    """Next 64 random bits (xoshiro256++)."""
    result = _rotl(s[0] + s[3], 23) + s[0]
    t = s[1] << np.uint64(17)
    s[2] ^= s[0]
    s[3] ^= s[1]
    s[1] ^= s[2]
    s[0] ^= s[3]
    s[2] ^= t
    s[3] = _rotl(s[3], 45)
    return result


@njit(inline="always", cache=True)
def xoshiro_step(s0, s1, s2, s3):
    """One xoshiro256++ step on a state held in local variables: (bits, s0, s1, s2, s3).

    The same stream as :func:`next_u64`; a hot loop loads the state before, steps it in
    registers and stores it after (an array state is reloaded and stored on every draw,
    because the compiler cannot prove it does not alias the loop's other arrays)."""
    result = _rotl(s0 + s3, 23) + s0
    t = s1 << np.uint64(17)
    s2 ^= s0
    s3 ^= s1
    s1 ^= s2
    s0 ^= s3
    s2 ^= t
    s3 = _rotl(s3, 45)
    return result, s0, s1, s2, s3


def bernoulli_thresholds(mu: np.ndarray) -> np.ndarray:
    """Integer thresholds for Bernoulli(μ_n) draws from 53 random bits: ``(bits >> 11) <
    it`` holds exactly when ``uniform(s) < μ_n`` would (k·2⁻⁵³ < p ⇔ k < ⌈p·2⁵³⌉ for
    integer k; p·2⁵³ and its ceiling are exact in doubles). μ is clipped to [0, 1], NaN
    reads 0."""
    p = np.clip(np.nan_to_num(np.asarray(mu, np.float64), nan=0.0), 0.0, 1.0)
    return np.ceil(p * 9007199254740992.0).astype(np.uint64)


@njit(inline="always", cache=True)
def uniform(s):
    """A double uniform on [0, 1)."""
    return np.float64(next_u64(s) >> np.uint64(11)) * INV_2_53


@njit(inline="always", cache=True)
def randint(s, n):
    """An integer uniform on {0, …, n−1}, for 1 ≤ n < 2**32 (Lemire's multiply-shift)."""
    return randint_of_bits(next_u64(s), n)


@njit(inline="always", cache=True)
def randint_of_bits(bits, n):
    """:func:`randint`'s value from the draw's 64 random bits (for a caller that steps a
    copy of the state with :func:`xoshiro_step`)."""
    return np.int64(((bits >> np.uint64(32)) * np.uint64(n)) >> np.uint64(32))


@njit(inline="always", cache=True)
def bernoulli(s, p):
    """A Bernoulli(p) draw: 1 with probability p, else 0."""
    return 1 if uniform(s) < p else 0


POISSON_INVERSION_LIMIT = 10.0


@njit(inline="always", cache=True)
def poisson_inversion(s, limit):
    """Poisson(λ) by multiplication of uniforms, given ``limit`` = exp(−λ) (small λ)."""
    k = 0
    p = uniform(s)
    while p > limit:
        p *= uniform(s)
        k += 1
    return k


#: what PTRS needs of λ besides uniforms (see :func:`ptrs_constants`)
PTRS_CONSTANTS = 6


@njit(inline="always", cache=True)
def ptrs_constants(lam):
    """(log λ, b, a, 1/α, v_r, log(1/α)): PTRS's set-up for λ ≥ 10, computed once per
    λ by callers that draw from one λ many times (:func:`poisson_ptrs`)."""
    b = 0.931 + 2.53 * math.sqrt(lam)
    invalpha = 1.1239 + 1.1328 / (b - 3.4)
    return (math.log(lam), b, -0.059 + 0.02483 * b, invalpha,
            0.9277 - 3.6224 / (b - 2.0), math.log(invalpha))


@njit(cache=True)
def poisson_ptrs(s, lam, loglam, b, a, invalpha, vr, log_invalpha):
    """Poisson(λ) by Hörmann's transformed rejection with squeeze (PTRS), λ ≥ 10, given
    :func:`ptrs_constants` (λ)."""
    while True:
        u = uniform(s) - 0.5
        v = uniform(s)
        us = 0.5 - abs(u)
        k = math.floor((2.0 * a / us + b) * u + lam + 0.43)
        if us >= 0.07 and v <= vr:
            return np.int64(k)
        if k < 0 or (us < 0.013 and v > us):
            continue
        if math.log(v) + log_invalpha - math.log(a / (us * us) + b) <= (
            -lam + k * loglam - math.lgamma(k + 1.0)
        ):
            return np.int64(k)


@njit(cache=True)
def poisson(s, lam):
    """Poisson(λ): inversion by multiplication below λ = 10, Hörmann's PTRS above."""
    if lam <= 0.0:
        return 0
    if lam < POISSON_INVERSION_LIMIT:
        return poisson_inversion(s, math.exp(-lam))
    loglam, b, a, invalpha, vr, log_invalpha = ptrs_constants(lam)
    return poisson_ptrs(s, lam, loglam, b, a, invalpha, vr, log_invalpha)


@njit(cache=True)
def binomial(s, trials, p):
    """Binomial(K, p) by inversion on the smaller tail (exact; cost O(K·min(p, 1−p)))."""
    if trials <= 0 or p <= 0.0:
        return 0
    if p >= 1.0:
        return trials
    flip = p > 0.5
    q = 1.0 - p if flip else p
    if trials * q < 30.0:
        # inversion: walk the pmf from 0
        ratio = q / (1.0 - q)
        prob = math.exp(trials * math.log1p(-q))
        u = uniform(s)
        k = 0
        while u > prob and k < trials:
            u -= prob
            prob *= ratio * (trials - k) / (k + 1.0)
            k += 1
        result = k
    else:
        # sum of geometric gaps between successes: exact, O(K·q) draws
        log_fail = math.log1p(-q)
        position = -1
        result = -1
        while position < trials:
            result += 1
            position += 1 + np.int64(math.floor(math.log(1.0 - uniform(s)) / log_fail))
        result = min(result, trials)
    return trials - result if flip else result


@njit(inline="always", cache=True)
def geometric0(s, mean):
    """Geometric on {0, 1, 2, …} with the given mean (P(k) = (1−q)·q^k, q = mean/(1+mean))."""
    if mean <= 0.0:
        return 0
    q = mean / (1.0 + mean)
    return np.int64(math.floor(math.log(1.0 - uniform(s)) / math.log(q)))


@njit(inline="always", cache=True)
def sample_distinct_row(s, n, d, table, row):
    """Fill ``table[row, :d]`` with d distinct integers uniform on {0, …, n−1} (Floyd's
    algorithm). ``table`` is 2-D (e.g. a policy's memory), indexed by row to avoid a row
    view: each view costs two atomic reference-count updates."""
    count = 0
    for j in range(n - d, n):
        candidate = randint(s, j + 1)
        for i in range(count):
            if table[row, i] == candidate:
                candidate = j
                break
        table[row, count] = candidate
        count += 1
    return count


@njit(inline="always", cache=True)
def weighted_index(s, cumulative):
    """Index i with probability proportional to the weights whose running sum is ``cumulative``:
    the first i with cumulative[i] > u·total (the last index if rounding leaves none)."""
    u = uniform(s) * cumulative[cumulative.size - 1]
    # branch-free binary search: the answer lies in [base, base + length); the compare
    # becomes a conditional move, so no branch mispredicts on the random u
    # (an unsigned index skips the negative-index check, which would be a branch)
    base = 0
    length = cumulative.size
    while length > 1:
        half = length >> 1
        base = select_unpredictable(cumulative[np.uint64(base + half - 1)] <= u, base + half,
                                    base)
        length -= half
    return base
