"""The one error type that every user-facing entry point raises for bad input."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any


class ValidationError(ValueError):
    """Bad input: names the offending field and what is allowed.

    The CLI prints ``str(error)`` as one line and exits with status 2.
    """

    def __init__(self, field: str, message: str) -> None:
        super().__init__(f"{field}: {message}")
        self.field = field
        self.message = message

    def __reduce__(self) -> tuple[type, tuple[str, str]]:  # survives a worker process
        return type(self), (self.field, self.message)


class TooLarge(ValidationError):
    """A refusal for size: an exact solver's chain would exceed its state limit. Another
    method may still answer (``dispatchlab.exact``'s ``method="auto"`` tries one)."""


#: the largest integer an entry point takes (seeds, slots, max_states, …): the slot loop and
#: the solvers hold them as int64, with room to add and compare
INTEGER_LIMIT = 2**62


def refuse_unknown(function: Callable[..., Any], unknown: Mapping[str, object], *,
                   name: str | None = None) -> None:
    """A ValidationError naming the first of the ``unknown`` keywords given to ``function``
    (which takes them as ``**unknown``) and listing the keywords its signature takes,
    instead of Python's TypeError. ``name``: how to call it (default: its qualified name)."""
    if not unknown:
        return
    raise ValidationError(sorted(unknown)[0], f"unknown keyword of "
                          f"{name or function.__qualname__}; allowed: "
                          f"{', '.join(keywords_of(function))}")


def keywords_of(function: Callable[..., Any]) -> list[str]:
    """The names ``function`` takes as keywords, in its signature's order (not ``*args``
    or ``**kwargs``)."""
    import inspect

    kinds = (inspect.Parameter.POSITIONAL_OR_KEYWORD, inspect.Parameter.KEYWORD_ONLY)
    return [parameter.name for parameter in inspect.signature(function).parameters.values()
            if parameter.kind in kinds]


def require(condition: bool, field: str, message: str) -> None:
    """Raise :class:`ValidationError` for ``field`` unless ``condition`` holds."""
    if not condition:
        raise ValidationError(field, message)


class SimulationError(RuntimeError):
    """A run reached an impossible state: jobs not conserved, ΣQ below the pooled queue q,
    a negative queue. Never the user's input but a bug (in a policy or the engine), so the
    CLI prints it as one line and exits with status 1, not 2."""


class PolicyError(SimulationError):
    """A policy broke the contract of the compiled interface, e.g. its ``choose`` returned
    a server index outside 0 … N − 1. Names the policy; CLI exit status 1."""

    def __init__(self, policy: str, message: str) -> None:
        super().__init__(f"policy {policy}: {message}")
        self.policy = policy
        self.message = message

    def __reduce__(self) -> tuple[type, tuple[str, str]]:  # survives a worker process
        return type(self), (self.policy, self.message)
