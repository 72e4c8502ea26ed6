"""dl.plot(…, log_x=…, references=…): the catalog figures' logarithmic ε axis and theory
lines (ζ/2, the finite-ε lower bound, constants) on a notebook sweep (issue 24, part 4)."""

from __future__ import annotations

import math

import matplotlib
import pytest

import dispatchlab as dl
from dispatchlab import ValidationError
from dispatchlab.specs.figure import ReferenceLine


@pytest.fixture(scope="module")
def frame():
    return dl.sweep("3x0.3,3x0.6", ["jsq", "pod"], epsilon=[0.2, 0.5, 1.0], slots=4_000,
                    workers=1)


def test_log_x_and_the_zeta_and_lower_bound_lines(frame) -> None:
    fig = dl.plot(frame, x="epsilon", y="epsilon_total_queue", log_x=True,
                  references=["zeta/2", 1.5,
                              ReferenceLine("bound", field="lower_bound_total_queue",
                                            style=":")])
    (ax,) = fig.axes
    assert ax.get_xscale() == "log"
    assert [t.get_text() for t in ax.get_xticklabels()] == ["0.2", "0.5", "1"]
    legend = [t.get_text() for t in ax.get_legend().get_texts()]
    assert "ζ/2" in legend and "1.5" in legend
    expected = float(frame["heavy_traffic_limit"].iloc[0])
    assert any(math.isclose(float(line.get_ydata()[0]), expected) for line in ax.get_lines())
    assert "bound" in legend and any(line.get_linestyle() == ":" for line in ax.get_lines())
    assert isinstance(fig, matplotlib.figure.Figure)


@pytest.mark.parametrize("references, field", [
    ("zeta/2", "references"), (["nope"], "references[0]"), ([math.inf], "references[0]"),
    ([True], "references[0]"), ([ReferenceLine("f", function="no.such:function")],
                                 "references[0]"),
])
def test_bad_references_are_refused(frame, references, field) -> None:
    with pytest.raises(ValidationError) as caught:
        dl.plot(frame, x="epsilon", references=references)
    assert caught.value.field.startswith(field)


def test_log_x_is_a_bool(frame) -> None:
    with pytest.raises(ValidationError) as caught:
        dl.plot(frame, x="epsilon", log_x="yes")
    assert caught.value.field == "log_x"
