"""Run-time values of the interpreter and how they are shown.

Scalars: `bool`; `int` (i64, kept in range by `wrap_i64`, but exact past it while
`UNBOUNDED_INTEGERS` is on: a Janus program); `float` (f64); `complex`;
and the number systems of `rlang.numbers`: `I32`, `F32`, `Fixed`, `ULog`.  Arrays are
NumPy arrays (C order, updated in place): bool, int64, int32, float64, float32 and
complex128 arrays, `FixedArray` (int64 raw fixed-point values) and `ULogArray`
(float64 logarithms).  Stacks are `Stack`.

This module names the types of values (`type_name`), reads and writes array
elements as scalars (`read_element`, `write_element`), makes arrays
(`make_array`), converts values handed in from outside to a declared type
(`conform`), and prints values as rev literals (`format_value`) or as JSON-ready
data (`to_json`), as LANGUAGE.md §9 describes, and holds scalars of one kind as
the arrays of a batch (`stack_scalars`, `repeated`: rlang.vmap).
"""
from __future__ import annotations

import math
import sys
from contextvars import ContextVar

import numpy as np

from .dual import Dual
from .errors import RlangTypeError
from .numbers import F32, I32, Fixed, FixedArray, ULog, ULogArray, to_floats

I64_MIN, I64_MAX = -(1 << 63), (1 << 63) - 1
_MASK64 = (1 << 64) - 1

#: Storage dtype of each scalar type in arrays.
DTYPES = {"i64": np.dtype(np.int64), "i32": np.dtype(np.int32), "bool": np.dtype(np.bool_),
          "f64": np.dtype(np.float64), "f32": np.dtype(np.float32),
          "complex": np.dtype(np.complex128), "fixed": np.dtype(np.int64),
          "ulog": np.dtype(np.float64)}
#: Array classes of the types whose dtype alone does not say the type.
_ARRAY_CLASSES = {"fixed": FixedArray, "ulog": ULogArray}
_PLAIN_DTYPE_NAMES = {np.dtype(np.int64): "i64", np.dtype(np.int32): "i32",
                      np.dtype(np.bool_): "bool", np.dtype(np.float64): "f64",
                      np.dtype(np.float32): "f32", np.dtype(np.complex128): "complex"}

#: Types the grammar knows but this version cannot run (none left).
UNSUPPORTED_TYPES: tuple = ()


#: True while the interpreter runs a unit whose integers are "unbounded" (a Janus
#: program, Note [Janus integers]): an integer result outside i64 is then kept exact
#: (a Python int) instead of wrapping.  Read only when a result has left i64, so
#: rev's arithmetic pays nothing for it.
UNBOUNDED_INTEGERS: ContextVar[bool] = ContextVar("rlang_unbounded_integers", default=False)
#: The error of compiled code where such a result leaves 64 bits.
OVERFLOW_MESSAGE = ("integer overflow: the result does not fit in 64 bits, which compiled "
                    "code holds a Janus int in (the interpreter's are unbounded, as jana's)")
#: The error of the interpreter where such a result is stored in an array element.
ELEMENT_OVERFLOW_MESSAGE = ("integer overflow: an array element holds 64 bits and this "
                            "value does not fit (rlang's Janus arrays are arrays of i64)")


def stack_index_message(k: int, n: int) -> str:
    """The error of reading element k (0: the bottom) of a stack of n items that has no
    such element, on every backend (Janus's `top(s)` reads element n - 1)."""
    if n == 0:
        return "cannot read the top of an empty stack" if k == -1 else \
            f"cannot read element {k} of an empty stack"
    return f"cannot read element {k} of a stack of {n} (0 is its bottom, {n - 1} its top)"


def wrap_i64(value: int) -> int:
    """Two's-complement wrap-around of a Python int into i64."""
    if I64_MIN <= value <= I64_MAX:
        return value
    return ((value + (1 << 63)) & _MASK64) - (1 << 63)


#: The element types a stack may hold.
STACK_ELEMENTS = ("bool", "i32", "i64", "f32", "f64", "complex", "fixed", "ulog")


