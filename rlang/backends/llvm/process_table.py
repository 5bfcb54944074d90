"""What a builtin's code takes from the process it runs in (Note [Builtins kept on
disk], call_builtins.py): the byte offsets of CPython's objects it reads, the
addresses of the objects and functions it uses, in a table, and the builtin
function object made of loaded code and such a table.  Nothing here loads LLVM.

    keys = table_keys(2, [np.dtype("d")])
    addresses = [address_of(key, entries) for key in keys]
    builtin = new_builtin(name, code, addresses, kept)

A builtin takes METH_FASTCALL arguments `(self, PyObject *const *args, nargs)`; its
`self` is the tuple `(table, code, definition, *kept)`, `table` a uint64 array of
the addresses of `keys`, in order.
"""
from __future__ import annotations

import ctypes
import functools

import numpy as np

from .marshal import array_header

#: byte offsets of an object's type, a float's value and a tuple's first item
TYPE_AT, FLOAT_AT, ITEMS_AT = 8, 16, 24
#: the CPython C API functions builtins call
API_NAMES = ("PyFloat_FromDouble", "PyLong_FromLongLong", "PyLong_AsLongLongAndOverflow",
             "PyTuple_New", "Py_IncRef", "Py_DecRef", "PyErr_Clear", "PyEval_SaveThread",
             "PyEval_RestoreThread")
#: NumPy C API functions builtins call, by their slots in `_ARRAY_API` (NumPy's
#: stable ABI)
NUMPY_SLOTS = {"PyArray_CopyInto": 50, "PyArray_NewCopy": 85, "PyArray_Zeros": 183}
_ARRAY_TYPE_SLOT = 2        # &PyArray_Type
#: the types builtins compare their arguments' types with
TYPES = {"float": float, "int": int, "ndarray": np.ndarray}
#: what every builtin's table holds first
BASE_KEYS = (tuple(("type", name) for name in TYPES) + (("object", "None"),) +
             tuple(("api", name) for name in API_NAMES) +
             tuple(("numpy", name) for name in NUMPY_SLOTS) + (("dtype", "d"),))
_METH_FASTCALL = 0x0080


def table_keys(entries: int, dtypes: list) -> tuple:
    """The keys of a builtin's table: `BASE_KEYS`, its `entries` entry points and
    the dtypes of its array arguments (each key once, in that order)."""
    keys = BASE_KEYS + tuple(("entry", k) for k in range(entries)) + \
        tuple(("dtype", dtype.char) for dtype in dtypes)
    return tuple(dict.fromkeys(keys))


def address_of(key: tuple, entries: list) -> int:
    """The address in this process of what `key` names (`entries`: the addresses
    of the builtin's entry points)."""
    kind, name = key
    if kind == "type":
        return id(TYPES[name])
    if kind == "object":
        return id(None)
    if kind == "api":
        return ctypes.cast(getattr(ctypes.pythonapi, name), ctypes.c_void_p).value
    if kind == "numpy":
        return numpy_api()[name]
    if kind == "dtype":
        return id(np.dtype(name))
    return entries[name]


class _MethodDef(ctypes.Structure):
    _fields_ = [("name", ctypes.c_char_p), ("meth", ctypes.c_void_p),
                ("flags", ctypes.c_int), ("doc", ctypes.c_char_p)]


_NEW_FUNCTION = ctypes.pythonapi.PyCFunction_NewEx
_NEW_FUNCTION.restype = ctypes.py_object
_NEW_FUNCTION.argtypes = [ctypes.c_void_p, ctypes.py_object, ctypes.c_void_p]


def new_builtin(name: str, code, addresses: list, kept: tuple):
    """The builtin function `name` whose METH_FASTCALL function is `code`'s
    `builtin` (loaded code: a shared library or an MCJIT engine), reading
    `addresses` as its table; it holds `code` and `kept` (what its code runs on)."""
    table = np.array(addresses, dtype=np.uint64)
    definition = _MethodDef(name.encode(), code.get_function_address("builtin"),
                            _METH_FASTCALL, None)
    return _NEW_FUNCTION(ctypes.addressof(definition), (table, code, definition) + kept, None)


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


@functools.cache
def numpy_api() -> dict | None:
    """{name: address} of the NumPy functions in `NUMPY_SLOTS`, or None where NumPy's
    table is not found where and as expected."""
    try:
        try:
            from numpy._core import _multiarray_umath as umath
        except ImportError:                                 # (NumPy 1.x)
            from numpy.core import _multiarray_umath as umath
        get_pointer = ctypes.pythonapi.PyCapsule_GetPointer
        get_pointer.restype = ctypes.c_void_p
        get_pointer.argtypes = [ctypes.py_object, ctypes.c_char_p]
        get_name = ctypes.pythonapi.PyCapsule_GetName
        get_name.restype = ctypes.c_char_p
        get_name.argtypes = [ctypes.py_object]
        capsule = umath._ARRAY_API
        table = get_pointer(capsule, get_name(capsule))
        slots = (ctypes.c_void_p * 300).from_address(table)
    except (ImportError, AttributeError, ValueError, TypeError, OSError):
        return None
    if slots[_ARRAY_TYPE_SLOT] != id(np.ndarray):
        return None
    return {name: slots[slot] for name, slot in NUMPY_SLOTS.items()}


def canonical(dtype):
    """NumPy's own object for `dtype` (the one plain arrays of it hold), or None."""
    own = np.dtype(dtype.char)
    return own if own == dtype and own.isnative else None


@functools.cache
def descr_offset() -> int | None:
    """The byte offset of an array object's dtype (`descr`), or None where the probes
    do not show it two words after `strides`' (PyArrayObject_fields: …, strides,
    base, descr, flags)."""
    header = array_header()
    if header is None:
        return None
    at = header[3] + 16
    probes = [np.zeros(3), np.arange(4)[::2], np.zeros((2, 2), dtype=np.complex128).T]
    if all(ctypes.c_void_p.from_address(id(p) + at).value == id(p.dtype) for p in probes):
        return at
    return None
