"""Complex `**` and cmath's functions lowered to f64 arithmetic on parts (LANGUAGE.md §3, §7).

The interpreter computes them with CPython (`complex.__pow__`, `cmath.exp`, …); these
are CPython's algorithms written as IR over `Pair`s (rlang/lower/complex.py), so that
compiled results agree with the interpreter's bit for bit where the C library's real
functions do (and the derivative transforms, which differentiate these real formulas,
give the holomorphic derivatives the interpreter's gradient rules use):

- `z ** w` with a constant exponent w that is an integer of at most 100 in size is
  CPython's `c_powi`: repeated squaring (`c_powu`), its reciprocal by Smith's
  division for a negative exponent.  Each product is bound to a complex temporary
  around the statement (`fl.hoist`), since as a tree the squarings would repeat
  their operands 4^k times; where no temporary can be made (conditions, loop
  ranges) the tree is used as it is.
- any other `z ** w` is `_Py_c_pow`: |z|^re(w) · e^(−arg(z)·im(w)) at the angle
  arg(z)·re(w) + im(w)·log|z|.  0 ** w is 0, w = 0 gives 1.  (CPython switches to
  `c_powi` for a run-time exponent that happens to be a small integer; the polar
  formula agrees with it to within a few ulps of |z^w|.)
- a result with an infinite part is nan + nan·i, as the interpreter reports the
  OverflowError of CPython; 0 to a negative or complex power is inf + nan·i (its
  ZeroDivisionError).
- `exp`, `sinh`, `cosh` (and `sin`, `cos` through them: sin z = −i·sinh(iz), cos z =
  cosh(iz)) are cmath's: past |re| > log(DBL_MAX/4) the real factor is e^(x∓1)·e, so
  that it does not overflow before the product does; an infinite part of the result
  is cmath's OverflowError, which the interpreter answers with nan + nan·i.
- `tanh` (and `tan z = −i·tanh(iz)`) is cmath's tanh x·(1 + tan² y)/(1 + tanh² x tan² y)
  form, ±1 + 4 sin y cos y e^(−2|x|)·i past |x| > log(DBL_MAX/4): no overflow.
- `log` is cmath's: log1p near |z| = 1, |z| halved past DBL_MAX/4 and scaled up
  from the subnormals; log 0 is cmath's ValueError: nan + nan·i.
- `sqrt` is cmath's: s = 2·√(|re|/8 + hypot(|re|/8, |im|/8)) (scaled by 2^53 where
  both parts are subnormal), then (s, ±|im|/2s) or (|im|/2s, ±s), the signs those of
  im, its zero's sign included.
- `asin` and `acos` are cmath's (Kahan's) formulas: two square roots, atan2 and
  asinh (glibc's four-branch asinh), and cmath's logarithmic form past DBL_MAX/4.
- Signs of zeros follow cmath's `copysign`s (`_negative` reads the sign of −0.0 as
  1/x < 0).  cmath's tables of special values (infinite and NaN arguments) are not
  reproduced: such arguments give what the finite formulas give.
"""
from __future__ import annotations

import math

from ..ir import nodes as ir
from ..types_rules import BackendUnsupported
from .complex import (Pair, as_pair, complex_divide, read_pair, real_abs, real_call, real_const,
                      real_op, real_select)

#: CPython's c_powi handles constant integer exponents up to this size.
_POWI_LIMIT = 100
#: cmath's CM_LARGE_DOUBLE and CM_LOG_LARGE_DOUBLE.
_LARGE = 1.7976931348623157e308 / 4.0
_LOG_LARGE = math.log(_LARGE)
#: DBL_MIN, the least normal double.
_TINY = 2.2250738585072014e-308


def complex_power(fl, node, left, right) -> Pair:
    """`left ** right` where one side is complex (`fl`: the function lowering)."""
    z = as_pair(left, "`**`", node.span)
    w = as_pair(right, "`**`", node.span)
    n = _small_integer(w)
    if n is not None:
        return _integer_power(fl, z, n)
    return _general_power(z, w)


def _small_integer(w: Pair) -> int | None:
    """The exponent as an int when it is a constant integer of at most 100 in size."""
    if not (isinstance(w.re, ir.Const) and isinstance(w.im, ir.Const)):
        return None
    re, im = float(w.re.value), float(w.im.value)
    if im == 0.0 and math.isfinite(re) and re == math.floor(re) and abs(re) <= _POWI_LIMIT:
        return int(re)
    return None


