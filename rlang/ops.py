"""Operator semantics on scalars (LANGUAGE.md §3 and §7).

`binary(op, a, b, span)` and `unary(op, a, span)` compute expression operators;
`accumulate(op, old, rhs, span, target)` computes the new value of an update
statement `target op rhs`.  Values are Python bool / int (i64) / float / complex.
Promotion follows NumPy: bool → int → float → complex.  Integer results wrap to
i64; `//` and `%` are floor division and modulo; integer division by zero is an
RlangRuntimeError; float operations follow IEEE (x/0.0 is inf, nan stays nan).
Every misuse is an RlangTypeError with a hint, never a Python exception.
"""
from __future__ import annotations

import math

import numpy as np

from .errors import RlangRuntimeError, RlangTypeError
from .values import a_type, format_value, type_name, wrap_i64

_RANK = {bool: 0, int: 1, float: 2, complex: 3}


def _rank(value, op, span):
    rank = _RANK.get(type(value))
    if rank is None:
        raise RlangTypeError(f"`{op}` cannot be applied to {a_type(value)}", span)
    return rank


def _promote(a, b, op, span):
    """Both operands in their common numeric type; bools count as integers."""
    rank = max(_rank(a, op, span), _rank(b, op, span), 1)
    kind = (None, int, float, complex)[rank]
    return kind(a), kind(b), kind


def binary(op: str, a, b, span):
    """The value of `a op b` (`&&`/`||` are handled by the caller: they short-circuit)."""
    if op in _ARITHMETIC:
        return _ARITHMETIC[op](a, b, span)
    if op in _BITWISE:
        return _bitwise(op, a, b, span)
    if op in _COMPARE:
        return _compare(op, a, b, span)
    raise RlangTypeError(f"unknown operator `{op}`", span)


def _add(a, b, span):
    x, y, kind = _promote(a, b, "+", span)
    return wrap_i64(x + y) if kind is int else x + y


def _sub(a, b, span):
    x, y, kind = _promote(a, b, "-", span)
    return wrap_i64(x - y) if kind is int else x - y


def _mul(a, b, span):
    x, y, kind = _promote(a, b, "*", span)
    return wrap_i64(x * y) if kind is int else x * y


def _truediv(a, b, span):
    x, y, kind = _promote(a, b, "/", span)
    if kind is complex:
        return x / y if y != 0 else complex(math.nan, math.nan)
    x, y = float(x), float(y)
    if y == 0.0:
        if x == 0.0 or math.isnan(x):
            return math.nan
        return math.copysign(math.inf, x) * math.copysign(1.0, y)
    return x / y


def _division_operands(op, a, b, span):
    """Promoted operands of `//` or `%`; integer division by zero is an error."""
    x, y, kind = _promote(a, b, op, span)
    if kind is complex:
        raise RlangTypeError(f"`{op}` is not defined for complex numbers", span)
    if kind is int and y == 0:
        raise RlangRuntimeError(f"integer division by zero: {a} {op} 0", span)
    return x, y, kind


