"""Known answers: every configuration of the fingerprint set (every policy family, both
dispatch modes, push and pull LED, Π hooks, user strategies and decisions, two service laws)
gives, draw for draw, the numbers committed in ``known_answers/fingerprint.json``.

A change that alters a draw on purpose (a new sampler, a new law) rewrites the file with
``python -m dispatchlab.testing.fingerprint OUT.json`` and
``python -m dispatchlab.testing.fingerprint OUT.json --known tests/known_answers/fingerprint.json``
and says so in its commit.
"""

from __future__ import annotations

import json
from pathlib import Path

from dispatchlab.testing.fingerprint import SLOTS, differing, fingerprint, known_answers

KNOWN = Path(__file__).parent / "known_answers" / "fingerprint.json"


def test_fingerprint_matches_the_known_answers() -> None:
    known = json.loads(KNOWN.read_text())
    assert known["slots"] == SLOTS
    found = fingerprint(known["slots"])
    assert sorted(found) == sorted(known["configurations"])
    assert differing(found, known) == []


def test_a_changed_number_is_seen() -> None:
    found = {"a": {"mean_total_queue": 1.5, "p99": 3.0}, "b": {"mean_total_queue": 2.0}}
    known = known_answers(found)
    assert differing(found, known) == []
    changed = {"a": {"mean_total_queue": 1.5, "p99": 3.0000000000000004}, "b": found["b"]}
    assert differing(changed, known) == ["a"]
    assert differing({"a": found["a"]}, known) == ["b"]  # a configuration gone missing


def test_a_new_result_field_keeps_the_answers() -> None:
    known = known_answers({"a": {"mean_total_queue": 1.5}})
    assert differing({"a": {"mean_total_queue": 1.5, "new_field": 7}}, known) == []