def _integer_power(fl, z: Pair, n: int) -> Pair:
    """CPython's c_powi(z, n)."""
    power = _unsigned_power(fl, z, abs(n))
    if n > 0:
        return _overflow_to_nan(power)
    # 1 / power; a zero power is CPython's ZeroDivisionError: inf + nan·i
    quotient = _overflow_to_nan(complex_divide(Pair(real_const(1.0), real_const(0.0)), power))
    zero = _both_zero(power)
    return Pair(real_select(zero, real_const(math.inf), quotient.re), real_select(zero, real_const(math.nan), quotient.im))


def _unsigned_power(fl, z: Pair, n: int) -> Pair:
    """CPython's c_powu: r = 1, p = z; for each bit of n from the lowest, r = r·p
    where the bit is set, then p = p·p (the last squaring, never used, is left out)."""
    r, p, mask = Pair(real_const(1.0), real_const(0.0)), z, 1
    while n >= mask:
        if n & mask:
            r = _hoisted(fl, _product(r, p))
        mask <<= 1
        if n >= mask:
            p = _hoisted(fl, _product(p, p))
    return r


def _general_power(z: Pair, w: Pair) -> Pair:
    """CPython's _Py_c_pow(z, w), with the interpreter's answers for its errors."""
    vabs = real_call("hypot", z.re, z.im)
    length = real_op("**", vabs, w.re)
    angle = real_call("atan", z.im, z.re)
    phase = real_op("*", angle, w.re)
    if not (isinstance(w.im, ir.Const) and w.im.value == 0.0):
        # CPython skips this where im(w) is 0; computed always, it changes nothing
        # there (÷ e^0, + 0) and keeps the derivative along im(w)
        length = real_op("/", length, real_call("exp", real_op("*", angle, w.im)))
        phase = real_op("+", phase, real_op("*", w.im, real_call("log", vabs)))
    polar = _overflow_to_nan(Pair(real_op("*", length, real_call("cos", phase)),
                                  real_op("*", length, real_call("sin", phase))))
    w_zero = _both_zero(w)
    # 0 ** w: 1 for w = 0, inf + nan·i (ZeroDivisionError) for im(w) ≠ 0 or re(w) < 0
    undefined = ir.Logic("||", ir.Compare("!=", w.im, real_const(0.0)), ir.Compare("<", w.re, real_const(0.0)))
    at_zero = Pair(real_select(w_zero, real_const(1.0), real_select(undefined, real_const(math.inf), real_const(0.0))),
                   real_select(w_zero, real_const(0.0), real_select(undefined, real_const(math.nan), real_const(0.0))))
    # z ** 0 is 1 even where the polar form is not (an infinite or NaN z)
    one = ir.Logic("&&", w_zero, ir.Unary("!", _finite(z), "bool"))
    z_zero = _both_zero(z)
    return Pair(real_select(z_zero, at_zero.re, real_select(one, real_const(1.0), polar.re)),
                real_select(z_zero, at_zero.im, real_select(one, real_const(0.0), polar.im)))


def _exp(z: Pair) -> Pair:
    """cmath.exp."""
    large = ir.Compare(">", z.re, real_const(_LOG_LARGE))
    scale = real_call("exp", real_select(large, real_op("-", z.re, real_const(1.0)), z.re))
    cos, sin = real_call("cos", z.im), real_call("sin", z.im)
    return _overflow_to_nan(Pair(
        real_select(large, real_op("*", real_op("*", scale, cos), real_const(math.e)), real_op("*", scale, cos)),
        real_select(large, real_op("*", real_op("*", scale, sin), real_const(math.e)), real_op("*", scale, sin))))


