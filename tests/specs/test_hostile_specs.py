"""Experiment spec files a hostile user writes (found attacking issue 25).

``seed = true`` or ``replications = true`` ran as seed 1 and one replication (a bool is
not an int); ``[options] replications = 0`` (or any bad simulate option) was accepted by
the spec and failed in the first point, after the sweep had printed its header. Each is
now one ``error:`` line before anything runs, from simulate's own checks.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from cli_contract import run_clean

GRID = """name = "hostile"
loads = [0.5]
slots = 1000
{top}
[[systems]]
servers = "3x0.5"
[[policies]]
name = "jsq"
{tail}
"""

CASES = [
    ("seed = true", "", "seed"),
    ("replications = true", "", "replications"),
    ("", "[options]\nreplications = 0", "replications"),
    ("", "[options]\nreplications = true", "replications"),
    ("", "[options]\nbound = 9223372036854775807", "bound"),
    ("", "[options]\nimbalance = 1", "imbalance"),
    ("", "[options]\ntrack_delay = false", "options.track_delay"),
    ("", "[options]\nestimator = \"best\"", "estimator"),
]


@pytest.mark.parametrize(("top", "tail", "field"), CASES,
                         ids=[f"{top or tail}" for top, tail, _ in CASES])
def test_a_bad_value_is_refused_before_the_sweep_starts(
        tmp_path: Path, top: str, tail: str, field: str,
        capsys: pytest.CaptureFixture[str]) -> None:
    spec = tmp_path / "hostile.toml"
    spec.write_text(GRID.format(top=top, tail=tail), encoding="utf-8")
    code, out, err = run_clean(capsys, ["sweep", str(spec), "--store",
                                        str(tmp_path / "s.sqlite"), "--no-progress",
                                        "--out", str(tmp_path / "out")])
    assert code == 2 and err.startswith(f"error: {field}: "), err
    assert not (tmp_path / "s.sqlite").exists()


def test_a_trace_with_a_byte_order_mark_reads_like_a_spec_file(tmp_path: Path) -> None:
    """A CSV trace saved by Excel starts with a UTF-8 byte-order mark; it was "not numeric
    (line 1, column 1)" although spec files skip the mark."""
    from dispatchlab.model.arrivals import load_trace

    marked, plain = tmp_path / "marked.csv", tmp_path / "plain.csv"
    marked.write_bytes(b"\xef\xbb\xbf1\r\n0\r\n2\r\n")
    plain.write_bytes(b"1\n0\n2\n")
    assert load_trace(marked).tolist() == load_trace(plain).tolist() == [1, 0, 2]
