"""The continuous-time policies by the names users type, their aliases and parameters,
checked and turned into what the engine reads."""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from dispatchlab.continuous import choose as rules
from dispatchlab.continuous.estimates import F_INTERVAL, F_P, N_POLICY_FLOATS
from dispatchlab.continuous.laws import Law
from dispatchlab.core.convert import CommandLineText
from dispatchlab.core.errors import ValidationError, require
from dispatchlab.model.values import as_flag, as_int, as_numbers, as_text


@dataclass(frozen=True)
class ContinuousPolicy:
    """One rule of :mod:`.choose`, what it takes, and what it is."""

    name: str
    code: int
    summary: str
    defaults: Mapping[str, Any] = field(default_factory=dict)


POLICIES: dict[str, ContinuousPolicy] = {policy.name: policy for policy in (
    ContinuousPolicy("random", rules.RANDOM, "a server uniformly at random"),
    ContinuousPolicy("wrandom", rules.WEIGHTED_RANDOM,
                     "a server at random with probability proportional to its speed"),
    ContinuousPolicy("rr", rules.ROUND_ROBIN,
                     "round robin: each dispatcher cycles through the servers from server 0"),
    ContinuousPolicy("wrr", rules.WEIGHTED_ROUND_ROBIN,
                     "smooth weighted round robin (nginx's): server n takes a share "
                     "proportional to its speed, evenly spread"),
    ContinuousPolicy("jsq", rules.JSQ,
                     "join the shortest queue: the fewest jobs present, ties at random"),
    ContinuousPolicy("jsq-d", rules.JSQ_D,
                     "JSQ(d), the power of d choices: d servers sampled at random "
                     "(distinct unless replace), the fewest jobs among them, ties at random",
                     {"d": 2, "replace": False}),
    ContinuousPolicy("jiq", rules.JIQ,
                     "join the idle queue: an idle server at random if any, else any "
                     "server at random"),
    ContinuousPolicy("lwl", rules.LWL,
                     "least work left: the server that would empty first (its unfinished "
                     "work over its speed), ties at random"),
    ContinuousPolicy("sita", rules.SITA,
                     "size interval task assignment: jobs up to cutoffs[0] to server 0, "
                     "up to cutoffs[1] to server 1, …; cutoffs 'equal-load' (default) "
                     "share the load in proportion to the speeds",
                     {"cutoffs": "equal-load"}),
    ContinuousPolicy("l-jsq", rules.L_JSQ,
                     "LED's L-JSQ: the smallest of the dispatcher's own estimates, ties at "
                     "random; estimates refreshed after decisions by push (the dispatcher "
                     "samples `probes` servers with probability p), pull (a server "
                     "reports to a random dispatcher at a departure with probability p) or "
                     "periodic (every `interval`, all dispatchers learn every count)",
                     {"update": "pull", "p": 0.1, "probes": 1, "increment": False,
                      "interval": 1.0}),
    ContinuousPolicy("l-pod", rules.L_POD,
                     "LED's L-Pod: d distinct servers sampled, the smallest of the "
                     "dispatcher's estimates among them; updates as l-jsq",
                     {"d": 2, "update": "pull", "p": 0.1, "probes": 1, "increment": False,
                      "interval": 1.0}),
)}
#: the names of other tools and papers, with the parameters they stand for
ALIASES: dict[str, tuple[str, dict[str, Any]]] = {
    "p2c": ("jsq-d", {"d": 2}),
    "pod": ("jsq-d", {}),
    "supermarket": ("jsq-d", {}),
    "least-request": ("jsq-d", {"d": 2, "replace": True}),
    "weighted-random": ("wrandom", {}),
    "round-robin": ("rr", {}),
    "weighted-round-robin": ("wrr", {}),
    "least-work-left": ("lwl", {}),
    "shortest-queue": ("jsq", {}),
    "idle-queue": ("jiq", {}),
    "l-jsq-push": ("l-jsq", {"update": "push"}),
    "l-jsq-pull": ("l-jsq", {"update": "pull"}),
    "l-pod-push": ("l-pod", {"update": "push"}),
    "l-pod-pull": ("l-pod", {"update": "pull"}),
    "stale-jsq": ("l-jsq", {"update": "periodic"}),
}
UPDATES = {"push": rules.PUSH, "pull": rules.PULL, "periodic": rules.PERIODIC}
#: how many sizes the equal-load cutoffs of SITA are estimated from
CUTOFF_SAMPLE = 1 << 20


