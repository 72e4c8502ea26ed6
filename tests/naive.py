"""Slow, plain-Python references of the compiled engine, for tests to compare it with.

Two parts, neither importing any compiled code:

* the random-number core, written from the published algorithms: xoshiro256++ and
  SplitMix64 (Blackman & Vigna, "Scrambled linear pseudorandom number generators", and
  their reference C code), SplittableRandom's ``mixGamma`` (Steele, Lea & Flood, "Fast
  splittable pseudorandom number generators"), NumPy's ``SeedSequence`` (O'Neill's
  ``seed_seq_fe``, as NumPy implements it), and the samplers as
  ``dispatchlab.compiled.rng`` defines them on the 64-bit outputs; pinned to the authors'
  published outputs and to the compiled generators by ``tests/compiled/test_rng_vectors.py``;
* :func:`naive_run`, the slot of the model (``docs/model.md``) for a handful of servers:
  arrivals split among the dispatchers, dispatch on the slot-start queues, service,
  Q(t+1) = max(Q(t) + A(t) − S(t), 0) and the pooled queue q(t+1) = max(q(t) + A_Σ(t) −
  Σ S_n(t), 0), for a few policies, one statement at a time. It draws from the same
  streams, seeded the same way, in the same order as the compiled loop
  (``engine/loop.py``), so that the two give the same path draw for draw
  (``tests/engine/test_naive_reference.py``). Nothing here is fast: N ≤ 4, a few hundred slots.

The draw order of a slot, as the compiled loop has it: the arrivals (split Poisson: one
draw per dispatcher, m = 0 … M − 1; otherwise the total, then the dispatcher for a batch
split), then each dispatcher m with jobs, in order, calls ``choose`` (once with all its
jobs in batch dispatch, once per job in per-job dispatch) drawing from the same
xoshiro256++ stream, then service: under Bernoulli service N outputs of the SplitMix64
service stream (server n gets output n + 1 of the slot), under the other laws one draw
per server from the xoshiro256++ stream.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

MASK32 = (1 << 32) - 1
MASK64 = (1 << 64) - 1
GOLDEN_GAMMA = 0x9E3779B97F4A7C15  # SplitMix64's increment in the reference code


def rotl(x: int, k: int) -> int:
    return ((x << k) | (x >> (64 - k))) & MASK64


class Xoshiro256PlusPlus:
    """xoshiro256++ as in Blackman & Vigna's reference ``xoshiro256plusplus.c``."""

    def __init__(self, state) -> None:
        self.s = [int(word) for word in state]

    def next(self) -> int:
        s = self.s
        result = (rotl((s[0] + s[3]) & MASK64, 23) + s[0]) & MASK64
        t = (s[1] << 17) & MASK64
        s[2] ^= s[0]
        s[3] ^= s[1]
        s[1] ^= s[2]
        s[0] ^= s[3]
        s[2] ^= t
        s[3] = rotl(s[3], 45)
        return result

    # the samplers, as compiled/rng.py defines them on the 64-bit outputs

    def uniform(self) -> float:
        return (self.next() >> 11) * 2.0**-53

    def randint(self, n: int) -> int:
        return ((self.next() >> 32) * n) >> 32

    def bernoulli(self, p: float) -> int:
        return 1 if self.uniform() < p else 0

    def poisson(self, lam: float) -> int:
        if lam <= 0.0:
            return 0
        if lam < 10.0:  # multiplication of uniforms until the product falls to e^−λ
            limit = math.exp(-lam)
            k = 0
            p = self.uniform()
            while p > limit:
                p *= self.uniform()
                k += 1
            return k
        # Hörmann (1993), "The transformed rejection method for generating Poisson random
        # variables", algorithm PTRS
        loglam = math.log(lam)
        b = 0.931 + 2.53 * math.sqrt(lam)
        a = -0.059 + 0.02483 * b
        invalpha = 1.1239 + 1.1328 / (b - 3.4)
        vr = 0.9277 - 3.6224 / (b - 2.0)
        while True:
            u = self.uniform() - 0.5
            v = self.uniform()
            us = 0.5 - abs(u)
            k = math.floor((2.0 * a / us + b) * u + lam + 0.43)
            if us >= 0.07 and v <= vr:
                return k
            if k < 0 or (us < 0.013 and v > us):
                continue
            if math.log(v) + math.log(invalpha) - math.log(a / (us * us) + b) <= (
                    -lam + k * loglam - math.lgamma(k + 1.0)):
                return k

    def geometric0(self, mean: float) -> int:
        if mean <= 0.0:
            return 0
        q = mean / (1.0 + mean)
        return math.floor(math.log(1.0 - self.uniform()) / math.log(q))

    def binomial(self, trials: int, p: float) -> int:
        if trials <= 0 or p <= 0.0:
            return 0
        if p >= 1.0:
            return trials
        flip = p > 0.5
        q = 1.0 - p if flip else p
        if trials * q < 30.0:  # inversion from 0
            ratio = q / (1.0 - q)
            prob = math.exp(trials * math.log1p(-q))
            u = self.uniform()
            k = 0
            while u > prob and k < trials:
                u -= prob
                prob *= ratio * (trials - k) / (k + 1.0)
                k += 1
            result = k
        else:  # geometric gaps between successes
            log_fail = math.log1p(-q)
            position = result = -1
            while position < trials:
                result += 1
                position += 1 + math.floor(math.log(1.0 - self.uniform()) / log_fail)
            result = min(result, trials)
        return trials - result if flip else result