class Stack:
    """A LIFO stack of scalars of one type (`stack{T}`): `Stack("f64", [1.0, 2.0])`
    (element type name, values bottom first; numbers of another type are converted
    as an array literal's are, LANGUAGE.md §13).  `list(s)` gives the values bottom
    first, `len(s)` the size."""

    __slots__ = ("elem", "items")

    def __init__(self, elem: str, items=()):
        if elem not in STACK_ELEMENTS:
            from .errors import RlangTypeError

            raise RlangTypeError(f"a stack holds {', '.join(STACK_ELEMENTS)}; got {elem!r}")
        self.elem = elem
        items = list(items)
        if all(_SCALAR_NAMES.get(kind) == elem for kind in set(map(type, items))):
            self.items = items          # every item already of the element type
        else:
            self.items = [x if _SCALAR_NAMES.get(type(x)) == elem or not _is_number(x)
                          else _stack_item(x, elem) for x in items]

    def __iter__(self):
        return iter(self.items)

    def __len__(self) -> int:
        return len(self.items)

    def __eq__(self, other):
        return isinstance(other, Stack) and self.elem == other.elem and self.items == other.items

    def __repr__(self):
        return f"Stack({self.elem!r}, {self.items!r})"

    def copy(self) -> "Stack":
        return Stack(self.elem, self.items)


_SCALAR_NAMES = {bool: "bool", int: "i64", I32: "i32", float: "f64", F32: "f32",
                 complex: "complex", Fixed: "fixed", ULog: "ulog", Dual: "f64"}


def array_scalar(array: np.ndarray) -> str | None:
    """The scalar type of an array's elements, or None for dtypes rev does not use."""
    if isinstance(array, FixedArray):
        return "fixed"
    if isinstance(array, ULogArray):
        return "ulog"
    if array.dtype == object:       # dual numbers of a Hessian run
        return "f64"
    return _PLAIN_DTYPE_NAMES.get(array.dtype)


def type_name(value) -> str:
    """The rev type of a value: `i64`, `f64[:]`, `stack{i64}`, …"""
    name = _SCALAR_NAMES.get(type(value))
    if name is not None:
        return name
    if isinstance(value, np.ndarray):
        elem = array_scalar(value) or str(value.dtype)
        return f"{elem}[{','.join(':' * value.ndim)}]"
    if isinstance(value, Stack):
        return f"stack{{{value.elem}}}"
    if isinstance(value, str):
        return "string"
    named = getattr(type(value), "rev_type_name", None)    # an ast.TypeRef
    if named is not None:
        return named
    return type(value).__name__


def a_type(value) -> str:
    """`type_name(value)` with its indefinite article: "an i64", "an f64[:]"."""
    return with_article(type_name(value))


def argument_type(value) -> str:
    """`a_type(value)` as an argument error says it: an array whose dtype rev has no
    type for (Python objects, strings, dates) by that dtype, not by the f64 its
    object elements would be inside a Hessian run."""
    if isinstance(value, np.ndarray) and not isinstance(value, (FixedArray, ULogArray)) \
            and value.dtype.kind not in "biufc":
        kind = {"O": "Python objects", "U": "strings", "S": "bytes"}.get(value.dtype.kind)
        return f"a NumPy array of {kind or f'dtype {value.dtype}'}"
    return a_type(value)


def with_article(name: str) -> str:
    """A type name with its indefinite article, as it is read aloud ("an f64")."""
    vowel_sound = name[0] in "aeio" or (name[0] == "f" and name[1:2].isdigit())
    return f"an {name}" if vowel_sound else f"a {name}"


def scalar_type(value) -> str | None:
    """The scalar type of a scalar value, or None for arrays, stacks and the rest."""
    return _SCALAR_NAMES.get(type(value))


_ZERO = {"i64": 0, "i32": I32(0), "bool": False, "f64": 0.0, "f32": F32(0.0), "complex": 0j,
         "fixed": Fixed(0), "ulog": ULog(-math.inf)}
_ONE = {"i64": 1, "i32": I32(1), "bool": True, "f64": 1.0, "f32": F32(1.0),
        "complex": 1 + 0j, "fixed": Fixed.from_value(1), "ulog": ULog(0.0)}


def zero_of(scalar: str):
    """zero(T) for a scalar type name."""
    return _ZERO[scalar]


def one_of(scalar: str):
    """one(T) for a scalar type name."""
    return _ONE[scalar]