@dataclass(frozen=True)
class PolicyArrays:
    """What the engine reads for a policy: its code and parameter arrays."""

    name: str
    code: int
    params: dict[str, Any]
    ints: np.ndarray
    floats: np.ndarray
    cumulative: np.ndarray
    cutoffs: np.ndarray
    #: a user's rule (:mod:`.user_rules`): its function (sent to workers by reference), its
    #: parameters' array and the floats of state each dispatcher keeps
    rule: Any = None
    rule_params: np.ndarray = field(default_factory=lambda: np.zeros(1))
    state: int = 0


def from_command_line_number(key: str, value: Any) -> Any:
    """A user rule's parameter typed on the command line (``--set w=0.5``) as a number;
    any other value as it is."""
    if not isinstance(value, CommandLineText):
        return value
    try:
        return float(str(value).strip())
    except ValueError:
        raise ValidationError(f"policy_params.{key}",
                              f"expected a number (got {str(value)!r})") from None


def _from_command_line(key: str, value: Any) -> Any:
    """A parameter typed on the command line (``--set d=2``), read as its key's type; any
    other value is left to the checks below (a Python string is never read as a number)."""
    if not isinstance(value, CommandLineText):
        return value
    field_name, text = f"policy_params.{key}", str(value).strip()
    if key in ("d", "probes"):
        require(text.isdigit(), field_name, f"expected an integer (got {text!r})")
        return int(text)
    if key in ("p", "interval"):
        try:
            return float(text)
        except ValueError:
            raise ValidationError(field_name, f"expected a number (got {text!r})") from None
    if key in ("replace", "increment"):
        require(text.lower() in ("true", "false"), field_name,
                f"expected true or false (got {text!r})")
        return text.lower() == "true"
    if key == "cutoffs" and text != "equal-load":
        try:
            return [float(part) for part in text.split(",")]
        except ValueError:
            raise ValidationError(field_name, f"expected 'equal-load' or comma-separated "
                                              f"sizes (got {text!r})") from None
    return text


def resolve(name: object, params: Mapping[str, Any] | None = None
            ) -> tuple[ContinuousPolicy, dict[str, Any]]:
    """The policy called ``name`` (or an alias of it) and its parameters, defaults filled."""
    text = as_text(name, "policy").strip().lower()
    alias_params: dict[str, Any] = {}
    if text in ALIASES:
        text, alias_params = ALIASES[text]
    require(text in POLICIES, "policy",
            f"unknown continuous-time policy {name!r}; allowed: "
            f"{', '.join([*POLICIES, *ALIASES, *RULES])} (a rule of your own: --import the "
            "module that registers it)")
    policy = POLICIES[text]
    given = dict(params or {})
    for key in given:
        require(key in policy.defaults, f"policy_params.{key}",
                f"{policy.name} takes {', '.join(policy.defaults) or 'no parameters'}")
    given = {key: _from_command_line(key, value) for key, value in given.items()}
    return policy, {**policy.defaults, **alias_params, **given}


def _user_rule(name: object) -> ContinuousRule | None:
    """The registered user rule called ``name`` (:mod:`.user_rules`), if any."""
    if not isinstance(name, str):
        return None
    return RULES.get(name.strip().lower())


