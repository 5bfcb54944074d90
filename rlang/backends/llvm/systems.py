"""LLVM IR for the number systems fixed and ulog (rlang/numbers.py semantics).

A fixed is held as its raw i64 (value · 2^43) and a ulog as the double of its
logarithm (Note [Number systems in the IR], rlang/ir/nodes.py).  The lowering has already
expanded ulog arithmetic into f64 operations; what is left here is:

- `fixed_multiply` and `fixed_divide`: the exact rational result rounded to the
  nearest multiple of 2^-43, ties to even, computed in 128-bit integers (Note
  [Fixed-point rounding]);
- `convert_to_system` and `convert_from_system`: conversions between real types
  and fixed or ulog, with the interpreter's range and sign checks.
"""
from __future__ import annotations

from llvmlite import ir as ll

from ...numbers import FIXED_LIMIT, FRACTION_BITS
from .types import F32, F64, I1, I64

I128 = ll.IntType(128)
_SCALE = float(1 << FRACTION_BITS)


def fixed_multiply(em, a, b_):
    """round(a · b / 2^43) on raw values, ties to even, wrapping like i64."""
    b = em.builder
    product = b.mul(b.sext(a, I128), b.sext(b_, I128))
    return b.trunc(_round_shifted(em, product), I64)


def _round_shifted(em, value):
    """value / 2^43 rounded to nearest, ties to even (value an i128)."""
    b = em.builder
    quotient = b.ashr(value, ll.Constant(I128, FRACTION_BITS))
    remainder = b.and_(value, ll.Constant(I128, (1 << FRACTION_BITS) - 1))
    half = ll.Constant(I128, 1 << (FRACTION_BITS - 1))
    odd = b.trunc(quotient, I1)
    up = b.or_(b.icmp_unsigned(">", remainder, half),
               b.and_(b.icmp_unsigned("==", remainder, half), odd))
    return b.add(quotient, b.zext(up, I128))


def fixed_divide(em, e, a, b_):
    """round(a · 2^43 / b) on raw values, ties to even; b = 0 fails at the site (and
    gives 0 where the check is off, never a trap)."""
    b = em.builder
    zero = ll.Constant(I64, 0)
    by_zero = b.icmp_signed("==", b_, zero)
    em.fail_if(by_zero, e.site, [a])
    divisor = b.sext(b.select(by_zero, ll.Constant(I64, 1), b_), I128)
    numerator = b.shl(b.sext(a, I128), ll.Constant(I128, FRACTION_BITS))
    negative = b.icmp_signed("<", divisor, ll.Constant(I128, 0))
    numerator = b.select(negative, b.neg(numerator), numerator)
    divisor = b.select(negative, b.neg(divisor), divisor)
    quotient = b.sdiv(numerator, divisor)
    remainder = b.srem(numerator, divisor)
    below = b.icmp_signed("<", remainder, ll.Constant(I128, 0))     # floor it
    quotient = b.select(below, b.sub(quotient, ll.Constant(I128, 1)), quotient)
    remainder = b.select(below, b.add(remainder, divisor), remainder)
    twice = b.shl(remainder, ll.Constant(I128, 1))
    odd = b.trunc(quotient, I1)
    up = b.or_(b.icmp_signed(">", twice, divisor),
               b.and_(b.icmp_signed("==", twice, divisor), odd))
    result = b.trunc(b.add(quotient, b.zext(up, I128)), I64)
    return b.select(by_zero, zero, result)


def convert_from_system(em, x, source: str, target: str):
    """A fixed or ulog value as an f64 or f32 (exact for fixed below 2^10)."""
    b = em.builder
    if source == "fixed":
        value = b.fmul(b.sitofp(x, F64), ll.Constant(F64, 1.0 / _SCALE))
    else:
        value = em.call_math("exp", [x])
    return b.fptrunc(value, F32) if target == "f32" else value


def convert_to_system(em, e, x, source: str):
    """`fixed(x)` or `ulog(x)` of a bool, an integer or a float (already a real: the
    lowering converts between the systems through f64)."""
    b = em.builder
    if e.type == "fixed" and source in ("bool", "i32", "i64"):
        wide = b.zext(x, I64) if source == "bool" else b.sext(x, I64) if source == "i32" else x
        inside = b.and_(b.icmp_signed(">=", wide, ll.Constant(I64, -FIXED_LIMIT)),
                        b.icmp_signed("<", wide, ll.Constant(I64, FIXED_LIMIT)))
        em.fail_if(b.not_(inside), e.site, [wide])
        return b.shl(wide, ll.Constant(I64, FRACTION_BITS))
    value = em.to_f64(x, source)
    if e.type == "ulog":                # the failure shows an integer as one
        shown = value if source in ("f32", "f64") else \
            b.sext(x, I64) if source == "i32" else b.zext(x, I64) if source == "bool" else x
        em.fail_if(b.not_(b.fcmp_ordered(">=", value, ll.Constant(F64, 0.0))), e.site, [shown])
        return em.call_math("log", [value])
    inside = b.and_(b.fcmp_ordered(">=", value, ll.Constant(F64, -float(FIXED_LIMIT))),
                    b.fcmp_ordered("<", value, ll.Constant(F64, float(FIXED_LIMIT))))
    em.fail_if(b.not_(inside), e.site, [value])
    scaled = em.call_math("round", [b.fmul(b.select(inside, value, ll.Constant(F64, 0.0)),
                                           ll.Constant(F64, _SCALE))])
    # round(x · 2^43) can reach 2^63 just below the limit: it wraps, as Fixed(raw) does
    top = b.fcmp_ordered(">=", scaled, ll.Constant(F64, 2.0 ** 63))
    raw = b.fptosi(b.select(top, ll.Constant(F64, 0.0), scaled), I64)
    return b.select(top, ll.Constant(I64, -(1 << 63)), raw)