def _hyperbolic(name: str, z: Pair) -> Pair:
    """cmath.sinh or cmath.cosh: (cos y · f(x), sin y · g(x)) with (f, g) = (sinh,
    cosh) or (cosh, sinh), at x ∓ 1 times e past |x| > log(DBL_MAX/4)."""
    large = ir.Compare(">", real_abs(z.re), real_const(_LOG_LARGE))
    x = real_select(large, real_select(ir.Compare(">", z.re, real_const(0.0)), real_op("-", z.re, real_const(1.0)),
                               real_op("+", z.re, real_const(1.0))), z.re)
    first, second = ("sinh", "cosh") if name == "sinh" else ("cosh", "sinh")
    re = real_op("*", real_call("cos", z.im), real_call(first, x))
    im = real_op("*", real_call("sin", z.im), real_call(second, x))
    return _overflow_to_nan(Pair(real_select(large, real_op("*", re, real_const(math.e)), re),
                                 real_select(large, real_op("*", im, real_const(math.e)), im)))


def _tanh(z: Pair) -> Pair:
    """cmath.tanh."""
    tx, ty = real_call("tanh", z.re), real_call("tan", z.im)
    cx = real_op("/", real_const(1.0), real_call("cosh", z.re))
    txty = real_op("*", tx, ty)
    denominator = real_op("+", real_const(1.0), real_op("*", txty, txty))
    re = real_op("/", real_op("*", tx, real_op("+", real_const(1.0), real_op("*", ty, ty))), denominator)
    im = real_op("*", real_op("*", real_op("/", ty, denominator), cx), cx)
    large = ir.Compare(">", real_abs(z.re), real_const(_LOG_LARGE))
    large_im = real_op("*", real_op("*", real_op("*", real_const(4.0), real_call("sin", z.im)), real_call("cos", z.im)),
                  real_call("exp", real_op("*", real_const(-2.0), real_abs(z.re))))
    return Pair(real_select(large, _copysign(real_const(1.0), z.re), re), real_select(large, large_im, im))


def _times_i(z: Pair) -> Pair:
    """i·z."""
    return Pair(ir.Unary("-", z.im, "f64"), z.re)


def _times_minus_i(z: Pair) -> Pair:
    """−i·z."""
    return Pair(z.im, ir.Unary("-", z.re, "f64"))


def _log(z: Pair) -> Pair:
    """cmath.log (one argument)."""
    ax, ay = real_abs(z.re), real_abs(z.im)
    h = real_call("hypot", ax, ay)
    near_one = ir.Logic("&&", ir.Compare(">=", h, real_const(0.71)), ir.Compare("<=", h, real_const(1.73)))
    big, small = real_call("max", ax, ay), real_call("min", ax, ay)
    careful = real_op("/", real_call("log1p", real_op("+", real_op("*", real_op("-", big, real_const(1.0)),
                                                  real_op("+", big, real_const(1.0))),
                                           real_op("*", small, small))), real_const(2.0))
    moderate = real_select(near_one, careful, real_call("log", h))
    large = real_op("+", real_call("log", real_call("hypot", real_op("/", ax, real_const(2.0)), real_op("/", ay, real_const(2.0)))),
               real_const(math.log(2.0)))
    scale = real_const(2.0 ** 53)
    subnormal = real_op("-", real_call("log", real_call("hypot", real_op("*", ax, scale), real_op("*", ay, scale))),
                   real_const(53 * math.log(2.0)))
    is_large = ir.Logic("||", ir.Compare(">", ax, real_const(_LARGE)), ir.Compare(">", ay, real_const(_LARGE)))
    is_tiny = ir.Logic("&&", ir.Compare("<", ax, real_const(_TINY)), ir.Compare("<", ay, real_const(_TINY)))
    re = real_select(is_large, large, real_select(is_tiny, subnormal, moderate))
    zero = _both_zero(z)            # cmath's ValueError: nan + nan·i
    return Pair(real_select(zero, real_const(math.nan), re),
                real_select(zero, real_const(math.nan), real_call("atan", z.im, z.re)))


