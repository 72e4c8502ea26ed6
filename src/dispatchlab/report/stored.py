"""An experiment's spec as a store holds it, validated before anything is drawn (light: the
command line refuses a received store's bad spec without loading pandas or matplotlib)."""

from __future__ import annotations

from dataclasses import replace

from dispatchlab.core.errors import require
from dispatchlab.experiments.store import Store
from dispatchlab.policies.base import policy_names
from dispatchlab.specs.continuous_grid import grid_from_json, is_continuous
from dispatchlab.specs.experiment import ExperimentSpec
from dispatchlab.specs.run import PolicySpec


def full_spec(store: Store, experiment: str) -> ExperimentSpec:
    """The whole spec of ``experiment`` as stored (unvalidated: data until validated)."""
    spec_json = store.experiment_spec(experiment)
    require(spec_json is not None, "experiment",
            f"{experiment!r} is not in {store.path}; stored: "
            + (", ".join(store.experiment_names()) or "nothing yet"))
    assert spec_json is not None
    return grid_from_json(spec_json, f"the stored spec of {experiment!r}")


def _unregistered(spec: ExperimentSpec) -> list[PolicySpec]:
    if is_continuous(spec):  # (its policies are checked by its own validate)
        return []
    known = set(policy_names())
    return [p for p in spec.policies
            if isinstance(p, PolicySpec) and isinstance(p.name, str)
            and p.name.strip().lower() not in known]


def unrendered_policies(store: Store, experiment: str) -> list[PolicySpec]:
    """The stored policies of ``experiment`` that this installation cannot render: their
    name is not registered here (``--import`` the module that registers them)."""
    return _unregistered(full_spec(store, experiment))


def left_out_line(store: Store, experiment: str, policy: PolicySpec) -> str:
    """The page's line for a stored policy it leaves out, and why."""
    points = sum(1 for row in store.points(experiment, status=None)
                 if row["policy_label"] == policy.display)
    return (f"policy {policy.name!r} ({policy.display}, {points} stored point(s)) not "
            "rendered: not registered in this installation (--import the module that "
            "registers it)")


def stored_spec(store: Store, experiment: str) -> ExperimentSpec:
    """The validated spec of ``experiment`` in ``store`` (before any file is written), less
    the policies not registered in this installation (:func:`unrendered_policies`; at least
    one must be): a received store is data, and a function it names resolves only among the
    registered reference functions (:mod:`dispatchlab.specs.references`)."""
    spec = full_spec(store, experiment)
    missing = _unregistered(spec)
    if missing:
        require(len(missing) < len(spec.policies), "policy",
                f"no stored policy of {experiment!r} is registered in this installation "
                f"({', '.join(repr(p.name) for p in missing)}); --import the module that "
                "registers them")
        spec = replace(spec, policies=tuple(p for p in spec.policies if p not in missing))
    spec.validate()
    return spec
