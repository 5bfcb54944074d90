"""cmath's exp, sinh, cosh, sin, cos and log with C99 Annex G's answers where cmath raises.

In: a Python complex; out: a Python complex.  Every backend computes these functions
the same way (the compiled ones by the IR of rlang/lower/complex_functions.py), so
this module is the reference both sides are tested against.

Note [Complex overflow as C99 says]
~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
cmath raises OverflowError where a part of exp, sinh or cosh overflows, and
ValueError at log 0; C99's Annex G, glibc and NumPy give numbers there:
exp(800) = inf + 0i, exp(800 + 1i) = inf + inf·i, log(±0 + 0i) = −inf + (0 or π)i.
rlang follows C99 (and NumPy): where cmath answers, its answer is kept (bit for bit,
as before); where it raises, the value is glibc's:

- exp, sinh, cosh past the overflow threshold use glibc's scaled form: the
  trigonometric factors cos y and sin y (y itself and 1 for a subnormal y) are
  multiplied by e^t (t = 709, the largest integer whose exponential is finite; sinh
  and cosh by e^t/2) once or twice while |x| > t, and then by e^(|x| − kt), or by
  DBL_MAX when |x| is still past t (beyond 3t).  A zero factor so gives a zero of
  the right sign instead of inf·0 = nan: exp(800 + 0i) = inf + 0i.  The sign of x
  goes to cos y for sinh and to sin y for cosh (sinh is odd, cosh even in x).  The
  same formula gives Annex G's values for an infinite real part with a finite
  imaginary one (cmath's tables give the same there without raising).
- log(0) is −inf + atan2(im, re)·i: −inf + 0i, −inf + πi at −0 + 0i, and so on.

Arguments with an infinite or NaN imaginary part get cmath's tables (they never raise
OverflowError); the compiled backends do not reproduce those tables
(rlang/lower/complex_functions.py).
"""
from __future__ import annotations

import cmath
import math

#: glibc's t: the largest integer whose exponential is a finite double.
OVERFLOW_STEP = 709
_EXP_STEP = math.exp(OVERFLOW_STEP)
_MAX = 1.7976931348623157e308


def scaled_exponential(x: float, cos_y: float, sin_y: float, half: bool) -> complex:
    """e^|x|·(cos_y + sin_y·i), or e^|x|/2·(…) with `half`, for |x| > OVERFLOW_STEP,
    without forming e^|x|: glibc's scaled form (Note [Complex overflow as C99 says])."""
    step = _EXP_STEP / 2.0 if half else _EXP_STEP
    rest = abs(x) - OVERFLOW_STEP
    cos_y, sin_y = cos_y * step, sin_y * step
    if rest > OVERFLOW_STEP:
        rest -= OVERFLOW_STEP
        cos_y, sin_y = cos_y * _EXP_STEP, sin_y * _EXP_STEP
    factor = _MAX if rest > OVERFLOW_STEP else math.exp(rest)
    return complex(factor * cos_y, factor * sin_y)


def _trig(y: float) -> tuple[float, float]:
    """(cos y, sin y) as glibc's sincos gives them (y itself and 1 for tiny y)."""
    return math.cos(y), math.sin(y)


def _exp_overflow(z: complex) -> complex:
    cos_y, sin_y = _trig(z.imag)
    return scaled_exponential(z.real, cos_y, sin_y, half=False)


def _hyperbolic_overflow(z: complex, odd: bool) -> complex:
    """sinh (`odd`) or cosh of z past the threshold: the sign of x on cos y for sinh,
    on sin y for cosh."""
    cos_y, sin_y = _trig(z.imag)
    if math.copysign(1.0, z.real) < 0:
        cos_y, sin_y = (-cos_y, sin_y) if odd else (cos_y, -sin_y)
    return scaled_exponential(z.real, cos_y, sin_y, half=True)


def exp(z: complex) -> complex:
    try:
        return cmath.exp(z)
    except OverflowError:
        return _exp_overflow(z)


def sinh(z: complex) -> complex:
    try:
        return cmath.sinh(z)
    except OverflowError:
        return _hyperbolic_overflow(z, odd=True)


def cosh(z: complex) -> complex:
    try:
        return cmath.cosh(z)
    except OverflowError:
        return _hyperbolic_overflow(z, odd=False)


def sin(z: complex) -> complex:
    """sin z = −i·sinh(iz), as cmath computes it."""
    r = sinh(complex(-z.imag, z.real))
    return complex(r.imag, -r.real)


def cos(z: complex) -> complex:
    """cos z = cosh(iz), as cmath computes it."""
    return cosh(complex(-z.imag, z.real))


def log(z: complex) -> complex:
    try:
        return cmath.log(z)
    except ValueError:          # z = ±0 ± 0i
        return complex(-math.inf, math.atan2(z.imag, z.real))
