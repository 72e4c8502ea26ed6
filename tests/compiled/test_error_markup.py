"""numba's error markup without colorama's stream wrapping (compiled/error_markup.py): the
same messages, and neither stream touched."""

from __future__ import annotations

import json
import os
import subprocess
import sys

# numba with its highlighting on (the suite turns it off, as the command line does): the
# markup and a real typing error, with numba's ColorShell, then with the project's
SCRIPT = r"""
import json, sys
from numba import njit
from numba.core import errors

def marked():
    scheme = errors.termcolor()
    return [scheme.code("x = 1"), scheme.errmsg("No implementation"),
            scheme.filename("f.py"), scheme.highlight("^"), scheme.indicate(">")]

def typing_error():
    @njit
    def bad(x):
        return x.no_such_attribute
    try:
        bad(1)
    except errors.TypingError as error:
        return str(error)

before = marked(), typing_error()
import dispatchlab.compiled  # installs the patch
shell = errors.ColorShell
errors.init = errors.deinit = errors.reinit = None  # colorama's: calling one fails
out, err = sys.stdout, sys.stderr
after = marked(), typing_error()
print(json.dumps({"before": before, "after": after, "shell": shell.__module__,
                  "streams_kept": sys.stdout is out and sys.stderr is err}))
"""


def test_the_markup_is_the_same_without_wrapping_the_streams() -> None:
    environ = {key: value for key, value in os.environ.items()
               if key != "NUMBA_DISABLE_ERROR_MESSAGE_HIGHLIGHTING"}
    done = subprocess.run([sys.executable, "-c", SCRIPT], env=environ, capture_output=True,
                          text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    found = json.loads(done.stdout.strip().splitlines()[-1])
    assert found["shell"] == "dispatchlab.compiled.error_markup"
    assert found["after"] == found["before"]
    assert "\x1b[1m" in found["before"][0][0]  # highlighting was on: bold, as numba marks up
    assert "no_such_attribute" in found["before"][1]
    assert found["streams_kept"]


def test_with_highlighting_off_numba_is_left_as_it_is() -> None:
    from numba.core import errors

    import dispatchlab.compiled  # noqa: F401 (installed on import)

    assert os.environ.get("NUMBA_DISABLE_ERROR_MESSAGE_HIGHLIGHTING")  # (tests/conftest.py)
    assert not hasattr(errors, "ColorShell")
    assert errors.termcolor().code("x") == "x"
