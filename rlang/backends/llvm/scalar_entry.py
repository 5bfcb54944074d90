"""Calls of functions of f64 and i64 scalars as Python builtins: `scalar_entry(native,
symbol, layout, max_depth)` is a builtin function that runs the entry point of
`symbol` on Python floats and ints (or gives back () where the general call must
make the call), or None where no such builtin can be made (Note [Scalar calls
without ctypes]).

Note [Scalar calls without ctypes]
~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
`square!(y!, x)` (`y! += x * x`, GradBench's hello) took 5–8 µs a call, PyTorch's
`x * x` 1.7 µs: the native work is a nanosecond, the rest is Python around one ctypes
call (the module's `call`, the signature, `pack`, ctypes' own argument conversion,
`unpack`).  For a function whose parameters are all f64 or i64, the call is now a
builtin function generated in LLVM IR over CPython's C API (METH_FASTCALL): it reads
the argument objects, fills the entry point's buffer on its stack, releases the GIL
around the entry point as ctypes does, and builds the tuple of new values.  It
decides nothing the general call would decide differently:

- each argument must be exactly a `float` (f64) or an `int` in i64's range (i64), so
  every argument the general call would convert, refuse or range-check goes there;
- any other count of arguments, a failed check in the code (a status other than 0)
  or a failed allocation of a result gives back the empty tuple, and the caller
  makes the general call from the start: the arguments are immutable and the code
  has no `print`, so the second run is the only one anybody sees (its error is the
  general call's, with its frame variables, once the first run's are dropped);
- modules whose code prints, recurses deeply (the big-stack thread) or runs
  `@parallel for` loops (their Python hook) are not given one, nor is code that is
  still the quick first tier (Note [A quick first call]).

The C structures read are CPython's object header (`ob_type` at 8 bytes), a float's
value (at 16) and a tuple's items (from 24), as CPython 3.8–3.13 lay them out;
`pyapi.layout_known()` reads them from live objects first, and where they differ (a
free-threaded or debug build) no builtin is made.
"""
from __future__ import annotations

from llvmlite import ir as ll

from .. import abi
from .pyapi import ENTRY, FLOAT_AT, BuiltinBuilder, entry_symbol, layout_known
from .types import F64, I32, I64


def _takes_scalars(types: tuple) -> bool:
    """Whether a specialisation of these argument types can have a builtin call."""
    return bool(types) and all(t in ("f64", "i64") for t in types)


def scalar_entry(native, symbol: str, layout, max_depth: int):
    """The builtin call of `symbol` in `native` (a NativeModule), or None where it
    cannot have one (see the Note).  The builtin holds what it runs on (as its
    `__self__`): its machine code, its method definition and `native`'s code."""
    if not layout_known() or not _takes_scalars(layout.types) or layout.results or \
            native.recursive or native.threaded_loops or not native.settled_now():
        return None
    code = native.settled()
    if code.prints:
        return None
    target, entry = entry_symbol(native, symbol, "rev_scalar_target")
    builder = BuiltinBuilder("rev_scalar_call")
    _write_builtin(builder, layout.types, target, max_depth)
    return builder.finish(f"{symbol}_scalars", (code, entry))


def _write_builtin(builder: BuiltinBuilder, types: tuple, target: str,
                   max_depth: int) -> None:
    """The body of the builtin for arguments of `types` calling the entry point known
    to LLVM as `target` (`i32 (ctx*, args*)`)."""
    b = builder.b
    n = len(types)
    words = abi.CTX_WORDS + 2 * n                   # context, pointers, holders
    buffer = b.alloca(ll.ArrayType(I64, words), name="buffer")
    word = lambda k: b.gep(buffer, [ll.Constant(I64, 0), ll.Constant(I64, k)])  # noqa: E731
    overflow = b.alloca(I32, name="overflow")
    builder.require(b.icmp_signed("==", builder.nargs, ll.Constant(I64, n)), "counted")
    for k, t in enumerate(types):
        item = builder.argument(k)
        builder.require_type(item, float if t == "f64" else int, f"typed{k}")
        holder = word(abi.CTX_WORDS + n + k)
        if t == "f64":
            b.store(builder.read(item, FLOAT_AT, F64), b.bitcast(holder, F64.as_pointer()))
        else:
            b.store(ll.Constant(I32, 0), overflow)
            value = builder.call("PyLong_AsLongLongAndOverflow", [item, overflow])
            builder.require(b.icmp_signed("==", b.load(overflow), ll.Constant(I32, 0)),
                            f"fits{k}")
            b.store(value, holder)
        b.store(b.ptrtoint(holder, I64), word(abi.CTX_WORDS + k))
    for k, value in ((abi.CTX_SITE, 0), (abi.CTX_DEPTH, 0), (abi.CTX_MAX_DEPTH, max_depth),
                     (abi.CTX_THREADS, 1)):
        b.store(ll.Constant(I64, value), word(k))
    entry = builder.extern(target, ENTRY)
    state = builder.call("PyEval_SaveThread", [])
    status = b.call(entry, [b.bitcast(word(0), entry.args[0].type),
                            b.bitcast(word(abi.CTX_WORDS), entry.args[1].type)])
    builder.call("PyEval_RestoreThread", [state])
    builder.require(b.icmp_signed("==", status, ll.Constant(I32, 0)), "ran")
    result = builder.call("PyTuple_New", [ll.Constant(I64, n)])
    null = builder.null
    with b.if_then(b.icmp_unsigned("==", result, null), likely=False):
        b.ret(null)                             # (MemoryError, set by PyTuple_New)
    for k, t in enumerate(types):
        holder = word(abi.CTX_WORDS + n + k)
        if t == "f64":
            item = builder.call("PyFloat_FromDouble",
                                [b.load(b.bitcast(holder, F64.as_pointer()))])
        else:
            item = builder.call("PyLong_FromLongLong", [b.load(holder)])
        with b.if_then(b.icmp_unsigned("==", item, null), likely=False):
            builder.call("Py_DecRef", [result])
            b.ret(null)                         # (MemoryError, set by the API)
        builder.store_item(result, k, item)
    b.ret(result)
    b.position_at_end(builder.general)
    b.ret(builder.call("PyTuple_New", [ll.Constant(I64, 0)]))
