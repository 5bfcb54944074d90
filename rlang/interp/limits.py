"""The limits of a sandboxed run: run time, array memory and call depth (docs/sandbox.md).

`Sandbox(time=10.0, memory=2**30, depth=1000)` says what a program that one did not
write may use; `None` lifts a limit.  The interpreter keeps one `Budget` per sandbox:
it starts when a run starts (a call from Python, `main`, a pass of a gradient), and
its checks raise `LimitExceeded` (an RlangRuntimeError) with the span of the
statement that was running.
"""
from __future__ import annotations

import math
import time as _time

import numpy as np

from ..records import record
from ..errors import LimitExceeded, RlangError
from ..values import DTYPES, Stack

#: The deepest call a sandbox may allow: the language's own limit (LANGUAGE.md §4).
MAX_SANDBOX_DEPTH = 10_000
#: What one element of a stack counts: a pointer in the list and a Python number.
STACK_ITEM_BYTES = 32
#: What one element of an array literal built from arrays counts while it is built
#: (it passes through nested Python lists of Python numbers).
LITERAL_ITEM_BYTES = 48
#: What one element of an array counts while `@safe print`/`show` writes it as text.
TEXT_ITEM_BYTES = 32
#: Loop iterations and calls between two readings of the clock.
TICKS_PER_CLOCK_READING = 64

# Note [Sandbox]
# ~~~~~~~~~~~~~~
# The threat: a program one did not write (a web playground, a shared service) runs
# in the host's process.  What the sandbox keeps it from doing:
#   - reading files: `include` reaches only the program's own directory tree and the
#     shipped std/ library, checked on the path with symlinks and `..` resolved, before
#     anything is opened (rlang/frontend/loader.py), so a refusal quotes nothing of
#     the refused file and does not even say whether it exists;
#   - writing anything but the output stream: `@safe` has no statement that writes a
#     file or calls out (print and show write to the interpreter's output, assert
#     raises), and rev has no other side effect;
#   - running for ever: the interpreter reads the clock every TICKS_PER_CLOCK_READING
#     loop iterations and calls, and at every allocation; no statement between two
#     such points loops, so the time limit is overrun by at most the run time of
#     TICKS_PER_CLOCK_READING loop bodies without inner loops;
#   - taking the host's memory: arrays (`zeros`, array literals, copies by `←`),
#     stack elements and the text of `@safe print` are counted against the limit
#     before they are allocated, and given back when deallocated;
#   - taking the host's stack: the call depth is limited (at most the language's
#     10,000, which the interpreter's worker thread is sized for, rlang/deep.py).
# Every limit ends the run with an RlangError; the host process goes on.
# What it does not protect against: compiled code (llvm, cuda), which cannot be
# stopped safely halfway, so a sandbox runs only on the interpreter; the time of
# parsing and checking (linear in the source, which the host can bound by its
# size); memory that is not an array (Python objects of the interpreter, the
# gradient's shadow arrays, about as large as the arrays themselves, and the dual
# numbers of a Hessian, counted as 8 bytes each); a CPU-time denial below the
# limit's granularity (a host running many programs still needs its own quotas);
# bugs in NumPy, llvmlite or CPython.  The sandbox is a guard for programs, not an
# operating-system sandbox: a service that runs strangers' code should also run
# rlang in a process with OS limits (a container, rlimits).


@record
class Sandbox:
    """Limits of a sandboxed run: `time` in seconds per run, `memory` in bytes of
    arrays and stacks, `depth` in nested calls.  `None` lifts the time or memory
    limit; `depth=None` is the language's limit (10,000)."""

    time: float | None = 10.0
    memory: int | None = 1 << 30
    depth: int | None = 1000

    def __post_init__(self):
        if self.time is not None and (isinstance(self.time, bool) or not isinstance(
                self.time, (int, float)) or not 0 < self.time < math.inf):
            raise RlangError(f"Sandbox(time=…) is the run time in seconds, a positive "
                             f"number or None; got {self.time!r}")
        if self.memory is not None and (isinstance(self.memory, bool) or not isinstance(
                self.memory, int) or self.memory <= 0):
            raise RlangError(f"Sandbox(memory=…) is a number of bytes, a positive int or "
                             f"None; got {self.memory!r}")
        if self.depth is not None and (isinstance(self.depth, bool) or not isinstance(
                self.depth, int) or not 1 <= self.depth <= MAX_SANDBOX_DEPTH):
            raise RlangError(f"Sandbox(depth=…) is the deepest call, an int from 1 to "
                             f"{MAX_SANDBOX_DEPTH:,} or None; got {self.depth!r}")

    @property
    def max_depth(self) -> int:
        return MAX_SANDBOX_DEPTH if self.depth is None else self.depth


