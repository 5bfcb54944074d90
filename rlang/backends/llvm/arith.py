"""LLVM IR for arithmetic operators and registry functions (rlang/interp/ops.py semantics).

`emit_binary(em, e)` and `emit_builtin(em, e)` take the expression emitter and an
`ir.Binary` / `ir.Builtin` whose operands already have the operation's type.
f32 operations are computed in f64 and rounded once, as the interpreter does (for
`+ - * /` this equals the native f32 operation, and LLVM shrinks it back).
"""
from __future__ import annotations

from llvmlite import ir as ll

from ...errors import InternalError
from .types import F64, I1, I64, llvm_type


def emit_binary(em, e):
    left, right = em.expr(e.left), em.expr(e.right)
    t = e.type
    if t == "bool":
        return {"&": em.builder.and_, "|": em.builder.or_, "^": em.builder.xor}[e.op](left,
                                                                                     right)
    if t in ("f32", "f64"):
        x, y = em.to_f64(left, t), em.to_f64(right, t)
        return em.from_f64(_float_op(em, e.op, x, y), t)
    if t == "fixed" and e.op in ("*", "/"):
        from .systems import fixed_divide, fixed_multiply

        return fixed_multiply(em, left, right) if e.op == "*" else \
            fixed_divide(em, e, left, right)
    return _int_op(em, e, left, right, llvm_type(t))


def _float_op(em, op, x, y):
    b = em.builder
    if op == "+":
        return b.fadd(x, y)
    if op == "-":
        return b.fsub(x, y)
    if op == "*":
        return b.fmul(x, y)
    if op == "/":
        return b.fdiv(x, y)
    if op == "**":
        return em.call_math("pow", [x, y])
    helper = _float_floordiv(em) if op == "//" else _float_mod(em)
    return b.call(helper, [x, y])


def _float_helper(em, name: str, build) -> ll.Function:
    existing = em.out.globals.get(name)
    if existing is not None:
        return existing
    fn = ll.Function(em.out, ll.FunctionType(F64, [F64, F64]), name=name)
    fn.linkage = "internal"
    fn.attributes.add("alwaysinline")
    b = ll.IRBuilder(fn.append_basic_block("entry"))
    build(em, fn, b, *fn.args)
    return fn


def _float_floordiv(em):
    """Python's float `//`; x // 0.0 is x / 0.0 (±inf), 0.0 // 0.0 is nan."""

    def build(em, fn, b, x, y):
        zero = ll.Constant(F64, 0.0)
        fmod = em.runtime("fmod", F64, [F64, F64])
        floor = em.runtime("floor", F64, [F64])
        copysign = em.runtime("copysign", F64, [F64, F64])
        mod = b.call(fmod, [x, y])
        div = b.fdiv(b.fsub(x, mod), y)
        adjust = b.and_(b.fcmp_ordered("!=", mod, zero),
                        b.xor(b.fcmp_ordered("<", y, zero), b.fcmp_ordered("<", mod, zero)))
        div = b.select(adjust, b.fsub(div, ll.Constant(F64, 1.0)), div)
        floored = b.call(floor, [div])
        floored = b.select(b.fcmp_ordered(">", b.fsub(div, floored), ll.Constant(F64, 0.5)),
                           b.fadd(floored, ll.Constant(F64, 1.0)), floored)
        result = b.select(b.fcmp_unordered("!=", div, zero), floored,
                          b.call(copysign, [zero, b.fdiv(x, y)]))
        by_zero = b.select(b.fcmp_ordered("==", x, zero), ll.Constant(F64, float("nan")),
                           b.fdiv(x, y))
        b.ret(b.select(b.fcmp_ordered("==", y, zero), by_zero, result))

    return _float_helper(em, "rev_floordiv_f64", build)


def _float_mod(em):
    """Python's float `%`; nan when y is 0 or x is not finite (rlang/interp/ops.py)."""

    def build(em, fn, b, x, y):
        zero = ll.Constant(F64, 0.0)
        fmod = em.runtime("fmod", F64, [F64, F64])
        copysign = em.runtime("copysign", F64, [F64, F64])
        fabs = em.runtime("fabs", F64, [F64])
        mod = b.call(fmod, [x, y])
        flip = b.xor(b.fcmp_ordered("<", y, zero), b.fcmp_ordered("<", mod, zero))
        nonzero = b.select(flip, b.fadd(mod, y), mod)
        result = b.select(b.fcmp_ordered("!=", mod, zero), nonzero, b.call(copysign, [zero, y]))
        finite = b.fcmp_ordered("<", b.call(fabs, [x]), ll.Constant(F64, float("inf")))
        valid = b.and_(finite, b.fcmp_ordered("!=", y, zero))
        b.ret(b.select(valid, result, ll.Constant(F64, float("nan"))))

    return _float_helper(em, "rev_mod_f64", build)


