"""What is known exactly about the continuous-time systems: mean response times E[T] of
the queues the engine must reproduce.

* M/G/1 FIFO: Pollaczek–Khinchine, E[T] = E[X]/s + λ·E[X²]/s² / (2(1 − ρ)).
* M/G/1 processor sharing: E[T] = E[X]/s / (1 − ρ), whatever the size law (insensitivity).
* M/M/k FIFO (Erlang C): E[T] = C(k, a)/(kμ − λ) + 1/μ, a = λ/μ; M/G/k under least work
  left is the central queue, so LWL on k equal exponential servers is M/M/k.
* GI/M/1 FIFO: E[T] = 1/(μ(1 − σ)), σ the root in (0, 1) of σ = A*(μ(1 − σ)); round
  robin to k servers turns Poisson arrivals into Erlang-k ones at each (E_k/M/1).
* M/G/1 preemptive SRPT: Schrage & Miller (1966),
  E[T(x)] = λ(∫₀ˣ t² dF(t) + x²(1 − F(x))) / (2(1 − ρ(x))²) + ∫₀ˣ dt/(1 − ρ(t)),
  ρ(x) = λ∫₀ˣ t dF(t), for a server of speed 1.
* JSQ on two exponential servers: the chain of the two queue lengths, solved
  (:func:`jsq_two_servers_response`).
* The supermarket model (JSQ(d) as N → ∞, Poisson arrivals at rate λN, exponential sizes of
  mean 1, unit speeds): E[T] = Σ_{i≥1} λ^{(dⁱ − d)/(d − 1)} (Mitzenmacher 2001; Vvedenskaya,
  Dobrushin & Karpelevich 1996).
"""

from __future__ import annotations

import math

import numpy as np
from scipy import integrate, optimize, sparse
from scipy.sparse import linalg

from dispatchlab.continuous.laws import DETERMINISTIC, ERLANG, EXPONENTIAL, HYPEREXPONENTIAL, Law


def mg1_fifo_response(rate: float, sizes: Law, speed: float = 1.0) -> float:
    """E[T] of an M/G/1 FIFO queue (Pollaczek–Khinchine)."""
    mean, second = sizes.mean / speed, sizes.second_moment / speed**2
    rho = rate * mean
    return mean + rate * second / (2 * (1 - rho))


def mg1_ps_response(rate: float, sizes: Law, speed: float = 1.0) -> float:
    """E[T] of an M/G/1 processor-sharing queue: E[X]/s/(1 − ρ), for any size law."""
    mean = sizes.mean / speed
    return mean / (1 - rate * mean)


def erlang_c(servers: int, offered: float) -> float:
    """C(k, a): the probability that an arrival waits in M/M/k with offered load a = λ/μ."""
    term, total = 1.0, 1.0  # a^i/i!, summed for i < k
    for i in range(1, servers):
        term *= offered / i
        total += term
    last = term * offered / servers / (1 - offered / servers)  # a^k/k! · k/(k − a)
    return last / (total + last)


def mmk_response(rate: float, servers: int, service_rate: float = 1.0) -> float:
    """E[T] of M/M/k FIFO with k servers of rate μ (Erlang C)."""
    offered = rate / service_rate
    return erlang_c(servers, offered) / (servers * service_rate - rate) + 1 / service_rate


def laplace_transform(interarrival: Law, s: float) -> float:
    """E[e^(−sA)] of an interarrival law (exponential, deterministic, Erlang or
    hyperexponential: the shapes :func:`.laws.parse_arrival_shape` gives)."""
    if interarrival.code == EXPONENTIAL:
        return 1 / (1 + s * interarrival.a)
    if interarrival.code == DETERMINISTIC:
        return math.exp(-s * interarrival.a)
    if interarrival.code == ERLANG:
        phases, phase_mean = interarrival.a, interarrival.b / interarrival.a
        return (1 / (1 + s * phase_mean)) ** phases
    if interarrival.code == HYPEREXPONENTIAL:
        p1 = interarrival.a
        return p1 / (1 + s * interarrival.b) + (1 - p1) / (1 + s * interarrival.c)
    raise ValueError(f"no Laplace transform here for {interarrival.text}")


