"""Complex `**`, `asin` and `acos` lowered to f64 arithmetic on parts (LANGUAGE.md §3, §7).

The interpreter computes them with CPython (`complex.__pow__`, `cmath.asin`,
`cmath.acos`); these are CPython's algorithms written as IR over `Pair`s
(rlang/lower_complex.py), so that compiled results agree with the interpreter's
(and the derivative transforms, which differentiate these real formulas, give the
holomorphic derivatives the interpreter's gradient rules use):

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
- `asin` and `acos` are cmath's (Kahan's) formulas: two square roots (cmath's, as
  `sqrt`), atan2 and asinh, where asinh(x) = log1p(|x| + x²/(1 + √(1 + x²))) with
  x's sign, and log|x| + log 2 past 2^28 (as glibc computes it).  Arguments past
  DBL_MAX/4 use cmath's logarithmic form; cmath's table of special values (infinite
  and NaN arguments) is not reproduced.
"""
from __future__ import annotations

import math

from . import ir
from .lower_complex import (Pair, _abs, _c, _call, _divide, _f, _select, _sqrt,
                            as_pair, read_pair)

#: CPython's c_powi handles constant integer exponents up to this size.
_POWI_LIMIT = 100
#: cmath's CM_LARGE_DOUBLE.
_LARGE = 1.7976931348623157e308 / 4.0


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
    quotient = _overflow_to_nan(_divide(Pair(_c(1.0), _c(0.0)), power))
    zero = _both_zero(power)
    return Pair(_select(zero, _c(math.inf), quotient.re), _select(zero, _c(math.nan), quotient.im))


def _unsigned_power(fl, z: Pair, n: int) -> Pair:
    """CPython's c_powu: r = 1, p = z; for each bit of n from the lowest, r = r·p
    where the bit is set, then p = p·p (the last squaring, never used, is left out)."""
    r, p, mask = Pair(_c(1.0), _c(0.0)), z, 1
    while n >= mask:
        if n & mask:
            r = _hoisted(fl, _product(r, p))
        mask <<= 1
        if n >= mask:
            p = _hoisted(fl, _product(p, p))
    return r


def _general_power(z: Pair, w: Pair) -> Pair:
    """CPython's _Py_c_pow(z, w), with the interpreter's answers for its errors."""
    vabs = _call("hypot", z.re, z.im)
    length = _f("**", vabs, w.re)
    angle = _call("atan", z.im, z.re)
    phase = _f("*", angle, w.re)
    if not (isinstance(w.im, ir.Const) and w.im.value == 0.0):
        # CPython skips this where im(w) is 0; computed always, it changes nothing
        # there (÷ e^0, + 0) and keeps the derivative along im(w)
        length = _f("/", length, _call("exp", _f("*", angle, w.im)))
        phase = _f("+", phase, _f("*", w.im, _call("log", vabs)))
    polar = _overflow_to_nan(Pair(_f("*", length, _call("cos", phase)),
                                  _f("*", length, _call("sin", phase))))
    w_zero = _both_zero(w)
    # 0 ** w: 1 for w = 0, inf + nan·i (ZeroDivisionError) for im(w) ≠ 0 or re(w) < 0
    undefined = ir.Logic("||", ir.Compare("!=", w.im, _c(0.0)), ir.Compare("<", w.re, _c(0.0)))
    at_zero = Pair(_select(w_zero, _c(1.0), _select(undefined, _c(math.inf), _c(0.0))),
                   _select(w_zero, _c(0.0), _select(undefined, _c(math.nan), _c(0.0))))
    # z ** 0 is 1 even where the polar form is not (an infinite or NaN z)
    one = ir.Logic("&&", w_zero, ir.Unary("!", _finite(z), "bool"))
    z_zero = _both_zero(z)
    return Pair(_select(z_zero, at_zero.re, _select(one, _c(1.0), polar.re)),
                _select(z_zero, at_zero.im, _select(one, _c(0.0), polar.im)))


def complex_arcsine(name: str, z: Pair) -> Pair:
    """cmath.asin (= −i·asinh(i·z)) or cmath.acos of z."""
    if name == "asin":
        s = _arcsinh(Pair(ir.Unary("-", z.im, "f64"), z.re))
        return Pair(s.im, ir.Unary("-", s.re, "f64"))
    return _arccosine(z)


