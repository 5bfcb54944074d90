"""Builtin functions written in LLVM IR over CPython's C API (call_builtin_code.py
writes the calls' builtins with it).

    builder = BuiltinBuilder("rev_call", keys, data_at)
    ... b = builder.b; builder.call("PyFloat_FromDouble", [x]) ...
    str(builder.module)         # compiled by call_builtins.py, kept on disk

A builtin takes METH_FASTCALL arguments `(self, PyObject *const *args, nargs)`.  It
reads objects at the offsets of CPython's object layout (`ob_type`, a float's value,
a tuple's items), which `process_table.layout_known()` reads from live objects
first; where they differ (a free-threaded or debug build) no builtin is made.  Every
address of the process it uses (types, objects, C API functions, entry points) it
loads from the table its `self` holds (process_table.py), so its code is the same in
every process (Note [Builtins kept on disk], call_builtins.py).
"""
from __future__ import annotations

from llvmlite import ir as ll

from .process_table import ITEMS_AT, TYPE_AT
from .types import F64, I32, I64, I8

PTR = I8.as_pointer()
#: what a builtin function takes and gives: METH_FASTCALL
FASTCALL = ll.FunctionType(PTR, [PTR, PTR.as_pointer(), I64])
#: the LLVM types of the CPython C API functions builtins call (process_table.API_NAMES)
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
#: an entry point: `i32 (ctx*, args*)` (rlang/backends/abi.py)
ENTRY = ll.FunctionType(I32, [PTR, PTR])


class BuiltinBuilder:
    """An LLVM module with one METH_FASTCALL function `builtin` being written: `b` is
    its IRBuilder, `self_arg, args, nargs` its parameters; `general` a block returning
    the empty tuple (the caller then makes the general call).  `keys` are its
    table's (process_table.table_keys), `data_at` the byte offset of an array
    object's data pointer (the table is a uint64 array, item 0 of `self`)."""

    def __init__(self, name: str, keys: tuple, data_at: int):
        self.module = ll.Module(name)
        fn = ll.Function(self.module, FASTCALL, name="builtin")
        self.self_arg, self.args, self.nargs = fn.args
        self.fn = fn
        self.b = ll.IRBuilder(fn.append_basic_block("entry"))
        self.general = fn.append_basic_block("general")
        self.null = ll.Constant(PTR, None)
        self._slots = {key: k for k, key in enumerate(keys)}
        table = self.read(self.self_arg, ITEMS_AT, PTR)
        self._table = self.b.bitcast(self.read(table, data_at, PTR), I64.as_pointer())

    def slot(self, key: tuple):
        """The address the table holds for `key`, as a pointer."""
        b = self.b
        word = b.gep(self._table, [ll.Constant(I64, self._slots[key])])
        return b.inttoptr(b.load(word), PTR)

    def call(self, name: str, args: list):
        """Call the C API function `name` (one of API)."""
        return self.call_slot(("api", name), API[name], args)

    def call_slot(self, key: tuple, kind: ll.FunctionType, args: list):
        """Call the function (of LLVM type `kind`) whose address the table holds for
        `key`."""
        return self.b.call(self.b.bitcast(self.slot(key), kind.as_pointer()), args)

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

    def require_type(self, item, type_name: str, name: str) -> None:
        """Go on where `item`'s type is exactly the type `type_name` names
        (process_table.TYPES)."""
        kind = self.read(item, TYPE_AT, PTR)
        self.require(self.b.icmp_unsigned("==", kind, self.slot(("type", type_name))), name)

    def store_item(self, tuple_, k: int, item) -> None:
        """Put `item` into the k-th slot of a new tuple (stealing the reference)."""
        b = self.b
        slot = b.gep(tuple_, [ll.Constant(I64, ITEMS_AT + 8 * k)])
        b.store(item, b.bitcast(slot, PTR.as_pointer()))


def branch_unless(b: ll.IRBuilder, condition, otherwise, name: str) -> None:
    """Go on in a new block where `condition` holds, else to `otherwise`."""
    then = b.append_basic_block(name)
    b.cbranch(condition, then, otherwise)
    b.position_at_end(then)
