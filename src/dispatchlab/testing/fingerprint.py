"""Known-answer fingerprint of simulation results, for changes that must not alter a draw.

Runs the five bench workloads (``dispatchlab.bench.workloads``) at reduced slots and a list
of policy configurations that between them exercise every built-in policy family, both
dispatch modes, both update styles of LED, the Π hooks, a user LED strategy and a user Π
decision, and delay tracking under two service laws; writes every number of each
:class:`Result` (except timings) with full precision to a JSON file.
Compare two files with ``--compare``.

The default suite compares a fresh fingerprint with the known answers committed in
``tests/known_answers/fingerprint.json`` (:func:`known_answers`): every number of each
configuration, over the fields that existed when the answers were written (a new ``Result``
field does not invalidate them). Integers, text and flags must be equal; floats within a
relative :data:`RELATIVE_TOLERANCE`, because processors differ in the last bits of
vectorised ``exp``/``log`` and reductions: the same draws gave E[q] of the pooled queue a
few units in the last place apart on an Intel Xeon and an AMD EPYC. A changed draw changes
the counts (jobs arrived and departed, the ΣQ distribution) exactly and the means far
beyond the tolerance. A list longer than :data:`LONG_LIST` (a distribution, N per-server
means) is kept as its length and a digest of its values to 12 significant digits.

    python -m dispatchlab.testing.fingerprint out.json
    python -m dispatchlab.testing.fingerprint --compare before.json after.json
    python -m dispatchlab.testing.fingerprint --known tests/known_answers/fingerprint.json
"""

from __future__ import annotations

import argparse
import hashlib
import json
import math
import sys
from dataclasses import asdict
from typing import Any

from dispatchlab.bench.workloads import WORKLOADS
from dispatchlab.model.system import System
from dispatchlab.policies import make_policy
from dispatchlab.policies.framework import decision_function, register_decision
from dispatchlab.policies.led import LEDPolicy, strategy_function
from dispatchlab.simulation.run import simulate

SLOTS = 20_000
TIMING_FIELDS = {"seconds", "slots_per_second"}
#: floats of the known answers agree within this relative difference (see the module text)
RELATIVE_TOLERANCE = 1e-9
#: a list longer than this is kept in the known answers as its length and a digest
LONG_LIST = 64


@strategy_function
def _first_below_average(estimates, mu, rng, params, scratch):
    """The lowest-index server below the plain average (a deterministic user rule)."""
    total = 0.0
    for n in range(estimates.size):
        total += estimates[n]
    average = total / estimates.size
    for n in range(estimates.size):
        if estimates[n] < average:
            return n
    return estimates.size - 1


@decision_function
def _two_shortest(eta, mu, ip, fp, rng, dest, scratch):
    n = eta.size
    for i in range(dest.size):
        dest[i] = eta[n - 1 - (i & 1)] if n > 1 else eta[0]


def _systems() -> dict[str, System]:
    het = "50x0.1,50x0.5"
    return {
        "het": System.build(het, load=0.95, dispatchers=10),
        "het-perjob": System.build(het, load=0.9, dispatchers=10, dispatch="per-job"),
        "hom": System.build("100x0.3", load=0.95, dispatchers=10),
        "small-geo": System.build("0.2,0.3,0.5,0.6", load=0.85, dispatchers=3,
                                  service="geometric"),
        "small": System.build("0.2,0.3,0.5,0.6", load=0.85, dispatchers=3),
    }


CONFIGS: list[tuple[str, str, str, dict[str, Any]]] = [
    ("rand", "small", "rand", {}),
    ("wrand-perjob", "het-perjob", "wrand", {}),
    ("rr-weighted", "het", "rr", {"weighted": True}),
    ("jsq", "het", "jsq", {}),
    ("jsed", "het", "jsed", {}),
    ("pod2", "hom", "pod", {"d": 2}),
    ("balanced-pod", "het", "balanced-pod", {"d": 3, "by_delay": True}),
    ("led-jba-pull", "het", "led", {"strategy": "jba", "update": "pull", "p": 0.1}),
    ("led-jsq-push-inc", "het", "led",
     {"strategy": "jsq", "update": "push", "p": 0.05, "d": 3, "increment": True}),
    ("led-pod-push-arrival", "hom", "led",
     {"strategy": "pod", "update": "push", "p": 0.2, "trigger": "arrival"}),
    ("led-jba-weighted-perjob", "het-perjob", "led",
     {"strategy": "jba", "jba_average": "weighted", "update": "push", "p": 0.1}),
    ("jbt-r3", "het", "jbt", {"r": 3}),
    ("jiq-sq", "het", "jiq", {"destination": "sq", "d": 2}),
    ("persistent-idle", "small", "persistent-idle", {}),
    ("jid", "het", "jid", {"alpha": 0.2}),
    ("sujsq", "het", "sujsq", {"T_u": 5}),
    ("aujsq", "het", "aujsq", {"T_u": 5}),
    ("pi-pod-T4", "het", "pi-pod", {"T": 4}),
    ("kslq", "het", "kslq", {"d": 10, "k": 2}),
    ("pi-jsed", "small-geo", "pi-jsed", {}),
    ("pi-balanced-rr", "small", "pi-balanced-rr", {}),
    ("jsq-geometric", "small-geo", "jsq", {}),
    ("led-custom-strategy", "small", "led-custom", {}),
    ("pi-custom-decision", "small", "pi-framework", {"decision": "fp-two-shortest", "T": 2}),
]


