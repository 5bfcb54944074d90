"""Two tiers of a big module's code: quickly compiled code for its first call while
a thread optimises it (Note [A quick first call]), and the call's way out to the
optimised code once that is ready (Note [Leaving the quick code]).

- `quick_first_call(llvm_ir, recursive)`: whether a module of this IR takes the
  quick tier (`quick_tier_by_default(on)` sets what it answers where
  RLANG_QUICK_FIRST_CALL is not set); `without_polls(llvm_ir)`: the text for O3.
- `Optimising(work, held)`: `work()` (→ the optimised object code) running on a
  thread, held until `start()` or `start_after(seconds, first)` where `held` (one
  core: `one_core()`, Note [One core for two tiers]); `wait()` gives its result,
  `on_ready(callback)` runs `callback()` when it is done.
- `quick_call(entries, values)`: the preparation of one call that may run quick
  code and leave it (a `QuickCall`: the arrays it may change saved, the modules'
  preempt bytes armed while it runs), or None where the call runs the optimised
  code (`NativeModule.call` and `PairedEntries` use it).
- `PreemptByte(address)`: a module's `rev_preempt` byte in its quick code.
"""
from __future__ import annotations

import atexit
import ctypes
import os
import threading

import numpy as np

from .. import abi

# Note [A quick first call]
# ~~~~~~~~~~~~~~~~~~~~~~~~~
# LLVM's O3 passes and code generation cost about 2 µs a byte of our IR text: a
# GMM gradient module (GradBench's, 450 kB of IR) takes 0.9 s of a 1.1 s first
# gradient, for a pass that then runs in 1.3 ms.  So a module with more IR than
# QUICK_TIER_BYTES is compiled twice.  First quickly (SROA, InstCombine and
# SimplifyCFG, then LLVM's O0 code generator: 0.15-0.2 s for that module) for the
# first call, while a thread compiles it at O3 (llvmlite releases the GIL in
# LLVM's calls).  Every later call waits for the O3 code if it is not ready yet,
# and runs it.  So only a module's first call can run the quick code, and
# benchmarks that call twice to warm up time the optimised code.  Both tiers
# compile the same IR without fast-math contraction, and modules whose sums O3 may
# reassociate do not take the quick tier (below), so the tiers give the same bits
# (tests/backends/llvm/test_llvm_tiers.py).  The O3 object goes to the disk cache
# as before: a later process loads it.
#
# The quick code is 4-10x slower (GMM's pass: 25 against 2.3 ms; with the O1 code
# generator and more passes, 4x at best, for 0.4-0.7 s of compiling), so a first
# call with much work would end later on it than on the O3 code compiled first.
# Such a call leaves the quick code when the O3 code is ready (Note [Leaving the
# quick code]): it then costs at most the O3 compile plus its run on the O3 code,
# as without the quick tier, plus the quick compile and copies of what it writes.
# A first call that cannot leave waits for the O3 code instead (below).
# RLANG_QUICK_FIRST_CALL=0 turns the quick tier off; the command line's one-shot
# commands run without it unless the variable is set (Note [Leaving without
# teardown]).
#
# Note [One core for two tiers]
# ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
# Where the process may run on one CPU only (its affinity: `taskset -c 0`, a
# container's one core), the O3 compile and the quick call share that core: each
# runs at half speed, so a long first call leaves the quick code only after twice
# the compile's time.  GMM's objective on 10^6 points took 1.70 s so, against
# 0.89 s with O3 first.  On one core the compile is therefore held while the
# first call runs the quick code alone, for at most QUICK_ALONE times the quick
# compile's own time (0.06-0.07 s for GMM's modules, whose O3 compile takes
# 0.4-0.8 s): a call that ends sooner lets the compile start then, in the
# background; one that does not leaves the quick code at that moment and waits for
# the O3 code, compiled with the core to itself.  A long first call then costs at
# most that budget, the quick compile and the copies more than with O3 first.
# Anything that needs the O3 code (a later call, a Hessian's groups, the end of
# the process) starts a held compile at once.
#
# A module whose IR has sums LLVM may reassociate (gradient passes: Note
# [Reassociable gradient sums]) is compiled at O3 first.  O3 groups such a sum's
# terms in partial sums (its vectoriser's, as wide as the CPU's vectors) while the
# quick code adds them in program order, so the two tiers' gradients differ in
# their last bits, and which one a first call gives would depend on when the O3
# code is ready: the same call would not give the same bits run after run.
# Dropping the flag instead costs 10-23 % on GradBench's llsq, lse and kmeans
# gradients and GMM's at d >= 32 (measured in benchmarks/README.md, session 41).
# RLANG_QUICK_FIRST_CALL=any takes the quick tier for them too, for whom a first
# result sooner is worth its last bits (GMM's first gradient: 1.07 → 0.40 s).
#
# What a module's code is used for other than its own calls (a Hessian's native
# groups, a batch's entry, JAX's FFI handler) takes addresses that outlive a call,
# so those wait for the O3 code.  A recursive module never takes the quick tier:
# its frames at O0 are larger, and the native stack is sized by depth.  A process
# that ends while a module is being optimised waits for it (atexit) rather than
# leave LLVM running under the interpreter's teardown; the wait fills the cache.
# The command line, which leaves with os._exit (Note [Leaving without teardown]),
# waits for it too once its output is flushed.