def equal_load_cutoffs(speeds: np.ndarray, sizes: Law) -> np.ndarray:
    """SITA's cutoffs c_0 < … < c_{N−2} that give server n the share s_n/Σs of the work,
    from the quantiles of the size-biased law, estimated on CUTOFF_SAMPLE sizes of a fixed
    stream (so one law always gives the same cutoffs)."""
    from dispatchlab.compiled.rng import make_rng_state
    from dispatchlab.continuous.laws import draw_many

    values = np.empty(CUTOFF_SAMPLE)
    draw_many(make_rng_state(20261206), sizes.code, sizes.a, sizes.b, sizes.c, values)
    values.sort()
    work = np.cumsum(values)
    shares = np.cumsum(speeds)[:-1] / speeds.sum()
    return values[np.searchsorted(work, shares * work[-1])]


def policy_arrays(name: object, params: Mapping[str, Any] | None, speeds: np.ndarray,
                  sizes: Law) -> PolicyArrays:
    """Check ``name`` and ``params`` against the servers and build the engine's arrays."""
    if params is not None and not isinstance(params, Mapping):
        raise ValidationError("policy_params", f"expected a mapping of parameter names to "
                                               f"values (got {params!r})")
    user = _user_rule(name)
    if user is not None:
        values, array = _rule_params(user, dict(params or {}))
        return PolicyArrays(user.name, rules.USER, values, np.zeros(rules.N_POLICY_INTS,
                                                                    dtype=np.int64),
                            np.zeros(N_POLICY_FLOATS), np.cumsum(speeds).astype(float),
                            np.full(max(speeds.size - 1, 1), math.inf), user.function,
                            array, user.state)
    policy, values = resolve(name, params)
    N = speeds.size
    ints = np.zeros(rules.N_POLICY_INTS, dtype=np.int64)
    floats = np.zeros(N_POLICY_FLOATS)
    cutoffs = np.full(max(N - 1, 1), math.inf)
    if policy.code in (rules.JSQ_D, rules.L_POD):
        d = as_int(values["d"], "policy_params.d", 1, 1 << 20)
        replace = as_flag(values.get("replace", False), "policy_params.replace")
        require(replace or d <= N, "policy_params.d",
                f"d = {d} distinct servers out of N = {N}: d must be ≤ N (or replace=True)")
        ints[rules.P_D], ints[rules.P_REPLACE] = d, int(replace)
        values["d"] = d
        if "replace" in values:  # (L-Pod samples distinct servers, as [LED] asks)
            values["replace"] = replace
    if policy.code in (rules.L_JSQ, rules.L_POD):
        values = _estimate_params(values, ints, floats, N)
    if policy.code == rules.SITA:
        given = values["cutoffs"]
        if isinstance(given, str):
            require(given == "equal-load", "policy_params.cutoffs",
                    f"expected 'equal-load' or N − 1 = {N - 1} increasing sizes (got {given!r})")
            cutoffs = equal_load_cutoffs(speeds, sizes) if N > 1 else cutoffs
        else:
            array = as_numbers(given, "policy_params.cutoffs")
            require(array.size == N - 1, "policy_params.cutoffs",
                    f"expected N − 1 = {N - 1} cutoffs (got {array.size})")
            require(bool(np.all(np.isfinite(array)) and np.all(np.diff(array) > 0)
                         and (array.size == 0 or array[0] > 0)), "policy_params.cutoffs",
                    "the cutoffs must be finite, positive and increasing")
            cutoffs = array.astype(float) if N > 1 else cutoffs
        values = {"cutoffs": given if isinstance(given, str) else [float(c) for c in cutoffs]}
    return PolicyArrays(policy.name, policy.code, values, ints, floats,
                        np.cumsum(speeds).astype(float), np.ascontiguousarray(cutoffs))