def make_array(shape, scalar: str, dual: bool = False) -> np.ndarray:
    """A zero-filled array of `shape` holding `scalar` values (f64 ones as dual
    numbers, in an object array, when `dual`: a Hessian run; ulog ones as dual
    logarithms, Note [Tangents of ulog values])."""
    if dual and scalar == "f64":
        return np.full(shape, Dual(0.0), dtype=object)
    if dual and scalar == "ulog":
        return np.full(shape, Dual(-math.inf), dtype=object).view(ULogArray)
    array = np.zeros(shape, dtype=DTYPES[scalar])
    if scalar == "ulog":
        array.fill(-math.inf)
    cls = _ARRAY_CLASSES.get(scalar)
    return array.view(cls) if cls is not None else array


def read_element(array: np.ndarray, index: tuple):
    """The element `array[index]` as a rev scalar."""
    if isinstance(array, FixedArray):
        return Fixed(int(np.ndarray.__getitem__(array, index)))
    if isinstance(array, ULogArray):
        log = np.ndarray.__getitem__(array, index)
        return ULog(log if type(log) is Dual else float(log))
    if array.dtype == object:
        return array[index]
    return from_numpy_scalar(array[index])


def write_element(array: np.ndarray, index: tuple, value) -> None:
    """Store the rev scalar `value` at `array[index]`."""
    if isinstance(value, Fixed):
        value = value.raw
    elif isinstance(value, ULog):
        value = value.log
    array[index] = value


def from_numpy_scalar(value):
    """An element read from a plain NumPy array, as the matching rev scalar."""
    dtype = value.dtype
    if dtype == np.float64:
        return float(value)
    if dtype == np.int64:
        return int(value)
    if dtype == np.bool_:
        return bool(value)
    if dtype == np.complex128:
        return complex(value)
    if dtype == np.float32:
        return F32(value)
    if dtype == np.int32:
        return I32(int(value))
    kind = dtype.kind
    if kind == "f":
        return float(value)
    if kind in "iu":
        return int(value)
    if kind == "c":
        return complex(value)
    return value


def conform(value, declared, convert: bool, read_only: bool = False):
    """`value` as the declared parameter type (an ast.TypeRef, or None where the
    parameter has no declared type), or None when it does not conform.

    With `read_only` (the function never writes the parameter), an array whose
    elements widen to the declared type without loss is converted (a copy): see
    Note [Widening read-only arrays].

    With `convert` (values coming from the command line or from Python), numbers are
    converted where that loses nothing the user could expect to keep (an int for a
    float or fixed parameter, a float for a fixed, ulog or f32 one), and lists become
    NumPy arrays of the declared element type.  A `fixed[:]` parameter takes an int64
    array of raw values (viewed, not copied); see rlang.numbers.
    """
    if convert and read_only and is_device_array(value):
        value = _copied_to_host(value)
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
        if isinstance(value, np.ndarray) and array_scalar(value) is None:
            return None         # a dtype rev has no type for (uint8, float16, '>f8', …)
        return value
    if declared.is_stack:
        return value if isinstance(value, Stack) and value.elem == declared.scalar else None
    if declared.ndim:
        return _conform_array(value, declared, convert, read_only)
    return _conform_scalar(value, declared.scalar, convert)


# Note [Widening read-only arrays]
# ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
# LANGUAGE.md §13: integer or narrower float arrays for a wider float parameter are
# converted when the function only reads them; an array the function writes must
# already have the parameter's element type (the caller would not see the writes in
# a copy); arrays are never narrowed.  "Widening" is NumPy's safe casting
# (`np.can_cast(…, "safe")`: int64 → f64 and f32 → f64 are safe, f64 → f32 and
# uint64 → i64 are not), to the declared element type among f64, f32, complex, i64
# and i32, with bool arrays left out (a bool is not a number in rev) and the same
# element type in the other byte order counted as a widening.  The copy is made once
# per call, before any backend sees the data.
_WIDENED_DTYPES = {"f64": np.dtype(np.float64), "f32": np.dtype(np.float32),
                   "complex": np.dtype(np.complex128), "i64": np.dtype(np.int64),
                   "i32": np.dtype(np.int32)}


def _widened(value, scalar: str):
    """A converted copy of the host array `value` with `scalar` elements, or None when
    that would not be a widening (Note [Widening read-only arrays])."""
    target = _WIDENED_DTYPES.get(scalar)
    if target is None or type(value) is not np.ndarray or value.dtype.kind not in "iufc" \
            or not np.can_cast(value.dtype, target, "safe"):
        return None
    return value.astype(target)