# Note [Leaving the quick code]
# ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
# Every program loop's back edge reads the module's byte `rev_preempt` (polls.py);
# the O3 text has the reads replaced by 0, so only the quick code polls.  When the
# O3 code is ready, the optimising thread sets the byte of a module whose quick
# code is running a call that may leave; the call then takes its error exit at the
# next back edge, freeing what it allocated, with CTX_SITE = PREEMPTED.  The
# caller puts back the arrays the call may have changed (copied before it ran:
# the positions the IR functions write or add to, as their `written` and
# `accumulated` tell, which the read-only check and the scalars' write-back already
# rely on) and makes the call again on the O3 code.  Scalars are in the call's buffer and
# are packed again from the same values.
#
# A call may leave only where running it twice is the same as running it once:
# - its arrays are copied first, so together at most QUICK_COPY_BYTES (a call
#   writing more waits for the O3 code rather than double its memory);
# - no stacks among its arguments (their items go back into their `Stack`s even
#   after a failed call);
# - no `@parallel for` in the module (its blocks run on Python's threads and
#   finish what other blocks left: Note [Parallel loops on threads]): such modules
#   wait for the O3 code;
# - nothing printed: `@safe print` calls back into Python, which disarms the byte
#   before the line is written, so a call that printed runs to its end on the
#   quick code (the print hook and the optimising thread take the same lock).
# Frame variables reported while the call unwinds (Note [Frame variables in
# compiled errors]) are dropped.  A loop-free, non-recursive module has no polls
# and needs none: its calls are short.

#: A poll's read (backends/llvm/polls.py) as llvmlite writes it, and what the
#: optimised text reads instead.
POLL_READ = f'load atomic i8, i8* @"{abi.PREEMPT_FLAG}" monotonic, align 1'
NO_POLL_READ = "add i8 0, 0"
#: … and the byte's definition, which the optimised text then drops
POLL_BYTE = f'@"{abi.PREEMPT_FLAG}" = global i8 0\n'


def without_polls(llvm_ir: str) -> str:
    """LLVM IR text with every poll reading 0 (its branch is then dead) and no
    preempt byte (a C library exports no such symbol)."""
    return llvm_ir.replace(POLL_READ, NO_POLL_READ).replace(POLL_BYTE, "")


#: The flag of float additions whose terms O3 may group otherwise (Note [Reassociable
#: gradient sums], rlang/ad/adjoint_ir.py), as llvmlite writes it.
REASSOCIATED = " reassoc "

