"""The two-model [LED] Fig. 1 experiments: push d, the closing note and its verdicts."""

from __future__ import annotations

import math

import pandas as pd

from dispatchlab.experiments.catalog import catalog_entry
from dispatchlab.experiments.catalog.led_fig1 import BATCH, SLOTTED, fig1_summary, push_d


def test_push_d_can_spend_four_messages_per_job():
    # 2d·M ≥ 4λ_Σ: batch λ_Σ = 0.98·30 → d = 6; slotted λ_Σ = 0.98·300 → d = 59
    assert push_d((BATCH,), 0.98) == 6
    assert push_d((SLOTTED,), 0.98) == 59
    assert push_d((BATCH,), 0.1) == 2


def point(policy, y, half, completion, load=0.9, system="S", messages=4.0):
    return {"system": system, "policy_label": policy, "x": load, "mean_total_queue": y,
            "ci_low": y - half, "ci_high": y + half, "mean_completion_time": completion,
            "messages_per_arrival": messages}


def test_summary_says_where_led_beats_which_jsq(tmp_path):
    frame = pd.DataFrame([
        point("L-JBA-Pull", 100.0, 5.0, 4.0), point("L-JBA-Pull", 110.0, 5.0, 4.4),
        point("L-JSQ-Pull (Po-2/dispatch)", 10.0, 1.0, 1.0),  # another budget: not compared
        point("JSQ (uniform ties)", 50.0, 2.0, 2.0),
        point("JSQ (shared ties)", 400.0, 10.0, 16.0),
        point("JSQ (lag 1)", 104.0, 3.0, 4.2),
        point("JIQ", math.nan, math.nan, math.nan),
    ])
    note = fig1_summary(frame, tmp_path)
    assert "LED beats JSQ (shared ties): yes" in note
    assert "LED beats JSQ (uniform ties): no" in note
    assert "LED beats JSQ (lag 1): not resolved" in note
    assert "105 [" in note  # the two replications' mean, with the combined CI
    assert "unstable" in note
    assert (tmp_path / "led-beats-jsq.png").exists()


def test_every_fig1_experiment_has_a_closing_note():
    for name in ("led-fig1", "led-fig1-slotted", "led-fig1-slotted-spread"):
        assert catalog_entry(name).summary is fig1_summary
