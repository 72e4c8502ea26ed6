"""A stop (Ctrl-C, SIGTERM) during a compilation is never lost (compiled/interrupts.py).

llvmlite calls back into Python through ctypes while it generates code, and ctypes drops an
exception raised in a callback: a Ctrl-C landing there let a cold run go on to its end with
exit 0 (seen in tests/engine/test_compile_helper.py). Here the SIGINT is sent from inside such a
callback, during a compilation, so that it lands there every time.
"""

from __future__ import annotations

import subprocess
import sys

import pytest

from sigint import default_sigint

SIGNAL_IN_A_CALLBACK = """
import ctypes, os, signal, time
from numba import njit
from numba.core import event
import dispatchlab.compiled  # installs the wrappers
from dispatchlab.core.signals import signals_as_interrupts
{unwrap}

def interrupt_inside_a_callback():
    os.kill(os.getpid(), signal.{signal})
    time.sleep(0.05)  # the handler runs here, inside the callback

class Listener(event.Listener):
    def on_start(self, ev):
        ctypes.CFUNCTYPE(None)(interrupt_inside_a_callback)()
    def on_end(self, ev):
        pass

event.register("numba:compile", Listener())

@njit
def add(a, b):
    return a + b

with signals_as_interrupts():  # (SIGTERM raises as in the installed command)
    add.compile("int64(int64, int64)")
print("compiled and carried on")
"""


@pytest.mark.parametrize("wrapped", [True, False], ids=["kept", "lost-without-the-wrapper"])
@pytest.mark.parametrize(("signal", "raised"), [("SIGINT", "KeyboardInterrupt"),
                                                ("SIGTERM", "Terminated: stopped by SIGTERM")])
def test_a_stop_swallowed_by_a_callback_still_stops_the_compile(wrapped: bool, signal: str,
                                                                raised: str) -> None:
    # without the wrapper, numba's own compile: the interrupt is dropped (the case it fixes)
    unwrap = "" if wrapped else (
        "from numba.core.dispatcher import Dispatcher\n"
        "Dispatcher.compile = Dispatcher.compile.__wrapped__")
    code = SIGNAL_IN_A_CALLBACK.format(unwrap=unwrap, signal=signal)
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          timeout=120, preexec_fn=default_sigint)
    assert "Exception ignored on calling ctypes callback" in done.stderr
    if wrapped:
        assert done.returncode != 0 and "compiled and carried on" not in done.stdout
        assert done.stderr.rstrip().endswith(raised), done.stderr
    else:
        assert done.returncode == 0 and "compiled and carried on" in done.stdout