def _conform_array(value, declared, convert: bool, read_only: bool = False):
    scalar = declared.scalar
    if convert and isinstance(value, (list, tuple)):
        try:
            value = array_from_nested(value, scalar)
        except (ValueError, OverflowError, TypeError, KeyError):
            return None
    if not isinstance(value, np.ndarray) or value.ndim != declared.ndim:
        return None
    if array_scalar(value) == scalar:
        return value
    if scalar == "fixed" and convert and type(value) is np.ndarray and \
            value.dtype == np.int64:
        return value.view(FixedArray)       # raw fixed-point values, shared memory
    if convert and read_only:
        return _widened(value, scalar)
    return None


def _copied_to_host(value):
    """A device array's values in host memory (Note [Host arrays]), or the value
    itself where it cannot be read."""
    try:
        from numba import cuda

        return cuda.as_cuda_array(value).copy_to_host()
    except Exception:               # no Numba, no device: refused as it is
        return value


def from_host(value):
    """A value handed in from Python or the command line, as a rev value, or None
    when it cannot be one (NumPy scalars become rev scalars; ints must fit i64)."""
    if isinstance(value, np.generic) and not isinstance(value, np.ndarray):
        value = from_numpy_scalar(value)
    if type(value) in _SCALAR_NAMES:
        if type(value) is int and not I64_MIN <= value <= I64_MAX:
            return None
        return value
    if isinstance(value, int):          # an int subclass other than ours
        return int(value) if I64_MIN <= value <= I64_MAX else None
    if isinstance(value, type):         # np.float64 itself has an `__array__`
        return None
    if not is_host_array(value) and not isinstance(value, (list, tuple, Stack, str)) and \
            hasattr(value, "__array__"):
        try:
            value = np.asarray(value)   # a view where it can be (Note [Host arrays])
        except Exception:               # whatever the object's __array__ raises
            return None
    elif not isinstance(value, (np.ndarray, list, tuple, Stack, str)) and \
            hasattr(value, "__dlpack__") and not hasattr(value, "__cuda_array_interface__"):
        try:
            value = np.from_dlpack(value)   # host memory, shared (Note [Host arrays])
        except Exception:               # memory on a device, or a dtype NumPy lacks
            return None
    if isinstance(value, np.ndarray):
        if value.dtype == object and not _dual_array(value):
            return None
        if value.ndim == 0 and type(value) is np.ndarray:
            return from_host(value[()])     # a 0-d array is a scalar (LANGUAGE.md §13)
        # other numeric dtypes stay, for a read-only parameter to widen them (conform)
        return value if array_scalar(value) is not None or value.dtype.kind in "iufc" \
            else None
    if isinstance(value, (list, tuple, Stack)):
        return value
    return None


# Note [Host arrays]
# ~~~~~~~~~~~~~~~~~~
# Arrays from Python are taken as they are when they are plain ndarrays, memory maps,
# or rlang's FixedArray / ULogArray.  Anything else with `__array__` (LANGUAGE.md §13)
# is taken as `np.asarray(value)`: for an np.matrix or a masked array that is a plain
# view of the same memory (writes reach the caller's object; a mask is not looked at),
# so no subclass's own indexing reaches rlang (an np.matrix indexes to 2-d matrices
# forever: it hung the interpreter's formatting and, under the deep-stack recursion
# limit, crashed the process).  String and object arrays have no rev element type and
# are refused.  A 0-d array is the scalar it holds.  An object with `__dlpack__`
# only (a PyTorch tensor has both) is taken as `np.from_dlpack(value)`, a view of
# its host memory.  A device array (`__cuda_array_interface__`) is the cuda
# backend's to take where it is; the host backends copy one to the host for a
# parameter the function only reads (`conform`), and refuse it for one it writes,
# whose new values could not reach the device.
_HOST_ARRAY_CLASSES = (FixedArray, ULogArray, np.memmap)


def is_host_array(value) -> bool:
    """An array taken from Python as it is (Note [Host arrays])."""
    return type(value) is np.ndarray or isinstance(value, _HOST_ARRAY_CLASSES)


