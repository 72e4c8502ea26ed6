"""typer's help renderer (``typer.rich_utils``) without its two heaviest imports.

``typer.rich_utils`` imports ``rich.markdown`` (markdown-it) for help written in Markdown
and ``rich.traceback`` (pygments) for pretty tracebacks at its top: about a third of a warm
``dispatchlab --help`` (benchmarks/README.md), though this CLI writes its help in Rich
markup and turns pretty exceptions off. :func:`install` imports ``typer.rich_utils`` with
a stand-in for each of the two classes, which loads the real one on first use: a help
page renders exactly as before, and whatever needs Markdown or a traceback still gets it.
"""

from __future__ import annotations

import importlib
import sys
import types
from typing import Any

#: the modules typer.rich_utils imports only for these classes
DEFERRED = (("rich.markdown", "Markdown"), ("rich.traceback", "Traceback"))


class _Deferred(type):
    """A stand-in class: calling it or reading an attribute uses the real class."""

    def _real(cls) -> Any:
        return getattr(importlib.import_module(cls.__module__), cls.__name__)

    def __call__(cls, *args: Any, **kwargs: Any) -> Any:
        return cls._real()(*args, **kwargs)

    def __getattr__(cls, name: str) -> Any:
        return getattr(cls._real(), name)


def install() -> None:
    """Import ``typer.rich_utils`` with the stand-ins (idempotent; a module already
    imported is used as it is)."""
    if "typer.rich_utils" in sys.modules:
        return
    stand_ins = []
    for module_name, class_name in DEFERRED:
        if module_name not in sys.modules:
            module = types.ModuleType(module_name)
            setattr(module, class_name, _Deferred(class_name, (), {"__module__": module_name}))
            sys.modules[module_name] = module
            stand_ins.append(module_name)
    try:
        importlib.import_module("typer.rich_utils")
    finally:  # the real modules load on first use
        for module_name in stand_ins:
            del sys.modules[module_name]
