"""The start of a child process's Python code that records what numba compiles: each
``numba:compile`` event's function, by qualified name, in ``compiled`` (``json`` and
``sys`` imported for the code that follows)."""

RECORD_COMPILES = """
import json, sys
from numba.core import event

compiled = []


class _Recorder(event.Listener):
    def on_start(self, e):
        pass

    def on_end(self, e):
        compiled.append(e.data["dispatcher"].py_func.__qualname__)


event.register("numba:compile", _Recorder())
"""
