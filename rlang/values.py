"""Run-time values of the interpreter and how they are shown.

Scalars are Python values: `bool`, `int` (i64, kept in range by `wrap_i64`),
`float` (f64) and `complex`.  Arrays are NumPy arrays (C order, updated in place).
Stacks are `Stack`.  This module names their types (`type_name`), converts values to
a declared type (`conform`), and prints them as rev literals (`format_value`) or as
JSON-ready Python data (`to_json`), as LANGUAGE.md §9 describes.
"""
from __future__ import annotations

import math

import numpy as np

from . import ast

I64_MIN, I64_MAX = -(1 << 63), (1 << 63) - 1
_MASK64 = (1 << 64) - 1

#: NumPy dtypes of the scalar types arrays may hold in this version.
DTYPES = {"i64": np.dtype(np.int64), "bool": np.dtype(np.bool_), "f64": np.dtype(np.float64),
          "complex": np.dtype(np.complex128)}
_DTYPE_NAMES = {dtype: name for name, dtype in DTYPES.items()}

#: Types the grammar knows but this version cannot run yet (number-systems issue).
UNSUPPORTED_TYPES = ("i32", "f32", "fixed", "ulog")


def wrap_i64(value: int) -> int:
    """Two's-complement wrap-around of a Python int into i64."""
    if I64_MIN <= value <= I64_MAX:
        return value
    return ((value + (1 << 63)) & _MASK64) - (1 << 63)


class Stack:
    """A LIFO stack of scalars of one type (`stack{T}`)."""

    __slots__ = ("elem", "items")

    def __init__(self, elem: str, items=()):
        self.elem = elem
        self.items = list(items)

    def __eq__(self, other):
        return isinstance(other, Stack) and self.elem == other.elem and self.items == other.items

    def __repr__(self):
        return f"Stack({self.elem!r}, {self.items!r})"

    def copy(self) -> "Stack":
        return Stack(self.elem, self.items)


def type_name(value) -> str:
    """The rev type of a value: `i64`, `f64[:]`, `stack{i64}`, …"""
    if isinstance(value, bool):
        return "bool"
    if isinstance(value, int):
        return "i64"
    if isinstance(value, float):
        return "f64"
    if isinstance(value, complex):
        return "complex"
    if isinstance(value, np.ndarray):
        elem = _DTYPE_NAMES.get(value.dtype, str(value.dtype))
        return f"{elem}[{','.join(':' * value.ndim)}]"
    if isinstance(value, Stack):
        return f"stack{{{value.elem}}}"
    if isinstance(value, str):
        return "string"
    if isinstance(value, ast.TypeRef):
        return "type"
    return type(value).__name__


def a_type(value) -> str:
    """`type_name(value)` with its indefinite article: "an i64", "an f64[:]"."""
    return with_article(type_name(value))


def with_article(name: str) -> str:
    """A type name with its indefinite article, as it is read aloud ("an f64")."""
    return f"an {name}" if name[0] in "aefiou" else f"a {name}"


def scalar_type(value) -> str | None:
    """The scalar type of a scalar value, or None for arrays, stacks and the rest."""
    if isinstance(value, (bool, int, float, complex)):
        return type_name(value)
    return None


def zero_of(scalar: str):
    """zero(T) for a scalar type name."""
    return {"i64": 0, "bool": False, "f64": 0.0, "complex": 0j}[scalar]


def one_of(scalar: str):
    """one(T) for a scalar type name."""
    return {"i64": 1, "bool": True, "f64": 1.0, "complex": 1 + 0j}[scalar]


def from_numpy_scalar(value):
    """An element read from a NumPy array, as the matching Python scalar."""
    kind = value.dtype.kind
    if kind == "f":
        return float(value)
    if kind == "i":
        return int(value)
    if kind == "b":
        return bool(value)
    if kind == "c":
        return complex(value)
    return value


def conform(value, declared: ast.TypeRef | None, convert: bool):
    """`value` as the declared parameter type, or None when it does not conform.

    With `convert` (values coming from the command line or from Python), an int is
    accepted for a float parameter and lists become NumPy arrays of the right dtype.
    """
    if convert:
        value = from_host(value)
        if value is None:
            return None
    if declared is None:
        if convert and isinstance(value, (list, tuple)):
            try:
                return array_from_nested(value)
            except (ValueError, OverflowError, TypeError):
                return None
        return value
    if declared.is_stack:
        return value if isinstance(value, Stack) and value.elem == declared.scalar else None
    if declared.ndim:
        if convert and isinstance(value, (list, tuple)):
            try:
                value = array_from_nested(value, declared.scalar)
            except (ValueError, OverflowError, TypeError, KeyError):
                return None
        if isinstance(value, np.ndarray) and value.ndim == declared.ndim and \
                value.dtype == DTYPES.get(declared.scalar):
            return value
        return None
    return _conform_scalar(value, declared.scalar, convert)


