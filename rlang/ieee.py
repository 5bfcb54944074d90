"""IEEE 754 answers where Python's float arithmetic raises.

Python raises ZeroDivisionError for `x / 0.0`, OverflowError for a `**` too large
and gives a complex number for a negative base to a fractional power; IEEE 754 (and
so the compiled backends, C and NumPy) answers ±inf or nan.  The interpreter's
arithmetic on plain floats, on dual numbers (rlang/dual.py) and the evaluation of
the registry's partial-derivative rules (rlang/primitives.py) go through here, so
that a gradient at a pole is an inf or a nan, as in compiled code, and never a
Python exception.
"""
from __future__ import annotations

import math

import numpy as np


def float_div(x: float, y: float) -> float:
    """x / y; at y = ±0: ±inf by the signs, nan for 0/0 and nan/0."""
    if y == 0.0:
        if x == 0.0 or math.isnan(x):
            return math.nan
        return math.copysign(math.inf, x) * math.copysign(1.0, y)
    return x / y


def float_pow(x: float, y: float) -> float:
    """x ** y as C's pow answers it: inf on overflow and at a zero base with a
    negative power, nan for a negative base to a fractional power."""
    try:
        return math.pow(x, y)
    except (ValueError, OverflowError):
        with np.errstate(all="ignore"):
            return float(np.power(float(x), float(y)))


def rule_at(rule, args):
    """`rule(*args)` for a partial-derivative rule, in IEEE arithmetic.  It runs on
    the arguments as they are (Python's float arithmetic is IEEE's wherever it
    answers); where Python raises instead (x/0, an overflowing `**`) or turns a real
    power complex, it runs again with integers and floats as NumPy float64 and
    complex numbers as complex128, whose `/` and `**` answer inf and nan, and the
    NumPy results come back as Python floats and complexes.  Dual arguments stay as
    they are (their arithmetic is IEEE already)."""
    try:
        found = rule(*args)
        if any(type(a) is complex for a in args) or \
                not any(type(p) is complex for p in _as_tuple(found)):
            return found
    except (ZeroDivisionError, OverflowError, ValueError):
        pass
    with np.errstate(all="ignore"):
        found = rule(*(np.float64(a) if type(a) in (int, float) else
                       np.complex128(a) if type(a) is complex else a for a in args))
    return tuple(map(_plain, found)) if type(found) is tuple else _plain(found)


def _as_tuple(found) -> tuple:
    return found if type(found) is tuple else (found,)


def complex_rule_at(rule, z: complex) -> complex:
    """`rule(z)` for a complex derivative rule; nan + nan·i at its poles (cmath and
    Python's complex division raise there)."""
    try:
        return complex(rule(z))
    except (ZeroDivisionError, OverflowError, ValueError):
        return complex(math.nan, math.nan)


def _plain(value):
    if isinstance(value, np.floating):
        return float(value)
    return complex(value) if isinstance(value, np.complexfloating) else value
