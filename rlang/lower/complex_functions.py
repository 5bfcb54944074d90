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
  their operands 4^k times; in conditions and loop ranges, which are evaluated
  more than once, the temporary is a Let inside the expression (Note [Lets in
  conditions], rlang/ir/nodes.py); only in printed values is the tree used as it is.
- any other `z ** w` is `_Py_c_pow`: |z|^re(w) · e^(−arg(z)·im(w)) at the angle
  arg(z)·re(w) + im(w)·log|z|.  0 ** w is 0, w = 0 gives 1.  (CPython switches to
  `c_powi` for a run-time exponent that happens to be a small integer; the polar
  formula agrees with it to within a few ulps of |z^w|.)
- a result with an infinite part is nan + nan·i, as the interpreter reports the
  OverflowError of CPython; 0 to a negative or complex power is inf + nan·i (its
  ZeroDivisionError).
- `exp`, `sinh`, `cosh` (and `sin`, `cos` through them: sin z = −i·sinh(iz), cos z =
  cosh(iz)) are cmath's: past |re| > log(DBL_MAX/4) the real factor is e^(x∓1)·e, so
  that it does not overflow before the product does; where a part of that is
  infinite (cmath's OverflowError) the value is glibc's scaled form, as C99 and
  NumPy give it (rlang/complex_math.py, Note [Complex overflow as C99 says]).
- `tanh` (and `tan z = −i·tanh(iz)`) is cmath's tanh x·(1 + tan² y)/(1 + tanh² x tan² y)
  form, ±1 + 4 sin y cos y e^(−2|x|)·i past |x| > log(DBL_MAX/4): no overflow.
- `log` is cmath's: log1p near |z| = 1, |z| halved past DBL_MAX/4 and scaled up
  from the subnormals; log 0 (cmath's ValueError) is C99's −inf + atan2(im, re)·i.
- `sqrt` is cmath's: s = 2·√(|re|/8 + hypot(|re|/8, |im|/8)) (scaled by 2^53 where
  both parts are subnormal), then (s, ±|im|/2s) or (|im|/2s, ±s), the signs those of
  im, its zero's sign included.
- `asin` and `acos` are cmath's (Kahan's) formulas: two square roots, atan2 and
  asinh (glibc's four-branch asinh), and cmath's logarithmic form past DBL_MAX/4.
- Signs of zeros follow cmath's `copysign`s (`_negative` reads the sign of −0.0 as
  1/x < 0).  cmath's tables of special values (infinite and NaN arguments) are not
  reproduced: such arguments give what the finite formulas give, which is C99's (and
  cmath's) value for an infinite real part with a finite imaginary one in `exp`,
  `log`, `sinh` and `cosh`.
"""
from __future__ import annotations

import math
import sys

from .. import complex_math
from ..ir import nodes as ir
from ..types_rules import BackendUnsupported
# the f64 IR builders of complex.py, by short names: the formulas below are long
from .complex import Pair, as_pair, shared_pair
from .complex import complex_divide as _divide, real_abs as _abs, real_call as _call, \
    real_const as _c, real_op as _f, real_select as _select

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
    return _general_power(shared_pair(fl, z), shared_pair(fl, w))


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
    inverse = Pair(_select(zero, _c(math.inf), quotient.re), _select(zero, _c(math.nan), quotient.im))
    return inverse if n == 0 else _no_derivative_at_zero(z, inverse)


def _unsigned_power(fl, z: Pair, n: int) -> Pair:
    """CPython's c_powu: r = 1, p = z; for each bit of n from the lowest, r = r·p
    where the bit is set, then p = p·p (the last squaring, never used, is left out)."""
    r, p, mask = Pair(_c(1.0), _c(0.0)), z, 1
    while n >= mask:
        if n & mask:
            r = shared_pair(fl, _product(r, p))
        mask <<= 1
        if n >= mask:
            p = shared_pair(fl, _product(p, p))
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
    power = Pair(_select(z_zero, at_zero.re, _select(one, _c(1.0), polar.re)),
                 _select(z_zero, at_zero.im, _select(one, _c(0.0), polar.im)))
    # at z = 0, w·z^(w−1) exists for w = 0 and re(w) ≥ 1 with im(w) = 0 only
    singular = ir.Logic("&&", ir.Unary("!", w_zero, "bool"), ir.Logic(
        "||", ir.Compare("!=", w.im, _c(0.0)), ir.Compare("<", w.re, _c(1.0))))
    return _no_derivative_at_zero(z, power, singular)


def _exp(z: Pair) -> Pair:
    """cmath.exp, glibc's scaled form where it overflows."""
    large = ir.Compare(">", z.re, _c(_LOG_LARGE))
    scale = _call("exp", _select(large, _f("-", z.re, _c(1.0)), z.re))
    cos, sin = _call("cos", z.im), _call("sin", z.im)
    cmath_value = Pair(
        _select(large, _f("*", _f("*", scale, cos), _c(math.e)), _f("*", scale, cos)),
        _select(large, _f("*", _f("*", scale, sin), _c(math.e)), _f("*", scale, sin)))
    return _c99_past_overflow(cmath_value, _scaled_exponential(z.re, cos, sin, half=False))