def _floordiv(a, b, span):
    x, y, kind = _division_operands("//", a, b, span)
    if kind is int:
        return wrap_i64(x // y)
    if y == 0.0:
        return _truediv(x, y, span) if x != 0.0 else math.nan
    if not (math.isfinite(x) and math.isfinite(y)):
        with np.errstate(all="ignore"):
            return float(np.floor_divide(x, y))
    return x // y


def _mod(a, b, span):
    x, y, kind = _division_operands("%", a, b, span)
    if kind is int:
        return x % y
    if y == 0.0 or not math.isfinite(x):
        return math.nan
    return x % y


def _pow(a, b, span):
    x, y, kind = _promote(a, b, "**", span)
    if kind is int:
        if y < 0:
            raise RlangRuntimeError(f"integer {a} raised to the negative power {b}; "
                                    "use a float base", span)
        return wrap_i64(pow(x, y, 1 << 64))
    if kind is complex:
        try:
            return x ** y
        except ZeroDivisionError:
            return complex(math.inf, math.nan)
    try:
        return math.pow(x, y)
    except (ValueError, OverflowError):   # poles and overflow: the IEEE answer
        with np.errstate(all="ignore"):
            return float(np.power(x, y))


_ARITHMETIC = {"+": _add, "-": _sub, "*": _mul, "/": _truediv, "//": _floordiv, "%": _mod,
               "**": _pow}
_BITWISE = ("^", "&", "|", "<<", ">>")
_COMPARE = ("==", "!=", "<", "<=", ">", ">=")


def _bitwise(op, a, b, span):
    if isinstance(a, bool) and isinstance(b, bool) and op in ("^", "&", "|"):
        return {"^": a != b, "&": a and b, "|": a or b}[op]
    for value in (a, b):
        if not isinstance(value, int):
            hint = "; did you mean `**`?" if op == "^" and isinstance(value, float) else ""
            raise RlangTypeError(f"`{op}` needs integers or bools, got {a_type(value)}{hint}",
                                 span)
    a, b = int(a), int(b)
    if op == "^":
        return wrap_i64(a ^ b)
    if op == "&":
        return a & b
    if op == "|":
        return a | b
    if op == "<<":
        return wrap_i64(a << b) if b >= 0 else a >> min(-b, 64)
    return a >> min(b, 64) if b >= 0 else wrap_i64(a << min(-b, 64))


def _compare(op, a, b, span):
    for value in (a, b):
        if type(value) not in _RANK:
            raise RlangTypeError(f"`{op}` cannot compare {a_type(value)}", span)
    if op == "==":
        return a == b
    if op == "!=":
        return a != b
    if isinstance(a, complex) or isinstance(b, complex):
        raise RlangTypeError(f"`{op}` cannot order complex numbers", span)
    return {"<": a < b, "<=": a <= b, ">": a > b, ">=": a >= b}[op]


def unary(op: str, a, span):
    """The value of `op a` for op in `- ! ~`."""
    if op == "-":
        if isinstance(a, bool) or type(a) not in _RANK:
            raise RlangTypeError(f"unary `-` cannot be applied to {a_type(a)}", span)
        return wrap_i64(-a) if isinstance(a, int) else -a
    if op == "!":
        if not isinstance(a, bool):
            raise RlangTypeError(f"`!` needs a bool, got {a_type(a)}", span)
        return not a
    if op == "~":
        if isinstance(a, bool):
            return not a
        if isinstance(a, int):
            return ~a
        raise RlangTypeError(f"`~` needs an integer or bool, got {a_type(a)}", span)
    raise RlangTypeError(f"unknown operator `{op}`", span)


def truth(value, what: str, span) -> bool:
    """A condition's value, which must be a bool."""
    if not isinstance(value, bool):
        raise RlangTypeError(f"{what} must be a bool, got the {type_name(value)} "
                             f"{format_value(value)}; compare explicitly, e.g. `x != 0`", span)
    return value


# ---------------------------------------------------------------- updates

def accumulate(op: str, old, rhs, span, target: str):
    """The new value of `target op rhs` when `target` holds `old`."""
    if op in ("+=", "-="):
        return _add_update(op, old, rhs, span, target)
    if op == "^=":
        return _xor_update(old, rhs, span, target)
    if op in ("*=", "/="):
        raise RlangTypeError(f"`{op}` is reversible only on ulog; `{target}` is a "
                             f"{type_name(old)}", span,
                             notes=(f"convert with ulog(x); for {type_name(old)} use `+=` "
                                    "with a product on the right-hand side",))
    raise RlangTypeError(f"unknown update `{op}`", span)


def _add_update(op, old, rhs, span, target):
    kind = type(old)
    if kind is bool:
        raise RlangTypeError(f"`{op}` cannot update the bool `{target}`; use `^=` or FLIP",
                             span)
    if type(rhs) not in _RANK:
        raise RlangTypeError(f"cannot accumulate {a_type(rhs)} into `{target}`", span)
    if _RANK[type(rhs)] > _RANK.get(kind, -1):
        raise RlangTypeError(
            f"cannot accumulate {a_type(rhs)} into the {type_name(old)} `{target}`; "
            f"the result would not fit its type", span,
            notes=(f"convert the right-hand side, e.g. {type_name(old)}(…)",))
    if kind is int:
        value = old + int(rhs) if op == "+=" else old - int(rhs)
        return wrap_i64(value)
    rhs = kind(rhs)
    return old + rhs if op == "+=" else old - rhs


def _xor_update(old, rhs, span, target):
    if isinstance(old, bool):
        if not isinstance(rhs, bool):
            raise RlangTypeError(f"`^=` on the bool `{target}` needs a bool, got a "
                                 f"{type_name(rhs)}", span)
        return old != rhs
    if isinstance(old, int):
        if not isinstance(rhs, int):
            raise RlangTypeError(f"`^=` on the integer `{target}` needs an integer, got a "
                                 f"{type_name(rhs)}", span)
        return wrap_i64(old ^ int(rhs))
    raise RlangTypeError(f"`^=` needs an integer or bool target; `{target}` is a "
                         f"{type_name(old)}", span)
