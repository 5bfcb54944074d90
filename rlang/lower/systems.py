"""Lowering of the number systems fixed and ulog (LANGUAGE.md §3) to typed IR.

The rules are those of rlang/interp/ops.py (`system_binary`, `ulog_power`, the updates)
and rlang/numbers.py, decided on types.  fixed operations stay fixed-typed IR
operators; ulog operations are expanded into f64 arithmetic on logarithms
(Note [Number systems in the IR], rlang/ir/nodes.py):

    a * b   →  ℓa + ℓb                  a / b  →  ℓa − ℓb   (b ≠ 0 checked)
    a + b   →  hi + log1p(exp(lo − hi)), hi/lo the larger/smaller logarithm
    a − b   →  ℓa + log(1 − e^(ℓb−ℓa))  (b ≤ a checked), as ULog.sub computes it
    a ** y  →  ℓa · y                   (0 ** 0 = 1)

`fl` is the function lowering (rlang/lower/statements.py): it makes the sites.
"""
from __future__ import annotations

import math

from ..ir import nodes as ir
from ..errors import RlangRuntimeError, RlangTypeError
from ..numbers import Fixed, ULog

SYSTEMS = ("fixed", "ulog")
_INTEGERS = ("bool", "i32", "i64")
_REALS = ("bool", "i32", "i64", "f32", "f64")
_LOG2 = math.log(2.0)


def system_constant(value, t: str, span=None) -> ir.Const:
    """The constant `t(value)` for a Python number `value` (fixed: the raw integer,
    ulog: the logarithm); a value the system cannot hold is an error at `span`."""
    try:
        if t == "fixed":
            return ir.Const(Fixed.from_value(value).raw, "fixed")
        return ir.Const(ULog.from_value(value).log, "ulog")
    except ValueError as error:
        raise RlangRuntimeError(f"the literal {value!r}: {error}", span) from None


def zero_or_one(t: str, one: bool) -> ir.Const:
    return system_constant(1 if one else 0, t)


def to_system(fl, value, t: str, span):
    """`t(value)` for a value of any real type or system: checked where the value may
    not fit (a fixed out of range or not finite, a negative or NaN ulog)."""
    if value.type == t:
        return value
    if value.type == "complex":
        raise RlangTypeError(f"`{t}` of a complex number; use real(z), imag(z) or abs(z)", span)
    if isinstance(value, ir.Const) and value.type in _REALS:
        try:
            return system_constant(value.value, t)
        except RlangRuntimeError:
            pass                        # the run-time check reports it
    if value.type in SYSTEMS:           # fixed ↔ ulog go through the f64 value
        value = ir.Convert(value, "f64")
    return ir.Convert(value, t, conversion_site(fl, t, value.type, span))


def conversion_site(fl, target: str, source: str, span) -> int:
    """The site of a conversion that can fail (always checked, as the interpreter
    raises these errors with its checks off too)."""
    return fl.error_site("convert", span, (target, source))


def from_system(fl, value, t: str, span):
    """`t(value)` for a fixed or ulog value and a real or system target `t`."""
    if t in SYSTEMS:
        return to_system(fl, value, t, span)
    if t in ("f64", "f32"):
        return ir.Convert(value, t)
    as_float = ir.Convert(value, "f64")
    if t == "i64" or t == "i32" or t == "bool":
        return ir.Convert(as_float, t, conversion_site(fl, t, "f64", span))
    raise RlangTypeError(f"`{t}` cannot convert {ir.type_text(value.type)}", span)


def log_of(value):
    """The f64 logarithm a ulog value holds."""
    return ir.Reinterpret(value, "f64")


def as_ulog(log):
    return ir.Reinterpret(log, "ulog")


def system_binary(fl, node, left, right):
    """`left op right` where an operand is fixed or ulog (the other of the same
    system, or an integer, converted exactly)."""
    op = node.op
    if op == "**" and left.type == "ulog":
        return _ulog_power(node, left, right)
    system = left.type if left.type in SYSTEMS else right.type
    a, b = (_operand(fl, x, system, op, node.span) for x in (left, right))
    if op in ("==", "!=", "<", "<=", ">", ">="):
        return ir.Compare(op, a, b)
    if system == "fixed":
        if op not in ("+", "-", "*", "/"):
            raise RlangTypeError(f"`{op}` is not defined for fixed numbers", node.span)
        site = fl.error_site("fixed_div", node.span) if op == "/" else None
        return ir.Binary(op, a, b, "fixed", site)
    if op == "*":
        return as_ulog(_f64("+", log_of(a), log_of(b)))
    if op == "/":
        return divide_ulog(fl, a, b, node.span, "ulog_div", ())
    if op in ("+", "-"):            # each operand is used several times below
        a, b = _shared(fl, a), _shared(fl, b)
    if op == "+":
        return as_ulog(_log_add(log_of(a), log_of(b)))
    if op == "-":
        return _ulog_subtract(fl, a, b, node.span)
    raise RlangTypeError(f"`{op}` is not defined for ulog numbers", node.span)


