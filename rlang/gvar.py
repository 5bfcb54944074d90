"""Gradient-carrying values and the chain rule over expression trees.

`GVar(x, g)` is a scalar value with the gradient of the loss with respect to it
(LANGUAGE.md §9).  It is immutable: an update makes a new one.  Arrays keep their
values in the NumPy array the program sees and their gradients in a parallel array
(`Gradients`), keyed by the array's identity, so that arrays passed by reference
share their gradients too.

`backprop(evaluator, expr, env, seed, sink)` adds `seed · ∂expr/∂leaf` to the
gradient of every view the expression reads.  The expression is recomputed, never
taped: each node's value is evaluated again on the way down, and the partial
derivatives come from the primitive registry (`primitives.BUILTINS[...].partials`,
`primitives.OPERATOR_PARTIALS`).  Reads shared between leaves (`x * x`) simply add.
"""
from __future__ import annotations

import numpy as np

from . import ast
from .errors import RlangTypeError
from .numbers import Fixed, FixedArray, ULog
from .primitives import BUILTINS, OPERATOR_PARTIALS


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


def carries_gradient(value) -> bool:
    """Floats and complex numbers have gradients; integers and bools do not."""
    return isinstance(value, (float, complex)) and not isinstance(value, bool)


class Gradients:
    """The gradient arrays of the arrays of a run, by identity."""

    def __init__(self):
        self._by_id: dict[int, tuple] = {}

    def of(self, array: np.ndarray) -> np.ndarray | None:
        """The gradient array of `array` (made, zero, on first use), or None when the
        array holds integers or bools."""
        entry = self._by_id.get(id(array))
        if entry is not None and entry[0] is array:
            return entry[1]
        if array.dtype.kind not in "fc" and not isinstance(array, FixedArray):
            return None
        grad = np.zeros(array.shape, dtype=np.complex128 if array.dtype.kind == "c"
                        else np.float64)
        self._by_id[id(array)] = (array, grad)
        return grad

    def forget(self, array: np.ndarray) -> None:
        self._by_id.pop(id(array), None)


def backprop(evaluator, expr, env: dict, seed, sink) -> None:
    """Add seed · ∂expr/∂v to the gradient of each view v that `expr` reads."""
    if seed == 0:
        return
    kind = type(expr)
    if kind in (ast.Name, ast.Index, ast.Field):
        sink.add_gradient(evaluator.ref(expr, env), seed)
    elif kind is ast.Binary:
        if expr.op in OPERATOR_PARTIALS:
            left = evaluator.eval(expr.left, env)
            right = evaluator.eval(expr.right, env)
            d_left, d_right = OPERATOR_PARTIALS[expr.op](_number(left), _number(right))
            backprop(evaluator, expr.left, env, seed * _conj(d_left), sink)
            backprop(evaluator, expr.right, env, seed * _conj(d_right), sink)
    elif kind is ast.Unary:
        if expr.op == "-":
            backprop(evaluator, expr.operand, env, -seed, sink)
    elif kind is ast.Call:
        _backprop_call(evaluator, expr, env, seed, sink)


def _number(value):
    """A value as a number the partial derivatives can use (fixed and ulog as floats)."""
    return float(value) if isinstance(value, (Fixed, ULog)) else value


def _conj(partial):
    """Gradients of complex values are ∂L/∂re + i·∂L/∂im, so a holomorphic step
    multiplies them by the conjugate derivative."""
    return partial.conjugate() if isinstance(partial, complex) else partial


def _backprop_call(evaluator, expr: ast.Call, env, seed, sink) -> None:
    name = expr.func
    if name in ("f64", "f32", "complex", "fixed") and len(expr.args) == 1:
        backprop(evaluator, expr.args[0], env, seed, sink)
        return
    if name == "complex" and len(expr.args) == 2:
        backprop(evaluator, expr.args[0], env, seed.real if isinstance(seed, complex)
                 else seed, sink)
        backprop(evaluator, expr.args[1], env, seed.imag if isinstance(seed, complex)
                 else 0.0, sink)
        return
    builtin = BUILTINS.get(name)
    if builtin is None or builtin.partials is None:
        return                      # structural built-ins (length, zero, …) are constant
    args = [evaluator.eval(arg, env) for arg in expr.args]
    if any(isinstance(a, complex) for a in args):
        raise RlangTypeError(f"the gradient of `{name}` of a complex number is not "
                             "supported yet", expr.span)
    partials = builtin.partials(*(float(_number(a)) for a in args))
    for arg, partial in zip(expr.args, partials):
        if partial is not None:
            backprop(evaluator, arg, env, seed * partial, sink)
