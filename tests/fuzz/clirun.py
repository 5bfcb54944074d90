"""Run rlang's command line in this process and classify what it did: `cli(*argv)`."""
from __future__ import annotations

import io
from contextlib import redirect_stderr, redirect_stdout

from .outcome import Outcome, guarded

EXIT_INTERNAL = 70


def cli(*argv: str) -> Outcome:
    """`rlang ARGV…`: "ok" (status 0) or "error" (status 1 or 2, argparse's usage
    errors included) with value (status, stdout); "internal" for status 70;
    "traceback" when a traceback escaped or reached stderr."""
    from rlang.cli import main

    out, err = io.StringIO(), io.StringIO()
    with redirect_stdout(out), redirect_stderr(err):
        done = guarded(lambda: main(list(argv)))
    if done.kind != "ok":
        return done
    status, stderr = done.value, err.getvalue()
    if "Traceback (most recent call last)" in stderr:
        return Outcome("traceback", stderr)
    if status == EXIT_INTERNAL:
        return Outcome("internal", f"rlang {' '.join(argv)[:300]}\n{stderr}")
    return Outcome("ok" if status == 0 else "error", stderr, value=(status, out.getvalue()))