def splitmix64_mix(z: int) -> int:
    """SplitMix64's output function (Stafford's Mix13), reference ``splitmix64.c``."""
    z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & MASK64
    z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & MASK64
    return z ^ (z >> 31)


def splitmix64_outputs(seed: int, count: int, gamma: int = GOLDEN_GAMMA) -> list[int]:
    """The reference generator: x += γ, then the output mix of x."""
    x, out = seed, []
    for _ in range(count):
        x = (x + gamma) & MASK64
        out.append(splitmix64_mix(x))
    return out


def mix_gamma(z: int) -> int:
    """``java.util.SplittableRandom.mixGamma``: an odd increment with enough bit transitions."""
    z = ((z ^ (z >> 33)) * 0xFF51AFD7ED558CCD) & MASK64
    z = ((z ^ (z >> 33)) * 0xC4CEB9FE1A85EC53) & MASK64
    z = (z ^ (z >> 33)) | 1
    return z ^ 0xAAAAAAAAAAAAAAAA if bin(z ^ (z >> 1)).count("1") < 24 else z


def seed_sequence_words(entropy: int, spawn_key: tuple[int, ...] = (), count: int = 4) -> list[int]:
    """``numpy.random.SeedSequence(entropy, spawn_key=…).generate_state(count, uint64)``
    in pure Python: the entropy and spawn key as little-endian 32-bit words, hashed into a
    pool of 4 words, which then generates 32-bit words paired (low, high) into 64."""
    init_a, mult_a, init_b, mult_b = 0x43B0D7E5, 0x931E8875, 0x8B51F9DD, 0x58F38DED
    mix_l, mix_r, shift, pool_size = 0xCA01F9DD, 0x4973F715, 16, 4

    def words32(n: int) -> list[int]:
        out = [n & MASK32]
        while n >> 32:
            n >>= 32
            out.append(n & MASK32)
        return out

    words = words32(entropy)
    key = [w for k in spawn_key for w in words32(k)]
    if key and len(words) < pool_size:
        words += [0] * (pool_size - len(words))
    words += key
    hash_const = init_a

    def hashmix(value: int) -> int:
        nonlocal hash_const
        value = (value ^ hash_const) & MASK32
        hash_const = (hash_const * mult_a) & MASK32
        value = (value * hash_const) & MASK32
        return value ^ (value >> shift)

    def mix(x: int, y: int) -> int:
        result = (mix_l * x - mix_r * y) & MASK32
        return result ^ (result >> shift)

    pool = [hashmix(words[i] if i < len(words) else 0) for i in range(pool_size)]
    for src in range(pool_size):
        for dst in range(pool_size):
            if src != dst:
                pool[dst] = mix(pool[dst], hashmix(pool[src]))
    for src in range(pool_size, len(words)):
        for dst in range(pool_size):
            pool[dst] = mix(pool[dst], hashmix(words[src]))
    out32 = []
    hash_b = init_b
    for i in range(2 * count):
        value = pool[i % pool_size] ^ hash_b
        hash_b = (hash_b * mult_b) & MASK32
        value = (value * hash_b) & MASK32
        out32.append(value ^ (value >> shift))
    return [out32[2 * i] | (out32[2 * i + 1] << 32) for i in range(count)]


