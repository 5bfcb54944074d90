"""Builtin functions generated in LLVM IR over CPython's C API (call_builtins.py
writes the calls' builtins with it).

    builder = BuiltinBuilder("rev_call")
    ... b = builder.b; builder.call("PyFloat_FromDouble", [x]) ...
    builtin = builder.finish(name, kept)     # a `builtin_function_or_method`

A builtin takes METH_FASTCALL arguments `(self, PyObject *const *args, nargs)`.  It
reads objects at the offsets of CPython's object layout (`ob_type`, a float's value,
a tuple's items), which `layout_known()` reads from live objects first; where they
differ (a free-threaded or debug build) no builtin is made.
"""
from __future__ import annotations

import ctypes
import functools

import llvmlite.binding as llvm
from llvmlite import ir as ll

from .types import F64, I32, I64, I8

PTR = I8.as_pointer()
#: what a builtin function takes and gives: METH_FASTCALL
FASTCALL = ll.FunctionType(PTR, [PTR, PTR.as_pointer(), I64])
_METH_FASTCALL = 0x0080
#: CPython's C API functions builtins call, with their LLVM types
API = {
    "PyFloat_FromDouble": ll.FunctionType(PTR, [F64]),
    "PyLong_FromLongLong": ll.FunctionType(PTR, [I64]),
    "PyLong_AsLongLongAndOverflow": ll.FunctionType(I64, [PTR, I32.as_pointer()]),
    "PyTuple_New": ll.FunctionType(PTR, [I64]),
    "Py_IncRef": ll.FunctionType(ll.VoidType(), [PTR]),
    "Py_DecRef": ll.FunctionType(ll.VoidType(), [PTR]),
    "PyErr_Clear": ll.FunctionType(ll.VoidType(), []),
    "PyEval_SaveThread": ll.FunctionType(PTR, []),
    "PyEval_RestoreThread": ll.FunctionType(ll.VoidType(), [PTR]),
}
#: byte offsets of an object's type, a float's value and a tuple's first item
TYPE_AT, FLOAT_AT, ITEMS_AT = 8, 16, 24


class _MethodDef(ctypes.Structure):
    _fields_ = [("name", ctypes.c_char_p), ("meth", ctypes.c_void_p),
                ("flags", ctypes.c_int), ("doc", ctypes.c_char_p)]


_NEW_FUNCTION = ctypes.pythonapi.PyCFunction_NewEx
_NEW_FUNCTION.restype = ctypes.py_object
_NEW_FUNCTION.argtypes = [ctypes.c_void_p, ctypes.py_object, ctypes.c_void_p]


@functools.cache
def layout_known() -> bool:
    """Whether CPython's objects are laid out as the builtins read them."""
    value, pair = 1.5, (2.5, 7)
    try:
        return (ctypes.c_void_p.from_address(id(value) + TYPE_AT).value == id(float)
                and ctypes.c_double.from_address(id(value) + FLOAT_AT).value == 1.5
                and ctypes.c_void_p.from_address(id(pair) + TYPE_AT).value == id(tuple)
                and ctypes.c_void_p.from_address(id(pair) + ITEMS_AT).value == id(pair[0])
                and ctypes.c_void_p.from_address(id(pair) + ITEMS_AT + 8).value
                == id(pair[1]))
    except (OSError, ValueError, AttributeError):
        return False


