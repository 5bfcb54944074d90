"""Python's half of a `@parallel for` on threads: the hook compiled code calls to
run a planned loop's blocks on the pool of rlang/threads.py (Note [Parallel loops
on threads], rlang/ir/blocks.py).

`ThreadedLoops(native, loops, engine)` holds the planned loops of one compiled
module (`rlang.ir.blocks.ThreadedLoop`s, numbered as the compiled code numbers them)
as loaded into `engine` (a module's code may be loaded twice: Note [A quick first
call], jit.py);
`install()` puts its hook into the module's `rev_parallel_hook`.  The hook gets the
loop's number, the caller's context, the pointers to the loop's outer variables
(`ThreadedLoop.arguments`), the index of pass 0, the step, the pass count and the
block count, and returns 0 when every block ran, or 1 when the compiled code must
run the loop itself (a block failed, or Python could not start them): then what
the blocks wrote has been put back.
"""
from __future__ import annotations

import ctypes
import functools
import threading

import numpy as np

from .. import abi
from ...ir.blocks import block_start

#: the hook's C type (abi.PARALLEL_HOOK)
HOOK = ctypes.CFUNCTYPE(ctypes.c_int32, ctypes.c_int64, ctypes.c_void_p, ctypes.c_void_p,
                        ctypes.c_int64, ctypes.c_int64, ctypes.c_int64, ctypes.c_int64)
_ENTRY = ctypes.CFUNCTYPE(ctypes.c_int32, ctypes.c_void_p, ctypes.c_void_p)
_SCALAR_BYTES = {"f64": 8, "complex": 16}


class ThreadedLoops:
    def __init__(self, native, loops: list, engine):
        self.native, self.loops, self.engine = native, list(loops), engine
        self._entries: dict = {}
        self._hook = HOOK(self._run_or_decline)

    def install(self) -> None:
        address = self.engine.get_global_value_address(abi.PARALLEL_HOOK)
        if address and self.loops:
            ctypes.c_void_p.from_address(address).value = \
                ctypes.cast(self._hook, ctypes.c_void_p).value

    def _entry(self, symbol: str):
        entry = self._entries.get(symbol)
        if entry is None:
            address = self.engine.get_function_address(symbol + "_entry")
            entry = self._entries[symbol] = _ENTRY(address)
        return entry

    def _run_or_decline(self, number, ctx, outer, first, stride, count, blocks) -> int:
        """The hook: nothing may escape into native code, so any Python error
        declines (what had run is put back first)."""
        try:
            return self.run(self.loops[number], ctx, outer, first, stride, count, blocks)
        except BaseException:       # noqa: BLE001 - the compiled code runs the loop
            return 1

    def run(self, loop, ctx, outer, first, stride, count, blocks) -> int:
        from ...threads import get_num_threads, run_blocks

        pointers = [ctypes.c_void_p.from_address(outer + 8 * k).value
                    for k in range(len(loop.arguments))]
        words = (ctypes.c_int64 * abi.CTX_WORDS).from_address(ctx)
        depth, max_depth = words[abi.CTX_DEPTH], words[abi.CTX_MAX_DEPTH]
        private = [k for k, a in enumerate(loop.arguments) if a.role == "private"]
        saved = _Saved(loop.arguments, pointers) if loop.can_fail or private else None
        sums = _InOrder(self._entry(loop.reduce) if private else None,
                        [pointers[k] for k in private])
        block = self._entry(loop.block)
        starts = [block_start(b, count, blocks) for b in range(blocks + 1)]
        if not private:     # nothing summed across passes: whole runs of blocks at once
            runs = min(blocks, 4 * get_num_threads())
            starts = [starts[block_start(r, blocks, runs)] for r in range(runs + 1)]
        ran = [False] * (len(starts) - 1)

        def calls(failed):
            return [functools.partial(self._block, block, loop, pointers, private, sums,
                                      failed, depth, max_depth, first, stride, starts[b],
                                      starts[b + 1], b, ran)
                    for b in range(len(ran)) if not ran[b]]

        failed = threading.Event()
        try:
            run_blocks(calls(failed))
        except BaseException:
            failed.set()
        if not failed.is_set():
            return 0
        if saved is not None:
            saved.restore()
            return 1
        # No check and no sum: only Python failed, before the native calls of some
        # blocks (which cannot fail).  Running the loop again would repeat the passes
        # that ran, so the blocks that did not run are finished here.
        for call in calls(threading.Event()):
            call()
        return 0

    def _block(self, block, loop, pointers, private, sums, failed, depth, max_depth,
               first, stride, lo, hi, number, ran) -> None:
        if failed.is_set():
            return
        ctx = (ctypes.c_int64 * abi.CTX_WORDS)()
        ctx[abi.CTX_DEPTH], ctx[abi.CTX_MAX_DEPTH] = depth, max_depth
        ctx[abi.CTX_THREADS] = 1
        mine = [_Sums(loop.arguments[k], pointers[k]) for k in private]
        args = list(pointers)
        for k, held in zip(private, mine):
            args[k] = held.address
        bounds = (ctypes.c_int64 * 4)(first, stride, lo, hi)
        args += [ctypes.addressof(bounds) + 8 * j for j in range(4)]
        status = block(ctypes.addressof(ctx), (ctypes.c_void_p * len(args))(*args))
        if status != 0:
            self.native.forget_frames()     # a callee's reports on this thread
            failed.set()
            return
        ran[number] = True
        sums.add(number, mine)


