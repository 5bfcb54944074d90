"""IR expressions as numbers: the registry's instruction rules run on IR.

The rules of Note [Instruction rules] (rlang/primitives.py) are written with `+ - *`,
unary `-`, Python floats and a vocabulary `v`.  `IRNumber` is an f64 IR expression
whose operators build `ir.Binary` / `ir.Unary` nodes, and `IR_VOCABULARY` its
`v`, so a rule run on IRNumbers returns the IR of its result.  `IRDual` is a pair
of such expressions, a value and its tangent, with the arithmetic of
rlang/dual.py's `Dual` term for term: the tangent transform runs a rule on IRDuals
and gets the sums the interpreter's Hessian computes on dual numbers, in the same
order (Note [Rotations of dual numbers], tangent_ir.py).
"""
from __future__ import annotations

from ..ir import nodes as ir


def _expr(x):
    return ir.Const(float(x), "f64") if isinstance(x, (int, float)) else x.expr


class IRNumber:
    """An f64 IR expression under Python's operators."""

    __slots__ = ("expr",)

    def __init__(self, expr):
        self.expr = expr

    def _binary(self, op, other):
        return IRNumber(ir.Binary(op, self.expr, _expr(other), "f64"))

    def __add__(self, other):
        return self._binary("+", other)

    def __sub__(self, other):
        return self._binary("-", other)

    def __mul__(self, other):
        return self._binary("*", other)

    def __neg__(self):
        return IRNumber(ir.Unary("-", self.expr, "f64"))


class IRVocabulary:
    """`v` of the rules for IRNumbers and IRDuals."""

    def cos(self, x):
        if isinstance(x, IRDual):       # lift's rule: (cos a, (−sin a)·da)
            return IRDual(self.cos(x.value), -self.sin(x.value) * x.tangent)
        return IRNumber(ir.Builtin("cos", (x.expr,), "f64"))

    def sin(self, x):
        if isinstance(x, IRDual):       # (sin a, cos a·da)
            return IRDual(self.sin(x.value), self.cos(x.value) * x.tangent)
        return IRNumber(ir.Builtin("sin", (x.expr,), "f64"))


IR_VOCABULARY = IRVocabulary()


class IRDual:
    """A value and its tangent, both IRNumbers, with Dual's arithmetic."""

    __slots__ = ("value", "tangent")

    def __init__(self, value: IRNumber, tangent: IRNumber):
        self.value, self.tangent = value, tangent

    def __add__(self, other):
        return IRDual(self.value + other.value, self.tangent + other.tangent)

    def __sub__(self, other):
        return IRDual(self.value - other.value, self.tangent - other.tangent)

    def __mul__(self, other):
        return IRDual(self.value * other.value,
                      self.tangent * other.value + self.value * other.tangent)

    def __neg__(self):
        return IRDual(-self.value, -self.tangent)
