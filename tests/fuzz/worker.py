"""A fuzz worker: reads cases (JSON lines) on stdin, runs each, answers on stdout.

Before the first case it moves file descriptors 0 and 1 to /dev/null and keeps
private copies for the cases and its answers, so that neither what programs print
(`@safe print`, the command line's output) nor what they read (`rlang run -`) can be
mistaken for the conversation with the runner.  `RLANG_FUZZ_MEMORY` caps the address
space it may add to what its libraries hold (bytes), so that a program asking for a huge array meets a MemoryError — which
rlang must turn into an `RlangError` — instead of the machine's OOM killer.
"""
from __future__ import annotations

import json
import os
import sys
import time


def _cap_memory() -> None:
    """Cap the address space at what the worker holds once its libraries are loaded,
    plus RLANG_FUZZ_MEMORY.  The frameworks the argument family passes values of
    (PyTorch, JAX) are loaded and started first where installed: their thread pools
    reserve gigabytes of address space, which is not the cases' to spend (with a
    fixed cap, a worker that had made one tensor could not start rlang's deep-stack
    thread for any later case)."""
    limit = int(os.environ.get("RLANG_FUZZ_MEMORY", "0"))
    if limit:
        import resource

        from .arguments import start_frameworks

        start_frameworks()
        with open("/proc/self/status") as status:
            held = next((int(line.split()[1]) * 1024 for line in status
                         if line.startswith("VmSize:")), 0)
        resource.setrlimit(resource.RLIMIT_AS, (held + limit, held + limit))


def main() -> None:
    requests = os.fdopen(os.dup(0), "r")
    answers = os.fdopen(os.dup(1), "w", buffering=1)
    devnull = os.open(os.devnull, os.O_RDWR)
    os.dup2(devnull, 0)
    os.dup2(devnull, 1)
    sys.stdin = open(os.devnull)
    _cap_memory()
    from .cases import Case, run_case

    answers.write(json.dumps({"ready": True}) + "\n")     # started: cases are timed from here

    for line in requests:
        case = Case.from_json(json.loads(line))
        begun = time.monotonic()
        outcome = run_case(case)
        answers.write(json.dumps({"kind": outcome.kind, "detail": outcome.detail[-20000:],
                                  "seconds": time.monotonic() - begun}) + "\n")


if __name__ == "__main__":
    main()