def _arcsinh(z: Pair) -> Pair:
    """cmath.asinh."""
    s1 = _sqrt(Pair(_f("+", _c(1.0), z.im), ir.Unary("-", z.re, "f64")))
    s2 = _sqrt(Pair(_f("-", _c(1.0), z.im), z.re))
    re = _real_asinh(_f("-", _f("*", s1.re, s2.im), _f("*", s2.re, s1.im)))
    im = _call("atan", z.im, _f("-", _f("*", s1.re, s2.re), _f("*", s1.im, s2.im)))
    magnitude = _large_magnitude(z)
    large_re = _select(ir.Compare(">=", z.im, _c(0.0)), _copysign(magnitude, z.re),
                       ir.Unary("-", _copysign(magnitude, ir.Unary("-", z.re, "f64")), "f64"))
    large_im = _call("atan", z.im, _abs(z.re))
    large = _is_large(z)
    return Pair(_select(large, large_re, re), _select(large, large_im, im))


def _arccosine(z: Pair) -> Pair:
    """cmath.acos."""
    s1 = _sqrt(Pair(_f("-", _c(1.0), z.re), ir.Unary("-", z.im, "f64")))
    s2 = _sqrt(Pair(_f("+", _c(1.0), z.re), z.im))
    re = _f("*", _c(2.0), _call("atan", s1.re, s2.re))
    im = _real_asinh(_f("-", _f("*", s2.re, s1.im), _f("*", s2.im, s1.re)))
    magnitude = _large_magnitude(z)
    large_re = _call("atan", _abs(z.im), z.re)
    large_im = _select(ir.Compare("<", z.re, _c(0.0)),
                       ir.Unary("-", _copysign(magnitude, z.im), "f64"),
                       _copysign(magnitude, ir.Unary("-", z.im, "f64")))
    large = _is_large(z)
    return Pair(_select(large, large_re, re), _select(large, large_im, im))


def _real_asinh(x):
    """asinh(x) as glibc computes it: log|x| + log 2 past 2^28, else
    log1p(|x| + x²/(1 + √(1 + x²))); with the sign of x."""
    a = _abs(x)
    square = _f("*", a, a)
    moderate = _call("log1p", _f("+", a, _f("/", square, _f("+", _c(1.0), _call(
        "sqrt", _f("+", _c(1.0), square))))))
    huge = _f("+", _call("log", a), _c(math.log(2.0)))
    return _copysign(_select(ir.Compare(">", a, _c(2.0 ** 28)), huge, moderate), x)


def _large_magnitude(z: Pair):
    """log|z| for cmath's large arguments: log(hypot(re/2, im/2)) + 2·log 2."""
    return _f("+", _call("log", _call("hypot", _f("*", z.re, _c(0.5)), _f("*", z.im, _c(0.5)))),
              _c(2.0 * math.log(2.0)))


def _is_large(z: Pair):
    return ir.Logic("||", ir.Compare(">", _abs(z.re), _c(_LARGE)),
                    ir.Compare(">", _abs(z.im), _c(_LARGE)))


# ------------------------------------------------------------------ helpers

def _product(a: Pair, b: Pair) -> Pair:
    """CPython's _Py_c_prod."""
    return Pair(_f("-", _f("*", a.re, b.re), _f("*", a.im, b.im)),
                _f("+", _f("*", a.re, b.im), _f("*", a.im, b.re)))


def _hoisted(fl, value: Pair) -> Pair:
    """`value` read from a temporary around the statement, where one can be made."""
    var = fl.hoist(ir.ComplexValue(value.re, value.im))
    return value if var is None else read_pair(var)


def _overflow_to_nan(z: Pair) -> Pair:
    """nan + nan·i where a part is infinite (the interpreter's answer to CPython's
    OverflowError), else z."""
    infinite = ir.Logic("||", _is_infinite(z.re), _is_infinite(z.im))
    return Pair(_select(infinite, _c(math.nan), z.re), _select(infinite, _c(math.nan), z.im))


def _is_infinite(x):
    return ir.Compare("==", _abs(x), _c(math.inf))


def _finite(z: Pair):
    """Both parts finite (not infinite, not NaN)."""
    return ir.Logic("&&", ir.Compare("<", _abs(z.re), _c(math.inf)),
                    ir.Compare("<", _abs(z.im), _c(math.inf)))


def _both_zero(z: Pair):
    return ir.Logic("&&", ir.Compare("==", z.re, _c(0.0)), ir.Compare("==", z.im, _c(0.0)))


def _copysign(magnitude, sign):
    """|magnitude| with the sign of `sign` (a zero counts as positive)."""
    a = _abs(magnitude)
    return _select(ir.Compare("<", sign, _c(0.0)), ir.Unary("-", a, "f64"), a)
