"""LLVM IR for conversions `T(x)` (rlang/interp/scalar_functions.py semantics).

Widening conversions are plain casts.  A float becomes an integer only when it is
integral and in range, an integer becomes i32 only in range, and a number becomes a
bool only when it is 0 or 1; otherwise the conversion's site fails with the value.
An integer becomes an f32 through f64, rounding as the interpreter does.
"""
from __future__ import annotations

from llvmlite import ir as ll

from .types import F32, F64, I32, I64
from .systems import convert_from_system, convert_to_system

_INT_RANGE = {"i64": (-2.0 ** 63, 2.0 ** 63), "i32": (-2.0 ** 31, 2.0 ** 31)}


def emit_convert(em, e):
    source, target = e.operand.type, e.type
    x = em.expr(e.operand)
    b = em.builder
    if target in ("fixed", "ulog"):
        return convert_to_system(em, e, x, source)
    if source in ("fixed", "ulog"):
        return convert_from_system(em, x, source, target)
    if target == "f64":
        return em.to_f64(x, source)
    if target == "f32":
        return b.fptrunc(em.to_f64(x, source), F32) if source != "f64" else b.fptrunc(x, F32)
    if target == "bool":
        return _to_bool(em, e, x, source)
    lltype = I64 if target == "i64" else I32
    if source in ("f32", "f64"):
        value = em.to_f64(x, source)
        low, high = _INT_RANGE[target]
        integral = b.fcmp_ordered("==", em.call_math("floor", [value]), value)
        in_range = b.and_(b.fcmp_ordered(">=", value, ll.Constant(F64, low)),
                          b.fcmp_ordered("<", value, ll.Constant(F64, high)))
        em.fail_if(b.not_(b.and_(integral, in_range)), e.site, [value])
        safe = b.select(b.and_(integral, in_range), value, ll.Constant(F64, 0.0))
        return b.fptosi(safe, lltype)
    if source == "bool":
        return b.zext(x, lltype)
    if source == "i32":
        return b.sext(x, lltype)
    if target == "i32":             # from i64: in range
        fits = b.icmp_signed("==", b.sext(b.trunc(x, I32), I64), x)
        em.fail_if(b.not_(fits), e.site, [x])
        return b.trunc(x, I32)
    return x


def _to_bool(em, e, x, source):
    b = em.builder
    if source == "bool":
        return x
    if source in ("f32", "f64"):
        value = em.to_f64(x, source)
        zero = b.fcmp_ordered("==", value, ll.Constant(F64, 0.0))
        one = b.fcmp_ordered("==", value, ll.Constant(F64, 1.0))
        em.fail_if(b.not_(b.or_(zero, one)), e.site, [value])
        return one
    wide = b.sext(x, I64) if source == "i32" else x
    zero = b.icmp_signed("==", wide, ll.Constant(I64, 0))
    one = b.icmp_signed("==", wide, ll.Constant(I64, 1))
    em.fail_if(b.not_(b.or_(zero, one)), e.site, [wide])
    return b.icmp_signed("==", wide, ll.Constant(I64, 1))



