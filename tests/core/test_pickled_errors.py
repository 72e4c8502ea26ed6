"""Every exception type of dispatchlab survives a process boundary (issue 25, item 3).

A worker's exception reaches the parent by pickling; an exception whose constructor takes
more than its message (``ValidationError(field, message)``) needs ``__reduce__``, or the
parent sees ``TypeError … missing 'message'`` and then "a worker process died".
"""

from __future__ import annotations

import importlib
import inspect
import pickle
import pkgutil
from typing import Any

import pytest
from pool_tasks import refuse

import dispatchlab
from dispatchlab import ValidationError
from dispatchlab.cli import main
from dispatchlab.core.pools import map_tasks


def _exception_types() -> list[type[BaseException]]:
    """Every exception class defined in a dispatchlab module (the CLI's and numba's kernels
    are imported too: ``walk_packages`` imports each module)."""
    found: dict[str, type[BaseException]] = {}
    for module in pkgutil.walk_packages(dispatchlab.__path__, "dispatchlab."):
        loaded = importlib.import_module(module.name)
        for _, value in inspect.getmembers(loaded, inspect.isclass):
            if issubclass(value, BaseException) and value.__module__.startswith("dispatchlab"):
                found[f"{value.__module__}.{value.__qualname__}"] = value
    return [found[name] for name in sorted(found)]


def _sample(parameter: inspect.Parameter, index: int) -> Any:
    annotation = str(parameter.annotation)
    return index + 3 if "int" in annotation else f"value{index}"


def _instance(cls: type[BaseException]) -> BaseException:
    try:
        signature = inspect.signature(cls)
    except ValueError:  # the built-in constructor: (*args)
        return cls("one message")
    parameters = [p for p in signature.parameters.values()
                  if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)
                  and p.default is p.empty]
    if not parameters:
        return cls("one message")
    return cls(*(_sample(p, i) for i, p in enumerate(parameters)))


EXCEPTIONS = _exception_types()


def test_the_search_finds_the_known_types() -> None:
    names = {cls.__name__ for cls in EXCEPTIONS}
    assert {"ValidationError", "SimulationError", "PolicyError", "RunInterrupted",
            "PointError"} <= names


@pytest.mark.parametrize("cls", EXCEPTIONS, ids=lambda cls: cls.__qualname__)
def test_every_exception_type_pickles(cls: type[BaseException]) -> None:
    error = _instance(cls)
    again = pickle.loads(pickle.dumps(error))
    assert type(again) is cls
    assert str(again) == str(error)
    assert again.__dict__ == error.__dict__


def test_a_validation_error_crosses_a_real_process_pool() -> None:
    with pytest.raises(ValidationError) as caught:
        map_tasks(refuse, [0, 1], workers=2)
    assert caught.value.field == "replications"
    assert str(caught.value) == "replications: must be ≥ 1 (got 0)"


# each case starts a pool of two workers (≈ 2.5 s): the other refusals in the slow suite
@pytest.mark.parametrize(("option", "field"), [
    (["--replications", "0"], "replications"),
    *(pytest.param(["--precision-rel", value], "precision.rel", marks=pytest.mark.slow)
      for value in ("0", "nan", "-1"))])
def test_check_coverage_refuses_with_workers(option: list[str], field: str,
                                             capsys: pytest.CaptureFixture[str]) -> None:
    code = main(["check", "coverage", "--fast", "--runs", "2", "--workers", "2", *option])
    out, err = capsys.readouterr()
    assert code == 2, err
    assert out == "" and len(err.strip().splitlines()) == 1
    assert err.startswith(f"error: {field}: ")