#: LLVM IR text (bytes) above which a module's first call may run quickly compiled
#: code (a smaller module compiles at O3 in well under a second).
QUICK_TIER_BYTES = 150_000

#: On one core, how long a first call may run the quick code alone, in units of the
#: quick compile's time (Note [One core for two tiers]).
QUICK_ALONE = 2.0

#: The most bytes of arrays a first call on quick code may write (they are copied
#: before it runs, Note [Leaving the quick code]).
QUICK_COPY_BYTES = 64 << 20


#: RLANG_QUICK_FIRST_CALL's meaning where it is not set (`quick_tier_by_default`)
_BY_DEFAULT = ["1"]


def quick_tier_by_default(on: bool) -> None:
    """Whether modules take the quick tier where RLANG_QUICK_FIRST_CALL is not set:
    the command line's one-shot commands turn it off (Note [Leaving without
    teardown], rlang/cli.py)."""
    _BY_DEFAULT[0] = "1" if on else "0"


def quick_first_call(llvm_ir: str, recursive: bool) -> bool:
    """Whether a module of this IR takes the quick first tier (Note [A quick first
    call]): RLANG_QUICK_FIRST_CALL not 0, more IR than QUICK_TIER_BYTES, no
    recursion, and no sum LLVM may reassociate unless RLANG_QUICK_FIRST_CALL is
    `any`."""
    asked = os.environ.get("RLANG_QUICK_FIRST_CALL", _BY_DEFAULT[0])
    return (asked != "0" and len(llvm_ir) > QUICK_TIER_BYTES and not recursive
            and (asked == "any" or REASSOCIATED not in llvm_ir))


def one_core() -> bool:
    """Whether this process may run on one CPU only (its affinity, where the system
    tells it)."""
    try:
        return len(os.sched_getaffinity(0)) == 1
    except (AttributeError, OSError):
        return os.cpu_count() == 1


class Optimising:
    """A module being compiled at O3 on a thread of its own; `held`: the compile waits
    until `start()` (on one core: Note [One core for two tiers])."""

    def __init__(self, work, held: bool = False):
        self.obj = None             # (None where compiling failed: the quick code,
        #                             which is correct, then stays)
        self._callbacks: list = []
        self._lock = threading.Lock()
        self._done = False
        self._go = threading.Event()
        if not held:
            self._go.set()
        self._timer: threading.Timer | None = None
        self.thread = threading.Thread(target=self._run, args=(work,), daemon=True,
                                       name="rlang-optimise")
        with _OPTIMISING_LOCK:
            _OPTIMISING.add(self)
        self.thread.start()

    def _run(self, work) -> None:
        self._go.wait()
        try:
            self.obj = work()
        except BaseException:       # noqa: BLE001 - nothing may escape a thread
            pass
        finally:
            with self._lock:
                self._done = True
                callbacks, self._callbacks = self._callbacks, []
            for callback in callbacks:
                try:
                    callback()
                except BaseException:   # noqa: BLE001 - (as above)
                    pass
            with _OPTIMISING_LOCK:
                _OPTIMISING.discard(self)

    def ready(self) -> bool:
        return not self.thread.is_alive()

    def on_ready(self, callback) -> None:
        """Run `callback()` once the O3 code is ready (now, if it is)."""
        with self._lock:
            if not self._done:
                self._callbacks.append(callback)
                return
        callback()

    def start(self) -> None:
        """Let a held compile begin (now, if it has not)."""
        self._go.set()
        timer = self._timer
        if timer is not None:
            timer.cancel()

    def start_after(self, seconds: float, first) -> None:
        """A held compile begins after `seconds`, `first()` called just before, unless
        `start()` comes sooner; nothing where the compile is not held."""
        if self._go.is_set():
            return

        def expired():
            first()
            self._go.set()
        self._timer = threading.Timer(seconds, expired)
        self._timer.daemon = True
        self._timer.start()

    def wait(self):
        """The optimised object code (compiled now if it was held), or None where
        compiling it failed."""
        self.start()
        self.thread.join()
        return self.obj


