"""The number systems of rev beyond Python's own (LANGUAGE.md §3).

    I32    i32: a Python int kept in 32-bit two's complement (arithmetic wraps)
    F32    f32: a Python float rounded to IEEE single precision
    Fixed  fixed: Q20.43 fixed point, an i64 `raw` holding value · 2^43
    ULog   ulog: an unsigned logarithmic number, `log` holding log(value)

Scalars of these types are immutable.  Arrays of them are NumPy arrays: i32 and f32
as int32 / float32; fixed as int64 of raw values (`FixedArray`, a view: the same
memory read as fixed point), ulog as float64 of logarithms (`ULogArray`).

# Note [Fixed-point rounding]
`+` and `-` of fixed numbers are exact (they wrap like i64, raw value and all), which
makes `+=`/`-=` reversible bit for bit.  `*` and `/` round the exact rational result
to the nearest multiple of 2^-43, ties to even, as IEEE does; conversion from a float
rounds the same way.  Conversion to a float is exact while |value| < 2^10.
"""
from __future__ import annotations

import math
import struct

import numpy as np

from .dual import Dual, parts, refuse_tangent
from .primitives import lift

FRACTION_BITS = 43
ONE_RAW = 1 << FRACTION_BITS
#: fixed holds values in [-2^20, 2^20); conversions outside it are errors (arithmetic
#: that leaves it wraps, like i64).
FIXED_LIMIT = 1 << (63 - FRACTION_BITS)
_MASK64 = (1 << 64) - 1
_MASK32 = (1 << 32) - 1


def wrap_bits(value: int, bits: int) -> int:
    """Two's-complement wrap-around of a Python int into `bits` bits."""
    half = 1 << (bits - 1)
    if -half <= value < half:
        return value
    return ((value + half) & ((1 << bits) - 1)) - half


def round_half_even_div(numerator: int, denominator: int) -> int:
    """numerator / denominator rounded to the nearest integer, ties to even."""
    if denominator < 0:
        numerator, denominator = -numerator, -denominator
    quotient, remainder = divmod(numerator, denominator)
    twice = 2 * remainder
    if twice > denominator or (twice == denominator and quotient % 2 == 1):
        quotient += 1
    return quotient


_LOG2 = math.log(2.0)
_F32_PACKER = struct.Struct("f")


def round_to_f32(x: float) -> float:
    """x rounded to IEEE single precision (overflow gives ±inf, without warnings)."""
    try:
        return _F32_PACKER.unpack(_F32_PACKER.pack(x))[0]
    except OverflowError:
        with np.errstate(over="ignore"):
            return float(np.float32(x))


class I32(int):
    """An i32 value."""

    __slots__ = ()

    def __new__(cls, value=0):
        return super().__new__(cls, wrap_bits(int(value), 32))

    def __repr__(self):
        return f"I32({int(self)})"

    def __str__(self):                  # messages show an i32 as the number it is
        return str(int(self))


class F32(float):
    """An f32 value (a float rounded to single precision)."""

    __slots__ = ()

    def __new__(cls, value=0.0):
        return super().__new__(cls, round_to_f32(float(refuse_tangent(value, "f32"))))

    def __repr__(self):
        return f"F32({float(self)!r})"


class Fixed:
    """A Q20.43 fixed-point number; see Note [Fixed-point rounding]."""

    __slots__ = ("raw",)

    def __init__(self, raw: int):
        """`raw` is the Q20.43 integer (value · 2^43); `Fixed.from_value(0.5)` converts
        a number.  A float here is refused: `Fixed(0.5)` would be the raw 0."""
        if not isinstance(raw, (int, np.integer)):
            raise TypeError(f"Fixed(raw) takes the raw Q20.43 integer, got {raw!r}; "
                            f"use Fixed.from_value({raw!r}) to convert a number")
        self.raw = wrap_bits(int(raw), 64)

    @classmethod
    def from_value(cls, value) -> "Fixed":
        """Convert an int, a float or a Fixed (floats round to nearest, ties to even)."""
        if isinstance(value, Fixed):
            return value
        if isinstance(value, (bool, int)):
            if not -FIXED_LIMIT <= value < FIXED_LIMIT:
                raise ValueError(f"fixed({value}): out of the range of fixed (|x| < 2^20)")
            return cls(int(value) << FRACTION_BITS)
        value = float(value)
        if not math.isfinite(value):
            raise ValueError(f"fixed({value}): not a finite number")
        if not -FIXED_LIMIT <= value < FIXED_LIMIT:
            raise ValueError(f"fixed({value!r}): out of the range of fixed (|x| < 2^20 ≈ "
                             "1.05e6)")
        # value * 2^43 is exact in binary floating point, so only the rounding remains
        return cls(round(value * ONE_RAW))

    def __float__(self) -> float:
        return self.raw / ONE_RAW

    def __eq__(self, other):
        return isinstance(other, Fixed) and self.raw == other.raw

    def __hash__(self):
        return hash(("fixed", self.raw))

    def __repr__(self):
        return f"Fixed({float(self)!r})"

    # arithmetic on two Fixed values (the evaluator converts the other operand first)
    def add(self, other: "Fixed") -> "Fixed":
        return Fixed(self.raw + other.raw)

    def sub(self, other: "Fixed") -> "Fixed":
        return Fixed(self.raw - other.raw)

    def mul(self, other: "Fixed") -> "Fixed":
        return Fixed(round_half_even_div(self.raw * other.raw, ONE_RAW))

    def div(self, other: "Fixed") -> "Fixed":
        if other.raw == 0:
            raise ZeroDivisionError("fixed-point division by zero")
        return Fixed(round_half_even_div(self.raw * ONE_RAW, other.raw))

    def neg(self) -> "Fixed":
        return Fixed(-self.raw)