def _estimate_params(values: dict[str, Any], ints: np.ndarray, floats: np.ndarray,
                     servers: int) -> dict[str, Any]:
    """LED's update parameters checked into ``ints`` and ``floats``."""
    update = as_text(values["update"], "policy_params.update")
    require(update in UPDATES, "policy_params.update",
            f"expected push, pull or periodic (got {update!r})")
    p = values["p"]
    require(isinstance(p, int | float) and not isinstance(p, bool) and 0 < p <= 1,
            "policy_params.p", f"the update probability p must lie in (0, 1] (got {p!r})")
    probes = as_int(values["probes"], "policy_params.probes", 1, servers)
    interval = values["interval"]
    require(isinstance(interval, int | float) and not isinstance(interval, bool)
            and 1e-9 <= interval <= 1e12, "policy_params.interval",
            f"the broadcast interval must lie in [1e-9, 1e12] (got {interval!r})")
    increment = as_flag(values["increment"], "policy_params.increment")
    ints[rules.P_UPDATE], ints[rules.P_PROBES] = UPDATES[update], probes
    ints[rules.P_INCREMENT] = int(increment)
    floats[F_P], floats[F_INTERVAL] = float(p), float(interval)
    return {**values, "update": update, "p": float(p), "probes": probes,
            "increment": increment, "interval": float(interval)}


# -- a user's own rules (continuous.user_rules compiles and runs them) -------------------

#: the most floats of state a dispatcher may keep
MAX_STATE = 1 << 20


@dataclass(frozen=True)
class ContinuousRule:
    """A registered user rule: its name, function, summary, parameters (name → default,
    floats) and the floats of state each dispatcher keeps."""

    name: str
    function: Callable[..., int]
    summary: str
    params: Mapping[str, float] = field(default_factory=dict)
    state: int = 0


#: the registered user rules by name
RULES: dict[str, ContinuousRule] = {}


def register_continuous_rule(name: str, function: Callable[..., int], summary: str = "", *,
                             params: Mapping[str, float] | None = None,
                             state: int = 0) -> ContinuousRule:
    """Register ``function`` as the continuous-time policy ``name`` (see the module's
    docstring for what it is called with); ``params``: its parameters and their defaults
    (floats, given as ``policy_params`` and ``--set``); ``state``: the floats of state each
    dispatcher keeps. Registering a name again replaces the rule (a reloaded module)."""
    require(isinstance(name, str) and name.strip() == name and name.isprintable()
            and bool(name) and "," not in name, "name",
            f"a rule's name is printable text without spaces at its ends or commas "
            f"(got {name!r})")
    key = name.lower()
    require(key not in POLICIES and key not in ALIASES, "name",
            f"{name!r} is a built-in continuous-time policy; choose another name")
    require(callable(function) and hasattr(function, "__code__"), "function",
            f"expected a plain Python function (got {function!r})")
    require(function.__code__.co_argcount == 7, "function",
            "a rule takes (m, size, counts, speeds, params, state, rng) "
            f"(got {function.__code__.co_argcount} arguments)")
    defaults = dict(params or {})
    for key_name, value in defaults.items():
        require(isinstance(key_name, str) and key_name.isidentifier(), "params",
                f"parameter names are identifiers (got {key_name!r})")
        require(isinstance(value, int | float) and not isinstance(value, bool)
                and math.isfinite(value), f"params.{key_name}",
                f"a default is a finite number (got {value!r})")
    require(isinstance(state, int) and not isinstance(state, bool) and 0 <= state <= MAX_STATE,
            "state", f"the floats of state a dispatcher keeps: 0 … {MAX_STATE:,} (got {state!r})")
    rule = ContinuousRule(key, function, str(summary), defaults, state)
    RULES[key] = rule
    return rule


def _rule_params(rule: ContinuousRule, given: Mapping[str, Any]) -> tuple[dict[str, float],
                                                                          np.ndarray]:
    """The rule's parameters (defaults filled, each a finite number) and their array."""
    for key in given:
        require(key in rule.params, f"policy_params.{key}",
                f"{rule.name} takes {', '.join(rule.params) or 'no parameters'}")
    values: dict[str, float] = {}
    for key, default in rule.params.items():
        value = from_command_line_number(key, given.get(key, default))
        require(isinstance(value, int | float) and not isinstance(value, bool)
                and math.isfinite(value), f"policy_params.{key}",
                f"expected a finite number (got {value!r})")
        values[key] = float(value)
    return values, np.array(list(values.values()) or [0.0])
