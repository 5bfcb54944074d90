"""Operator semantics on scalars (LANGUAGE.md §3 and §7).

`binary(op, a, b, span)` and `unary(op, a, span)` compute expression operators;
`accumulate(op, old, rhs, span, target)` computes the new value of an update
statement `target op rhs`.  Values are Python bool / int (i64) / float (f64) /
complex, and I32 / F32 / Fixed / ULog from rlang.numbers.  Promotion follows NumPy:
bool → i32 → i64 → f32 → f64 → complex (an integer with an f32 gives an f64).
Integer results wrap to their width; f32 results are rounded to single precision;
`//` and `%` are floor division and modulo; integer division by zero is an
RlangRuntimeError; float operations follow IEEE (x/0.0 is inf, nan stays nan).
fixed and ulog combine with their own kind and with integers (`system_binary`).
Every misuse is an RlangTypeError with a hint, never a Python exception.
"""
from __future__ import annotations

import math

import numpy as np

from ..errors import ReversibilityError, RlangRuntimeError, RlangTypeError
from ..dual import Dual, parts, refuse_tangent
from ..ieee import float_div, float_pow
from ..numbers import F32, I32, Fixed, ULog
from ..primitives import complex_power
from ..types_rules import BITWISE_OPS, bitwise_operand_message, promote
from ..values import (I64_MAX, I64_MIN, UNBOUNDED_INTEGERS, a_type, format_value,
                      type_name, wrap_i64)

_RANK = {bool: 0, I32: 1, int: 2, F32: 3, float: 4, complex: 5}
_NUMBER_SYSTEMS = (Fixed, ULog)


_TYPE_NAMES = {bool: "bool", I32: "i32", int: "i64", F32: "f32", float: "f64",
               complex: "complex"}
_NAME_TYPES = {name: kind for kind, name in _TYPE_NAMES.items()}


def _result_type(ta, tb):
    """NumPy's promotion of two scalar types (`types_rules.promote`)."""
    return _NAME_TYPES[promote(_TYPE_NAMES[ta], _TYPE_NAMES[tb])]


def _base(kind):
    return int if kind in (I32, int) else float if kind in (F32, float) else complex


def _finish(value, kind):
    """A computed value as a value of the result type (wrapping, rounding; an
    integer stays exact while UNBOUNDED_INTEGERS is on, Note [Janus integers])."""
    if kind is int:
        if I64_MIN <= value <= I64_MAX or UNBOUNDED_INTEGERS.get():
            return value
        return wrap_i64(value)
    if kind is float or kind is complex:
        return value
    return kind(value)


def _check_number(value, op, span):
    if type(value) not in _RANK:
        raise RlangTypeError(f"`{op}` cannot be applied to {a_type(value)}", span)


def _promote(a, b, op, span):
    """Both operands in the base type of their common type, and that type."""
    _check_number(a, op, span)
    _check_number(b, op, span)
    kind = _result_type(type(a), type(b))
    base = _base(kind)
    return base(a), base(b), kind


def binary(op: str, a, b, span):
    """The value of `a op b` (`&&`/`||` are handled by the caller: they short-circuit)."""
    if type(a) is Dual or type(b) is Dual:
        return dual_binary(op, a, b, span)
    if type(a) in _NUMBER_SYSTEMS or type(b) in _NUMBER_SYSTEMS:
        if op == "**" and type(a) is ULog:
            return ulog_power(a, b, span)
        return system_binary(op, a, b, span)
    if op in _ARITHMETIC:
        return _ARITHMETIC[op](a, b, span)
    if op in BITWISE_OPS:
        return _bitwise(op, a, b, span)
    if op in _COMPARE:
        return _compare(op, a, b, span)
    raise RlangTypeError(f"unknown operator `{op}`", span)


def _add(a, b, span):
    x, y, kind = _promote(a, b, "+", span)
    return _finish(x + y, kind)


def _sub(a, b, span):
    x, y, kind = _promote(a, b, "-", span)
    return _finish(x - y, kind)


def _mul(a, b, span):
    x, y, kind = _promote(a, b, "*", span)
    return _finish(x * y, kind)


def _truediv(a, b, span):
    x, y, kind = _promote(a, b, "/", span)
    if kind is complex:
        return x / y if y != 0 else complex(math.nan, math.nan)
    result = float_div(float(x), float(y))
    return F32(result) if kind is F32 else result


