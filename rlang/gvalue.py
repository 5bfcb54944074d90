"""GVar: a value that carries a gradient (LANGUAGE.md §9).

The gradient interpreter (rlang/ad/gradient_interpreter.py) runs the inverse of a
function over GVars; the interpreter's expression evaluator (rlang/interp/evaluate.py)
reads through them.  The type lives in the kernel, below both; the chain rule over
expression trees that fills `g` is rlang/ad/gvar.py.
"""
from __future__ import annotations


class GVar:
    """A scalar value `x` with its gradient `g`."""

    __slots__ = ("x", "g")

    def __init__(self, x, g=0.0):
        self.x = x
        self.g = g

    def __repr__(self):
        return f"GVar({self.x!r}, {self.g!r})"


def value_of(value):
    """The plain value of a GVar (anything else unchanged)."""
    return value.x if type(value) is GVar else value