def _sqrt(z: Pair) -> Pair:
    """cmath.sqrt."""
    ax, ay = real_abs(z.re), real_abs(z.im)
    eighth = real_op("/", ax, real_const(8.0))
    s = real_op("*", real_const(2.0), real_call("sqrt", real_op("+", eighth, real_call("hypot", eighth,
                                                              real_op("/", ay, real_const(8.0))))))
    up = real_const(2.0 ** 53)               # both parts subnormal: scaled up, then down
    scaled = real_op("*", ax, up)
    tiny_s = real_op("*", real_call("sqrt", real_op("+", scaled, real_call("hypot", scaled, real_op("*", ay, up)))),
                real_const(2.0 ** -27))
    is_tiny = ir.Logic("&&", ir.Compare("<", ax, real_const(_TINY)), ir.Compare("<", ay, real_const(_TINY)))
    s = real_select(is_tiny, tiny_s, s)
    d = real_op("/", ay, real_op("*", real_const(2.0), s))
    positive = ir.Compare(">=", z.re, real_const(0.0))
    re = real_select(positive, s, d)
    im = _copysign(real_select(positive, d, s), z.im)
    zero = _both_zero(z)
    return Pair(real_select(zero, real_const(0.0), re), real_select(zero, z.im, im))


def complex_arcsine(name: str, z: Pair) -> Pair:
    """cmath.asin (= −i·asinh(i·z)) or cmath.acos of z."""
    if name == "asin":
        return _times_minus_i(_arcsinh(_times_i(z)))
    return _arccosine(z)


def _arcsinh(z: Pair) -> Pair:
    """cmath.asinh."""
    s1 = _sqrt(Pair(real_op("+", real_const(1.0), z.im), ir.Unary("-", z.re, "f64")))
    s2 = _sqrt(Pair(real_op("-", real_const(1.0), z.im), z.re))
    re = _real_asinh(real_op("-", real_op("*", s1.re, s2.im), real_op("*", s2.re, s1.im)))
    im = real_call("atan", z.im, real_op("-", real_op("*", s1.re, s2.re), real_op("*", s1.im, s2.im)))
    magnitude = _large_magnitude(z)
    large_re = real_select(ir.Compare(">=", z.im, real_const(0.0)), _copysign(magnitude, z.re),
                       ir.Unary("-", _copysign(magnitude, ir.Unary("-", z.re, "f64")), "f64"))
    large_im = real_call("atan", z.im, real_abs(z.re))
    large = _is_large(z)
    return Pair(real_select(large, large_re, re), real_select(large, large_im, im))


def _arccosine(z: Pair) -> Pair:
    """cmath.acos."""
    s1 = _sqrt(Pair(real_op("-", real_const(1.0), z.re), ir.Unary("-", z.im, "f64")))
    s2 = _sqrt(Pair(real_op("+", real_const(1.0), z.re), z.im))
    re = real_op("*", real_const(2.0), real_call("atan", s1.re, s2.re))
    im = _real_asinh(real_op("-", real_op("*", s2.re, s1.im), real_op("*", s2.im, s1.re)))
    magnitude = _large_magnitude(z)
    large_re = real_call("atan", real_abs(z.im), z.re)
    large_im = real_select(ir.Compare("<", z.re, real_const(0.0)),
                       ir.Unary("-", _copysign(magnitude, z.im), "f64"),
                       _copysign(magnitude, ir.Unary("-", z.im, "f64")))
    large = _is_large(z)
    return Pair(real_select(large, large_re, re), real_select(large, large_im, im))


def _real_asinh(x):
    """asinh(x) as glibc computes it: x itself below 2^-28; log|x| + log 2 from
    2^28·(1 + 2^-20) on; log(2|x| + 1/(√(x² + 1) + |x|)) from 2·(1 + 2^-20) on; else
    log1p(|x| + x²/(1 + √(1 + x²))); with the sign of x.  (glibc compares the high
    32 bits of |x| with those of 2^28 and 2, hence the 2^-20.)"""
    a = real_abs(x)
    square = real_op("*", a, a)
    small = real_call("log1p", real_op("+", a, real_op("/", square, real_op("+", real_const(1.0), real_call(
        "sqrt", real_op("+", real_const(1.0), square))))))
    moderate = real_call("log", real_op("+", real_op("*", real_const(2.0), a), real_op("/", real_const(1.0), real_op(
        "+", real_call("sqrt", real_op("+", square, real_const(1.0))), a))))
    huge = real_op("+", real_call("log", a), real_const(math.log(2.0)))
    above = 1.0 + 2.0 ** -20
    magnitude = real_select(ir.Compare(">=", a, real_const(2.0 ** 28 * above)), huge,
                        real_select(ir.Compare(">=", a, real_const(2.0 * above)), moderate, small))
    return real_select(ir.Compare("<", a, real_const(2.0 ** -28)), x, _copysign(magnitude, x))


