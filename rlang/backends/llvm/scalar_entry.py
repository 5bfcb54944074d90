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
`_layout_known()` reads them from live objects first, and where they differ (a
free-threaded or debug build) no builtin is made.
"""
from __future__ import annotations

import ctypes
import functools

import llvmlite.binding as llvm
from llvmlite import ir as ll

from .. import abi
from .types import F64, I32, I64, I8

_PTR = I8.as_pointer()
#: what the builtin function of a call takes: METH_FASTCALL
_FASTCALL = ll.FunctionType(_PTR, [_PTR, _PTR.as_pointer(), I64])
_METH_FASTCALL = 0x0080
#: CPython's C API functions the builtin calls, with their LLVM types
_API = {
    "PyFloat_FromDouble": ll.FunctionType(_PTR, [F64]),
    "PyLong_FromLongLong": ll.FunctionType(_PTR, [I64]),
    "PyLong_AsLongLongAndOverflow": ll.FunctionType(I64, [_PTR, I32.as_pointer()]),
    "PyTuple_New": ll.FunctionType(_PTR, [I64]),
    "Py_DecRef": ll.FunctionType(ll.VoidType(), [_PTR]),
    "PyEval_SaveThread": ll.FunctionType(_PTR, []),
    "PyEval_RestoreThread": ll.FunctionType(ll.VoidType(), [_PTR]),
}
_TYPE_AT, _FLOAT_AT, _ITEMS_AT = 8, 16, 24


class _MethodDef(ctypes.Structure):
    _fields_ = [("name", ctypes.c_char_p), ("meth", ctypes.c_void_p),
                ("flags", ctypes.c_int), ("doc", ctypes.c_char_p)]


_NEW_FUNCTION = ctypes.pythonapi.PyCFunction_NewEx
_NEW_FUNCTION.restype = ctypes.py_object
_NEW_FUNCTION.argtypes = [ctypes.c_void_p, ctypes.py_object, ctypes.c_void_p]


@functools.cache
def _layout_known() -> bool:
    """Whether CPython's objects are laid out as the builtins read them."""
    value, pair = 1.5, (2.5, 7)
    try:
        return (ctypes.c_void_p.from_address(id(value) + _TYPE_AT).value == id(float)
                and ctypes.c_double.from_address(id(value) + _FLOAT_AT).value == 1.5
                and ctypes.c_void_p.from_address(id(pair) + _TYPE_AT).value == id(tuple)
                and ctypes.c_void_p.from_address(id(pair) + _ITEMS_AT).value == id(pair[0])
                and ctypes.c_void_p.from_address(id(pair) + _ITEMS_AT + 8).value
                == id(pair[1]))
    except (OSError, ValueError, AttributeError):
        return False


def _takes_scalars(types: tuple) -> bool:
    """Whether a specialisation of these argument types can have a builtin call."""
    return bool(types) and all(t in ("f64", "i64") for t in types)


def scalar_entry(native, symbol: str, layout, max_depth: int):
    """The builtin call of `symbol` in `native` (a NativeModule), or None where it
    cannot have one (see the Note).  The builtin holds what it runs on (as its
    `__self__`): its machine code, its method definition and `native`'s code."""
    if not _layout_known() or not _takes_scalars(layout.types) or layout.results or \
            native.recursive or native.threaded_loops or not native.settled_now():
        return None
    code = native.settled()
    if code.prints:
        return None
    entry, _ = native.entry_of(symbol)
    address = ctypes.cast(entry, ctypes.c_void_p).value
    target = f"rev_scalar_target_{address:x}"      # (the entry point, by its address)
    llvm.add_symbol(target, address)
    module = _builtin_ir(layout.types, target, max_depth)
    from .jit import target_machine

    _api_symbols()
    engine = llvm.create_mcjit_compiler(llvm.parse_assembly(str(module)),
                                        target_machine(opt=2))
    engine.finalize_object()
    definition = _MethodDef(f"{symbol}_scalars".encode(),
                            engine.get_function_address("builtin"), _METH_FASTCALL, None)
    kept = (engine, definition, code, entry)
    return _NEW_FUNCTION(ctypes.addressof(definition), kept, None)