def _hyperbolic(name: str, z: Pair) -> Pair:
    """cmath.sinh or cmath.cosh: (cos y · f(x), sin y · g(x)) with (f, g) = (sinh,
    cosh) or (cosh, sinh), at x ∓ 1 times e past |x| > log(DBL_MAX/4); glibc's scaled
    form where that overflows, the sign of x on cos y for sinh, on sin y for cosh."""
    large = ir.Compare(">", _abs(z.re), _c(_LOG_LARGE))
    x = _select(large, _select(ir.Compare(">", z.re, _c(0.0)), _f("-", z.re, _c(1.0)),
                               _f("+", z.re, _c(1.0))), z.re)
    first, second = ("sinh", "cosh") if name == "sinh" else ("cosh", "sinh")
    cos, sin = _call("cos", z.im), _call("sin", z.im)
    re = _f("*", cos, _call(first, x))
    im = _f("*", sin, _call(second, x))
    cmath_value = Pair(_select(large, _f("*", re, _c(math.e)), re),
                       _select(large, _f("*", im, _c(math.e)), im))
    negative = _negative(z.re)
    if name == "sinh":
        cos = _select(negative, ir.Unary("-", cos, "f64"), cos)
    else:
        sin = _select(negative, ir.Unary("-", sin, "f64"), sin)
    return _c99_past_overflow(cmath_value, _scaled_exponential(z.re, cos, sin, half=True))


def _scaled_exponential(x, cos, sin, half: bool) -> Pair:
    """e^|x|·(cos + sin·i) (halved with `half`) for |x| > 709 without forming e^|x|:
    rlang.complex_math.scaled_exponential as IR."""
    t = complex_math.OVERFLOW_STEP
    step = _c(math.exp(t) / 2.0 if half else math.exp(t))
    rest = _f("-", _abs(x), _c(float(t)))
    cos, sin = _f("*", cos, step), _f("*", sin, step)
    twice = ir.Compare(">", rest, _c(float(t)))
    rest = _select(twice, _f("-", rest, _c(float(t))), rest)
    cos = _select(twice, _f("*", cos, _c(math.exp(t))), cos)
    sin = _select(twice, _f("*", sin, _c(math.exp(t))), sin)
    factor = _select(ir.Compare(">", rest, _c(float(t))), _c(sys.float_info.max),
                     _call("exp", rest))
    return Pair(_f("*", factor, cos), _f("*", factor, sin))


def _c99_past_overflow(cmath_value: Pair, scaled: Pair) -> Pair:
    """cmath's value, or the scaled one where a part of cmath's is infinite (where
    cmath raises OverflowError and rlang.complex_math answers as C99 does)."""
    infinite = ir.Logic("||", _is_infinite(cmath_value.re), _is_infinite(cmath_value.im))
    return Pair(_select(infinite, scaled.re, cmath_value.re),
                _select(infinite, scaled.im, cmath_value.im))


def _tanh(z: Pair) -> Pair:
    """cmath.tanh."""
    tx, ty = _call("tanh", z.re), _call("tan", z.im)
    cx = _f("/", _c(1.0), _call("cosh", z.re))
    txty = _f("*", tx, ty)
    denominator = _f("+", _c(1.0), _f("*", txty, txty))
    re = _f("/", _f("*", tx, _f("+", _c(1.0), _f("*", ty, ty))), denominator)
    im = _f("*", _f("*", _f("/", ty, denominator), cx), cx)
    large = ir.Compare(">", _abs(z.re), _c(_LOG_LARGE))
    large_im = _f("*", _f("*", _f("*", _c(4.0), _call("sin", z.im)), _call("cos", z.im)),
                  _call("exp", _f("*", _c(-2.0), _abs(z.re))))
    return Pair(_select(large, _copysign(_c(1.0), z.re), re), _select(large, large_im, im))


