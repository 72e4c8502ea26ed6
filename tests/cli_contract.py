"""The contract every command-line call keeps, for the tests that feed it hostile input:
exit 0, or exit 2 with exactly one ``error: FIELD:`` line, nothing on stdout, no traceback
and no warning of ours."""

from __future__ import annotations

import warnings

import pytest

from dispatchlab.cli import main


def run_clean(capsys: pytest.CaptureFixture[str], argv: list[str]) -> tuple[int, str, str]:
    """``main(argv)`` in-process; asserts the contract every call must keep."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        code = main(argv)
    out, err = capsys.readouterr()
    ours = [w for w in caught if not issubclass(w.category, DeprecationWarning | FutureWarning
                                                | PendingDeprecationWarning)]
    assert not ours, f"warnings: {[str(w.message) for w in ours]}"
    assert code in (0, 2), f"exit {code}: {err}"
    assert "Traceback" not in err and "Traceback" not in out
    if code == 2:
        assert out == "", "output on error"
        lines = err.strip().splitlines()
        assert len(lines) == 1 and lines[0].startswith("error: "), err
    return code, out, err