def gim1_response(interarrival: Law, service_rate: float = 1.0) -> float:
    """E[T] of a GI/M/1 FIFO queue: E[T] = 1/(μ(1 − σ)), σ the root in (0, 1) of
    σ = A*(μ(1 − σ)), A* the interarrival law's Laplace transform (round robin to k
    equal exponential servers makes each an E_k/M/1 queue)."""

    def fixed_point(sigma: float) -> float:
        return laplace_transform(interarrival, service_rate * (1 - sigma)) - sigma

    # positive at 0, negative just below the trivial root 1 when λ < μ: one root between
    sigma = optimize.brentq(fixed_point, 0.0, 1.0 - 1e-9)
    return 1 / (service_rate * (1 - sigma))


def srpt_exponential_response(rate: float, mean: float = 1.0) -> float:
    """E[T] of an M/M/1 queue under preemptive SRPT (Schrage–Miller), sizes of the given
    mean, speed 1."""
    mu = 1 / mean

    def density(x: float) -> float:
        return mu * math.exp(-mu * x)

    def partial_first(x: float) -> float:  # ∫₀ˣ t dF(t)
        return mean - (x + mean) * math.exp(-mu * x)

    def partial_second(x: float) -> float:  # ∫₀ˣ t² dF(t)
        return 2 * mean**2 - (x * x + 2 * x * mean + 2 * mean**2) * math.exp(-mu * x)

    def response(x: float) -> float:
        load = rate * partial_first(x)
        waiting = rate * (partial_second(x) + x * x * math.exp(-mu * x)) / (2 * (1 - load) ** 2)
        residence = integrate.quad(lambda t: 1 / (1 - rate * partial_first(t)), 0, x)[0]
        return waiting + residence

    return integrate.quad(lambda x: response(x) * density(x), 0, math.inf, limit=200)[0]


def supermarket_response(rate: float, d: int) -> float:
    """E[T] of JSQ(d) as N → ∞: Σ_{i≥1} λ^{(dⁱ−d)/(d−1)} (per-server rate λ < 1, unit
    exponential sizes, unit speeds)."""
    total, i = 0.0, 1
    while True:
        term = rate ** ((d**i - d) / (d - 1))
        total += term
        if term < 1e-16 or i > 200:
            return total
        i += 1


def jsq_two_servers_response(rate: float, speeds: tuple[float, float],
                             truncation: int = 80) -> float:
    """E[T] of JSQ on two exponential servers (unit mean sizes, speeds s₁, s₂, Poisson
    arrivals at rate λ, ties uniformly at random), from the stationary law of the chain of
    the two queue lengths truncated at ``truncation`` jobs each (a job that would pass it
    is lost: the truncation must hold a negligible mass), by Little's law."""
    size = truncation + 1

    def state(i: int, j: int) -> int:
        return i * size + j

    rows, cols, values = [], [], []
    for i in range(size):
        for j in range(size):
            here = state(i, j)
            moves = []
            share = 0.5 if i == j else (1.0 if i < j else 0.0)
            if i < truncation and share > 0:
                moves.append((state(i + 1, j), rate * share))
            if j < truncation and share < 1:
                moves.append((state(i, j + 1), rate * (1 - share)))
            if i > 0:
                moves.append((state(i - 1, j), speeds[0]))
            if j > 0:
                moves.append((state(i, j - 1), speeds[1]))
            for there, value in moves:
                rows.append(here)
                cols.append(there)
                values.append(value)
            rows.append(here)
            cols.append(here)
            values.append(-sum(value for _, value in moves))
    generator = sparse.csr_matrix((values, (rows, cols)), shape=(size * size, size * size))
    # π Q = 0 with Σπ = 1: replace one balance equation by the normalisation
    system = generator.T.tolil()
    system[0, :] = 1.0
    right = np.zeros(size * size)
    right[0] = 1.0
    law = linalg.spsolve(system.tocsr(), right)
    grid = law.reshape(size, size)
    edge = grid[truncation, :].sum() + grid[:, truncation].sum()
    if edge > 1e-9:
        raise ValueError(f"the truncation at {truncation} holds mass {edge:.2g}: raise it")
    jobs = np.add.outer(np.arange(size), np.arange(size))
    return float((grid * jobs).sum() / rate)