def _shared(fl, value):
    """`value` read from a temporary around the statement (`hoist`) unless it is a
    read or a constant already.  A ulog sum uses each operand three times; without
    the temporary the IR of `l1 + l2 + … + ln` is a tree of 3^n nodes, which every
    walk over it (passes, derivatives, emitters) visits: 8 terms did not compile in
    minutes (found by tests/fuzz)."""
    if isinstance(value, (ir.Read, ir.Const)):
        return value
    var = fl.hoist(value)
    return value if var is None else ir.Read(var)


def divide_ulog(fl, a, b, span, kind: str, detail: tuple):
    """a / b of ulogs; b = 0 (log −inf) is a division by zero (checked)."""
    quotient = as_ulog(_f64("-", log_of(a), log_of(b)))
    site = fl.error_site(kind, span, detail)
    return ir.Checked(quotient, ir.Compare("!=", log_of(b), _minus_infinity()), site)


def nonzero_factor(fl, value, span, detail: tuple):
    """The factor of `l *= value` (a ulog), checked not to be zero: multiplying by
    zero cannot be undone (always checked, as division by zero is; a nonzero constant
    needs no check)."""
    if isinstance(value, ir.Const) and value.type == "ulog" and value.value != -math.inf:
        return value
    site = fl.error_site("ulog_mul_update", span, detail)
    return ir.Checked(value, ir.Compare("!=", log_of(value), _minus_infinity()), site)


def nonzero_divisor(fl, value, span, detail: tuple):
    """The divisor of `l /= value` (a ulog), checked not to be zero."""
    site = fl.error_site("ulog_div_update", span, detail)
    return ir.Checked(value, ir.Compare("!=", log_of(value), _minus_infinity()), site)


def _operand(fl, value, system, op, span):
    if value.type == system:
        return value
    if value.type in _INTEGERS:
        return to_system(fl, value, system, span)
    other = ir.type_text(value.type)
    raise RlangTypeError(f"`{op}` cannot mix {system} and {_article(other)}", span,
                         notes=(f"convert explicitly: {system}(x), or f64(x) for the other "
                                "operand",))


def _article(t: str) -> str:
    return ("an " if t[0] in "aeiou" else "a ") + t


def _ulog_power(node, base, exponent):
    if exponent.type not in _REALS:
        raise RlangTypeError(f"a ulog power needs a real exponent, got "
                             f"{_article(ir.type_text(exponent.type))}", node.span)
    y = exponent if exponent.type == "f64" else ir.Convert(exponent, "f64")
    log = log_of(base)
    zero_to_zero = ir.Logic("&&", ir.Compare("==", log, _minus_infinity()),
                            ir.Compare("==", y, _f64_const(0.0)))
    return as_ulog(ir.Select(zero_to_zero, _f64_const(0.0), _f64("*", log, y), "f64"))


def _log_add(a, b):
    """log(e^a + e^b), the larger logarithm first (exact where the smaller is −inf)."""
    first = ir.Compare(">=", a, b)
    hi = ir.Select(first, a, b, "f64")
    lo = ir.Select(first, b, a, "f64")
    spread = ir.Builtin("log1p", (ir.Builtin("exp", (_f64("-", lo, hi),), "f64"),), "f64")
    return ir.Select(ir.Compare("==", lo, _minus_infinity()), hi, _f64("+", hi, spread),
                     "f64")


def _ulog_subtract(fl, a, b, span):
    """log(e^a − e^b) for b ≤ a (ULog.sub: each form is precise on its side of −log 2)."""
    la, lb = log_of(a), log_of(b)
    d = _f64("-", lb, la)
    near = ir.Builtin("log", (ir.Unary("-", ir.Builtin("expm1", (d,), "f64"), "f64"),), "f64")
    far = ir.Builtin("log1p", (ir.Unary("-", ir.Builtin("exp", (d,), "f64"), "f64"),), "f64")
    body = _f64("+", la, ir.Select(ir.Compare(">", d, _f64_const(-_LOG2)), near, far, "f64"))
    log = ir.Select(ir.Compare("==", lb, _minus_infinity()), la,
                    ir.Select(ir.Compare("==", la, lb), _minus_infinity(), body, "f64"), "f64")
    result = as_ulog(log)
    site = fl.error_site("ulog_sub", span)
    return ir.Checked(result, ir.Compare("<=", lb, la), site)


def _f64(op, a, b):
    return ir.Binary(op, a, b, "f64")


def _f64_const(x: float) -> ir.Const:
    return ir.Const(x, "f64")


def _minus_infinity() -> ir.Const:
    return ir.Const(-math.inf, "f64")
