"""The fluid limit (dispatchlab.fluid, docs/fluid.md): against the exact single-server
chain, against the continuous-time supermarket model in the small-slot limit, against
simulations as N grows, and its refusals."""

from __future__ import annotations

import json

import pytest

import dispatchlab as dl
from dispatchlab.cli import main
from dispatchlab.core.errors import ValidationError
from dispatchlab.solvers.fluid import FluidRule, fixed_point


def per_job(servers: str, load: float) -> dl.System:
    return dl.System.build(servers, load=load, dispatch="per-job", dispatchers=10)


@pytest.mark.parametrize("load", [0.5, 0.95])
def test_weighted_random_is_each_class_s_own_queue(load: float) -> None:
    """State-free routing: each server is the single-server chain with Poisson(λ̄·μ_j/μ̄)
    arrivals, solved by the exact solver (a different code path)."""
    system = per_job("30x0.3,70x0.6", load)
    result = dl.fluid(system, "wrand")
    per_server = system.arrival_rate / system.n_servers
    mean_rate = system.mu_sum / system.n_servers
    for entry, mean in zip(result.classes, result.mean_queue_by_class, strict=True):
        one = dl.System.build([entry["mu"]], rate=per_server * entry["mu"] / mean_rate,
                              arrivals="poisson")
        exact = dl.exact(one, "jsq", tolerance=1e-13).mean_total_queue
        assert mean == pytest.approx(exact, rel=1e-9)
    assert result.mean_total_queue == pytest.approx(100 * result.mean_queue_per_server)


def test_power_of_one_is_random_routing() -> None:
    """The iterated map (Po-1) reaches the directly solved queue (random routing); a
    residual of 1e-12 a slot leaves the fixed point about residual/(1 − contraction) away."""
    system = per_job("100x0.5", 0.9)
    assert dl.fluid(system, "pod", policy_params={"d": 1}).mean_queue_per_server == \
        pytest.approx(dl.fluid(system, "rand").mean_queue_per_server, rel=1e-7)


def test_the_small_slot_limit_is_the_supermarket_model() -> None:
    """Per-slot service μ → 0 at λ = 0.9: the fluid time in system in units of 1/μ tends to
    Σ_{i≥1} λ^{(2^i − 2)} (Vvedenskaya–Dobrushin–Karpelevich; Mitzenmacher), the gap
    halving with μ (an O(μ) slot effect)."""
    closed = sum(0.9 ** (2**i - 2) for i in range(1, 40))
    gaps = []
    for mu in (0.04, 0.02):
        system = dl.System.build(f"100x{mu}", load=0.9, dispatch="per-job")
        result = dl.fluid(system, "pod")
        time_in_system = result.mean_queue_per_server / (system.arrival_rate / 100) * mu
        gaps.append(closed - time_in_system)
    assert 0 < gaps[1] < 0.05
    assert gaps[0] / gaps[1] == pytest.approx(2.0, rel=0.1)


@pytest.mark.parametrize("policy", ["pod", "jsq"])
def test_simulations_approach_the_fluid_value_as_n_grows(policy: str) -> None:
    fluid = dl.fluid(per_job("20x0.3,20x0.6", 0.9), policy).mean_queue_per_server
    gaps = []
    for n in (40, 2000):
        system = per_job(f"{n // 2}x0.3,{n // 2}x0.6", 0.9)
        result = dl.simulate(system, policy, slots=20_000, replications=2, seed=1,
                             delay="off")
        gaps.append(abs(result.mean_total_queue / n - fluid))
    assert gaps[1] < 0.01 and gaps[1] < gaps[0] / 5


def test_jsq_sends_no_job_to_a_busy_server_and_po2_does() -> None:
    system = per_job("100x0.5", 0.95)
    assert dl.fluid(system, "jsq").wait_probability == 0.0
    assert 0.5 < dl.fluid(system, "pod").wait_probability < 1


@pytest.mark.parametrize(("call", "message"), [
    (lambda: dl.fluid(dl.System.build("4x0.5", load=0.5), "jsq"),
     r"^dispatch: the fluid limit is of per-job dispatch"),
    (lambda: dl.fluid(per_job("4x0.5", 0.5), "l-jba-pull"), r"^policy: led has no fluid rule"),
    (lambda: dl.fluid(per_job("4x0.5", 0.5), "jsq", policy_params={"ties": "lowest"}),
     r"^policy: jsq has no fluid rule"),
    (lambda: dl.fluid(per_job("50x0.1,50x0.5", 0.9), "pod"), r"^load: pod is unstable"),
    (lambda: dl.fluid(per_job("2x0.3,2x0.6", 0.9), "rand"), r"^load: .*unstable"),
    (lambda: dl.fluid(per_job("4x0.5", 0.5), "pod", tolerance=float("nan")), r"^tolerance:"),
    (lambda: dl.fluid(per_job("4x0.5", 0.5), "pod", max_iterations=0), r"^max_iterations:"),
    (lambda: dl.fluid("4x0.5", "pod"), r"^system: expected a System"),
    (lambda: dl.fluid(per_job("4x0.5", 0.5), "pod", d=2), r"^d: unknown keyword of fluid"),
])
def test_what_has_no_fluid_limit_is_refused_in_one_line(call, message: str) -> None:
    with pytest.raises(ValidationError, match=message):
        call()