def _times_i(z: Pair) -> Pair:
    """i·z."""
    return Pair(ir.Unary("-", z.im, "f64"), z.re)


def _times_minus_i(z: Pair) -> Pair:
    """−i·z."""
    return Pair(z.im, ir.Unary("-", z.re, "f64"))


def _log(z: Pair) -> Pair:
    """cmath.log (one argument)."""
    ax, ay = _abs(z.re), _abs(z.im)
    h = _call("hypot", ax, ay)
    near_one = ir.Logic("&&", ir.Compare(">=", h, _c(0.71)), ir.Compare("<=", h, _c(1.73)))
    big, small = _call("max", ax, ay), _call("min", ax, ay)
    careful = _f("/", _call("log1p", _f("+", _f("*", _f("-", big, _c(1.0)),
                                                  _f("+", big, _c(1.0))),
                                           _f("*", small, small))), _c(2.0))
    moderate = _select(near_one, careful, _call("log", h))
    large = _f("+", _call("log", _call("hypot", _f("/", ax, _c(2.0)), _f("/", ay, _c(2.0)))),
               _c(math.log(2.0)))
    scale = _c(2.0 ** 53)
    subnormal = _f("-", _call("log", _call("hypot", _f("*", ax, scale), _f("*", ay, scale))),
                   _c(53 * math.log(2.0)))
    is_large = ir.Logic("||", ir.Compare(">", ax, _c(_LARGE)), ir.Compare(">", ay, _c(_LARGE)))
    is_tiny = ir.Logic("&&", ir.Compare("<", ax, _c(_TINY)), ir.Compare("<", ay, _c(_TINY)))
    re = _select(is_large, large, _select(is_tiny, subnormal, moderate))
    zero = _both_zero(z)            # cmath's ValueError; C99's −inf + atan2(im, re)·i
    return _no_derivative_at_zero(z, Pair(_select(zero, _c(-math.inf), re),
                                          _call("atan", z.im, z.re)))


def _sqrt(z: Pair) -> Pair:
    """cmath.sqrt.  |re| and |im| are written with the derivatives of the side the
    formula stands for (Note [Derivatives on the real axis])."""
    positive = ir.Compare(">=", z.re, _c(0.0))
    ax = _select(positive, z.re, ir.Unary("-", z.re, "f64"))
    ay = _select(_negative(z.im), ir.Unary("-", z.im, "f64"), z.im)
    eighth = _f("/", ax, _c(8.0))
    s = _f("*", _c(2.0), _call("sqrt", _f("+", eighth, _call("hypot", eighth,
                                                              _f("/", ay, _c(8.0))))))
    up = _c(2.0 ** 53)               # both parts subnormal: scaled up, then down
    scaled = _f("*", ax, up)
    tiny_s = _f("*", _call("sqrt", _f("+", scaled, _call("hypot", scaled, _f("*", ay, up)))),
                _c(2.0 ** -27))
    is_tiny = ir.Logic("&&", ir.Compare("<", ax, _c(_TINY)), ir.Compare("<", ay, _c(_TINY)))
    s = _select(is_tiny, tiny_s, s)
    d = _f("/", ay, _f("*", _c(2.0), s))
    re = _select(positive, s, d)
    im = _copysign(_select(positive, d, s), z.im)
    zero = _both_zero(z)
    return _no_derivative_at_zero(z, Pair(_select(zero, _c(0.0), re), _select(zero, z.im, im)))


def complex_arcsine(fl, name: str, z: Pair) -> Pair:
    """cmath.asin (= −i·asinh(i·z)) or cmath.acos of z (`fl`: the function lowering,
    whose temporaries hold the square roots each formula uses several times)."""
    if name == "asin":
        return _times_minus_i(_arcsinh(fl, _times_i(z)))
    return _arccosine(fl, z)


