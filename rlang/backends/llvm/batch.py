"""Run one compiled entry point over a batch of arguments in one native call
(`rlang.vmap`, LANGUAGE.md §13).

    run_batch(native, symbol, values, batches, n, max_depth)

`values` are the arguments of the first item, conformed to the parameter types;
`batches[k]` is argument k's batch (an array whose axis 0 is the batch, of the
storage type of the parameter: scalars as elements, arrays as sub-arrays) or None
where every item takes `values[k]`.  Batched arguments are updated in place, as a
call updates arrays: a scalar's new values land in its batch array (Note [One
native call per batch]).  `emit_batch_entry` makes the native side.
"""
from __future__ import annotations

import ctypes
import functools

from llvmlite import ir as ll

from ...errors import in_batch_item
from ...ir import nodes as ir
from ..errors import error_from_context
from .marshal import EntryLayout, ReadOnlyArgument, data_address, not_addressable

# Note [One native call per batch]
# ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
# A batch is not a Python loop of calls: that costs a few microseconds of packing per
# item, more than the work of a small function.  The entry specialisation of every
# compiled module has a batch entry point beside its `_entry` and `_pyentry`
# (`emit_batch_entry`, called by backends/llvm/emit.py):
#
#     int32 <symbol>_batch(int64 *ctx, void **args, int64 n, int64 *steps, int64 *failed)
#
# `args` is laid out once, by `EntryLayout`, for the first item (descriptors for
# arrays, as `_entry` takes them, made of the first item's view; a batched scalar's
# pointer is its batch's first element); `steps[k]` is the distance in bytes from one
# item of argument k to the next (0: every item takes the same value).  For item k
# the batch entry points each scalar argument `k * steps` further on and gives each
# array a descriptor whose data pointer is moved the same way (its extents and
# strides are the first item's), then calls the function itself: a direct call that
# LLVM inlines where it is small, so a batch of a small function costs a few
# nanoseconds an item.  A failed check stops the batch at its item, whose index
# comes back in `failed` with the error; the items before it have run.

_I32, _I64 = ll.IntType(32), ll.IntType(64)
_ZERO = ll.Constant(_I32, 0)


def emit_batch_entry(out: ll.Module, target: ll.Function, fn: ir.Function) -> None:
    """Add `<symbol>_batch` (Note [One native call per batch]) for `target`, the LLVM
    function of `fn`, to `out`."""
    kind = ll.FunctionType(_I32, [_I64.as_pointer(), ll.IntType(8).as_pointer().as_pointer(),
                                  _I64, _I64.as_pointer(), _I64.as_pointer()])
    batch = ll.Function(out, kind, name=target.name + "_batch")
    ctx, args, n, steps, failed = batch.args
    b = ll.IRBuilder(batch.append_basic_block("entry"))
    firsts = []         # per parameter: (item-0 pointer or data pointer, step, descriptor)
    for k, param in enumerate(list(fn.params) + list(fn.results)):
        raw = b.load(b.gep(args, [ll.Constant(_I64, k)]))
        step = b.load(b.gep(steps, [ll.Constant(_I64, k)]))
        if isinstance(param.type, ir.ArrayType):
            first = b.bitcast(raw, target.args[k + 1].type)
            copy = b.alloca(first.type.pointee)
            b.store(b.load(first), copy)
            firsts.append((b.load(b.gep(first, [_ZERO, _ZERO])), step, copy))
        else:
            firsts.append((raw, step, None))
    start = b.block
    head, body, failing, done = (batch.append_basic_block(name)
                                 for name in ("item", "run", "failed", "done"))
    b.branch(head)
    b.position_at_end(head)
    k = b.phi(_I64)
    k.add_incoming(ll.Constant(_I64, 0), start)
    b.cbranch(b.icmp_signed("<", k, n), body, done)
    b.position_at_end(body)
    values = [ctx]
    for (first, step, copy), param in zip(firsts, target.args[1:]):
        moved = b.gep(first, [b.mul(k, step)])
        if copy is None:
            values.append(b.bitcast(moved, param.type))
        else:
            b.store(moved, b.gep(copy, [_ZERO, _ZERO]))
            values.append(copy)
    status = b.call(target, values)
    k.add_incoming(b.add(k, ll.Constant(_I64, 1)), b.block)
    b.cbranch(b.icmp_signed("!=", status, ll.Constant(_I32, 0)), failing, head)
    b.position_at_end(failing)
    b.store(k, failed)
    b.ret(status)
    b.position_at_end(done)
    b.ret(ll.Constant(_I32, 0))