def _int_op(em, e, a, b_, lltype):
    b = em.builder
    op = e.op
    if op in ("+", "-", "*") and e.site is not None:    # Janus's checked integers
        return checked_int_op(em, op, a, b_, e.site)
    if op == "+":
        return b.add(a, b_)
    if op == "-":
        return b.sub(a, b_)
    if op == "*":
        return b.mul(a, b_)
    if op in ("&", "|", "^"):
        return {"&": b.and_, "|": b.or_, "^": b.xor}[op](a, b_)
    if op in ("<<", ">>"):
        return _shift(em, op, a, b_, lltype)
    if op == "**":
        em.fail_if(b.icmp_signed("<", b_, ll.Constant(lltype, 0)), e.site,
                   [_wide(em, a, lltype), _wide(em, b_, lltype)])
        return b.call(_int_power(em, lltype), [a, b_])
    em.fail_if(b.icmp_signed("==", b_, ll.Constant(lltype, 0)), e.site, [_wide(em, a, lltype)])
    if op == "//":
        return floor_div_int(em, a, b_, lltype)
    return floor_mod_int(em, a, b_, lltype)


def checked_int_op(em, op, a, b_, site):
    """`a op b_` for + - *, failing at `site` where the result overflows (a unit whose
    integers are "unbounded", rlang/frontend/janus/lower.py, Note [Janus integers])."""
    b = em.builder
    method = {"+": b.sadd_with_overflow, "-": b.ssub_with_overflow,
              "*": b.smul_with_overflow}[op]
    pair = method(a, b_)
    em.fail_if(b.extract_value(pair, 1), site, [])
    return b.extract_value(pair, 0)


def _wide(em, value, lltype):
    return em.builder.sext(value, I64) if lltype != I64 else value


def _safe_divisor(em, a, b_, lltype):
    """A divisor that cannot trap (0 and -1 become 1), and whether it was -1."""
    b = em.builder
    minus_one = b.icmp_signed("==", b_, ll.Constant(lltype, -1))
    unsafe = b.or_(minus_one, b.icmp_signed("==", b_, ll.Constant(lltype, 0)))
    return b.select(unsafe, ll.Constant(lltype, 1), b_), minus_one


def floor_div_int(em, a, b_, lltype):
    """Python's `a // b` on wrapping integers (b == 0 gives 0: the check is elsewhere)."""
    b = em.builder
    divisor, minus_one = _safe_divisor(em, a, b_, lltype)
    q = b.sdiv(a, divisor)
    r = b.srem(a, divisor)
    zero = ll.Constant(lltype, 0)
    adjust = b.and_(b.icmp_signed("!=", r, zero),
                    b.xor(b.icmp_signed("<", r, zero), b.icmp_signed("<", divisor, zero)))
    q = b.select(adjust, b.sub(q, ll.Constant(lltype, 1)), q)
    q = b.select(minus_one, b.neg(a), q)
    return b.select(b.icmp_signed("==", b_, zero), zero, q)


def floor_mod_int(em, a, b_, lltype):
    b = em.builder
    divisor, minus_one = _safe_divisor(em, a, b_, lltype)
    r = b.srem(a, divisor)
    zero = ll.Constant(lltype, 0)
    adjust = b.and_(b.icmp_signed("!=", r, zero),
                    b.xor(b.icmp_signed("<", r, zero), b.icmp_signed("<", divisor, zero)))
    r = b.select(adjust, b.add(r, divisor), r)
    return b.select(b.or_(minus_one, b.icmp_signed("==", b_, zero)), zero, r)


def _shift(em, op, a, s, lltype):
    """Python's shifts (a negative count shifts the other way), wrapped to the width."""
    b = em.builder
    width = lltype.width
    s = b.sext(s, I64) if s.type != I64 else s
    negative = b.icmp_signed("<", s, ll.Constant(I64, 0))
    magnitude = b.select(negative, b.neg(s), s)
    left = op == "<<"
    go_left = b.xor(negative, ll.Constant(I1, int(left)))
    too_far = b.icmp_unsigned(">=", magnitude, ll.Constant(I64, width))
    count = b.trunc(magnitude, lltype) if lltype != I64 else magnitude
    shifted_left = b.select(too_far, ll.Constant(lltype, 0), b.shl(a, count))
    clamped = b.select(too_far, ll.Constant(lltype, width - 1), count)
    shifted_right = b.ashr(a, clamped)
    return b.select(go_left, shifted_left, shifted_right)


def _int_power(em, lltype):
    """`rev_ipow_iN(x, n)`: x**n by squaring, wrapping (n ≥ 0)."""
    name = f"rev_ipow_i{lltype.width}"
    existing = em.out.globals.get(name)
    if existing is not None:
        return existing
    fn = ll.Function(em.out, ll.FunctionType(lltype, [lltype, lltype]), name=name)
    fn.linkage = "internal"
    x, n = fn.args
    entry = fn.append_basic_block("entry")
    head = fn.append_basic_block("head")
    body = fn.append_basic_block("body")
    done = fn.append_basic_block("done")
    b = ll.IRBuilder(entry)
    b.branch(head)
    b.position_at_end(head)
    result = b.phi(lltype)
    base = b.phi(lltype)
    exponent = b.phi(lltype)
    result.add_incoming(ll.Constant(lltype, 1), entry)
    base.add_incoming(x, entry)
    exponent.add_incoming(n, entry)
    b.cbranch(b.icmp_signed(">", exponent, ll.Constant(lltype, 0)), body, done)
    b.position_at_end(body)
    odd = b.trunc(exponent, I1)
    new_result = b.select(odd, b.mul(result, base), result)
    new_base = b.mul(base, base)
    new_exponent = b.lshr(exponent, ll.Constant(lltype, 1))
    result.add_incoming(new_result, body)
    base.add_incoming(new_base, body)
    exponent.add_incoming(new_exponent, body)
    b.branch(head)
    b.position_at_end(done)
    b.ret(result)
    return fn


