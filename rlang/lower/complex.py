"""Lowering of complex numbers to f64 arithmetic on their parts (LANGUAGE.md §3).

A complex expression lowers to a `Pair` of f64 IR expressions (re, im); nothing
complex-typed reaches the IR except places and the `ComplexValue` of an allocation
(Note [Complex numbers in the IR], rlang/ir/nodes.py).  The formulas follow CPython's
complex arithmetic, which the interpreter uses: Smith's scaled division, `abs` as
hypot.  cmath's functions (exp, log, sqrt, the trigonometric and hyperbolic ones, and
their inverses) are in rlang/lower/complex_functions.py.
"""
from __future__ import annotations

import math
from dataclasses import dataclass

from ..ir import nodes as ir
from ..errors import RlangTypeError
from ..types_rules import BackendUnsupported

_REALS = ("bool", "i32", "i64", "f32", "f64")


@dataclass(frozen=True)
class Pair:
    """A complex value as two f64 IR expressions (a lowering-time value)."""

    re: object
    im: object
    type = "complex"


def f64(value):
    """A real IR expression as f64."""
    if value.type == "f64":
        return value
    if isinstance(value, ir.Const) and value.type in _REALS:
        return ir.Const(float(value.value), "f64")
    return ir.Convert(value, "f64")


def as_pair(value, what: str, span) -> Pair:
    """A complex or real value as a Pair (a real has imaginary part 0)."""
    if isinstance(value, Pair):
        return value
    if value.type not in _REALS:
        raise RlangTypeError(f"{what} cannot mix complex and {ir.type_text(value.type)}", span)
    return Pair(f64(value), _c(0.0))


def read_pair(var: ir.Var) -> Pair:
    return Pair(ir.Read(var, 0), ir.Read(var, 1))


def load_pair(var: ir.Var, indices: tuple, site) -> Pair:
    return Pair(ir.Load(var, indices, site, 0), ir.Load(var, indices, None, 1))


def complex_binary(node, left, right):
    """`left op right` where one side is complex (`**`: lower_complex_functions)."""
    op = node.op
    a, b = as_pair(left, f"`{op}`", node.span), as_pair(right, f"`{op}`", node.span)
    if op == "+":
        return Pair(_f("+", a.re, b.re), _f("+", a.im, b.im))
    if op == "-":
        return Pair(_f("-", a.re, b.re), _f("-", a.im, b.im))
    if op == "*":
        return Pair(_f("-", _f("*", a.re, b.re), _f("*", a.im, b.im)),
                    _f("+", _f("*", a.re, b.im), _f("*", a.im, b.re)))
    if op == "/":
        return _divide(a, b)
    if op in ("==", "!="):
        same = ir.Logic("&&", ir.Compare("==", a.re, b.re), ir.Compare("==", a.im, b.im))
        return same if op == "==" else ir.Unary("!", same, "bool")
    if op in ("<", "<=", ">", ">="):
        raise RlangTypeError(f"`{op}` cannot order complex numbers", node.span)
    if op in ("//", "%"):
        raise RlangTypeError(f"`{op}` is not defined for complex numbers", node.span)
    raise RlangTypeError(f"`{op}` needs integers or bools, got complex", node.span)


def _divide(a: Pair, b: Pair) -> Pair:
    """CPython's complex division (Smith's method, scaled by the larger part of the
    divisor); division by 0 gives nan + nan·i, as the interpreter does."""
    by_re = ir.Compare(">=", _abs(b.re), _abs(b.im))
    ratio = _select(by_re, _f("/", b.im, b.re), _f("/", b.re, b.im))
    denominator = _select(by_re, _f("+", b.re, _f("*", b.im, ratio)),
                          _f("+", _f("*", b.re, ratio), b.im))
    re = _select(by_re, _f("+", a.re, _f("*", a.im, ratio)),
                 _f("+", _f("*", a.re, ratio), a.im))
    im = _select(by_re, _f("-", a.im, _f("*", a.re, ratio)),
                 _f("-", _f("*", a.im, ratio), a.re))
    zero = ir.Logic("&&", ir.Compare("==", b.re, _c(0.0)), ir.Compare("==", b.im, _c(0.0)))
    return Pair(_select(zero, _c(math.nan), _f("/", re, denominator)),
                _select(zero, _c(math.nan), _f("/", im, denominator)))


def negate(a: Pair) -> Pair:
    return Pair(ir.Unary("-", a.re, "f64"), ir.Unary("-", a.im, "f64"))


def complex_builtin(name: str, z: Pair, span):
    """A registry function of one complex argument: a real IR expression (abs, abs2,
    angle, real, imag) or a Pair (cmath's functions: lower_complex_functions)."""
    if name == "abs":
        return _call("hypot", z.re, z.im)
    if name == "abs2":
        return _f("+", _f("*", z.re, z.re), _f("*", z.im, z.im))
    if name == "angle":
        return _call("atan", z.im, z.re)
    if name == "real":
        return z.re
    if name == "imag":
        return z.im
    if name == "conj":
        return Pair(z.re, ir.Unary("-", z.im, "f64"))
    from .complex_functions import COMPLEX_FUNCTIONS

    function = COMPLEX_FUNCTIONS.get(name)
    if function is None:
        raise BackendUnsupported(f"`{name}` of a complex number in compiled code", span)
    return function(z)


def _f(op, a, b):
    return ir.Binary(op, a, b, "f64")


def _c(x: float) -> ir.Const:
    return ir.Const(x, "f64")


def _abs(x):
    return ir.Builtin("abs", (x,), "f64")


def _call(name, *args):
    return ir.Builtin(name, tuple(args), "f64")


def _select(cond, then, otherwise):
    return ir.Select(cond, then, otherwise, "f64")