def _arcsinh(fl, z: Pair) -> Pair:
    """cmath.asinh."""
    s1 = shared_pair(fl, _sqrt(Pair(_f("+", _c(1.0), z.im), ir.Unary("-", z.re, "f64"))))
    s2 = shared_pair(fl, _sqrt(Pair(_f("-", _c(1.0), z.im), z.re)))
    re = _real_asinh(_shared(fl, _f("-", _f("*", s1.re, s2.im), _f("*", s2.re, s1.im))))
    im = _call("atan", z.im, _f("-", _f("*", s1.re, s2.re), _f("*", s1.im, s2.im)))
    magnitude = _large_magnitude(z)
    large_re = _select(ir.Compare(">=", z.im, _c(0.0)), _copysign(magnitude, z.re),
                       ir.Unary("-", _copysign(magnitude, ir.Unary("-", z.re, "f64")), "f64"))
    large_im = _call("atan", z.im, _abs(z.re))
    large = _is_large(z)
    return Pair(_select(large, large_re, re), _select(large, large_im, im))


def _arccosine(fl, z: Pair) -> Pair:
    """cmath.acos."""
    s1 = shared_pair(fl, _sqrt(Pair(_f("-", _c(1.0), z.re), ir.Unary("-", z.im, "f64"))))
    s2 = shared_pair(fl, _sqrt(Pair(_f("+", _c(1.0), z.re), z.im)))
    re = _f("*", _c(2.0), _call("atan", s1.re, s2.re))
    im = _real_asinh(_shared(fl, _f("-", _f("*", s2.re, s1.im), _f("*", s2.im, s1.re))))
    magnitude = _large_magnitude(z)
    large_re = _call("atan", _abs(z.im), z.re)
    large_im = _select(ir.Compare("<", z.re, _c(0.0)),
                       ir.Unary("-", _copysign(magnitude, z.im), "f64"),
                       _copysign(magnitude, ir.Unary("-", z.im, "f64")))
    large = _is_large(z)
    return Pair(_select(large, large_re, re), _select(large, large_im, im))


def _real_asinh(x):
    """asinh(x) as glibc computes it: x itself below 2^-28; log|x| + log 2 from
    2^28·(1 + 2^-20) on; log(2|x| + 1/(√(x² + 1) + |x|)) from 2·(1 + 2^-20) on; else
    log1p(|x| + x²/(1 + √(1 + x²))); with the sign of x.  (glibc compares the high
    32 bits of |x| with those of 2^28 and 2, hence the 2^-20.)"""
    a = _abs(x)
    square = _f("*", a, a)
    small = _call("log1p", _f("+", a, _f("/", square, _f("+", _c(1.0), _call(
        "sqrt", _f("+", _c(1.0), square))))))
    moderate = _call("log", _f("+", _f("*", _c(2.0), a), _f("/", _c(1.0), _f(
        "+", _call("sqrt", _f("+", square, _c(1.0))), a))))
    huge = _f("+", _call("log", a), _c(math.log(2.0)))
    above = 1.0 + 2.0 ** -20
    magnitude = _select(ir.Compare(">=", a, _c(2.0 ** 28 * above)), huge,
                        _select(ir.Compare(">=", a, _c(2.0 * above)), moderate, small))
    return _select(ir.Compare("<", a, _c(2.0 ** -28)), x, _copysign(magnitude, x))


def _large_magnitude(z: Pair):
    """log|z| for cmath's large arguments: log(hypot(re/2, im/2)) + 2·log 2."""
    return _f("+", _call("log", _call("hypot", _f("/", z.re, _c(2.0)), _f("/", z.im, _c(2.0)))),
              _c(math.log(2.0) * 2.0))


def _is_large(z: Pair):
    return ir.Logic("||", ir.Compare(">", _abs(z.re), _c(_LARGE)),
                    ir.Compare(">", _abs(z.im), _c(_LARGE)))


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
}


# ------------------------------------------------------------------ helpers

def _shared(fl, value):
    """A real value read from a temporary (`fl.hoist`) unless it is a read or a
    constant already, or no temporary can be made here."""
    if isinstance(value, (ir.Read, ir.Const)):
        return value
    var = fl.hoist(value)
    return value if var is None else ir.Read(var)


def _product(a: Pair, b: Pair) -> Pair:
    """CPython's _Py_c_prod."""
    return Pair(_f("-", _f("*", a.re, b.re), _f("*", a.im, b.im)),
                _f("+", _f("*", a.re, b.im), _f("*", a.im, b.re)))


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