# ---------------------------------------------------------------- built-ins

def emit_builtin(em, e):
    """A registry function of the IR: its code from FLOAT_BUILTINS (computed in f64)
    or INT_BUILTINS, the llvm backend's tables keyed by registry name."""
    args = [em.expr(a) for a in e.args]
    t = e.type
    if t in ("i32", "i64"):
        rule = INT_BUILTINS.get(e.name)
        if rule is None:
            raise InternalError(f"`{e.name}` has no integer form in the llvm backend")
        return rule(em.builder, args, llvm_type(t))
    xs = [em.to_f64(a, arg.type) for a, arg in zip(args, e.args)]
    name = "atan2" if e.name == "atan" and len(xs) == 2 else e.name
    if e.c_library and name in _LIBM_NAMES:
        return em.from_f64(em.call_math(name, xs, c_library=True), t)
    return em.from_f64(FLOAT_BUILTINS[name](em, xs), t)


def _libm(name: str):
    """The C library function of the same meaning."""
    return lambda em, xs: em.call_math(name, xs)


def _f64(value: float):
    return ll.Constant(F64, value)


def _min_max(compare: str):
    def emit(em, xs):
        b, (x, y) = em.builder, xs
        either_nan = b.or_(b.fcmp_unordered("uno", x, x), b.fcmp_unordered("uno", y, y))
        pick = b.fcmp_ordered(compare, x, y)
        return b.select(either_nan, _f64(float("nan")), b.select(pick, x, y))
    return emit


def _sign(em, xs):
    b, x = em.builder, xs[0]
    positive = b.uitofp(b.fcmp_ordered(">", x, _f64(0.0)), F64)
    negative = b.uitofp(b.fcmp_ordered("<", x, _f64(0.0)), F64)
    return b.select(b.fcmp_unordered("uno", x, x), x, b.fsub(positive, negative))


def _cbrt(em, xs):
    """As the registry: copysign(|x| ** (1/3), x)."""
    magnitude = em.call_math("pow", [em.call_math("fabs", xs), _f64(1.0 / 3.0)])
    return em.call_math("copysign", [magnitude, xs[0]])


def _rounding(name: str):
    """floor, ceil, round, + 0.0: −0.0 becomes 0.0, as the interpreter's int → float."""
    return lambda em, xs: em.builder.fadd(em.call_math(name, xs), _f64(0.0))


#: Registry functions that are the C library function of the same name.
_LIBM_NAMES = ("sin", "cos", "tan", "asin", "acos", "atan", "atan2", "sinh", "cosh", "tanh",
               "exp", "log", "log1p", "expm1", "sqrt", "hypot")

#: Registry functions on floats (and fixed, ulog through f64), by registry name.
FLOAT_BUILTINS = {
    **{name: _libm(name) for name in _LIBM_NAMES},
    "abs": _libm("fabs"),
    "abs2": lambda em, xs: em.builder.fmul(xs[0], xs[0]),
    "angle": lambda em, xs: em.call_math("atan2", [_f64(0.0), xs[0]]),
    "real": lambda em, xs: xs[0],
    "conj": lambda em, xs: xs[0],
    "imag": lambda em, xs: _f64(0.0),
    "min": _min_max("<="),
    "max": _min_max(">="),
    "sign": _sign,
    "cbrt": _cbrt,
    "floor": _rounding("floor"),
    "ceil": _rounding("ceil"),
    "round": _rounding("round"),
}


def _int_sign(b, args, lltype):
    x, zero = args[0], ll.Constant(lltype, 0)
    return b.sub(b.zext(b.icmp_signed(">", x, zero), lltype),
                 b.zext(b.icmp_signed("<", x, zero), lltype))


#: Registry functions on integers, by registry name.
INT_BUILTINS = {
    "abs": lambda b, args, t: b.select(b.icmp_signed("<", args[0], ll.Constant(t, 0)),
                                       b.neg(args[0]), args[0]),
    "abs2": lambda b, args, t: b.mul(args[0], args[0]),
    "real": lambda b, args, t: args[0],
    "conj": lambda b, args, t: args[0],
    "imag": lambda b, args, t: ll.Constant(t, 0),
    "min": lambda b, args, t: b.select(b.icmp_signed("<=", args[0], args[1]), *args),
    "max": lambda b, args, t: b.select(b.icmp_signed(">=", args[0], args[1]), *args),
    "sign": _int_sign,
}