def _large_magnitude(z: Pair):
    """log|z| for cmath's large arguments: log(hypot(re/2, im/2)) + 2·log 2."""
    return real_op("+", real_call("log", real_call("hypot", real_op("/", z.re, real_const(2.0)), real_op("/", z.im, real_const(2.0)))),
              real_const(math.log(2.0) * 2.0))


def _is_large(z: Pair):
    return ir.Logic("||", ir.Compare(">", real_abs(z.re), real_const(_LARGE)),
                    ir.Compare(">", real_abs(z.im), real_const(_LARGE)))


#: cmath's functions of one complex argument, by name (Pair → Pair).
COMPLEX_FUNCTIONS = {
    "exp": _exp,
    "log": _log,
    "sqrt": _sqrt,
    "sinh": lambda z: _hyperbolic("sinh", z),
    "cosh": lambda z: _hyperbolic("cosh", z),
    "sin": lambda z: _times_minus_i(_hyperbolic("sinh", _times_i(z))),
    "cos": lambda z: _hyperbolic("cosh", _times_i(z)),
    "tanh": _tanh,
    "tan": lambda z: _times_minus_i(_tanh(_times_i(z))),
    "asin": lambda z: complex_arcsine("asin", z),
    "acos": lambda z: complex_arcsine("acos", z),
}


# ------------------------------------------------------------------ helpers

def _product(a: Pair, b: Pair) -> Pair:
    """CPython's _Py_c_prod."""
    return Pair(real_op("-", real_op("*", a.re, b.re), real_op("*", a.im, b.im)),
                real_op("+", real_op("*", a.re, b.im), real_op("*", a.im, b.re)))


def _hoisted(fl, value: Pair) -> Pair:
    """`value` read from a temporary around the statement, where one can be made."""
    var = fl.hoist(ir.ComplexValue(value.re, value.im))
    return value if var is None else read_pair(var)


def _overflow_to_nan(z: Pair) -> Pair:
    """nan + nan·i where a part is infinite (the interpreter's answer to CPython's
    OverflowError), else z."""
    infinite = ir.Logic("||", _is_infinite(z.re), _is_infinite(z.im))
    return Pair(real_select(infinite, real_const(math.nan), z.re), real_select(infinite, real_const(math.nan), z.im))


def _is_infinite(x):
    return ir.Compare("==", real_abs(x), real_const(math.inf))


def _finite(z: Pair):
    """Both parts finite (not infinite, not NaN)."""
    return ir.Logic("&&", ir.Compare("<", real_abs(z.re), real_const(math.inf)),
                    ir.Compare("<", real_abs(z.im), real_const(math.inf)))


def _both_zero(z: Pair):
    return ir.Logic("&&", ir.Compare("==", z.re, real_const(0.0)), ir.Compare("==", z.im, real_const(0.0)))


def _copysign(magnitude, sign):
    """C's copysign: |magnitude| with the sign of `sign`, −0.0 counting as negative."""
    a = real_abs(magnitude)
    return real_select(_negative(sign), ir.Unary("-", a, "f64"), a)


def _negative(x):
    """Whether x's sign is negative, −0.0 included (1/−0.0 is −inf); false for NaN."""
    return ir.Logic("||", ir.Compare("<", x, real_const(0.0)),
                    ir.Compare("<", real_op("/", real_const(1.0), x), real_const(0.0)))


def complex_builtin(name: str, z: Pair, span):
    """A registry function of one complex argument: a real IR expression (abs, abs2,
    angle, real, imag) or a Pair (cmath's functions: lower_complex_functions)."""
    if name == "abs":
        return real_call("hypot", z.re, z.im)
    if name == "abs2":
        return real_op("+", real_op("*", z.re, z.re), real_op("*", z.im, z.im))
    if name == "angle":
        return real_call("atan", z.im, z.re)
    if name == "real":
        return z.re
    if name == "imag":
        return z.im
    if name == "conj":
        return Pair(z.re, ir.Unary("-", z.im, "f64"))
    function = COMPLEX_FUNCTIONS.get(name)
    if function is None:
        raise BackendUnsupported(f"`{name}` of a complex number in compiled code", span)
    return function(z)
