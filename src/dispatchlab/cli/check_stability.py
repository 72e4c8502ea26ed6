"""``dispatchlab check stability``: the induced threshold λ̄ of a Π policy, without simulating."""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated

import typer

from dispatchlab.cli import options
from dispatchlab.cli.app import check_app
from dispatchlab.cli.output import load_text, number, print_json, stdout_console
from dispatchlab.core.errors import require

if TYPE_CHECKING:
    from dispatchlab.theory.stability import StabilityRegion


def stability_report(policy_name: str, params: dict[str, str], servers: str,
                     load: float | None = None) -> tuple[dict[str, object], StabilityRegion]:
    """Everything the command prints, as one JSON-ready dict, and the region itself."""
    import numpy as np

    from dispatchlab.model.service import parse_rates
    from dispatchlab.model.system import System
    from dispatchlab.policies.base import make_policy, policy_entry  # numba
    from dispatchlab.policies.framework.fractions import dispatch_fractions
    from dispatchlab.theory.stability import induced_threshold

    mu = parse_rates(servers)
    policy_entry(policy_name)  # a clear error for an unknown name first
    policy = make_policy(policy_name, **params)
    # validate the policy against a system on these rates (d ≤ N, γ length, …)
    policy.check_system(System.build(mu, load=0.5))
    fractions = dispatch_fractions(policy, mu)
    region = induced_threshold(fractions, mu)
    data: dict[str, object] = {"policy": policy_name, "params": dict(policy.params),
                               "servers": servers, "n_servers": int(mu.size),
                               "fractions": fractions.kind, **region.to_dict()}
    if fractions.kind != "order":
        data["fraction_values"] = [float(x) for x in np.asarray(fractions.values)]
    if load is not None:
        require(load > 0, "load", f"ρ must be > 0 (got {load:g})")
        data["load"] = load
        data["verdict_at_load"] = region.verdict(load * region.mu_sum)
    return data, region


def _print_human(data: dict[str, object], region: StabilityRegion) -> None:
    console = stdout_console()
    console.print(f"policy {data['policy']} on N = {data['n_servers']} servers "
                  f"(μ_Σ = {number(region.mu_sum)}); fractions: {data['fractions']}; "
                  f"{region.method}")
    console.print(f"induced threshold λ̄ = {number(region.threshold_rate)}   "
                  f"ρ̄ = λ̄/μ_Σ = {number(region.threshold_load)}")
    servers = ", ".join(str(j) for j in region.bottleneck[:12])
    more = " …" if len(region.bottleneck) > 12 else ""
    console.print(f"bottleneck: m = {region.bottleneck_m}, the longest-ranked set of servers "
                  f"[{servers}{more}]")
    console.print(f"throughput optimal: {'yes' if region.throughput_optimal else 'no'}   "
                  f"strict majorisation (the hypothesis of [Π] Theorem 4.4, "
                  f"docs/model.md#pi-heavy-traffic): "
                  f"{'yes' if region.heavy_traffic_optimal else 'no'} "
                  f"(margin {number(region.strict_margin)})")
    if not region.throughput_optimal:
        console.print("above λ̄: " + ("transient (the condition of docs/model.md#pi-transience "
                                     "holds: λ̄ is the exact threshold)" if region.exact else
                                     "not certified: λ̄ comes from Monte-Carlo fractions, an "
                                     "estimate" if region.estimated else
                                     "not certified transient (the condition of "
                                     "docs/model.md#pi-transience does not apply; "
                                     "stability above λ̄ may be non-monotone)"))
    if "verdict_at_load" in data:
        console.print(f"at ρ = {load_text(data['load'])}: {data['verdict_at_load']}")


@check_app.command("stability")
def stability_command(
    policy: Annotated[str, typer.Option(
        help="A Π member: pi-framework and its presets (pi-jsq, pi-pod, …), or the classical "
        "rand, wrand, rr, jsq, jsed, pod.")] = "pod",
    set_: options.PolicyParams = None,
    servers: Annotated[str, typer.Option(
        help="Service rates μ_n: COUNTxRATE list or rates.")] = "50x0.1,50x0.5",
    load: Annotated[float | None, typer.Option(
        help="Also give the verdict at this load ρ.", show_default=False)] = None,
    json: Annotated[bool, typer.Option("--json", help="Print one JSON object.")] = False,
) -> None:
    """λ̄ of Eq. (3), ρ̄ = λ̄/μ_Σ, the bottleneck and throughput optimality of a Π policy
    ([Π] Eq. (3); docs/model.md#pi-stability, docs/model.md#stability-thresholds), computed from its
    dispatch fractions without simulating."""
    from dispatchlab.specs.run import parse_assignments

    data, region = stability_report(policy, parse_assignments(set_), servers, load)
    if json:
        print_json(data)
        return
    _print_human(data, region)