# Note [Derivatives on the real axis]
# ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
# The compiled gradients differentiate these formulas, and `abs` has the derivative
# sign(x), which is 0 at x = ±0.  cmath's sqrt works with |re| and |im| and puts the
# signs back with copysign, so written with `abs` the derivative along im vanished
# on the whole real axis (sqrt(4 + 0im) had ∂im/∂im = 0, not 1/4, and asin and acos,
# made of square roots, with it).  So copysign here negates its (nonnegative) first
# argument where the sign is negative (derivative ±1, also at 0), and sqrt's |re| and |im| are
# selects of ±re and ±im: derivative ±1 by the side the formula takes, the sign of
# a zero imaginary part choosing the side of the branch cut as the interpreter's
# holomorphic derivative 1/(2·sqrt z) does.

# Note [Gradients where no derivative exists]
# ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
# The interpreter's gradient of log, sqrt, 1/z and z ** w (re(w) < 1 or im(w) ≠ 0)
# at z = 0 is nan + nan·i: its holomorphic rule (1/z, 1/(2√z), w·z^(w−1)) has no
# value there.  Differentiated as written, the formulas here gave 0 (their value
# at 0 is a constant chosen by a select).  So such a value v becomes v − p, p being
# √(re² + im²) at z = 0 and 0 elsewhere: the same number (v − (+0) is v, for −0, ±inf and nan too), with
# the derivative −(1/(2·0))·(2·0) = ∞·0 = nan along re and im, on every compiled
# backend.  abs and angle, whose interpreter gradients at 0 are 0 (sign(0) = 0, as
# the real abs), are selects of constants there (`complex_builtin`).  docs/autodiff.md
# lists what each backend returns at these points.

def _no_derivative_at_zero(z: Pair, value: Pair, condition=None) -> Pair:
    """`value`, whose gradient with respect to z is nan + nan·i at z = 0 (where
    `condition` also holds, if given): Note [Gradients where no derivative exists]."""
    at = _both_zero(z) if condition is None else ir.Logic("&&", _both_zero(z), condition)
    poison = _select(at, _call("sqrt", _f("+", _f("*", z.re, z.re), _f("*", z.im, z.im))),
                     _c(0.0))       # v − (+0) is v: each part appears once in the tree
    return Pair(_f("-", value.re, poison), _f("-", value.im, poison))


def _angle_at_zero(z: Pair):
    """atan2(im, re) at re = im = ±0, as constants (0, −0, π or −π): no derivative."""
    flipped = _negative(z.re)
    return _select(_negative(z.im), _select(flipped, _c(-math.pi), _c(-0.0)),
                   _select(flipped, _c(math.pi), _c(0.0)))


def _copysign(magnitude, sign):
    """C's copysign of a `magnitude` whose sign bit is clear (every caller's is): it,
    or −it where `sign` is negative, −0.0 counting as negative.  Not ±|magnitude|:
    the derivative is ±1 also at a zero magnitude (Note [Derivatives on the real
    axis])."""
    return _select(_negative(sign), ir.Unary("-", magnitude, "f64"), magnitude)


def _negative(x):
    """Whether x's sign is negative, −0.0 included (1/−0.0 is −inf); false for NaN."""
    return ir.Logic("||", ir.Compare("<", x, _c(0.0)),
                    ir.Compare("<", _f("/", _c(1.0), x), _c(0.0)))


def complex_builtin(fl, name: str, z: Pair, span):
    """A registry function of one complex argument: a real IR expression (abs, abs2,
    angle, real, imag) or a Pair (cmath's functions: this module).  The argument is
    read from a temporary (`shared_pair`): the formulas use its parts many times, and
    as a tree `cos(sqrt(…))` was 150,000 lines of LLVM IR (found by tests/fuzz)."""
    if name == "real":
        return z.re
    if name == "imag":
        return z.im
    if name == "conj":
        return Pair(z.re, ir.Unary("-", z.im, "f64"))
    z = shared_pair(fl, z)
    if name == "abs":               # the interpreter's gradient at 0 is 0
        return _select(_both_zero(z), _c(0.0), _call("hypot", z.re, z.im))
    if name == "abs2":
        return _f("+", _f("*", z.re, z.re), _f("*", z.im, z.im))
    if name == "angle":             # the interpreter's gradient at 0 is 0
        return _select(_both_zero(z), _angle_at_zero(z), _call("atan", z.im, z.re))
    if name in ("asin", "acos"):
        return complex_arcsine(fl, name, z)
    function = COMPLEX_FUNCTIONS.get(name)
    if function is None:
        raise BackendUnsupported(f"`{name}` of a complex number in compiled code", span)
    return function(z)
