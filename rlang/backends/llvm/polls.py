"""Polls that let a quickly compiled call leave for the optimised code (Note [Leaving
the quick code], rlang/backends/llvm/tiers.py).

`PollEmitter.poll_preemption()` emits, at a loop's back edge, a read of the module's
`rev_preempt` byte (abi.PREEMPT_FLAG) and a cold branch to the scope's error exit
recording CTX_SITE = abi.PREEMPTED when it is set.  Every module's IR has them;
`tiers.without_polls(text)` turns each read into the constant 0, and drops the
byte, in the text that is optimised at O3 (and for C libraries, and that `rlang
compile --emit llvm` writes), where the branches then fold away before any loop
pass sees them, so only the quick tier's code polls.
"""
from __future__ import annotations

from llvmlite import ir as ll

from .. import abi
from .types import I8


class PollEmitter:
    """A mixin of the function emitter (backends/llvm/emit.py): `out` is the LLVM
    module, `builder` the builder, `fail_if` branches to an error exit."""

    def poll_preemption(self) -> None:
        """Leave the call (an error exit with CTX_SITE = PREEMPTED) if the module's
        preempt byte is set; emitted at the back edge of each program loop."""
        flag = self.out.globals.get(abi.PREEMPT_FLAG)
        if flag is None:
            flag = ll.GlobalVariable(self.out, I8, name=abi.PREEMPT_FLAG)
            flag.initializer = ll.Constant(I8, 0)
        b = self.builder
        polled = b.load_atomic(flag, "monotonic", 1)
        # fail_if records site + 1 as CTX_SITE
        self.fail_if(b.icmp_unsigned("!=", polled, ll.Constant(I8, 0)), abi.PREEMPTED - 1,
                     ())