# Note [Batches on threads]
# ~~~~~~~~~~~~~~~~~~~~~~~~~
# The items of a batch are independent, so `run_batch` splits a large batch into
# blocks of consecutive items (at least MIN_BLOCK each, about four per thread) and
# runs them on `rlang.get_num_threads()` threads (rlang/threads.py): each block is
# one call of the batch entry over its items, whose argument pointers start at the
# block's first item.  ctypes releases the GIL for the native call, so the blocks
# run at once.  Every item computes what it computes alone, so the results are the
# same bits for any thread count.  A failed check is the failure of the lowest
# item that failed, as a run in one call stops at its first: the blocks after it
# may have run on other threads, so the arrays the entry writes are copied first
# and their items after the failing one are put back (the failing item keeps what
# it had written when it failed, as in one call).  A module that recurses (its
# deep stacks need the big-stack thread of run_deep) or prints (the lines would
# interleave) runs on one thread.

#: The fewest items of a block on another thread: fewer cost more to hand out than
#: they save.
MIN_BLOCK = 256


def run_batch(native, symbol: str, values: list, batches: list, n: int,
              max_depth: int) -> None:
    """Run `symbol` of `native` (a jit.NativeModule) on n items (module docstring;
    Note [Batches on threads])."""
    from ...threads import get_num_threads, run_blocks

    if n == 0:
        return
    function, layout, written = _entry(native, symbol)
    for k in written:       # a batch the function writes must take the writes
        if batches[k] is not None and not batches[k].flags.writeable:
            raise ReadOnlyArgument(k)
    steps = _steps(batches)
    single = native.recursive or native.prints
    blocks = _blocks(n, 1 if single else get_num_threads())
    run = (function, layout, native.sites, values, batches, steps, max_depth)
    if len(blocks) == 1:        # the items' `@parallel for` loops may use the threads
        failures = [_run_block(*run, 0, n, native.threads())]
    else:
        kept = [(k, batches[k].copy()) for k in sorted(set(written)) if batches[k] is not None]
        failures = run_blocks([functools.partial(_run_block, *run, start, stop)
                               for start, stop in blocks])
    failures = [f for f in failures if f is not None]
    if failures:
        error, index = min(failures, key=lambda failure: failure[1])
        if len(blocks) > 1:
            for k, copy in kept:
                batches[k][index + 1:] = copy[index + 1:]
        raise in_batch_item(error, index)


def _blocks(n: int, threads: int) -> list:
    """(start, stop) of the blocks of a batch of n items on `threads` threads."""
    if threads <= 1 or n < 2 * MIN_BLOCK:
        return [(0, n)]
    size = -(-n // min(4 * threads, n // MIN_BLOCK))
    return [(start, min(start + size, n)) for start in range(0, n, size)]


def _run_block(function, layout, sites, values, batches, steps, max_depth,
               start: int, stop: int, threads: int = 1):
    """Run items start … stop − 1 in one native call (their `@parallel for` loops
    on `threads` threads): None, or (the error, the index of the item that failed)."""
    if start:
        values = [batch[start] if batch is not None and isinstance(t, ir.ArrayType) else v
                  for v, batch, t in zip(values, batches, layout.types)]
    buffer = layout.pack(values, max_depth, threads)
    try:
        pointers = layout.args(buffer)
        for k, batch in enumerate(batches):     # a batched scalar: its first item
            if batch is not None and not isinstance(layout.types[k], ir.ArrayType):
                ctypes.c_void_p.from_address(pointers + 8 * k).value = \
                    data_address(batch) + start * steps[k]
        failed = ctypes.c_int64(-1)
        status = function(layout.ctx(buffer), pointers, stop - start,
                          (ctypes.c_int64 * max(len(steps), 1))(*steps), ctypes.byref(failed))
    finally:
        layout.release(buffer, values)
    if status == 0:
        return None
    return error_from_context(layout.context(buffer), sites, max_depth, []), start + failed.value


_BATCH_ENTRY = ctypes.CFUNCTYPE(ctypes.c_int32, ctypes.c_void_p, ctypes.c_void_p,
                                ctypes.c_int64, ctypes.c_void_p, ctypes.c_void_p)


def _entry(native, symbol: str) -> tuple:
    """(`<symbol>_batch` as a ctypes function, the EntryLayout of its first item
    (descriptors), the positions it writes), looked up once per module and symbol."""
    entry = native.batch_entries.get(symbol)
    if entry is None:
        types, results, written, _ = native.symbols[symbol]
        entry = native.batch_entries[symbol] = (
            _BATCH_ENTRY(native.engine.get_function_address(symbol + "_batch")),
            EntryLayout(types, results, objects=False, written=written), written)
    return entry


def _steps(batches: list) -> list:
    """The step in bytes from one item to the next of each argument (0: not batched);
    a batch whose items cannot be used in place is refused (not_addressable)."""
    steps = []
    for batch in batches:
        if batch is None:
            steps.append(0)
            continue
        dtype, step = batch.dtype, batch.strides[0]
        if data_address(batch) % dtype.alignment or step % dtype.itemsize or \
                not dtype.isnative:
            raise not_addressable()
        steps.append(step)
    return steps
