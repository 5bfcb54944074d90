"""The IR type of a Python argument value, for the compiled backends (`type_of_value`).

Scalars by their Python type (`bool`, `int`, `float`, `complex`, rlang's `I32`, `F32`,
`Fixed`, `ULog`), stacks by their element type, NumPy arrays (and memory maps,
`FixedArray`, `ULogArray`) by element type, rank and whether their last axis is
contiguous.  Anything else is BackendUnsupported (the interpreter runs it under
"auto").
"""
from __future__ import annotations

import numpy as np

from ..ir import nodes as ir
from ..numbers import F32, I32, Fixed, FixedArray, ULog, ULogArray
from ..types_rules import SUPPORTED_SCALARS, BackendUnsupported
from ..values import Stack


#: Scalar classes and their IR types, subclasses before their bases (bool is an int,
#: I32 an int, F32 a float).
_SCALAR_CLASSES = ((bool, "bool"), (Fixed, "fixed"), (ULog, "ulog"), (I32, "i32"),
                   (int, "i64"), (F32, "f32"), (float, "f64"), (complex, "complex"))


def type_of_value(value, backend: str = "llvm"):
    """The IR type of a Python argument value (BackendUnsupported if none)."""
    for cls, name in _SCALAR_CLASSES:
        if isinstance(value, cls):
            return name
    if isinstance(value, Stack) and value.elem in SUPPORTED_SCALARS:
        return ir.StackType(value.elem)
    if isinstance(value, np.ndarray):
        scalar = _ARRAY_SYSTEMS.get(type(value)) or DTYPE_SCALARS.get(value.dtype)
        plain = type(value) is np.ndarray or type(value) in _ARRAY_SYSTEMS or \
            isinstance(value, np.memmap)    # a memory map's elements are its memory
        if scalar is not None and value.ndim > 0 and plain:
            return ir.ArrayType(scalar, value.ndim,             # Note [Unit-stride arrays]
                                value.strides[-1] == value.itemsize)
        if scalar is not None and not plain:    # np.matrix, np.ma (masked elements
            raise BackendUnsupported(            # read as nan), …: not their memory
                f"the {backend} backend takes NumPy arrays and memory maps, not "
                f"{type(value).__module__}.{type(value).__name__}; pass np.asarray(…)")
    from ..values import a_type
    raise BackendUnsupported(f"the {backend} backend does not handle {a_type(value)} "
                             "arguments yet")


_ARRAY_SYSTEMS = {FixedArray: "fixed", ULogArray: "ulog"}
DTYPE_SCALARS = {np.dtype(np.float64): "f64", np.dtype(np.float32): "f32",
                  np.dtype(np.int64): "i64", np.dtype(np.int32): "i32",
                  np.dtype(np.bool_): "bool", np.dtype(np.complex128): "complex"}


#: Scalar types that carry their rev type with them.
_CHECKED_SCALARS = (F32, I32)


def signature_of(args) -> tuple | None:
    """What decides how arguments bind: the type (and dtype and rank) of each.  None
    when some argument must be converted or range-checked on every call (an int
    beyond i64, a list, a NumPy scalar …), which then takes the general path."""
    out = []
    for a in args:
        kind = type(a)
        if kind is np.ndarray:          # Note [Unit-stride arrays]
            out.append((a.dtype, a.ndim, a.ndim > 0 and a.strides[-1] == a.itemsize))
        elif kind is float or kind is bool or kind in _CHECKED_SCALARS:
            out.append(kind)
        elif kind is int and -(1 << 63) <= a < (1 << 63):
            out.append(kind)
        else:
            return None
    return tuple(out)
