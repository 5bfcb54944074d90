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

from ..records import record
from ..ir import nodes as ir
from ..errors import RlangTypeError

_REALS = ("bool", "i32", "i64", "f32", "f64")


@record
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
    return Pair(f64(value), real_const(0.0))


def read_pair(var: ir.Var) -> Pair:
    return Pair(ir.Read(var, 0), ir.Read(var, 1))


def load_pair(var: ir.Var, indices: tuple, site) -> Pair:
    return Pair(ir.Load(var, indices, site, 0), ir.Load(var, indices, None, 1))


def complex_binary(fl, node, left, right):
    """`left op right` where one side is complex (`**`: complex_functions.py)."""
    op = node.op
    a, b = as_pair(left, f"`{op}`", node.span), as_pair(right, f"`{op}`", node.span)
    if op in ("*", "/"):            # each part is used several times below
        a, b = shared_pair(fl, a), shared_pair(fl, b)
    if op == "+":
        return Pair(real_op("+", a.re, b.re), real_op("+", a.im, b.im))
    if op == "-":
        return Pair(real_op("-", a.re, b.re), real_op("-", a.im, b.im))
    if op == "*":
        return Pair(real_op("-", real_op("*", a.re, b.re), real_op("*", a.im, b.im)),
                    real_op("+", real_op("*", a.re, b.im), real_op("*", a.im, b.re)))
    if op == "/":
        return complex_divide(a, b)
    if op in ("==", "!="):
        same = ir.Logic("&&", ir.Compare("==", a.re, b.re), ir.Compare("==", a.im, b.im))
        return same if op == "==" else ir.Unary("!", same, "bool")
    if op in ("<", "<=", ">", ">="):
        raise RlangTypeError(f"`{op}` cannot order complex numbers", node.span)
    if op in ("//", "%"):
        raise RlangTypeError(f"`{op}` is not defined for complex numbers", node.span)
    raise RlangTypeError(f"`{op}` needs integers or bools, got complex", node.span)


def shared_pair(fl, value: Pair) -> Pair:
    """`value` read from a temporary around the statement (`hoist`) unless its parts
    are reads or constants already.  A product uses each part of its operands twice
    and a quotient up to six times: without the temporary the IR of `z1 * z2 * … * zn`
    is a tree of 2^n nodes (of 6^n for quotients), which every walk over it visits (7
    quotients took 16 s to compile; found by tests/fuzz)."""
    simple = (ir.Read, ir.Const)
    if isinstance(value.re, simple) and isinstance(value.im, simple):
        return value
    var = fl.hoist(ir.ComplexValue(value.re, value.im))
    return value if var is None else read_pair(var)


def complex_divide(a: Pair, b: Pair) -> Pair:
    """CPython's complex division (Smith's method, scaled by the larger part of the
    divisor); division by 0 gives nan + nan·i, as the interpreter does."""
    by_re = ir.Compare(">=", real_abs(b.re), real_abs(b.im))
    ratio = real_select(by_re, real_op("/", b.im, b.re), real_op("/", b.re, b.im))
    denominator = real_select(by_re, real_op("+", b.re, real_op("*", b.im, ratio)),
                          real_op("+", real_op("*", b.re, ratio), b.im))
    re = real_select(by_re, real_op("+", a.re, real_op("*", a.im, ratio)),
                 real_op("+", real_op("*", a.re, ratio), a.im))
    im = real_select(by_re, real_op("-", a.im, real_op("*", a.re, ratio)),
                 real_op("-", real_op("*", a.im, ratio), a.re))
    zero = ir.Logic("&&", ir.Compare("==", b.re, real_const(0.0)),
                    ir.Compare("==", b.im, real_const(0.0)))
    # nan, and its gradient nan along every part, as the interpreter's (its 1/b and
    # −a/b² have no value at b = 0), not the 0 of a constant
    parts = real_op("+", real_op("+", a.re, a.im), real_op("+", b.re, b.im))
    undefined = real_op("*", parts, real_const(math.nan))
    return Pair(real_select(zero, undefined, real_op("/", re, denominator)),
                real_select(zero, undefined, real_op("/", im, denominator)))


def negate(a: Pair) -> Pair:
    return Pair(ir.Unary("-", a.re, "f64"), ir.Unary("-", a.im, "f64"))


def real_op(op, a, b):
    return ir.Binary(op, a, b, "f64")


def real_const(x: float) -> ir.Const:
    return ir.Const(x, "f64")


def real_abs(x):
    return ir.Builtin("abs", (x,), "f64")


def real_call(name, *args):
    """The real function `name` as the C library computes it (cmath's algorithms
    call the C library's real functions: rlang/lower/complex_functions.py)."""
    return ir.Builtin(name, tuple(args), "f64", c_library=True)


def real_select(cond, then, otherwise):
    return ir.Select(cond, then, otherwise, "f64")
