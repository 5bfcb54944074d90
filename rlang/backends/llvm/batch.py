"""Run one compiled entry point over a batch of arguments in one native call
(`rlang.vmap`, LANGUAGE.md §13).

    run_batch(native, symbol, values, batches, n, max_depth)

`values` are the arguments of the first item, conformed to the parameter types;
`batches[k]` is argument k's batch (an array whose axis 0 is the batch, of the
storage type of the parameter: scalars as elements, arrays as sub-arrays) or None
where every item takes `values[k]`.  Batched arguments are updated in place, as a
call updates arrays: a scalar's new values land in its batch array (Note [One
native call per batch]).
"""
from __future__ import annotations

import ctypes
import struct

from ...errors import in_batch_item
from ...ir import nodes as ir
from ..errors import error_from_context
from .marshal import EntryLayout, ReadOnlyArgument, data_address, not_addressable

# Note [One native call per batch]
# ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
# A batch is not a Python loop of calls: that costs a few microseconds of packing per
# item, more than the work of a small function.  It is one call of a driver
# compiled once per process (`_DRIVER_IR`), which, for each item k, points each
# batched argument at its item and calls the function's `<symbol>_entry`
# (rlang/backends/abi.py).  The argument memory is laid out once, by `EntryLayout`,
# for the first item; what changes between items is one word per batched argument:
# the pointer to a scalar's storage (its slot in the argument pointer array) or the
# `data` word of an array's descriptor.  The driver writes `base + k * step` into
# each such word, so it needs to know nothing of the types.  A module's entry
# specialisation has the `<symbol>_entry` the driver calls (backends/llvm/emit.py),
# beside the `_pyentry` that single calls use.  A failed check stops the batch at its item,
# whose index comes back with the error; the items before it have run.

_DRIVER_IR = r"""
define i32 @rev_batch(i32 (i64*, i8**)* %entry, i64* %ctx, i8** %args, i64** %targets,
                      i64* %bases, i64* %steps, i64 %nargs, i64 %n, i64* %failed) {
start:
  br label %item
item:
  %k = phi i64 [ 0, %start ], [ %k.next, %ran ]
  %more = icmp slt i64 %k, %n
  br i1 %more, label %point, label %done
point:
  %j = phi i64 [ 0, %item ], [ %j.next, %set ]
  %all = icmp sge i64 %j, %nargs
  br i1 %all, label %call, label %set
set:
  %target.at = getelementptr i64*, i64** %targets, i64 %j
  %target = load i64*, i64** %target.at
  %base.at = getelementptr i64, i64* %bases, i64 %j
  %base = load i64, i64* %base.at
  %step.at = getelementptr i64, i64* %steps, i64 %j
  %step = load i64, i64* %step.at
  %offset = mul i64 %k, %step
  %address = add i64 %base, %offset
  store i64 %address, i64* %target
  %j.next = add i64 %j, 1
  br label %point
call:
  %status = call i32 %entry(i64* %ctx, i8** %args)
  %failed.now = icmp ne i32 %status, 0
  br i1 %failed.now, label %fail, label %ran
ran:
  %k.next = add i64 %k, 1
  br label %item
fail:
  store i64 %k, i64* %failed
  ret i32 %status
done:
  ret i32 0
}
"""

_DRIVER: list = []
_P = ctypes.c_void_p


def _driver():
    """The compiled driver (made once per process)."""
    if not _DRIVER:
        import llvmlite.binding as llvm

        from .jit import optimise, target_machine

        machine = target_machine()
        engine = llvm.create_mcjit_compiler(optimise(_DRIVER_IR, machine), machine)
        engine.finalize_object()
        address = engine.get_function_address("rev_batch")
        function = ctypes.CFUNCTYPE(ctypes.c_int32, _P, _P, _P, _P, _P, _P,
                                    ctypes.c_int64, ctypes.c_int64, _P)(address)
        _DRIVER.append((engine, function))       # (the engine owns the code)
    return _DRIVER[0][1]


def run_batch(native, symbol: str, values: list, batches: list, n: int,
              max_depth: int) -> None:
    """Run `symbol` of `native` (a jit.NativeModule) on n items (module docstring)."""
    if n == 0:
        return
    address, layout, written = _entry(native, symbol)
    for k in written:       # a batch the function writes must take the writes
        if batches[k] is not None and not batches[k].flags.writeable:
            raise ReadOnlyArgument(k)
    buffer = layout.pack(values, max_depth)
    try:
        words, count = _moving_words(layout, buffer, batches)
        failed = ctypes.c_int64(-1)
        status = _driver()(address, layout.ctx(buffer), layout.args(buffer), words,
                           ctypes.addressof(words) + 8 * count,
                           ctypes.addressof(words) + 16 * count, count, n,
                           ctypes.byref(failed))
    finally:
        layout.release(buffer, values)
    if status != 0:
        error = error_from_context(layout.context(buffer), native.sites, max_depth, [])
        raise in_batch_item(error, failed.value)


def _entry(native, symbol: str) -> tuple:
    """(the address of `<symbol>_entry`, its EntryLayout (descriptors), the positions
    it writes), looked up once per module and symbol."""
    entries = native.__dict__.setdefault("batch_entries", {})
    entry = entries.get(symbol)
    if entry is None:
        types, results, written = native.symbols[symbol]
        entry = entries[symbol] = (
            native.engine.get_function_address(symbol + "_entry"),
            EntryLayout(types, results, objects=False, written=written), written)
    return entry


def _moving_words(layout: EntryLayout, buffer, batches: list) -> tuple:
    """One int64 array of three parts, for each batched argument: the address of the
    word that points at its item (Note [One native call per batch]), the item-0
    address, and the step in bytes from one item to the next; and how many."""
    targets, bases, steps = [], [], []
    args = layout.args(buffer)
    pointers = args - layout.ctx(buffer)
    for k, batch in enumerate(batches):
        if batch is None:
            continue
        dtype = batch.dtype
        step = batch.strides[0]
        base = data_address(batch)
        if base % dtype.alignment or step % dtype.itemsize or not dtype.isnative:
            raise not_addressable()
        if isinstance(layout.types[k], ir.ArrayType):   # the data word of its descriptor
            targets.append(struct.unpack_from("=Q", buffer, pointers + 8 * k)[0])
        else:                   # a scalar: its argument pointer
            targets.append(args + 8 * k)
        bases.append(base)
        steps.append(step)
    count = len(targets)
    return (ctypes.c_int64 * (3 * count))(*targets, *bases, *steps), count