def _builtin_ir(types: tuple, target: str, max_depth: int) -> ll.Module:
    """The LLVM module of the builtin function `builtin` for arguments of `types`
    calling the entry point known to LLVM as `target` (`i32 (ctx*, args*)`)."""
    module = ll.Module("rev_scalar_call")
    api = {name: ll.Function(module, kind, name=name) for name, kind in _API.items()}
    fn = ll.Function(module, _FASTCALL, name="builtin")
    _, args, nargs = fn.args
    b = ll.IRBuilder(fn.append_basic_block("entry"))
    general = fn.append_basic_block("general")      # the empty tuple: the general call
    n = len(types)
    words = abi.CTX_WORDS + 2 * n                   # context, pointers, holders
    buffer = b.alloca(ll.ArrayType(I64, words), name="buffer")
    word = lambda k: b.gep(buffer, [ll.Constant(I64, 0), ll.Constant(I64, k)])  # noqa: E731
    overflow = b.alloca(I32, name="overflow")
    _branch_unless(b, b.icmp_signed("==", nargs, ll.Constant(I64, n)), general, "counted")
    for k, t in enumerate(types):
        item = b.load(b.gep(args, [ll.Constant(I64, k)]))
        kind = b.load(b.bitcast(b.gep(item, [ll.Constant(I64, _TYPE_AT)]), _PTR.as_pointer()))
        expected = ll.Constant(I64, id(float) if t == "f64" else id(int)).inttoptr(_PTR)
        _branch_unless(b, b.icmp_unsigned("==", kind, expected), general, f"typed{k}")
        holder = word(abi.CTX_WORDS + n + k)
        if t == "f64":
            value = b.load(b.bitcast(b.gep(item, [ll.Constant(I64, _FLOAT_AT)]),
                                     F64.as_pointer()))
            b.store(value, b.bitcast(holder, F64.as_pointer()))
        else:
            b.store(ll.Constant(I32, 0), overflow)
            value = b.call(api["PyLong_AsLongLongAndOverflow"], [item, overflow])
            _branch_unless(b, b.icmp_signed("==", b.load(overflow), ll.Constant(I32, 0)),
                           general, f"fits{k}")
            b.store(value, holder)
        b.store(b.ptrtoint(holder, I64), word(abi.CTX_WORDS + k))
    for k, value in ((abi.CTX_SITE, 0), (abi.CTX_DEPTH, 0), (abi.CTX_MAX_DEPTH, max_depth),
                     (abi.CTX_THREADS, 1)):
        b.store(ll.Constant(I64, value), word(k))
    entry = ll.Function(module, ll.FunctionType(I32, [_PTR, _PTR]), name=target)
    state = b.call(api["PyEval_SaveThread"], [])
    status = b.call(entry, [b.bitcast(word(0), _PTR),
                            b.bitcast(word(abi.CTX_WORDS), _PTR)])
    b.call(api["PyEval_RestoreThread"], [state])
    _branch_unless(b, b.icmp_signed("==", status, ll.Constant(I32, 0)), general, "ran")
    result = b.call(api["PyTuple_New"], [ll.Constant(I64, n)])
    null = ll.Constant(_PTR, None)
    with b.if_then(b.icmp_unsigned("==", result, null), likely=False):
        b.ret(null)                             # (MemoryError, set by PyTuple_New)
    for k, t in enumerate(types):
        holder = word(abi.CTX_WORDS + n + k)
        if t == "f64":
            item = b.call(api["PyFloat_FromDouble"],
                          [b.load(b.bitcast(holder, F64.as_pointer()))])
        else:
            item = b.call(api["PyLong_FromLongLong"], [b.load(holder)])
        with b.if_then(b.icmp_unsigned("==", item, null), likely=False):
            b.call(api["Py_DecRef"], [result])
            b.ret(null)                         # (MemoryError, set by the API)
        slot = b.gep(result, [ll.Constant(I64, _ITEMS_AT + 8 * k)])
        b.store(item, b.bitcast(slot, _PTR.as_pointer()))
    b.ret(result)
    b.position_at_end(general)
    b.ret(b.call(api["PyTuple_New"], [ll.Constant(I64, 0)]))
    return module


@functools.cache
def _api_symbols() -> None:
    """Tell LLVM where the C API functions the builtins call are in this process."""
    for name in _API:
        llvm.add_symbol(name, ctypes.cast(getattr(ctypes.pythonapi, name),
                                          ctypes.c_void_p).value)


def _branch_unless(b: ll.IRBuilder, condition, otherwise, name: str) -> None:
    """Go on in a new block where `condition` holds, else to `otherwise`."""
    then = b.append_basic_block(name)
    b.cbranch(condition, then, otherwise)
    b.position_at_end(then)