def test_an_unfinished_iteration_says_so() -> None:
    result = fixed_point(per_job("100x0.5", 0.95), FluidRule("pod", 2), max_iterations=5)
    assert result.iterations == 5 and result.notes and "stopped after 5" in result.notes[0]


def test_check_fluid_prints_a_table_and_json(capsys: pytest.CaptureFixture[str]) -> None:
    args = ["check", "fluid", "--servers", "50x0.3,50x0.6", "--load", "0.9", "--policy", "jsq"]
    assert main(args) == 0
    out = capsys.readouterr().out
    assert "E[Q] per server" in out and "class μ = 0.3" in out and "N → ∞" in out
    assert main([*args, "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["policy"] == "jsq" and data["system"]["dispatch"] == "per_job"
    assert data["mean_total_queue"] == pytest.approx(100 * data["mean_queue_per_server"])
    assert main(["check", "fluid", "--servers", "4x0.5", "--dispatch", "batch"]) == 2
    assert "error: dispatch: the fluid limit is of per-job dispatch" in capsys.readouterr().err


def test_the_committed_validation_is_what_the_solver_gives_and_what_the_docs_quote() -> None:
    """results/fluid/validation.md: every fluid E[Q] in its tables is recomputed, and the
    figures docs/fluid.md quotes from it are in it."""
    import re
    from pathlib import Path

    root = Path(__file__).resolve().parents[2]
    text = (root / "results" / "fluid" / "validation.md").read_text(encoding="utf-8")
    profiles = {"homogeneous μ = 0.5": "100x0.5", "half μ = 0.3, half μ = 0.6": "50x0.3,50x0.6"}
    checked = 0
    for title, servers in profiles.items():
        section = text.split(f"## {title}")[1].split("## ")[0]
        for policy, load, value in re.findall(r"^\| (\w+) \| ([\d.]+) \| ([\d.]+) \|",
                                              section, re.M):
            fluid = dl.fluid(per_job(servers, float(load)), policy).mean_queue_per_server
            assert f"{fluid:.5f}" == value, (title, policy, load)
            checked += 1
    assert checked == 18
    docs = (root / "docs" / "fluid.md").read_text(encoding="utf-8")
    for quoted in ("+0.0858", "+0.0075", "+0.0008", "-1.06", "2.450888", "2.593433"):
        assert quoted in text
    for quoted in ("+0.086", "+0.0075", "+0.0008", "−1.06", "2.4509", "2.5934", "2.6141"):
        assert quoted in docs
    assert "(fluid-figures/approach.png)" in docs
    assert (root / "docs" / "fluid-figures" / "approach.png").stat().st_size > 10_000


@pytest.mark.parametrize("policy", ["jsq", "wrand"])
def test_near_capacity_the_fixed_point_is_still_reached(policy: str) -> None:
    """ρ = 0.999: the truncation grows from 64 levels as the tail needs (it started at
    8/(1 − ρ) levels, and the direct solve had a dense row: minutes)."""
    result = dl.fluid(per_job("100x0.5", 0.999), policy)
    assert not result.notes and result.edge_mass <= 1e-13
    if policy == "wrand":  # one Poisson-fed queue at ρ = 0.999: E[Q] = 749.0
        assert 700 < result.mean_queue_per_server < 800 and result.truncation > 10_000
    else:
        assert result.mean_queue_per_server < 5 and result.truncation < 200


def test_jiq_with_lists_that_suffice_is_its_closed_form() -> None:
    """While the ID lists hold more than a slot's jobs, a listed (idle) class-j server is
    taken with τ = λ̄/I and a busy one holds one job: L_j = μ_j/(μ_j + τ(1 − μ_j)),
    E[Q_j] = 1 − L_j, with Σ α_j L_j·τ = λ̄ (τ by bisection here)."""
    system = per_job("30x0.3,70x0.6", 0.9)
    result = dl.fluid(system, "jiq")
    alpha, mu = [0.3, 0.7], [0.3, 0.6]
    per_server = system.arrival_rate / 100

    def taken(tau: float) -> float:
        return tau * sum(a * m / (m + tau * (1 - m)) for a, m in zip(alpha, mu, strict=True))

    low, high = 0.0, 1.0
    for _ in range(100):
        low, high = ((low + high) / 2, high) if taken((low + high) / 2) < per_server \
            else (low, (low + high) / 2)
    expected = [1 - m / (m + high * (1 - m)) for m in mu]
    assert result.mean_queue_by_class == pytest.approx(expected, rel=1e-8)
    assert result.wait_probability == pytest.approx(0.0, abs=1e-12)


def test_one_dispatcher_s_jbt_approaches_its_fluid_value() -> None:
    """M = 1 (one list): JBT-2 at N = 1,000 within 0.01 of the limit (gaps 0.0093, 0.0011,
    0.0002 at N = 10², 10³, 10⁴). With M = 10 the lists' shares drift apart and some
    dispatchers fall back while others hold IDs: the gap closes far slower (docs)."""
    params = {"r": 2, "weighted": False}
    system = dl.System.build("1000x0.5", load=0.9, dispatch="per-job", dispatchers=1)
    fluid = dl.fluid(system, "jbt", policy_params=params).mean_queue_per_server
    result = dl.simulate(system, "jbt", policy_params=params, slots=20_000, replications=2,
                         seed=1, delay="off")
    assert abs(result.mean_total_queue / 1000 - fluid) < 0.01


def test_the_oldest_id_is_said_to_be_modelled_as_a_uniform_one_when_lists_run_dry() -> None:
    assert not dl.fluid(per_job("100x0.5", 0.9), "jiq").notes  # lists suffice
    with pytest.raises(ValidationError, match="^pick: the oldest ID is modelled for JIQ"):
        FluidRule("pull", threshold=2, pick="oldest")


def test_the_committed_pull_table_is_what_the_solver_gives_and_what_the_docs_quote() -> None:
    import re
    from pathlib import Path

    root = Path(__file__).resolve().parents[2]
    text = (root / "results" / "fluid" / "pull.md").read_text(encoding="utf-8")
    params = {"JBT-2": ("jbt", {"r": 2, "weighted": False}), "JIQ": ("jiq", {"removal": "uniform"})}
    rows = re.findall(r"^\| (JBT-2|JIQ) [^|]* \| (\d+) \| ([\d.]+) \|", text, re.M)
    assert len(rows) == 4
    for label, dispatchers, value in rows:
        policy, options = params[label]
        system = dl.System.build("100x0.5", load=0.9, dispatch="per-job",
                                 dispatchers=int(dispatchers))
        fluid = dl.fluid(system, policy, policy_params=options).mean_queue_per_server
        assert f"{fluid:.4f}" == value
    docs = (root / "docs" / "fluid.md").read_text(encoding="utf-8")
    for quoted in ("+0.0093", "+0.0011", "+0.2603", "+0.0875", "+0.0581", "+0.3877", "+0.0067"):
        assert quoted in text
    for quoted in ("+0.0093", "+0.0011", "+0.26", "+0.088", "+0.058", "+0.39", "+0.0067"):
        assert quoted in docs


@pytest.mark.parametrize(("rows_from", "waits_from"), [
    (0.08, 0.08), pytest.param(0.04, 0.02, marks=pytest.mark.slow)])
def test_the_committed_supermarket_table_is_what_the_solver_gives(rows_from: float,
                                                                  waits_from: float) -> None:
    """results/fluid/supermarket.md: its closed forms are the supermarket model's, its rows
    with μ ≥ ``rows_from`` and its waiting probabilities with μ ≥ ``waits_from`` are
    recomputed (the map's slots grow like 1/μ: μ = 0.08 the cheapest; all in the slow
    suite), and the Richardson errors docs/fluid.md quotes are in it."""
    import re
    from pathlib import Path

    def one_dispatcher(mu: str, load: float) -> dl.System:
        return dl.System.build(f"100x{mu}", load=load, dispatch="per-job")

    root = Path(__file__).resolve().parents[2]
    text = (root / "results" / "fluid" / "supermarket.md").read_text(encoding="utf-8")
    rows = re.findall(r"^\| (\d) \| ([\d.]+) \| ([\d.]+) \| ([\d.]+) \| ([\d.]+) \|", text,
                      re.M)
    assert len(rows) == 24
    for d, load, mu, value, gap in rows:
        d_, load_ = int(d), float(load)
        closed = sum(load_ ** ((d_**i - d_) // (d_ - 1)) for i in range(1, 60))
        assert abs(closed - float(value) - float(gap)) <= 1.5e-6  # (both rounded)
        if float(mu) >= rows_from:
            fluid = dl.fluid(one_dispatcher(mu, load_), "pod", policy_params={"d": d_})
            assert f"{fluid.mean_queue_per_server / load_:.6f}" == value, (d, load, mu)
    waits = re.findall(r"^\| ([\d.]+) \| ([\d.]+) \| ([\d.]+) \| ([\d.]+) \| ([\d.]+) "
                       r"\| [\d.]+ \|$", text, re.M)
    assert len(waits) == 8
    for load, mu, jsq, jiq, pod in waits:
        assert float(jsq) == float(jiq) == 0.0
        if float(mu) < waits_from:
            continue
        system = one_dispatcher(mu, float(load))
        assert dl.fluid(system, "jsq").wait_probability == 0.0
        assert f"{dl.fluid(system, 'pod').wait_probability:.6f}" == pod
    docs = (root / "docs" / "fluid.md").read_text(encoding="utf-8")
    for quoted in ("-6.35e-05", "-1.16e-04", "0.803761"):
        assert quoted in text
    for quoted in ("−6.4·10⁻⁵", "−1.2·10⁻⁴", "0.8038"):
        assert quoted in docs


def test_the_committed_slopes_are_what_their_table_gives() -> None:
    """results/fluid/slopes.md: every fluid E[Q] is recomputed, each row's slope is the
    weighted fit of its own cells (results/fluid/slopes.py's), and docs/fluid.md quotes
    them and shows their figure."""
    import importlib.util
    import re
    from pathlib import Path

    root = Path(__file__).resolve().parents[2]
    spec = importlib.util.spec_from_file_location("slopes", root / "results/fluid/slopes.py")
    assert spec is not None and spec.loader is not None
    slopes = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(slopes)
    text = (root / "results" / "fluid" / "slopes.md").read_text(encoding="utf-8")
    rows = re.findall(r"^\| (pod|jsq) \| ([\d.]+) \| ([\d.]+) \| (.+) \| (-[\d.]+) ± ([\d.]+) \|",
                      text, re.M)
    assert len(rows) == 4
    for policy, load, fluid, cells, slope, error in rows:
        assert f"{dl.fluid(slopes.system(100, float(load)), policy).mean_queue_per_server:.5f}" \
            == fluid
        gaps, halves = zip(*((float(g), float(h)) for g, h in
                             re.findall(r"\+([\d.]+) ± ([\d.]+)", cells)), strict=True)
        s, se, _ = slopes.fit(list(slopes.SIZES), list(gaps), list(halves))
        assert abs(s - float(slope)) < 2e-3 and abs(se - float(error)) < 2e-3, (policy, load)
        assert abs(s + 1) < 3 * se + 0.03  # a 1/N correction
    docs = (root / "docs" / "fluid.md").read_text(encoding="utf-8")
    for quoted in ("−1.012 ± 0.055", "−1.017 ± 0.044", "−1.029 ± 0.019", "−1.057 ± 0.014",
                   "(fluid-figures/slopes.png)"):
        assert quoted in docs
    assert (root / "docs" / "fluid-figures" / "slopes.png").stat().st_size > 10_000


def test_the_committed_n_of_100_000_table_is_what_the_solver_gives() -> None:
    """results/fluid/large.md: every fluid E[Q] and c/N recomputed; Po-2 and JSQ within
    three half-widths of the fluid value at N = 10⁵ (plus c/N where it is derived); the
    figures docs/fluid.md quotes are in it."""
    import re
    from pathlib import Path

    root = Path(__file__).resolve().parents[2]
    text = (root / "results" / "fluid" / "large.md").read_text(encoding="utf-8")
    rows = re.findall(r"^\| (wrand|pod|jsq) \| ([\d.]+) \| ([\d.]+) \| ([+-][\d.]+) ± ([\d.]+) "
                      r"\| ([\d.]+|—) \|", text, re.M)
    assert len(rows) == 6
    for policy, load, fluid, gap, half, term in rows:
        result = dl.fluid(per_job("100000x0.5", float(load)), policy,
                          refined=policy != "jsq")
        assert f"{result.mean_queue_per_server:.5f}" == fluid
        if policy != "jsq":
            assert f"{result.refined_correction / 100_000:.6f}" == term
        if policy != "wrand":  # (wrand at ρ = 0.95: 20,000 slots do not forget the start)
            assert abs(float(gap)) <= 3 * float(half) + (0 if term == "—" else float(term))
    docs = (root / "docs" / "fluid.md").read_text(encoding="utf-8")
    assert "results/fluid/large.md" in docs