def from_host(value):
    """A value handed in from Python or the command line, as a rev value, or None
    when it cannot be one (NumPy scalars become Python scalars; ints must fit i64)."""
    if isinstance(value, np.generic) and not isinstance(value, np.ndarray):
        value = from_numpy_scalar(value)
    if isinstance(value, bool) or isinstance(value, (float, complex)):
        return value
    if isinstance(value, int):
        return value if I64_MIN <= value <= I64_MAX else None
    if isinstance(value, np.ndarray):
        return value if value.dtype in _DTYPE_NAMES else None
    if isinstance(value, (list, tuple, Stack)):
        return value
    return None


def _conform_scalar(value, scalar: str, convert: bool):
    actual = scalar_type(value)
    if actual == scalar:
        return value
    if convert and scalar == "f64" and actual == "i64":
        return float(value)
    if convert and scalar == "complex" and actual in ("i64", "f64"):
        return complex(value)
    return None


def array_from_nested(items, scalar: str | None = None) -> np.ndarray:
    """A NumPy array from nested lists of Python scalars (rev array literal rules:
    all bools → bool, all ints → i64, any float → f64, any complex → complex)."""
    if scalar is None:
        flat = list(_flatten(items))
        if any(isinstance(x, complex) for x in flat):
            scalar = "complex"
        elif any(isinstance(x, float) for x in flat):
            scalar = "f64"
        elif flat and all(isinstance(x, bool) for x in flat):
            scalar = "bool"
        else:
            scalar = "i64"
    return np.array(items, dtype=DTYPES[scalar])


def _flatten(items):
    for item in items:
        if isinstance(item, (list, tuple)):
            yield from _flatten(item)
        else:
            yield item


# ------------------------------------------------------------------- printing

def format_float(x: float) -> str:
    """Shortest text that reads back as exactly `x`: 17.0, 0.1, 1e-10, 1.5e300."""
    if math.isnan(x):
        return "nan"
    if math.isinf(x):
        return "inf" if x > 0 else "-inf"
    return repr(x).replace("e+", "e")


def format_value(value) -> str:
    """A value as a rev literal (LANGUAGE.md §9)."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        return format_float(value)
    if isinstance(value, complex):
        re, im = value.real, value.imag
        if not math.isfinite(im):       # `infim` is no literal: use the conversion
            return f"complex({format_float(re)}, {format_float(im)})"
        sign = "-" if im < 0 or (im == 0 and math.copysign(1.0, im) < 0) else "+"
        return f"{format_float(re)} {sign} {format_float(abs(im))}im"
    if isinstance(value, np.ndarray):
        return _format_array(value)
    if isinstance(value, Stack):
        return "[" + ", ".join(format_value(x) for x in value.items) + "]"
    if isinstance(value, np.generic):
        return format_value(from_numpy_scalar(value))
    if isinstance(value, str):
        return value
    return str(value)


def _format_array(array: np.ndarray) -> str:
    if array.ndim == 0:
        return format_value(from_numpy_scalar(array[()]))
    if array.ndim == 1:
        return "[" + ", ".join(format_value(from_numpy_scalar(x)) for x in array) + "]"
    return "[" + ", ".join(_format_array(row) for row in array) + "]"


def to_json(value):
    """A value as JSON-ready Python data (complex as [re, im], arrays as lists).
    Non-finite floats, which JSON cannot hold, become the strings "inf", "-inf" and
    "nan" (the rev literals)."""
    if isinstance(value, float):
        return value if math.isfinite(value) else format_float(value)
    if isinstance(value, (bool, int)):
        return value
    if isinstance(value, complex):
        return [to_json(value.real), to_json(value.imag)]
    if isinstance(value, np.ndarray):
        if value.dtype.kind == "c":
            return to_json(np.stack([value.real, value.imag], axis=-1))
        if value.dtype.kind == "f" and not np.all(np.isfinite(value)):
            return [to_json(x) for x in value] if value.ndim > 1 else \
                [to_json(float(x)) for x in value]
        return value.tolist()
    if isinstance(value, Stack):
        return [to_json(x) for x in value.items]
    if isinstance(value, np.generic):
        return to_json(from_numpy_scalar(value))
    return str(value)


def summarize(value, limit: int = 8) -> str:
    """A short rendering for error messages (long arrays are cut)."""
    if isinstance(value, np.ndarray) and value.size > limit:
        flat = ", ".join(format_value(from_numpy_scalar(x)) for x in value.ravel()[:limit])
        return f"[{flat}, …] ({type_name(value)}, shape {value.shape})"
    if isinstance(value, Stack) and len(value.items) > limit:
        return f"[…{len(value.items)} items…]"
    return format_value(value)