def reference_rng_state(entropy: int, spawn_key: tuple[int, ...] = ()) -> list[int]:
    """What make_rng_state does: SeedSequence words 0–3 (all zero is replaced by s₀ = 1)."""
    state = seed_sequence_words(entropy, spawn_key, 4)
    return state if any(state) else [1, 0, 0, 0]


def reference_exogenous_stream(entropy: int, spawn_key: tuple[int, ...] = ()) -> list[int]:
    """What make_exogenous_stream does: SeedSequence words 6–9 (all zero is replaced by
    s₀ = 1)."""
    state = seed_sequence_words(entropy, spawn_key, 10)[6:]
    return state if any(state) else [1, 0, 0, 0]


def reference_service_stream(entropy: int, spawn_key: tuple[int, ...] = ()) -> list[int]:
    """What make_service_stream does: (word 4, mixGamma(word 5)) of the same sequence."""
    words = seed_sequence_words(entropy, spawn_key, 6)
    return [words[4], mix_gamma(words[5])]




# -- the service stream -------------------------------------------------------------------------


class ServiceStream:
    """The Bernoulli service stream (start, γ): the slot's N draws are outputs
    mix(start + k·γ), k = 1 … N, and the stream then moves on by N·γ."""

    def __init__(self, start: int, gamma: int) -> None:
        self.start, self.gamma = start, gamma

    def bernoulli(self, mu: list[float]) -> list[int]:
        """S_n(t) ~ Bernoulli(μ_n): the n-th 53-bit uniform below μ_n."""
        draws = []
        for n, p in enumerate(mu):
            bits = splitmix64_mix((self.start + (n + 1) * self.gamma) & MASK64)
            draws.append(1 if (bits >> 11) * 2.0**-53 < p else 0)
        self.start = (self.start + len(mu) * self.gamma) & MASK64
        return draws


# -- arrivals ----------------------------------------------------------------------------------


def poisson_cdf(lam: float) -> list[float]:
    """F(0), F(1), … of Poisson(λ) as the loop tabulates it: the pmf by its recursion
    p_k = p_(k−1)·(λ/k) from e^−λ, the CDF by running sums, up to (not including) the first
    k where the sum reaches 1 or, past λ, the pmf falls below 10⁻¹⁸."""
    p = math.exp(-lam)
    total = p
    cdf = []
    k = 0
    while not (total >= 1.0 or (k > lam and p < 1e-18)):
        cdf.append(total)
        k += 1
        p *= lam / k
        total += p
    return [min(value, 1.0) for value in cdf] or [min(total, 1.0)]


TABLE_LIMIT = 600.0  # below it a dispatcher's Poisson draw inverts the table, above it PTRS


def split_poisson(rng: Xoshiro256PlusPlus, rates: list[float], cdfs: list[list[float]]
                  ) -> list[int]:
    """A^m(t) ~ Poisson(λ_Σ·p_m), independent: one uniform per dispatcher, k = #{j : F(j) ≤ u}."""
    jobs = []
    for lam, cdf in zip(rates, cdfs, strict=True):
        if lam >= TABLE_LIMIT:
            jobs.append(rng.poisson(lam))
        else:
            u = rng.uniform()
            jobs.append(sum(1 for value in cdf if value <= u))
    return jobs


def weighted_choice(rng: Xoshiro256PlusPlus, weights: list[float]) -> int:
    """The first i with p_0 + … + p_i > u·Σp (the last one if rounding leaves none)."""
    cumulative = []
    total = 0.0
    for w in weights:
        total += w
        cumulative.append(total)
    u = rng.uniform() * cumulative[-1]
    for i, value in enumerate(cumulative):
        if value > u:
            return i
    return len(weights) - 1


# -- policies: choose(m, jobs, t, Q, rng) -> server, on the slot-start queues Q(t) -------------


class Rand:
    """A uniformly random server."""

    def choose(self, m, jobs, t, Q, rng):
        return rng.randint(len(Q))


class WeightedRand:
    """Server n with probability μ_n/μ_Σ, by Walker's alias method (Vose's construction of
    the table, one uniform a draw: column ⌊u·N⌋, kept when the fraction is below its
    probability, else its alias)."""

    def __init__(self, mu: list[float]) -> None:
        self.table = vose_alias_table(mu)

    def choose(self, m, jobs, t, Q, rng):
        n = len(self.table)
        x = (rng.next() >> 11) * 2.0**-53 * n
        i = min(int(x), n - 1)
        probability, alias = self.table[i]
        return i if x - i < probability else alias


