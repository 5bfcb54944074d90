"""A forward run and a gradient pass (or a pass alone) as one packed call
(Note [Two entry points on one buffer]).

`PairedEntries(forward, backward, max_depth)` is made by `LlvmFunctions.paired`
for a gradient plan's short route (rlang/ad/gradient_route.py): `forward` is
`(NativeModule, symbol)` of f's entry point, or None for a pass alone; `backward`
is that of the gradient pass.  Calling it with the pass's values (the outputs the
forward will make, in their places as f's arguments, then the seeded gradients)
runs the forward on those values in place, then the pass, and returns the pass's
new values as `NativeModule.call` does; a failed check raises that call's error.

Note [Two entry points on one buffer]
~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
A gradient's forward and pass are two entry points (rlang/backends/abi.py) whose
argument lists begin alike: the pass takes f's parameters (as f's outputs), then
their gradients.  Packed by the pass's layout, a buffer holds f's arguments in
the first holders and a pointer to each in the first argument pointers, exactly
as the forward's layout would pack them; the forward's entry point reads only
those and writes its new scalars back into them, which is where the pass reads
its outputs.  So one `pack` serves both calls and one `unpack` reads the result:
on the 10-vertex graph embedding, half the Python work of a gradient call was
packing, unpacking and the layers around them, once for each entry point.  The
layouts are checked to agree (`EntryLayout.leads`) before a pair is made; calls
whose layouts are not one-word (stacks, fixed and complex scalars) keep the two
calls.  The context words a successful call leaves are those it started with
(the failed site 0, the depth 0), so the pass starts from a clean context too.
"""
from __future__ import annotations

import contextlib

from .tiers import quick_call


class PairedEntries:
    """A forward and a gradient pass on one buffer (see the module docstring)."""

    def __init__(self, forward, backward, max_depth):
        self.forward, self.backward = forward, backward
        self.natives = [backward[0]] + ([forward[0]] if forward else [])
        self.outputs = len(forward[0].layout(forward[1]).types) if forward else 0
        self.max_depth = max_depth          # () → the interpreter's depth limit
        self._entries = None                # (forward function, pass function, layout)

    @classmethod
    def of(cls, forward, backward, max_depth):
        """The pair, or None where it cannot be made: native recursion (which runs on
        the deep-stack thread), or layouts that do not share a buffer."""
        if backward[0].recursive or forward is not None and forward[0].recursive:
            return None
        if forward is not None and \
                not forward[0].layout(forward[1]).leads(backward[0].layout(backward[1])):
            return None
        return cls(forward, backward, max_depth)

    def entries(self, quick=None) -> tuple:
        """(the forward's ctypes function or None, the pass's, the pass's layout),
        from the code a call runs now (`quick`: tiers.quick_call's, for the modules
        whose quick code it runs); kept once that code is final."""
        if self._entries is not None:
            return self._entries
        native, symbol = self.backward
        backward, layout = native.entry_for_a_call(symbol, quick)
        forward = None
        if self.forward is not None:
            forward = self.forward[0].entry_for_a_call(self.forward[1], quick)[0]
        entries = (forward, backward, layout)
        if all(n.settled_now() for n in self.natives):
            self._entries = entries
        return entries

    def __call__(self, values: list, between=None) -> list:
        """The pass's new values after the forward (if any) and the pass ran on
        `values` (arrays in place); `between(outputs)`, if given, sees the forward's
        new values (the first ones of `values`: arrays as the same objects, which the
        pass then changes) before the pass runs.  A call that leaves quick code (Note
        [Leaving the quick code], backends/llvm/tiers.py) runs again on the optimised
        code, `between` not called twice."""
        quick = None
        if self._entries is None:
            pairs = ([self.forward] if self.forward else []) + [self.backward]
            quick = quick_call(pairs, values)
        forward, backward, layout = self.entries(quick)
        native = self.backward[0]
        max_depth = self.max_depth()
        threads = native.threads()
        if self.forward is not None:
            threads = max(threads, self.forward[0].threads())
        buffer = layout.pack(values, max_depth, threads)
        ctx, args = layout.ctx(buffer), layout.args(buffer)
        failing, status = None, 0
        with quick or contextlib.nullcontext():
            if forward is not None:
                status = forward(ctx, args)
                failing = self.forward[0]
                if status == 0 and between is not None:
                    between(layout.unpack(buffer, values)[:self.outputs])
            if status == 0:
                status = backward(ctx, args)
                failing, between = native, None
        if status != 0:
            if quick is not None and quick.left(layout.context(buffer)):
                return self(values, between)
            failing.failed(status, layout, buffer, max_depth)
        new = layout.unpack(buffer, values)
        layout.reuse(buffer)
        return new