class ULog:
    """An unsigned logarithmic number: the value exp(log), log ∈ [-inf, inf).

    In a Hessian's dual run `log` is a Dual: the logarithm and its tangent (Note
    [Tangents of ulog values])."""

    __slots__ = ("log",)

    def __init__(self, log):
        self.log = log if type(log) is Dual else float(log)

    @classmethod
    def from_value(cls, value) -> "ULog":
        """ulog(x) for x ≥ 0 (0 becomes log = -inf); negative x is a ValueError."""
        if isinstance(value, ULog):
            return value
        if isinstance(value, Fixed):
            value = float(value)
        x = value if type(value) is Dual else float(value)
        a = parts(x)[0]
        if a < 0 or math.isnan(a):
            raise ValueError(f"ulog({value}): an unsigned logarithmic number cannot hold a "
                             "negative value")
        if type(x) is Dual:
            return cls(_log(x))
        return cls(math.log(x) if x > 0 else -math.inf)

    def __float__(self) -> float:
        try:
            return math.exp(self.log)
        except OverflowError:
            return math.inf

    def value(self):
        """The value e^log: a float, or a Dual where the logarithm carries a tangent."""
        if type(self.log) is Dual:
            return _exp(self.log)
        return float(self)

    def __eq__(self, other):
        return isinstance(other, ULog) and self.log == other.log

    def __hash__(self):
        return hash(("ulog", float(self.log)))

    def __repr__(self):
        return f"ULog(log={self.log!r})"

    def mul(self, other: "ULog") -> "ULog":
        return ULog(self.log + other.log)

    def div(self, other: "ULog") -> "ULog":
        if other.log == -math.inf:
            raise ZeroDivisionError("ulog division by zero")
        return ULog(self.log - other.log)

    def add(self, other: "ULog") -> "ULog":
        """Log-sum-exp: log(e^a + e^b) = max + log1p(exp(min - max))."""
        a, b = (self.log, other.log) if self.log >= other.log else (other.log, self.log)
        if b == -math.inf:
            return ULog(a)
        return ULog(a + _log1p(_exp(b - a)))

    def sub(self, other: "ULog") -> "ULog":
        """log(e^a - e^b) for a ≥ b; a smaller minuend is a ValueError (unsigned)."""
        a, b = self.log, other.log
        if b > a:
            raise ValueError("ulog subtraction with a larger subtrahend would be negative")
        if b == -math.inf:
            return ULog(a)
        if a == b:
            return ULog(-math.inf)
        d = b - a       # < 0; each form is precise on its side of -log 2
        return ULog(a + (_log(-_expm1(d)) if d > -_LOG2 else _log1p(-_exp(d))))

    def value_tangent(self, tangent: float) -> float:
        """A log-space tangent dℓ of this value as the value-space tangent x·dℓ (how
        `rlang.jvp` reports a ulog output's: ulog gradients are reported in value
        space too); 0 for 0, also where x overflows."""
        return float(ULog(parts(self.log)[0])) * tangent if tangent != 0.0 else 0.0


# Note [Tangents of ulog values]
# ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
# A Hessian runs the gradient program over dual numbers (rlang/dual.py).  A ulog
# holds ℓ = log x, so its dual is a dual logarithm ℓ + tε with t = dℓ = dx/x, the
# tangent in log space, as its gradient is kept in log space (Note [Gradients of
# ulog values], rlang/ad/gvar.py).  Products and quotients add and subtract the
# duals; sums and differences run the same log1p/exp/expm1/log formulas on them,
# lifted from the primitive registry (`primitives.lift`), whose derivative rules are
# the ones the compiled tangent transform traces (rlang/ad/tangent_ir.py) from the
# IR of the same formulas (rlang/lower/systems.py); `ulog(x)` of a dual is its dual
# logarithm and `f64(l)` the dual e^ℓ (`value`).  Comparisons look at values only,
# so a dual run takes the plain run's branches.
_exp, _log, _log1p, _expm1 = lift("exp"), lift("log"), lift("log1p"), lift("expm1")


class FixedArray(np.ndarray):
    """An int64 array whose elements are read as fixed point (raw values)."""


class ULogArray(np.ndarray):
    """A float64 array whose elements are read as ulog (logarithms)."""


def fixed_array(values) -> FixedArray:
    """A fixed-point array from numbers (each rounded as `fixed(x)`)."""
    floats = np.asarray(values, dtype=np.float64)
    raw = np.vectorize(lambda x: Fixed.from_value(float(x)).raw, otypes=[np.int64])(floats) \
        if floats.size else np.zeros(floats.shape, dtype=np.int64)
    return raw.view(FixedArray)


def ulog_array(values) -> ULogArray:
    """A ulog array from non-negative numbers."""
    floats = np.asarray(values, dtype=np.float64)
    if np.any(floats < 0) or np.any(np.isnan(floats)):
        raise ValueError("ulog arrays hold non-negative numbers only")
    with np.errstate(divide="ignore"):
        return np.log(floats).view(ULogArray)


def to_floats(array: np.ndarray) -> np.ndarray:
    """The values of a fixed or ulog array as float64 (other arrays unchanged)."""
    if isinstance(array, FixedArray):
        return np.asarray(array, dtype=np.int64) / float(ONE_RAW)
    if isinstance(array, ULogArray):
        return np.exp(np.asarray(array, dtype=np.float64))
    return array