#: (declared, given) pairs a value from outside may be converted along.
_HOST_CONVERSIONS = {
    ("f64", "i64"): float, ("f64", "f32"): float, ("f64", "i32"): float,
    ("f32", "f64"): F32, ("f32", "i64"): F32, ("f32", "i32"): F32,
    ("i32", "i64"): lambda v: I32(v) if -(1 << 31) <= v < (1 << 31) else None,
    ("i64", "i32"): int,
    ("complex", "i64"): complex, ("complex", "f64"): complex, ("complex", "f32"): complex,
    ("fixed", "i64"): Fixed.from_value, ("fixed", "f64"): Fixed.from_value,
    ("fixed", "i32"): Fixed.from_value, ("fixed", "f32"): Fixed.from_value,
    ("ulog", "i64"): ULog.from_value, ("ulog", "f64"): ULog.from_value,
    ("ulog", "i32"): ULog.from_value, ("ulog", "f32"): ULog.from_value,
    ("ulog", "fixed"): ULog.from_value,
}


def _conform_scalar(value, scalar: str, convert: bool):
    actual = scalar_type(value)
    if actual == scalar:
        return value
    conversion = _HOST_CONVERSIONS.get((scalar, actual)) if convert else None
    if conversion is None:
        return None
    try:
        return conversion(value)
    except (ValueError, OverflowError):
        return None


def _dual_array(array: np.ndarray) -> bool:
    """An object array of rlang's own dual numbers (a Hessian run's); any other object
    array has no rev element type (Note [Host arrays])."""
    return all(type(x) is Dual for x in array.flat)


def array_from_nested(items, scalar: str | None = None, dual: bool = False) -> np.ndarray:
    """A NumPy array from nested lists of scalars.  Without a declared element type
    the literal rules apply: all bools → bool, all ints → i64, any float → f64, any
    complex → complex; lists of one rev number type (fixed, ulog, f32, i32) keep it.
    `dual` (a Hessian run): f64 and ulog elements are held as dual numbers."""
    flat = list(_flatten(items))
    if scalar is None:
        scalar = _literal_scalar(flat)
    shape = np.shape(_replace_leaves(items))
    array = make_array(shape, scalar, dual=dual or any(type(x) is Dual for x in flat))
    target = array.reshape(-1) if array.ndim else array
    for i, item in enumerate(flat):
        write_element(target, (i,), _to_scalar(item, scalar))
    return array


def _replace_leaves(items):
    return [_replace_leaves(x) if isinstance(x, (list, tuple)) else 0 for x in items]


def _literal_scalar(flat) -> str:
    kinds = {scalar_type(x) for x in flat}
    if not kinds:
        return "i64"
    if len(kinds) == 1:
        return kinds.pop()
    if "complex" in kinds:
        return "complex"
    if kinds & {"f64", "f32"}:
        return "f64"
    if kinds <= {"bool", "i64", "i32"}:
        return "i64"
    raise ValueError(f"an array cannot mix {', '.join(sorted(kinds))}")


def _is_number(value) -> bool:
    """A plain number (not a gradient run's wrapped value)."""
    return type(value) in _SCALAR_NAMES or isinstance(value, np.generic)


def _stack_item(item, elem: str):
    """`item` as a value of a stack of `elem` (see `Stack`)."""
    try:
        if isinstance(item, np.generic):
            item = item.item()
        value = _to_scalar(item, elem)
    except (TypeError, ValueError, OverflowError) as error:
        from .errors import RlangTypeError

        raise RlangTypeError(f"cannot put {format_value(item)} in a stack{{{elem}}}: "
                             f"{error}") from None
    return {"f32": F32, "i32": I32}.get(elem, lambda v: v)(value)


def _to_scalar(item, scalar: str):
    if scalar_type(item) == scalar:
        return item
    if scalar == "fixed":
        return Fixed.from_value(item)
    if scalar == "ulog":
        return ULog.from_value(item)
    if isinstance(item, (Fixed, ULog)):
        item = float(item)
    if scalar in ("f64", "f32"):
        if isinstance(item, complex):
            raise TypeError("complex value in a real array")
        return item if type(item) is Dual else float(item)
    if scalar in ("i64", "i32"):
        if isinstance(item, (float, complex)):
            raise TypeError("float value in an integer array")
        return int(item)
    if scalar == "bool":
        if not isinstance(item, bool):
            raise TypeError("non-bool value in a bool array")
        return item
    return complex(item)