_OPTIMISING: set = set()
_OPTIMISING_LOCK = threading.Lock()


@atexit.register
def finish_optimising() -> None:
    """Wait for the optimising threads (before the interpreter's teardown, or the
    command line's os._exit): their O3 code goes to the disk cache."""
    with _OPTIMISING_LOCK:
        running = list(_OPTIMISING)
    for job in running:
        job.wait()


class PreemptByte:
    """One module's `rev_preempt` byte in its quick code (Note [Leaving the quick
    code]): armed while a call that may leave runs, set when the O3 code is ready
    during that, disarmed when the call prints or ends."""

    def __init__(self, address: int):
        self._byte = ctypes.c_uint8.from_address(address) if address else None
        self._lock = threading.Lock()
        self._armed = False

    def arm(self) -> None:
        with self._lock:
            self._armed = True

    def disarm(self) -> None:
        with self._lock:
            self._armed = False
            if self._byte is not None:
                self._byte.value = 0

    def fire(self) -> None:
        """The O3 code is ready: an armed call leaves at its next poll."""
        with self._lock:
            if self._armed and self._byte is not None:
                self._byte.value = 1


#: Values a call's buffer holds by value, packed again for the call on the O3 code.
_PACKED_AGAIN = (bool, int, float, complex, np.generic)


def quick_call(entries: list, values: list) -> "QuickCall | None":
    """For a call running `entries` ((NativeModule, symbol) pairs, in order) on
    `values` (packed by the last entry's layout): a QuickCall for the modules whose
    quick code it claimed (`NativeModule.claim_quick_code`), or None: the call runs
    the optimised code, waiting for it where it is not ready (Note [Leaving the
    quick code]).  Quick code claimed by a call that cannot leave it is not run."""
    natives = [native for native, _ in entries if native.claim_quick_code()]
    if not natives:
        return None
    return QuickCall.of(natives, [native.layout(symbol) for native, symbol in entries],
                        values)


class QuickCall:
    """One call that may run on quick code and leave it (Note [Leaving the quick
    code]): `with` it around the call; `left(context)` tells (from the failed call's
    context words) whether the call left, and then puts its arrays back."""

    def __init__(self, natives: list, saved: list):
        self.natives, self.saved = natives, saved

    @classmethod
    def of(cls, natives: list, layouts: list, values: list) -> "QuickCall | None":
        """The call of `values` packed by `layouts` (of `natives`' entry points) on
        quick code, or None where it cannot leave that code."""
        if any(native.threaded_loops for native in natives):
            return None
        positions, total = set(), 0
        for layout in layouts:
            if layout.has_stacks:
                return None
            positions |= layout.changed
        saved = []
        for k in sorted(positions):
            value = values[k]
            if isinstance(value, np.ndarray):
                total += value.nbytes
                if total > QUICK_COPY_BYTES:
                    return None
                saved.append((value, value.copy()))
            elif not isinstance(value, _PACKED_AGAIN):
                return None         # (something else changed in place: not put back)
        return cls(natives, saved)

    def __enter__(self) -> "QuickCall":
        for native in self.natives:
            native.arm_preemption()
        return self

    def __exit__(self, *exc) -> bool:
        for native in self.natives:
            native.end_quick_call()
        return False

    def left(self, context: list) -> bool:
        """Whether the call that failed with these context words left the quick code;
        if so, its arrays are as they were before it, and its frame reports gone."""
        if context[abi.CTX_SITE] != abi.PREEMPTED:
            return False
        for array, copy in self.saved:
            np.copyto(array, copy)
        for native in self.natives:
            native.forget_frames()
        return True
