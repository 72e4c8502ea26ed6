"""No paired difference against a run without a mean (issue 38).

Found by a hostile user: ``compare --paired -p jiq -p pod:d=2 --servers 5x0.2,5x0.8
--dispatchers 3 --load 0.9`` printed ``pod -15006 [-17712, -12300]`` "vs jiq" (in JSON a
number, with ``mean_b`` null) though jiq was judged unstable. Random routing on
2x0.2,2x0.8 at ρ = 0.7 overloads the slow servers: the same case, smaller.
"""

from __future__ import annotations

import json
import math

import pytest

import dispatchlab as dl
from dispatchlab.cli import main
from dispatchlab.simulation.compare import NO_MEAN

ARGS = ["--servers", "2x0.2,2x0.8", "--load", "0.7", "--slots", "20000"]


@pytest.mark.parametrize("order", [("jsq", "rand"), ("rand", "jsq")])
def test_a_side_without_a_mean_gives_no_difference(order: tuple[str, str]) -> None:
    system = dl.System.build("2x0.2,2x0.8", load=0.7)
    pair = dl.compare(system, *order, slots=20_000)
    unstable = pair.result_a if order[0] == "rand" else pair.result_b
    assert unstable.stability == "unstable"
    assert math.isnan(pair.difference) and math.isnan(pair.ci_low) and math.isnan(pair.ci_high)
    assert pair.method.startswith(NO_MEAN)
    assert str(pair).endswith("no difference of means")


@pytest.mark.parametrize("json_", [False, True])
def test_the_cli_says_no_mean_and_writes_null(json_: bool,
                                              capsys: pytest.CaptureFixture[str]) -> None:
    argv = ["compare", "--paired", "-p", "rand", "-p", "jsq", *ARGS]
    assert main(argv + (["--json"] if json_ else [])) == 0
    out = capsys.readouterr().out
    if json_:
        pair = json.loads(out)["paired"][0]
        assert pair["difference"] is None and pair["ci_low"] is None
        assert pair["mean_b"] is None and pair["method"].startswith(NO_MEAN)
    else:
        assert NO_MEAN in out