def array_to_nested(array: np.ndarray):
    """An array as nested lists of rev scalars (the inverse of array_from_nested)."""
    if array.ndim == 0:
        return read_element(array, ())
    return [array_to_nested(array[i]) if array.ndim > 1 else read_element(array, (i,))
            for i in range(array.shape[0])]


def _flatten(items):
    for item in items:
        if isinstance(item, (list, tuple)):
            yield from _flatten(item)
        else:
            yield item


# ------------------------------------------------------------------- printing

def format_float(x: float) -> str:
    """Shortest text that reads back as exactly `x`: 17.0, 0.1, 1e-5, 1.5e300 (Python's
    repr without its exponent's `+` and leading zeros)."""
    if math.isnan(x):
        return "nan"
    if math.isinf(x):
        return "inf" if x > 0 else "-inf"
    mantissa, e, exponent = repr(x).partition("e")
    return f"{mantissa}e{int(exponent)}" if e else mantissa


def format_f32(x: float) -> str:
    """Shortest text that reads back as the same single-precision value, in the style
    of f64's (`0.1`, `1000000.0`, `1e-5`, `1.5e20`)."""
    if not math.isfinite(x):
        return format_float(x)
    digits = np.format_float_scientific(np.float32(x), unique=True, trim="-")
    mantissa, exponent = digits.split("e")
    power = int(exponent)
    if -4 <= power < 16:
        return format_float(float(np.format_float_positional(np.float32(x), unique=True,
                                                             trim="-")))
    return f"{mantissa}e{power}"


