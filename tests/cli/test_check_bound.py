"""``dispatchlab check bound``: reference values without simulating."""

from __future__ import annotations

import json

import pytest

from dispatchlab.cli import main


def test_check_bound_json_matches_closed_forms(capsys):
    assert main(["check", "bound", "--servers", "50x0.1,50x0.5", "--dispatchers", "10",
                 "--load", "0.95", "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["weighted_random_total_queue"] == pytest.approx(4281.175, abs=0.01)
    # Poisson arrivals, Bernoulli service: ζ = μ_Σ + Σ μ_n(1 − μ_n), at the limit λ_Σ → μ_Σ
    assert data["zeta_half"] == pytest.approx((30 + 50 * 0.09 + 50 * 0.25) / 2)
    assert data["uniform_rand_critical_load"] == pytest.approx(100 * 0.1 / 30)
    low, high = data["pooled_queue_kingman_low"], data["pooled_queue_kingman_high"]
    assert low <= data["pooled_queue_mean"] <= high


def test_check_bound_table_and_bad_input(capsys):
    assert main(["check", "bound", "--servers", "4x0.5", "--epsilon", "0.2"]) == 0
    assert "E[q], the resource-pooled queue" in capsys.readouterr().out
    assert main(["check", "bound", "--servers", "4x0.5", "--load", "1.5"]) == 2
    assert "error: load:" in capsys.readouterr().err
