"""Cases that go wrong on purpose, to test the runner (only `--family selftest`).

Index mod 5: 0 returns, 1 raises an RlangError, 2 raises a foreign exception (a
traceback), 3 kills its process with SIGSEGV (a crash), 4 sleeps past any timeout
(a hang)."""
from __future__ import annotations

import os
import signal
import time

from .outcome import guarded

KINDS = ("ok", "error", "traceback", "crash", "hang")


def make(rng):
    return KINDS[rng.randrange(len(KINDS))]


def run(kind: str):
    from rlang import RlangError

    def act():
        if kind == "error":
            raise RlangError("refused on purpose")
        if kind == "traceback":
            raise ZeroDivisionError("raised on purpose")
        if kind == "crash":
            os.kill(os.getpid(), signal.SIGSEGV)
        if kind == "hang":
            time.sleep(3600)
        return 1

    return guarded(act)


def describe(kind: str) -> str:
    return f"a case that ends as: {kind}"