def format_value(value) -> str:
    """A value as a rev literal (LANGUAGE.md §9).  fixed and ulog print as their float
    values; f32 as the shortest text that reads back as the same f32."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(int(value))
    if isinstance(value, F32):
        return format_f32(value)
    if isinstance(value, float):
        return format_float(value)
    if isinstance(value, ULog) and not holds_in_f64(value):
        return format_ulog_log(value)
    if isinstance(value, (Fixed, ULog, Dual)):
        return format_float(float(value))
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
        scalar = from_numpy_scalar(value)       # a string or object scalar stays one
        return str(value) if isinstance(scalar, np.generic) else format_value(scalar)
    if isinstance(value, str):
        return value
    return str(value)


def holds_in_f64(value: ULog) -> bool:
    """Whether a ulog's value is a normal f64 (or 0 or inf exactly).

    Note [Printing ulogs f64 cannot hold]: a ulog holds its logarithm, so its value
    may be far beyond f64 (`ulog(1e-300) * ulog(1e-300)` is e^-1381.6).  Printed as
    its float value it would read `0.0` (or `inf`, or a subnormal that lost most of
    its digits), and reading that back gives another number.  Such a ulog prints as
    `ulog(log = -1381.6…)` (the logarithm in full), which `rlang run` reads back as an
    argument, alone or in an array (rlang/arguments.py `parse_argument`); in `--json` it
    is that same text, a string, as non-finite floats are."""
    if math.isinf(value.log) or math.isnan(value.log):
        return True
    x = float(value)
    return sys.float_info.min <= x < math.inf


def format_ulog_log(value: ULog) -> str:
    """`ulog(log = L)`: a ulog by its logarithm (Note [Printing ulogs f64 cannot
    hold])."""
    return f"ulog(log = {format_float(float(value.log))})"


def _format_array(array: np.ndarray) -> str:
    if not isinstance(array, (FixedArray, ULogArray)):
        array = np.asarray(array)       # a subclass (np.matrix) may index to itself
    if array.ndim == 0:
        return format_value(read_element(array, ()))
    if array.ndim == 1:
        return "[" + ", ".join(format_value(read_element(array, (i,)))
                               for i in range(array.shape[0])) + "]"
    return "[" + ", ".join(_format_array(array[i]) for i in range(array.shape[0])) + "]"


def to_json(value):
    """A value as JSON-ready Python data (complex as [re, im], arrays as lists).
    Non-finite floats, which JSON cannot hold, become the strings "inf", "-inf" and
    "nan" (the rev literals)."""
    if isinstance(value, ULog) and not holds_in_f64(value):
        return format_ulog_log(value)
    if isinstance(value, (Fixed, ULog, Dual)):
        value = float(value)
    if isinstance(value, F32):
        return float(format_f32(value)) if math.isfinite(value) else format_float(value)
    if isinstance(value, float):
        return float(value) if math.isfinite(value) else format_float(value)
    if isinstance(value, (bool, int)):
        return value if type(value) in (bool, int) else int(value)
    if isinstance(value, complex):
        return [to_json(value.real), to_json(value.imag)]
    if isinstance(value, ULogArray) and value.size and \
            not all(holds_in_f64(x) for x in _flat_items(array_to_nested(value))):
        return _nested_json(array_to_nested(value))
    if isinstance(value, (FixedArray, ULogArray)):
        value = to_floats(value)
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


def _flat_items(nested):
    if not isinstance(nested, list):
        yield nested
        return
    for item in nested:
        yield from _flat_items(item)


def _nested_json(nested):
    return [_nested_json(x) for x in nested] if isinstance(nested, list) else to_json(nested)


#: How many elements `summarize` shows of a long array.
SUMMARY_ITEMS = 8


def summarize(value, limit: int = SUMMARY_ITEMS) -> str:
    """A short rendering for error messages (long arrays are cut)."""
    if isinstance(value, np.ndarray) and value.size > limit:
        return summarize_array_start(value.reshape(-1)[:limit], value.shape, limit)
    if isinstance(value, Stack) and len(value.items) > limit:
        return f"[…{len(value.items)} items…]"
    return format_value(value)


def summarize_array_start(first: np.ndarray, shape: tuple, limit: int = SUMMARY_ITEMS) -> str:
    """`summarize` of an array of `shape` from its first elements in C order (`first`,
    1-d, at least min(limit, size) of them; compiled code records only those)."""
    shape = tuple(shape)
    if math.prod(shape) <= limit:
        return format_value(first[:math.prod(shape)].reshape(shape))
    flat = ", ".join(format_value(read_element(first, (i,))) for i in range(limit))
    typed = first[:1].reshape((1,) * len(shape))        # the type name needs the rank
    return f"[{flat}, …] ({type_name(typed)}, shape {shape})"


def complex_pair(grad):
    """A complex gradient as [∂/∂re, ∂/∂im] (LANGUAGE.md §9)."""
    if isinstance(grad, complex):
        return np.array([grad.real, grad.imag])
    if isinstance(grad, np.ndarray) and grad.dtype.kind == "c":
        return np.stack([grad.real, grad.imag], axis=-1)
    return grad


def is_device_array(value) -> bool:
    """Whether `value` lives on the GPU (or on the simulator's pretend GPU)."""
    if isinstance(value, np.ndarray):
        return False
    if hasattr(value, "__cuda_array_interface__"):
        return True
    return type(value).__name__ == "FakeCUDAArray"


# ---------------------------------------------------------------- batches (rlang.vmap)

def scalar_dtype(value):
    """The NumPy dtype of arrays of the rev scalar `value` (DTYPES by its type name;
    fixed and ulog arrays hold raw values and logarithms)."""
    if isinstance(value, np.generic):       # (a Python function's NumPy scalars)
        return value.dtype
    name = _SCALAR_NAMES.get(type(value))
    if name is None:
        raise RlangTypeError(f"a batch cannot hold a value of type {type(value).__name__}")
    return DTYPES[name]


def storage_of(value):
    """A rev scalar as memory holds it (fixed: its raw value, ulog: its logarithm)."""
    return value.raw if isinstance(value, Fixed) else value.log if isinstance(value, ULog) \
        else value


def stack_scalars(values: list, like):
    """Rev scalars of the kind of `like` as one array of their storage type (fixed
    and ulog in FixedArray / ULogArray)."""
    if isinstance(like, Fixed):
        return np.array([v.raw for v in values], dtype=np.int64).view(FixedArray)
    if isinstance(like, ULog):      # dual logarithms (a Hessian run) in an object array
        logs = [v.log for v in values]
        dual = any(type(log) is Dual for log in logs)
        return np.array(logs, dtype=object if dual else np.float64).view(ULogArray)
    return np.array(values, dtype=scalar_dtype(like))


def repeated(value, n: int) -> np.ndarray:
    """`value` (a rev scalar or an array) repeated n times along a new axis 0: a
    read-only view (fixed and ulog scalars in FixedArray / ULogArray)."""
    array = value if isinstance(value, np.ndarray) else stack_scalars([value], value).reshape(())
    return np.broadcast_to(array, (n,) + array.shape, subok=True)