def _division_operands(op, a, b, span):
    """Promoted operands of `//` or `%`; integer division by zero is an error."""
    x, y, kind = _promote(a, b, op, span)
    if kind is complex:
        raise RlangTypeError(f"`{op}` is not defined for complex numbers", span)
    if kind in (I32, int) and y == 0:
        raise RlangRuntimeError(f"integer division by zero: {format_value(a)} {op} 0", span)
    return x, y, kind


def _floordiv(a, b, span):
    x, y, kind = _division_operands("//", a, b, span)
    if kind in (I32, int):
        return _finish(x // y, kind)
    if y == 0.0:
        result = float_div(x, y) if x != 0.0 else math.nan
    elif not (math.isfinite(x) and math.isfinite(y)):
        with np.errstate(all="ignore"):
            result = float(np.floor_divide(x, y))
    else:
        result = x // y
    return _finish(result, kind)


def _mod(a, b, span):
    x, y, kind = _division_operands("%", a, b, span)
    if kind in (I32, int):
        return _finish(x % y, kind)
    if y == 0.0 or not math.isfinite(x):
        return _finish(math.nan, kind)
    return _finish(x % y, kind)


def _pow(a, b, span):
    x, y, kind = _promote(a, b, "**", span)
    if kind in (I32, int):
        if y < 0:
            raise RlangRuntimeError(f"integer {a} raised to the negative power {b}; "
                                    "use a float base", span)
        return _finish(pow(x, y, 1 << 64), kind)
    if kind is complex:
        return complex_power(x, y)
    return _finish(float_pow(x, y), kind)     # poles and overflow: the IEEE answer


_ARITHMETIC = {"+": _add, "-": _sub, "*": _mul, "/": _truediv, "//": _floordiv, "%": _mod,
               "**": _pow}
_COMPARE = ("==", "!=", "<", "<=", ">", ">=")


def _bitwise(op, a, b, span):
    if isinstance(a, bool) and isinstance(b, bool) and op in ("^", "&", "|"):
        return {"^": a != b, "&": a and b, "|": a or b}[op]
    for value in (a, b):
        if not isinstance(value, int):
            raise RlangTypeError(bitwise_operand_message(op, type_name(value)), span)
    kind = type(a) if op in ("<<", ">>") else _result_type(type(a), type(b))
    kind = int if kind is bool else kind
    a, b = int(a), int(b)
    if op == "^":
        return _finish(a ^ b, kind)
    if op == "&":
        return _finish(a & b, kind)
    if op == "|":
        return _finish(a | b, kind)
    if op == "<<":
        return _finish(a << b if b >= 0 else a >> min(-b, 64), kind)
    return _finish(a >> min(b, 64) if b >= 0 else a << min(-b, 64), kind)


def _compare(op, a, b, span):
    """`a op b` for a comparison, in the operands' common type (NumPy's promotion, so
    an i64 meets an f64 as a float, LANGUAGE.md §3)."""
    for value in (a, b):
        if type(value) not in _RANK:
            raise RlangTypeError(f"`{op}` cannot compare {a_type(value)}", span)
    a, b, _ = _promote(a, b, op, span)
    if op == "==":
        return a == b
    if op == "!=":
        return a != b
    if isinstance(a, complex) or isinstance(b, complex):
        raise RlangTypeError(f"`{op}` cannot order complex numbers", span)
    return {"<": a < b, "<=": a <= b, ">": a > b, ">=": a >= b}[op]


# ------------------------------------------------------------ dual numbers

def dual_binary(op: str, a, b, span):
    """`a op b` with a dual number (a Hessian run): real arithmetic on value and
    tangent; comparisons see the values."""
    for value in (a, b):
        if type(value) is not Dual and type(value) not in _REAL_KINDS:
            what = {complex: "complex", Fixed: "fixed", ULog: "ulog"}.get(type(value))
            if what == "ulog" and op == "**" and type(a) is ULog:
                return ulog_power(a, b, span)       # a dual exponent
            if what is not None:
                if what != "ulog":      # other ulog mixes are type errors of `binary`
                    refuse_tangent(a if type(a) is Dual else b, what)
                return binary(op, parts(a)[0] if type(a) is Dual else a,
                              parts(b)[0] if type(b) is Dual else b, span)
            raise RlangTypeError(f"`{op}` cannot mix a float with {a_type(value)} here", span)
    if op in _COMPARE:
        return _compare(op, parts(a)[0], parts(b)[0], span)
    if op == "+":
        return a + b
    if op == "-":
        return a - b
    if op == "*":
        return a * b
    if op == "/":
        return a / b if parts(b)[0] != 0 else Dual(float_div(parts(a)[0], 0.0), 0.0)
    if op == "**":
        return Dual(a) ** b if type(a) is not Dual else a ** b
    if op in ("//", "%"):               # piecewise: the quotient's derivative is 0
        (x, dx), (y, dy) = parts(a), parts(b)
        value = binary(op, x, y, span)
        if op == "//":
            return Dual(value)
        with np.errstate(all="ignore"):     # ∂(a % b) = ∂a - ⌊a/b⌋ ∂b, as the rule says
            return Dual(value, dx - dy * float(np.floor(float_div(x, y))))
    raise RlangTypeError(f"`{op}` needs integers or bools, got an f64", span)


# ------------------------------------------------------------ fixed and ulog

def system_binary(op: str, a, b, span):
    """`a op b` where an operand is fixed or ulog.  The other operand must be of the
    same system or an integer (converted exactly); floats must be converted
    explicitly (`fixed(x)`, `ulog(x)`) -- float literals were already converted by
    the evaluator (LANGUAGE.md §3)."""
    system = type(a) if type(a) in _NUMBER_SYSTEMS else type(b)
    x, y = _to_system(a, system, op, span), _to_system(b, system, op, span)
    if op in _COMPARE:
        # a dual logarithm is compared by its value, as dual numbers are
        key = (lambda v: v.raw) if system is Fixed else (lambda v: parts(v.log)[0])
        return _compare(op, key(x), key(y), span)
    method = _SYSTEM_METHODS[system].get(op)
    if method is None:
        raise RlangTypeError(f"`{op}` is not defined for {system_name(system)} numbers", span)
    try:
        return getattr(x, method)(y)
    except ZeroDivisionError as error:
        raise RlangRuntimeError(str(error), span) from None
    except ValueError as error:
        raise RlangRuntimeError(str(error), span) from None


_SYSTEM_METHODS = {
    Fixed: {"+": "add", "-": "sub", "*": "mul", "/": "div"},
    ULog: {"*": "mul", "/": "div", "+": "add", "-": "sub"},
}


def system_name(system) -> str:
    return "fixed" if system is Fixed else "ulog"


def _to_system(value, system, op, span):
    if type(value) is system:
        return value
    name = system_name(system)
    if type(value) in (bool, I32, int):
        try:
            return system.from_value(int(value))
        except ValueError as error:
            raise RlangRuntimeError(str(error), span) from None
    raise RlangTypeError(f"`{op}` cannot mix {name} and {a_type(value)}", span,
                         notes=(f"convert explicitly: {name}(x), or f64(x) for the other "
                                "operand",))


def ulog_power(base: ULog, exponent, span) -> ULog:
    """`l ** y` for ulog l and a real y: log(l) · y."""
    if type(exponent) not in (bool, I32, int, F32, float, Dual):
        raise RlangTypeError(f"a ulog power needs a real exponent, got {a_type(exponent)}",
                             span)
    if base.log == -math.inf and exponent == 0:
        return ULog(0.0)
    return ULog(base.log * (exponent if type(exponent) is Dual else float(exponent)))


def unary(op: str, a, span):
    """The value of `op a` for op in `- ! ~`."""
    if op == "-":
        if isinstance(a, (Fixed, Dual)):
            return a.neg() if isinstance(a, Fixed) else -a
        if isinstance(a, bool) or type(a) not in _RANK:
            hint = "; a ulog is never negative" if isinstance(a, ULog) else ""
            raise RlangTypeError(f"unary `-` cannot be applied to {a_type(a)}{hint}", span)
        return _finish(-a, type(a))
    if op == "!":
        if not isinstance(a, bool):
            raise RlangTypeError(f"`!` needs a bool, got {a_type(a)}", span)
        return not a
    if op == "~":
        if isinstance(a, bool):
            return not a
        if isinstance(a, int):
            return _finish(~int(a), type(a))
        raise RlangTypeError(f"`~` needs an integer or bool, got {a_type(a)}", span)
    raise RlangTypeError(f"unknown operator `{op}`", span)


def truth(value, what: str, span) -> bool:
    """A condition's value, which must be a bool."""
    if not isinstance(value, bool):
        raise RlangTypeError(f"{what} must be a bool, got the {type_name(value)} "
                             f"{format_value(value)}; compare explicitly, e.g. `x != 0`", span)
    return value


# ---------------------------------------------------------------- updates

def accumulate(op: str, old, rhs, span, target):
    """The new value of `target op rhs` when `target` holds `old`; `target` names the
    view in messages (a string, or a Ref whose `str()` is computed only then).

    The target keeps its type.  The right-hand side may be of a type of the same kind
    or below it (NumPy's "same_kind" casting): an f32 target takes an f64 value
    (rounded), an i32 target an i64 value (wrapped), a float target an integer; never
    a float into an integer, a complex into a real, or fixed/ulog mixed with floats."""
    if op in ("+=", "-="):
        return _add_update(op, old, rhs, span, target)
    if op == "^=":
        return _xor_update(old, rhs, span, target)
    if op in ("*=", "/="):
        if isinstance(old, ULog):
            return _ulog_update(op, old, rhs, span, target)
        raise RlangTypeError(f"`{op}` is reversible only on ulog; `{target}` is "
                             f"{a_type(old)}", span,
                             notes=(f"convert with ulog(x); for {type_name(old)} use `+=` "
                                    "with a product on the right-hand side",))
    raise RlangTypeError(f"unknown update `{op}`", span)


_INTEGER_KINDS = (bool, I32, int)
_REAL_KINDS = (bool, I32, int, F32, float)


def _add_update(op, old, rhs, span, target):
    kind = type(old)
    sign = 1 if op == "+=" else -1
    if (kind is Dual or type(rhs) is Dual) and kind in (float, Dual) \
            and type(rhs) in (*_REAL_KINDS, Dual):
        return old + rhs if sign > 0 else old - rhs
    if kind is Fixed:
        if type(rhs) not in (Fixed, *_INTEGER_KINDS):
            raise _mix_error(op, old, rhs, span, target, "fixed(x)")
        return old.add(_to_system(rhs, Fixed, op, span)) if sign > 0 else \
            old.sub(_to_system(rhs, Fixed, op, span))
    if kind is ULog:
        raise RlangTypeError(f"`{op}` is not reversible on the ulog `{target}`", span,
                             notes=("a ulog is updated by `*=` and `/=`; to add, write "
                                    "`l *= 1.0 + …` or use `l *= a + b` with ulog a and b",))
    if kind is bool:
        raise RlangTypeError(f"`{op}` cannot update the bool `{target}`; use `^=` or FLIP",
                             span)
    allowed = _INTEGER_KINDS if kind in (I32, int) else \
        (*_REAL_KINDS, Dual) if kind in (F32, float, Dual) else (*_REAL_KINDS, Dual, complex)
    if type(rhs) not in allowed:
        raise _mix_error(op, old, rhs, span, target, f"{type_name(old)}(…)")
    base = _base(kind)
    return _finish(base(old) + base(rhs) if sign > 0 else base(old) - base(rhs), kind)


def _mix_error(op, old, rhs, span, target, conversion):
    return RlangTypeError(
        f"cannot accumulate {a_type(rhs)} into the {type_name(old)} `{target}`; the result "
        f"would not fit its type", span,
        notes=(f"convert the right-hand side explicitly, e.g. {conversion}",))


def _ulog_update(op, old: ULog, rhs, span, target):
    if type(rhs) is not ULog:
        if type(rhs) not in (*_REAL_KINDS, Fixed):
            raise RlangTypeError(f"`{op}` on the ulog `{target}` needs a ulog or a "
                                 f"non-negative real, got {a_type(rhs)}", span)
        try:
            rhs = ULog.from_value(rhs)
        except ValueError as error:
            raise RlangRuntimeError(str(error), span) from None
    if op == "*=" and rhs.log == -math.inf:
        raise ReversibilityError(f"`{target} *= 0` cannot be undone: it would set the ulog "
                                 f"to zero and lose its value", span)
    try:
        return old.mul(rhs) if op == "*=" else old.div(rhs)
    except ZeroDivisionError as error:
        raise RlangRuntimeError(f"`{target} /= 0`: {error}", span) from None


def _xor_update(old, rhs, span, target):
    if isinstance(old, bool):
        if not isinstance(rhs, bool):
            raise RlangTypeError(f"`^=` on the bool `{target}` needs a bool, got "
                                 f"{a_type(rhs)}", span)
        return old != rhs
    if isinstance(old, int):
        if not isinstance(rhs, int):
            raise RlangTypeError(f"`^=` on the integer `{target}` needs an integer, got "
                                 f"{a_type(rhs)}", span)
        return _finish(int(old) ^ int(rhs), type(old))
    raise RlangTypeError(f"`^=` needs an integer or bool target; `{target}` is "
                         f"{a_type(old)}", span)
