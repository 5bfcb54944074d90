"""Dual numbers: forward-mode derivatives for Hessians (forward over reverse).

`Dual(a, b)` is a + b·ε with ε² = 0: `a` a float, `b` the derivative along one input
direction.  Running the gradient program over GVars whose values and gradients are
Duals (LANGUAGE.md §9) gives, in the tangent parts of the gradients, one column of
the Hessian per direction.

Elementary functions of a Dual come from the primitive registry: f(a + bε) =
f(a) + f'(a)·b·ε with f' from `BUILTINS[name].partials` (`lift`).  The partial-
derivative rules are themselves written with lifted functions, so they can be
evaluated on Duals too, which is what yields second derivatives.  Comparisons look
at the value only, so a Dual run takes the same branches as the plain run.
"""
from __future__ import annotations

import math

from .ieee import float_div, float_pow


class Dual:
    """a + b·ε."""

    __slots__ = ("a", "b")

    def __init__(self, a, b=0.0):
        self.a = float(a)
        self.b = float(b)

    def __repr__(self):
        return f"Dual({self.a!r}, {self.b!r})"

    def __float__(self):
        return self.a

    def __add__(self, other):
        a, b = parts(other)
        return Dual(self.a + a, self.b + b)

    __radd__ = __add__

    def __sub__(self, other):
        a, b = parts(other)
        return Dual(self.a - a, self.b - b)

    def __rsub__(self, other):
        a, b = parts(other)
        return Dual(a - self.a, b - self.b)

    def __mul__(self, other):
        a, b = parts(other)
        return Dual(self.a * a, self.b * a + self.a * b)

    __rmul__ = __mul__

    def __truediv__(self, other):
        a, b = parts(other)
        return Dual(float_div(self.a, a), float_div(self.b * a - self.a * b, a * a))

    def __rtruediv__(self, other):
        a, b = parts(other)
        return Dual(float_div(a, self.a),
                    float_div(b * self.a - a * self.b, self.a * self.a))

    def __pow__(self, other):
        a, b = parts(other)
        value = float_pow(self.a, a)
        tangent = a * float_pow(self.a, a - 1) * self.b if a != 0 else 0.0
        if b != 0 and self.a > 0:
            tangent += value * math.log(self.a) * b
        return Dual(value, tangent)

    def __rpow__(self, other):
        a, _ = parts(other)
        value = float_pow(a, self.a)
        return Dual(value, value * math.log(a) * self.b if a > 0 else 0.0)

    def __neg__(self):
        return Dual(-self.a, -self.b)

    def __abs__(self):
        return self if self.a >= 0 else -self

    def __floor__(self):
        return math.floor(self.a)

    def __eq__(self, other):
        return self.a == parts(other)[0]

    def __ne__(self, other):
        return self.a != parts(other)[0]

    def __lt__(self, other):
        return self.a < parts(other)[0]

    def __le__(self, other):
        return self.a <= parts(other)[0]

    def __gt__(self, other):
        return self.a > parts(other)[0]

    def __ge__(self, other):
        return self.a >= parts(other)[0]

    def __hash__(self):
        return hash(self.a)


def refuse_tangent(value, where: str):
    """Hessians do not yet carry tangents through complex, fixed and f32 values: a
    dual number with a tangent reaching one is refused rather than silently dropped
    (ulog values carry theirs: Note [Tangents of ulog values], rlang/numbers.py)."""
    if type(value) is Dual and value.b != 0.0:
        from .errors import RlangTypeError
        raise RlangTypeError(f"Hessians through {where} values are not supported yet "
                             "(gradients are)")
    return value


def is_zero(value) -> bool:
    """Whether a seed or gradient is exactly zero, its tangent included: the AD
    passes skip zero seeds, and a dual number 0 + bε is not zero."""
    if type(value) is Dual:
        return value.a == 0 and value.b == 0
    return value == 0


def parts(value) -> tuple[float, float]:
    """(value, tangent) of a Dual or a plain real number."""
    if type(value) is Dual:
        return value.a, value.b
    return float(value), 0.0
