"""Progress of dl.sweep and dl.simulate in a Jupyter notebook, and nowhere else (issue 24,
part 4): one output updated in place by its display_id; a script or a test shows none."""

from __future__ import annotations

import sys
import types

import pytest

import dispatchlab as dl
from dispatchlab.core.progress_display import in_notebook, notebook_progress


def test_outside_a_notebook_there_is_no_progress(capsys) -> None:
    assert not in_notebook() and notebook_progress() is None
    dl.sweep("3x0.5", ["jsq"], load=[0.5, 0.6], slots=2_000, workers=1)
    out, err = capsys.readouterr()
    assert "sweep" not in out + err


class ZMQInteractiveShell:  # the class name Jupyter's kernel shell has
    pass


def test_in_a_kernel_one_line_is_updated_in_place(monkeypatch) -> None:
    shown: list[tuple[str, str]] = []

    class Handle:
        def update(self, obj, metadata=None) -> None:
            assert metadata == {"dispatchlab": "progress"}
            shown.append(("update", obj.data))

    def display(obj, display_id=False, metadata=None):
        assert display_id is True and metadata == {"dispatchlab": "progress"}
        shown.append(("display", obj.data))
        return Handle()

    ipython = types.ModuleType("IPython")
    ipython.get_ipython = lambda: ZMQInteractiveShell()
    display_module = types.ModuleType("IPython.display")
    display_module.display = display
    display_module.HTML = lambda text: types.SimpleNamespace(data=text)
    ipython.display = display_module
    monkeypatch.setitem(sys.modules, "IPython", ipython)
    monkeypatch.setitem(sys.modules, "IPython.display", display_module)
    assert in_notebook()
    dl.sweep("3x0.5", ["jsq", "pod"], load=[0.5, 0.6], slots=2_000, workers=1)
    assert [kind for kind, _ in shown] == ["display"] + ["update"] * 5
    assert "0 of 4 points" in shown[0][1] and "<progress" in shown[0][1]
    assert "2 of 4 points, ETA" in shown[2][1]
    assert "sweep notebook: 4 points in" in shown[-1][1]
    shown.clear()
    monkeypatch.setattr("dispatchlab.engine.control.PROGRESS_AFTER_SECONDS", 0.0)
    dl.simulate(dl.System.build("3x0.5", load=0.9), "jsq", slots=200_000, seed=1)
    assert shown and shown[0][0] == "display" and "simulate jsq: slot" in shown[0][1]


@pytest.mark.parametrize("workers", [2])
def test_a_pooled_simulate_shows_nothing(monkeypatch, workers: int) -> None:
    # the replications run in workers: no progress reaches this process, none is shown
    calls = []
    monkeypatch.setattr("dispatchlab.simulation.execute.notebook_progress",
                        lambda: calls.append(1))
    dl.simulate(dl.System.build("3x0.5", load=0.9), "jsq", slots=2_000, replications=2,
                workers=workers)
    assert calls == []