class BuiltinBuilder:
    """An LLVM module with one METH_FASTCALL function `builtin` being written: `b` is
    its IRBuilder, `self_arg, args, nargs` its parameters; `general` a block returning
    the empty tuple (the caller then makes the general call)."""

    def __init__(self, name: str):
        self.module = ll.Module(name)
        self._functions: dict = {}
        fn = ll.Function(self.module, FASTCALL, name="builtin")
        self.self_arg, self.args, self.nargs = fn.args
        self.fn = fn
        self.b = ll.IRBuilder(fn.append_basic_block("entry"))
        self.general = fn.append_basic_block("general")
        self.null = ll.Constant(PTR, None)

    def call(self, name: str, args: list):
        """Call the C API function `name` (one of API)."""
        function = self._functions.get(name)
        if function is None:
            function = self._functions[name] = ll.Function(self.module, API[name], name=name)
        return self.b.call(function, args)

    def call_address(self, symbol: str, address: int, kind: ll.FunctionType, args: list):
        """Call the function at `address` (of LLVM type `kind`), known to LLVM as
        `symbol`."""
        function = self._functions.get(symbol)
        if function is None:
            llvm.add_symbol(symbol, address)
            function = self._functions[symbol] = ll.Function(self.module, kind, name=symbol)
        return self.b.call(function, args)

    def extern(self, symbol: str, kind: ll.FunctionType) -> ll.Function:
        """A function of this process that LLVM knows as `symbol` (llvm.add_symbol)."""
        return ll.Function(self.module, kind, name=symbol)

    def argument(self, k: int):
        """The k-th argument object (`args[k]`)."""
        return self.b.load(self.b.gep(self.args, [ll.Constant(I64, k)]))

    def read(self, pointer, at: int, kind):
        """The value of LLVM type `kind` at byte `at` of the object or memory `pointer`."""
        b = self.b
        return b.load(b.bitcast(b.gep(pointer, [ll.Constant(I64, at)]), kind.as_pointer()))

    def require(self, condition, name: str) -> None:
        """Go on in a new block where `condition` holds, else to `general`."""
        branch_unless(self.b, condition, self.general, name)

    def require_type(self, item, type_object, name: str) -> None:
        """Go on where `item`'s type is exactly `type_object` (a Python type)."""
        kind = self.read(item, TYPE_AT, PTR)
        expected = ll.Constant(I64, id(type_object)).inttoptr(PTR)
        self.require(self.b.icmp_unsigned("==", kind, expected), name)

    def address(self, obj):
        """A constant pointer to the Python object `obj` (kept alive by the caller)."""
        return ll.Constant(I64, id(obj)).inttoptr(PTR)

    def store_item(self, tuple_, k: int, item) -> None:
        """Put `item` into the k-th slot of a new tuple (stealing the reference)."""
        b = self.b
        slot = b.gep(tuple_, [ll.Constant(I64, ITEMS_AT + 8 * k)])
        b.store(item, b.bitcast(slot, PTR.as_pointer()))

    def finish(self, name: str, kept: tuple):
        """The builtin function, compiled; it holds `kept` (what its code runs on) as
        its `__self__`."""
        from .jit import target_machine

        _api_symbols()
        engine = llvm.create_mcjit_compiler(llvm.parse_assembly(str(self.module)),
                                            target_machine(opt=2))
        engine.finalize_object()
        definition = _MethodDef(name.encode(), engine.get_function_address("builtin"),
                                _METH_FASTCALL, None)
        return _NEW_FUNCTION(ctypes.addressof(definition), (engine, definition) + kept, None)


def entry_symbol(native, symbol: str, prefix: str) -> tuple:
    """(the LLVM name of `symbol`'s entry point in `native`'s settled code, by its
    address; the ctypes function, to keep alive)."""
    entry, _ = native.entry_of(symbol)
    address = ctypes.cast(entry, ctypes.c_void_p).value
    target = f"{prefix}_{address:x}"
    llvm.add_symbol(target, address)
    return target, entry


#: an entry point: `i32 (ctx*, args*)` (rlang/backends/abi.py)
ENTRY = ll.FunctionType(I32, [PTR, PTR])


@functools.cache
def _api_symbols() -> None:
    """Tell LLVM where the C API functions the builtins call are in this process."""
    for name in API:
        llvm.add_symbol(name, ctypes.cast(getattr(ctypes.pythonapi, name),
                                          ctypes.c_void_p).value)


def branch_unless(b: ll.IRBuilder, condition, otherwise, name: str) -> None:
    """Go on in a new block where `condition` holds, else to `otherwise`."""
    then = b.append_basic_block(name)
    b.cbranch(condition, then, otherwise)
    b.position_at_end(then)
