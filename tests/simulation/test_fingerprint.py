"""Known answers: every configuration of the fingerprint set (every policy family, both
dispatch modes, push and pull LED, Π hooks, user strategies and decisions, two service laws)
gives, draw for draw, the numbers committed in ``known_answers/fingerprint.json``: counts
and text exactly, floats to a relative 1e-9 (processors differ in their last bits; see
:mod:`dispatchlab.testing.fingerprint`).

A change that alters a draw on purpose (a new sampler, a new law) rewrites the file with
``python -m dispatchlab.testing.fingerprint OUT.json`` and
``python -m dispatchlab.testing.fingerprint OUT.json --known tests/known_answers/fingerprint.json``
and says so in its commit.
"""

from __future__ import annotations

import json
import math
from pathlib import Path

from dispatchlab.testing.fingerprint import (
    SLOTS,
    differences,
    differing,
    fingerprint,
    known_answers,
)

KNOWN = Path(__file__).parents[1] / "known_answers" / "fingerprint.json"


def test_fingerprint_matches_the_known_answers() -> None:
    known = json.loads(KNOWN.read_text())
    assert known["slots"] == SLOTS
    found = fingerprint(known["slots"])
    assert sorted(found) == sorted(known["configurations"])
    assert differences(found, known) == {}


def test_a_changed_number_is_seen() -> None:
    found = {"a": {"mean_total_queue": 1.5, "p99": 3.0, "jobs": 10},
             "b": {"mean_total_queue": 2.0, "distribution": [0.25] * 4 + [0.0] * 100}}
    known = known_answers(found)
    assert differing(found, known) == []
    changed = {"a": {**found["a"], "p99": 3.0 + 1e-6}, "b": found["b"]}
    assert differences(changed, known) == {"a": ["p99"]}
    counted = {"a": {**found["a"], "jobs": 11}, "b": found["b"]}
    assert differences(counted, known) == {"a": ["jobs"]}
    moved = {"a": found["a"], "b": {**found["b"], "distribution": [0.25] * 3 + [0.0, 0.25]
                                     + [0.0] * 99}}
    assert differences(moved, known) == {"b": ["distribution"]}
    assert differences({"a": found["a"]}, known) == {"b": ["missing"]}
    typed = {"a": {**found["a"], "jobs": 10.0}, "b": found["b"]}  # an int is not a float
    assert differing(typed, known) == ["a"]


def test_the_last_bits_of_a_float_may_differ_between_processors() -> None:
    found = {"a": {"mean_total_queue": 11.353235081673526, "nan": math.nan,
                   "distribution": [1 / 3] * 80}}
    known = known_answers(found)
    ulps = {"a": {"mean_total_queue": 11.35323508167353, "nan": math.nan,
                  "distribution": [1 / 3 + 2**-54] * 80}}
    assert differing(ulps, known) == []
    assert differing({"a": {**found["a"], "nan": 0.0}}, known) == ["a"]


def test_a_new_result_field_keeps_the_answers() -> None:
    known = known_answers({"a": {"mean_total_queue": 1.5}})
    assert differing({"a": {"mean_total_queue": 1.5, "new_field": 7}}, known) == []