def vose_alias_table(weights: list[float]) -> list[tuple[float, int]]:
    n = len(weights)
    total = 0.0
    for w in weights:
        total += w
    scaled = [w * (n / total) for w in weights]
    table: list[tuple[float, int]] = [(1.0, i) for i in range(n)]
    small = [i for i in range(n) if scaled[i] < 1.0]
    large = [i for i in range(n) if scaled[i] >= 1.0]
    while small and large:
        s = small.pop()
        g = large[-1]
        table[s] = (scaled[s], g)
        scaled[g] = (scaled[g] + scaled[s]) - 1.0
        if scaled[g] < 1.0:
            large.pop()
            small.append(g)
    return table  # what is left keeps probability 1 and itself as alias


class JSQ:
    """The shortest queue, ties uniform (a draw only when there is a tie)."""

    def choose(self, m, jobs, t, Q, rng):
        best = min(Q)
        ties = [n for n, q in enumerate(Q) if q == best]
        return ties[rng.randint(len(ties))] if len(ties) > 1 else ties[0]


class PowerOfD:
    """d distinct servers by Floyd's algorithm, then the shortest of them in sampling order,
    ties uniform (a uniform index in 0 … count − 1 drawn for every candidate after the first,
    the candidate taken when it is shorter, or tied and the index is 0)."""

    def __init__(self, d: int) -> None:
        self.d = d

    def choose(self, m, jobs, t, Q, rng):
        N = len(Q)
        sample: list[int] = []
        for j in range(N - self.d, N):
            candidate = rng.randint(j + 1)
            sample.append(j if candidate in sample else candidate)
        arg, best, count = sample[0], Q[sample[0]], 1
        for c in sample[1:]:
            v = Q[c]
            count = 1 if v < best else count + (v == best)
            pick = rng.randint(count)
            if v < best or (v == best and pick == 0):
                arg = c
            best = min(best, v)
        return arg