def _result_numbers(result: Any) -> dict[str, Any]:
    return {k: v for k, v in asdict(result).items() if k not in TIMING_FIELDS}


def fingerprint(slots: int = SLOTS) -> dict[str, Any]:
    """Every number (timings excepted) of the bench workloads and the listed policy
    configurations at ``slots`` slots, keyed by configuration label."""
    register_decision("fp-two-shortest", _two_shortest, "two shortest, alternately",
                      rank_symmetric=True)
    out: dict[str, Any] = {}
    for workload in WORKLOADS:
        result = simulate(workload.system(), make_policy(workload.policy, **workload.params),
                          slots=slots, seed=7)
        out[f"bench:{workload.name}"] = _result_numbers(result)
    systems = _systems()
    for label, system_name, policy_name, params in CONFIGS:
        if policy_name == "led-custom":
            policy = LEDPolicy(strategy=_first_below_average, update="pull", p=0.3)
        else:
            policy = make_policy(policy_name, **params)
        result = simulate(systems[system_name], policy, slots=slots, seed=11)
        out[label] = _result_numbers(result)
    return out


def _text(value: Any) -> str:
    return json.dumps(value, sort_keys=True)


def _rounded(value: Any) -> Any:
    """A float to 12 significant digits (NaN and infinities as they are)."""
    if isinstance(value, float) and math.isfinite(value):
        return float(f"{value:.12g}")
    return value


def _kept(value: Any) -> Any:
    """``value`` as the known answers keep it: long lists as their length and digest."""
    if isinstance(value, dict):
        return {key: _kept(item) for key, item in value.items()}
    if isinstance(value, list | tuple) and len(value) > LONG_LIST:
        text = _text([_rounded(item) for item in value])
        return {"length": len(value), "sha256": hashlib.sha256(text.encode()).hexdigest()}
    if isinstance(value, list | tuple):
        return [_kept(item) for item in value]
    return value


def known_answers(found: dict[str, Any], slots: int = SLOTS) -> dict[str, Any]:
    """The committed form of a fingerprint: per configuration its numbers (:func:`_kept`)."""
    return {"slots": slots, "relative_tolerance": RELATIVE_TOLERANCE,
            "configurations": {label: _kept(numbers) for label, numbers in sorted(found.items())}}


def _same(found: Any, known: Any) -> bool:
    """Equal, floats within :data:`RELATIVE_TOLERANCE` (NaN equals NaN)."""
    if isinstance(known, float) and isinstance(found, float) and not isinstance(found, bool):
        if math.isnan(known) or math.isnan(found):
            return math.isnan(known) and math.isnan(found)
        return math.isclose(found, known, rel_tol=RELATIVE_TOLERANCE, abs_tol=1e-12)
    if isinstance(known, dict) and isinstance(found, dict):
        return known.keys() == found.keys() and all(_same(found[k], known[k]) for k in known)
    if isinstance(known, list) and isinstance(found, list):
        return len(known) == len(found) and all(map(_same, found, known))
    return type(found) is type(known) and found == known


def differences(found: dict[str, Any], known: dict[str, Any]) -> dict[str, list[str]]:
    """Per configuration that differs from the known answers, the fields that differ
    (``["missing"]`` for a configuration not found); fields added since are not compared."""
    out: dict[str, list[str]] = {}
    for label, answer in known["configurations"].items():
        if label not in found:
            out[label] = ["missing"]
            continue
        numbers = _kept(found[label])
        fields = [f for f in sorted(answer) if f not in numbers or not _same(numbers[f], answer[f])]
        if fields:
            out[label] = fields
    return out


def differing(found: dict[str, Any], known: dict[str, Any]) -> list[str]:
    """The configurations whose numbers differ from the known answers (or are missing)."""
    return sorted(differences(found, known))


def _compare(before: dict[str, Any], after: dict[str, Any]) -> int:
    bad = 0
    for key in sorted(set(before) | set(after)):
        b, a = before.get(key) or {}, after.get(key) or {}
        if _text(b) != _text(a):  # as text: NaN == NaN, and floats digit for digit
            bad += 1
            fields = [f for f in sorted(set(b) | set(a)) if _text(b.get(f)) != _text(a.get(f))]
            print(f"DIFFERS {key}: {', '.join(fields[:8])}")
    print(f"{len(before)} vs {len(after)} configurations, {bad} differ")
    return 1 if bad else 0


def main(argv: list[str]) -> int:
    """Command line: write a fingerprint, or its known answers (``--known``), or compare two
    fingerprint files (``--compare``); returns the exit status."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("out", nargs="?", help="write the fingerprint to this JSON file")
    parser.add_argument("--compare", nargs=2, metavar=("BEFORE", "AFTER"),
                        help="compare two fingerprint files; exit 1 if any differ")
    parser.add_argument("--known", metavar="FILE",
                        help="with OUT: read that fingerprint; write its known answers to FILE")
    args = parser.parse_args(argv)
    if args.compare:
        with open(args.compare[0]) as f1, open(args.compare[1]) as f2:
            return _compare(json.load(f1), json.load(f2))
    if not args.out:
        parser.error("give an output file, or --compare BEFORE AFTER")
    if args.known:
        with open(args.out) as source:
            found = json.load(source)
        with open(args.known, "w") as f:
            json.dump(known_answers(found), f, indent=1, sort_keys=True)
            f.write("\n")
        return 0
    with open(args.out, "w") as f:
        json.dump(fingerprint(), f, indent=0, sort_keys=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