def as_sandbox(sandbox) -> Sandbox | None:
    """What `sandbox=` of `load`/`loads` means: False/None → no sandbox, True → the
    default limits, a Sandbox → itself."""
    if sandbox is None or sandbox is False:
        return None
    if sandbox is True:
        return Sandbox()
    if isinstance(sandbox, Sandbox):
        return sandbox
    raise RlangError(f"sandbox= takes True, False or an rlang.Sandbox(…), got "
                     f"{type(sandbox).__name__}")


class Budget:
    """What a sandboxed run has used of its limits.  `start()` begins a run; `tick`
    (a loop iteration or a call), `check` and `reserve` (an allocation) raise
    LimitExceeded when a limit is passed."""

    __slots__ = ("sandbox", "deadline", "countdown", "used")

    def __init__(self, sandbox: Sandbox):
        self.sandbox = sandbox
        self.start()

    def start(self) -> None:
        limit = self.sandbox.time
        self.deadline = math.inf if limit is None else _time.monotonic() + limit
        self.countdown = TICKS_PER_CLOCK_READING
        self.used = 0

    def enter(self, depth: int, span) -> None:
        """A call `depth` deep, at `span`: a run starts at depth 1."""
        if depth == 1:
            self.start()
        else:
            self.tick(span)

    def tick(self, span) -> None:
        """One loop iteration or call, at `span`."""
        self.countdown -= 1
        if self.countdown <= 0:
            self.countdown = TICKS_PER_CLOCK_READING
            self.check_clock(span)

    def check_clock(self, span) -> None:
        if _time.monotonic() > self.deadline:
            raise LimitExceeded("time", f"the run took longer than the sandbox's time limit "
                                f"of {self.sandbox.time:g} s", span)

    def check(self, nbytes: int, span, what: str) -> None:
        """Refuse `what`, which needs `nbytes` more, where it would pass the limit."""
        self.check_clock(span)
        limit = self.sandbox.memory
        if limit is not None and self.used + nbytes > limit:
            raise LimitExceeded("memory", f"{what} needs {format_bytes(nbytes)}, more than "
                                f"the sandbox's memory limit of {format_bytes(limit)} allows "
                                f"({format_bytes(self.used)} in use)", span)

    def reserve(self, nbytes: int, span, what: str) -> None:
        """`check`, then count `nbytes` as in use."""
        self.check(nbytes, span, what)
        self.used += nbytes

    def release(self, nbytes: int) -> None:
        self.used = max(0, self.used - nbytes)


def size_of(value) -> int:
    """The bytes `value` counts against a memory limit: an array's data, a stack's
    elements; 0 for a scalar."""
    if isinstance(value, np.ndarray):
        return int(value.nbytes)
    if isinstance(value, Stack):
        return STACK_ITEM_BYTES * len(value.items)
    return 0


def array_bytes(shape, scalar: str) -> int:
    """The bytes of a `zeros(scalar, shape…)` array, computed without overflow."""
    return math.prod(shape) * DTYPES[scalar].itemsize


def format_bytes(n: int) -> str:
    """`n` bytes as people read them: 512 bytes, 1.5 KiB, 1 GiB, 8 TiB."""
    for unit, size in (("TiB", 1 << 40), ("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)):
        if n >= size:
            return f"{n / size:.3g} {unit}"
    return f"{n} byte{'s' if n != 1 else ''}"