class RoundRobin:
    """Each dispatcher walks the cycle 0 … N − 1 from its own start ⌊m·N/M⌋; no draws."""

    def __init__(self, n_servers: int, dispatchers: int) -> None:
        self.n = n_servers
        self.position = [m * n_servers // dispatchers for m in range(dispatchers)]

    def choose(self, m, jobs, t, Q, rng):
        server = self.position[m]
        self.position[m] = (server + 1) % self.n
        return server


class Coordinated:
    """SCD and TWF (``dispatchlab.policies.coordinated``): the estimate a of the slot's
    jobs, then P by trying supports of growing size in the order of the thresholds
    h_n/w_n (Python's stable ``sorted``): heights h_n = Q_n + ½ and volume V = a − 1
    (``objective="squared"``) or h_n = Q_n and V = a (``"level"``), widths w_n = μ_n (1
    for TWF). A draw (``estimate="rate"``): :func:`weighted_choice` on V·P in server
    order; (the others) one uniform u, the first server in the sorted order whose running
    sum of V·P_n exceeds u·V. For V ≤ 0: a uniform minimiser of (Q_n + a/2)/w_n, a draw only on
    a tie."""

    def __init__(self, mu: list[float], arrival_rate: float, weights: list[float], *,
                 objective: str = "squared", estimate: str = "rate", flat: bool = False) -> None:
        self.w = [1.0 if flat else float(x) for x in mu]
        self.rate, self.weights = arrival_rate, weights
        self.objective, self.estimate = objective, estimate

    def arrivals(self, m, jobs):
        if self.estimate == "rate":
            return self.rate
        if self.estimate == "scaled":
            return jobs / self.weights[m]
        return jobs + self.rate * (1.0 - self.weights[m])

    def choose(self, m, jobs, t, Q, rng):
        a = self.arrivals(m, jobs)
        squared = self.objective == "squared"
        volume = a - 1.0 if squared else a
        N, w = len(Q), self.w
        if volume <= 0.0:
            offset = 0.5 * a if squared else 0.0
            scores = [(Q[n] + offset) / w[n] for n in range(N)]
            ties = [n for n in range(N) if scores[n] == min(scores)]
            return ties[rng.randint(len(ties))] if len(ties) > 1 else ties[0]
        h = [Q[n] + (0.5 if squared else 0.0) for n in range(N)]
        order = sorted(range(N), key=lambda n: h[n] / w[n])
        for k in range(1, N + 1):
            level = (volume + sum(h[n] for n in order[:k])) / sum(w[n] for n in order[:k])
            if k == N or level <= h[order[k]] / w[order[k]]:
                break
        if self.estimate == "rate":  # one law a slot, drawn from in server order
            return weighted_choice(rng, [max(w[n] * level - h[n], 0.0) for n in range(N)])
        target = rng.uniform() * volume
        running = 0.0
        for n in order[:k]:
            running += w[n] * level - h[n]
            if running > target:
                return n
        return order[k - 1]


class JFSQ:
    """The smallest Q_n (or Q_n/μ_n), ties to the largest μ_n, then uniform."""

    def __init__(self, mu: list[float], by_delay: bool = False) -> None:
        self.mu, self.by_delay = mu, by_delay

    def choose(self, m, jobs, t, Q, rng):
        scores = [Q[n] / self.mu[n] if self.by_delay else float(Q[n]) for n in range(len(Q))]
        shortest = [n for n in range(len(Q)) if scores[n] == min(scores)]
        fastest = max(self.mu[n] for n in shortest)
        ties = [n for n in shortest if self.mu[n] == fastest]
        return ties[rng.randint(len(ties))] if len(ties) > 1 else ties[0]


# -- the slot loop -----------------------------------------------------------------------------


@dataclass
class Path:
    """What :func:`naive_run` records: Q(t) and q(t) for t = 0 … slots, and A_Σ(t)."""

    queues: list[list[int]] = field(default_factory=list)
    pooled: list[int] = field(default_factory=list)
    arrivals: list[int] = field(default_factory=list)


def naive_run(*, mu: list[float], arrival_rate: float, dispatcher_weights: list[float],
              split: str, dispatch: str, service: str, policy, slots: int, seed: int) -> Path:
    """Run the slot ``slots`` times from empty queues with the streams of ``seed``.

    Poisson(λ_Σ) arrivals; ``split`` "per_job" (each job picks dispatcher m with probability
    p_m, so A^m(t) are independent Poisson(λ_Σ·p_m)) or "batch" (all of a slot's jobs to
    one dispatcher drawn from p); ``dispatch`` "batch" or "per_job"; ``service``
    "bernoulli" or "geometric" (mean μ_n)."""
    N, M = len(mu), len(dispatcher_weights)
    words = seed_sequence_words(seed, (), 10)
    rng = Xoshiro256PlusPlus(words[:4] if any(words[:4]) else [1, 0, 0, 0])  # the policy's
    stream = ServiceStream(words[4], mix_gamma(words[5]))
    # the arrivals and the other service laws: the exogenous stream
    exogenous = Xoshiro256PlusPlus(words[6:] if any(words[6:]) else [1, 0, 0, 0])
    rates = [arrival_rate * p if arrival_rate * p > 0.0 else 0.0 for p in dispatcher_weights]
    cdfs = [poisson_cdf(lam) if lam < TABLE_LIMIT else [] for lam in rates]
    Q = [0] * N
    pooled = 0
    path = Path([list(Q)], [pooled], [])
    for t in range(slots):
        # arrivals A^m(t)
        if M > 1 and split == "per_job":
            jobs = split_poisson(exogenous, rates, cdfs)
        else:
            total = exogenous.poisson(arrival_rate)
            jobs = [0] * M
            if M == 1:
                jobs[0] = total
            elif total > 0:
                jobs[weighted_choice(exogenous, dispatcher_weights)] = total
        # dispatch on Q(t): every dispatcher sees the slot-start queues
        A = [0] * N
        for m in range(M):
            if jobs[m] == 0:
                continue
            if dispatch == "batch":
                A[policy.choose(m, jobs[m], t, Q, rng)] += jobs[m]
            else:
                for _ in range(jobs[m]):
                    A[policy.choose(m, 1, t, Q, rng)] += 1
        # service S_n(t), then Q(t + 1) and the pooled queue q(t + 1)
        if service == "bernoulli":
            S = stream.bernoulli(mu)
        else:
            S = [exogenous.geometric0(rate) for rate in mu]
        Q = [max(Q[n] + A[n] - S[n], 0) for n in range(N)]
        pooled = max(pooled + sum(jobs) - sum(S), 0)
        path.queues.append(list(Q))
        path.pooled.append(pooled)
        path.arrivals.append(sum(jobs))
    return path
