"""A continuous-time run written down: the TOML tables of a run spec whose ``[run]`` says
``time = "continuous"``, read into :func:`~dispatchlab.continuous.simulate_continuous`'s
keywords.

    [system]
    servers = "8x1,8x2"          # the speeds s_n
    load = 0.8                   # or rate = λ; a trace sets its own
    sizes = "bpareto:1.5,1,1e6"
    discipline = "ps"
    arrivals = "poisson"         # or erlang:K, hyperexp:C2, det, trace:PATH (relative to
                                 # the spec's folder)
    dispatchers = 1

    [policy]
    name = "p2c"
    params = {}

    [run]
    time = "continuous"
    jobs = 1000000
    replications = 10
    seed = 0

The types are checked here, naming the table and key (``run.jobs``); the values' ranges
by ``simulate_continuous`` itself.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from dispatchlab.core.convert import as_float, as_int, as_str, as_table, check_keys
from dispatchlab.core.errors import require
from dispatchlab.core.precision_target import Precision

SYSTEM_KEYS: dict[str, Any] = {"servers": None, "dispatchers": as_int, "load": as_float,
                               "rate": as_float, "arrivals": as_str, "sizes": as_str,
                               "discipline": as_str}
RUN_KEYS: dict[str, Any] = {"time": as_str, "jobs": as_int, "warmup": as_int,
                            "warmup_method": as_str,
                            "seed": as_int, "replications": as_int, "bound": as_int,
                            "precision": lambda value, name: Precision.from_table(
                                value, name, budget="max_jobs")}
TIMES = ("slotted", "continuous")


def spec_time(data: Mapping[str, Any]) -> str:
    """The model a parsed run spec asks for (``[run] time``; slotted when absent)."""
    run = as_table(data.get("run", {}), "run")
    time = as_str(run.get("time", "slotted"), "run.time").lower()
    require(time in TIMES, "run.time", f"expected slotted or continuous (got {time!r})")
    return time


def _servers(value: Any, name: str) -> Any:
    if isinstance(value, str):
        return value
    require(isinstance(value, list), name, "expected COUNTxSPEED text or a list of speeds")
    return [as_float(item, f"{name}[{i}]") for i, item in enumerate(value)]


def continuous_settings(data: Mapping[str, Any], base_dir: Path) -> dict[str, Any]:
    """``simulate_continuous``'s keywords (``servers``, ``policy``, ``policy_params`` and
    the settings) from a parsed continuous-time run spec."""
    check_keys(data, "", ("system", "policy", "run"))
    settings: dict[str, Any] = {}
    for table, converters in (("system", SYSTEM_KEYS), ("run", RUN_KEYS)):
        values = as_table(data.get(table, {}), table)
        check_keys(values, table, tuple(converters))
        for key, value in values.items():
            convert = converters[key] or _servers
            settings[key] = convert(value, f"{table}.{key}")
    settings.pop("time", None)
    arrivals = settings.get("arrivals", "")
    if arrivals.lower().startswith("trace:"):  # relative to the spec's folder
        path = Path(arrivals[len("trace:"):].strip())
        settings["arrivals"] = f"trace:{path if path.is_absolute() else base_dir / path}"
    policy = as_table(data.get("policy", {}), "policy")
    check_keys(policy, "policy", ("name", "params"))
    if "name" in policy:
        settings["policy"] = as_str(policy["name"], "policy.name")
    if "params" in policy:
        settings["policy_params"] = as_table(policy["params"], "policy.params")
    return settings