class _Sums:
    """A block's zeroed copy of a private sum: `address` is what the block
    function takes (a descriptor's or a scalar's address)."""

    def __init__(self, argument, target: int):
        if argument.kind == "array":
            shape = list((ctypes.c_int64 * argument.ndim).from_address(target + 8))
            self.values = np.zeros(shape, dtype=np.complex128 if argument.elem == "complex"
                                   else np.float64)
            strides = [s // self.values.itemsize for s in self.values.strides]
            self.descriptor = np.array([self.values.ctypes.data, *shape, *strides],
                                       dtype=np.int64)
            self.address = self.descriptor.ctypes.data
        else:
            self.values = (ctypes.c_double * 2)()
            self.address = ctypes.addressof(self.values)


class _InOrder:
    """Adds blocks' sums into their targets in block order, as blocks end."""

    def __init__(self, reduce, targets: list):
        self.reduce, self.targets = reduce, targets
        self.lock = threading.Lock()
        self.next, self.ready = 0, {}
        self.ctx = (ctypes.c_int64 * abi.CTX_WORDS)()

    def add(self, number: int, sums: list) -> None:
        with self.lock:
            self.ready[number] = sums
            while self.next in self.ready:
                mine = self.ready.pop(self.next)
                if self.reduce is not None:
                    args = [a for target, held in zip(self.targets, mine)
                            for a in (target, held.address)]
                    self.reduce(ctypes.addressof(self.ctx),
                                (ctypes.c_void_p * len(args))(*args))
                self.next += 1


class _Saved:
    """Copies of what a loop may write (its own elements' arrays, the targets of
    its sums), to put back when a block fails."""

    def __init__(self, arguments, pointers: list):
        self.kept = []
        for argument, pointer in zip(arguments, pointers):
            if argument.role == "read":
                continue
            if argument.kind == "array":
                view = _array_view(argument, pointer)
                if view is not None:
                    self.kept.append((view, view.copy()))
            else:
                size = _SCALAR_BYTES[argument.elem]
                self.kept.append((pointer, ctypes.string_at(pointer, size)))

    def restore(self) -> None:
        for place, copy in self.kept:
            if isinstance(place, np.ndarray):
                place[...] = copy
            else:
                ctypes.memmove(place, copy, len(copy))


def _array_view(argument, descriptor: int):
    """A NumPy view of the elements an array descriptor describes (None: empty)."""
    ndim = argument.ndim
    words = list((ctypes.c_int64 * (1 + 2 * ndim)).from_address(descriptor))
    data, shape, strides = words[0], words[1:1 + ndim], words[1 + ndim:]
    if any(n == 0 for n in shape):
        return None
    item = abi.ITEM_BYTES[argument.elem]
    low = sum(min(0, (n - 1) * s) for n, s in zip(shape, strides))
    high = sum(max(0, (n - 1) * s) for n, s in zip(shape, strides))
    span = (ctypes.c_char * ((high - low + 1) * item)).from_address(data + low * item)
    return np.ndarray(shape, np.dtype(abi.ITEM_DTYPES[argument.elem]), span,
                      -low * item, [s * item for s in strides])
