"""Built-in functions and conversions applied to scalars of every number system.

`apply_builtin(builtin, args, span)` computes a pure built-in of LANGUAGE.md §7 from
the registry (`primitives.BUILTINS`) on rev scalars; `convert(name, value, span)`
the conversions `f64 f32 i64 i32 fixed ulog bool` (`complex` is structural).

Result types (decisions written down in docs/language-decisions.md):
- integer arguments stay integers where the function does (`abs`, `min`, `sign`, …),
  in their own width; other functions of integers give f64;
- f32 arguments give f32 results (computed in f64, rounded once);
- fixed and ulog arguments are converted to f64 first and give f64, except that
  `log` of a ulog is its stored logarithm, exactly;
- complex arguments use the registry's complex column; functions without one
  (`floor`, `min`, `hypot`, …) refuse complex numbers.
"""
from __future__ import annotations

import math

from ..dual import Dual, parts, refuse_tangent
from ..errors import RlangRuntimeError, RlangTypeError
from ..ieee import rule_at
from ..numbers import F32, I32, Fixed, ULog
from ..values import a_type, summarize, wrap_i64

_INTEGERS = (bool, I32, int)
_REALS = (bool, I32, int, F32, float)


def apply_builtin(builtin, args: list, span):
    """`builtin(*args)` on rev scalars."""
    kinds = [type(a) for a in args]
    if builtin.name == "log" and kinds == [ULog]:
        return args[0].log
    if ULog in kinds and any(type(a) is ULog and type(a.log) is Dual for a in args):
        args = [a.value() if type(a) is ULog else a for a in args]     # dual values
        kinds = [type(a) for a in args]
    if Dual in kinds:
        return _dual_call(builtin, args, span)
    if any(k not in (*_REALS, complex, Fixed, ULog) for k in kinds):
        bad = next(a for a in args if type(a) not in (*_REALS, complex, Fixed, ULog))
        raise RlangTypeError(f"`{builtin.name}` needs numbers, got {a_type(bad)}", span)
    if complex in kinds:
        return _complex_call(builtin, args, span)
    if builtin.int_preserving and all(k in _INTEGERS for k in kinds):
        result = builtin.forward(*(int(a) for a in args))
        return I32(result) if I32 in kinds and int not in kinds else wrap_i64(result)
    result = float(builtin.forward(*(float(a) for a in args)))
    if F32 in kinds and all(k in (*_INTEGERS, F32) for k in kinds):
        return F32(result)
    return result


def _dual_call(builtin, args, span):
    """A built-in of dual numbers: value from `forward`, tangent from `partials`."""
    values = [parts(a)[0] for a in args]
    tangents = [parts(a)[1] for a in args]
    if builtin.partials is None:
        raise RlangTypeError(f"`{builtin.name}` has no derivative", span)
    value = float(builtin.forward(*values))
    partials = rule_at(builtin.partials, values)
    return Dual(value, sum(float(p) * t for p, t in zip(partials, tangents) if p is not None))


def _complex_call(builtin, args, span):
    if builtin.complex_forward is None or len(args) != 1:
        raise RlangTypeError(f"`{builtin.name}` is not defined for complex numbers", span)
    try:
        return builtin.complex_forward(complex(args[0]))
    except (ValueError, OverflowError, ZeroDivisionError):
        return complex(math.nan, math.nan)


def convert(name: str, value, span):
    """The conversion `name(value)` (LANGUAGE.md §3)."""
    if type(value) is Dual:
        if name == "f64":
            return value
        if name == "ulog":          # its dual logarithm (Note [Tangents of ulog values])
            return _checked_conversion(name, value, span)
        if name in ("f32", "fixed"):    # a tangent would be lost: refuse it
            refuse_tangent(value, name)
        value = value.a             # other conversions of a dual number see its value
    if type(value) is ULog and type(value.log) is Dual:
        if name == "f64":
            return value.value()    # the dual e^ℓ
        if name in ("f32", "fixed"):
            refuse_tangent(value.log, name)
    if type(value) not in (*_REALS, complex, Fixed, ULog):
        raise RlangTypeError(f"`{name}` cannot convert {a_type(value)}", span)
    if name == "bool":
        if isinstance(value, bool):
            return value
        if value in (0, 1):
            return bool(value)
        raise RlangRuntimeError(f"bool({summarize(value)}): only 0 and 1 convert to bool", span)
    if isinstance(value, complex):
        raise RlangTypeError(f"`{name}` of a complex number; use real(z), imag(z) or abs(z)",
                             span)
    return _checked_conversion(name, value, span)


def _checked_conversion(name: str, value, span):
    """`name(value)`, a value it cannot hold an error at `span`."""
    try:
        return _CONVERSIONS[name](value, span)
    except ValueError as error:
        raise RlangRuntimeError(str(error), span) from None


def _to_integer(value, span, bits: int, name: str) -> int:
    if isinstance(value, (Fixed, ULog)):
        value = float(value)
    if isinstance(value, float):
        if not math.isfinite(value) or value != math.floor(value):
            raise RlangRuntimeError(f"{name}({summarize(value)}): not an integer; use floor, "
                                    "ceil or round first", span)
    integer = int(value)
    if not -(1 << (bits - 1)) <= integer < (1 << (bits - 1)):
        raise RlangRuntimeError(f"{name}({summarize(value)}): out of the range of {name}", span)
    return integer


_CONVERSIONS = {
    "f64": lambda v, span: float(v),
    "f32": lambda v, span: F32(float(v)),
    "i64": lambda v, span: _to_integer(v, span, 64, "i64"),
    "i32": lambda v, span: I32(_to_integer(v, span, 32, "i32")),
    "fixed": lambda v, span: Fixed.from_value(float(v) if isinstance(v, ULog) else v),
    "ulog": lambda v, span: ULog.from_value(v),
}
