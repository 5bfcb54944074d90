"""Gradient-carrying values and the chain rule over expression trees.

`GVar(x, g)` is a scalar value with the gradient of the loss with respect to it
(LANGUAGE.md §9).  It is immutable: an update makes a new one.  Arrays keep their
values in the NumPy array the program sees and their gradients in a parallel array
(`Gradients`), keyed by the array's identity, so that arrays passed by reference
share their gradients too.

`backprop(evaluator, expr, env, seed, sink)` adds `seed · ∂expr/∂leaf` to the
gradient of every view the expression reads.  The expression is recomputed, never
taped: the tree is evaluated once, bottom-up, recording each node's value for the
duration of this one statement (`Evaluator.eval_recording`), and the partial
derivatives come from the primitive registry (`primitives.BUILTINS[...].partials`,
`primitives.OPERATOR_PARTIALS`).  Reads shared between leaves (`x * x`) simply add.
"""
from __future__ import annotations

import cmath
import math

import numpy as np

from ..frontend import ast
from ..errors import RlangTypeError
from ..dual import Dual, is_zero
from ..ieee import complex_rule_at, rule_at
from ..numbers import Fixed, FixedArray, ULog
from ..primitives import BUILTINS, OPERATOR_PARTIALS, lift
from .zero_partials import zero_by_rule


def carries_gradient(value) -> bool:
    """Floats, complex, fixed and ulog numbers have gradients; integers and bools not."""
    return isinstance(value, (float, complex, Fixed, ULog, Dual)) and not isinstance(value, bool)


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
        if array.dtype == object:       # dual numbers: gradients are dual numbers too
            grad = np.full(array.shape, Dual(0.0), dtype=object)
            self._by_id[id(array)] = (array, grad)
            return grad
        if array.dtype.kind not in "fc" and not isinstance(array, FixedArray):
            return None
        grad = np.zeros(array.shape, dtype=np.complex128 if array.dtype.kind == "c"
                        else np.float64)
        self._by_id[id(array)] = (array, grad)
        return grad

    def forget(self, array: np.ndarray) -> None:
        self._by_id.pop(id(array), None)


def backprop(evaluator, expr, env: dict, seed, sink, memo: dict | None = None) -> None:
    """Add seed · ∂expr/∂v to the gradient of each view v that `expr` reads.

    `memo` holds the values of the tree's nodes by id (from `eval_recording`); without
    it the tree is evaluated once here."""
    if is_zero(seed):
        return
    if memo is None:
        memo = {}
        evaluator.eval_recording(expr, env, memo)
    _backprop(_Walk(evaluator, env, memo, sink), expr, seed)


class _Walk:
    """What the recursive walk of one backprop shares: the evaluator, the environment,
    the recorded node values and the gradient sink."""

    __slots__ = ("evaluator", "env", "memo", "sink")

    def __init__(self, evaluator, env, memo, sink):
        self.evaluator, self.env, self.memo, self.sink = evaluator, env, memo, sink

    def value(self, expr):
        """The recorded value of a node (evaluated now if it was not recorded)."""
        try:
            return self.memo[id(expr)]
        except KeyError:
            return self.evaluator.eval(expr, self.env)


def _backprop(walk: _Walk, expr, seed) -> None:
    if is_zero(seed):
        return
    kind = type(expr)
    if kind in (ast.Name, ast.Index, ast.Field):
        root = ast.view_root(expr)
        if root is not None and root.id in walk.env:     # constants have no gradient
            walk.sink.add_gradient(walk.evaluator.ref(expr, walk.env), seed)
    elif kind is ast.Binary:
        if expr.op in OPERATOR_PARTIALS:
            left = walk.value(expr.left)
            right = walk.value(expr.right)
            if type(left) is ULog or type(right) is ULog:
                _backprop_ulog_binary(walk, expr, seed, left, right)
                return
            d_left, d_right = rule_at(OPERATOR_PARTIALS[expr.op],
                                      (_number(left), _number(right)))
            _send(walk, expr, 0, (left, right), seed, _conj(d_left))
            _send(walk, expr, 1, (left, right), seed, _conj(d_right))
    elif kind is ast.Unary:
        if expr.op == "-":
            _backprop(walk, expr.operand, -seed)
    elif kind is ast.Call:
        _backprop_call(walk, expr, seed)


def _number(value):
    """A value as a number the partial derivatives can use (fixed and ulog as floats;
    a ulog whose logarithm is a dual as the dual e^ℓ)."""
    if type(value) is ULog:
        return value.value()
    return float(value) if isinstance(value, Fixed) else value


def _real_number(value):
    """A real value as a float, or a Dual as itself (its tangent kept)."""
    value = _number(value)
    return value if type(value) is Dual else float(value)


def _conj(partial):
    """Gradients of complex values are ∂L/∂re + i·∂L/∂im, so a holomorphic step
    multiplies them by the conjugate derivative."""
    return partial.conjugate() if isinstance(partial, complex) else partial


def _real(seed):
    return seed.real if isinstance(seed, complex) else seed


#: Gradient rules of the complex built-ins that are not holomorphic: given z and the
#: gradient of the result, the gradient of z (as ∂L/∂re + i·∂L/∂im).
_NON_HOLOMORPHIC = {
    "abs": lambda z, g: _real(g) * z / abs(z) if z != 0 else 0j,
    "abs2": lambda z, g: _real(g) * 2 * z,
    "angle": lambda z, g: _real(g) * 1j * z / (abs(z) ** 2) if z != 0 else 0j,
    "real": lambda z, g: complex(_real(g), 0.0),
    "imag": lambda z, g: complex(0.0, _real(g)),
    "conj": lambda z, g: complex(g).conjugate(),
}


# Note [Gradients of ulog values]
# A ulog holds ℓ = log x, and its gradient is kept in log space, ∂L/∂ℓ: products and
# quotients of ulogs are then sums and differences, whose adjoints are plain.  So a
# seed sent into an expression whose value is a ulog is a log-space seed.  Where a
# ulog meets real numbers the chain rule converts: x = e^ℓ gives ∂L/∂ℓ = x·∂L/∂x
# (`f64(l)`, `sin(l)`), and `ulog(r)` gives ∂L/∂r = ∂L/∂ℓ / r.  The drivers report
# ∂L/∂x = ∂L/∂ℓ / x for ulog parameters.

_exp = lift("exp")


def _backprop_ulog_binary(walk, expr, seed, left, right) -> None:
    """Log-space adjoints of `* / + -` and `**` with a ulog operand."""
    op = expr.op
    if op == "**":                      # ℓ = ℓa · y
        _backprop(walk, expr.left, seed * _real_number(right))
        _backprop(walk, expr.right, seed * left.log)
        return
    a = left if type(left) is ULog else ULog.from_value(left)
    b = right if type(right) is ULog else ULog.from_value(right)
    if op == "*":
        d_left, d_right = 1.0, 1.0
    elif op == "/":
        d_left, d_right = 1.0, -1.0
    else:                               # + and -: weights e^(ℓa−ℓ), ±e^(ℓb−ℓ)
        result = a.add(b) if op == "+" else a.sub(b)
        d_left = _exp(a.log - result.log) if a.log > -math.inf else 0.0
        d_right = _exp(b.log - result.log) if b.log > -math.inf else 0.0
        d_right = d_right if op == "+" else -d_right
    for operand, value, partial in ((expr.left, left, d_left), (expr.right, right, d_right)):
        if type(value) is ULog:         # a literal operand was a constant
            _backprop(walk, operand, seed * partial)


def _backprop_ulog_call(walk, expr: ast.Call, seed, value) -> bool:
    """Calls whose argument is a ulog; True when handled."""
    name = expr.func
    if name == "log":                   # log(l) = ℓ, exactly
        _backprop(walk, expr.args[0], seed)
        return True
    if name == "f64":                   # e^ℓ
        _backprop(walk, expr.args[0], seed * value.value())
        return True
    builtin = BUILTINS.get(name)
    if builtin is not None and builtin.partials is not None and len(expr.args) == 1:
        x = value.value()
        (partial,) = rule_at(builtin.partials, (x,))
        _backprop(walk, expr.args[0], seed * partial * x)
        return True
    return name in ("ulog", "one", "zero")


def _backprop_call(walk, expr: ast.Call, seed) -> None:
    name = expr.func
    if expr.args and not isinstance(expr.args[0], ast.TypeExpr):
        first = walk.value(expr.args[0])
        if type(first) is ULog and _backprop_ulog_call(walk, expr, seed, first):
            return
        if name == "ulog" and len(expr.args) == 1:      # ℓ = log r: ∂L/∂r = ∂L/∂ℓ / r
            r = _real_number(first)
            if r > 0:
                _backprop(walk, expr.args[0], seed / r)
            return
    if name in ("f64", "f32", "complex", "fixed") and len(expr.args) == 1:
        _backprop(walk, expr.args[0], seed)
        return
    if name == "complex" and len(expr.args) == 2:
        _backprop(walk, expr.args[0], seed.real if isinstance(seed, complex) else seed)
        _backprop(walk, expr.args[1], seed.imag if isinstance(seed, complex) else 0.0)
        return
    builtin = BUILTINS.get(name)
    if builtin is None or builtin.partials is None:
        return                      # structural built-ins (length, zero, …) are constant
    args = [walk.value(arg) for arg in expr.args]
    if any(isinstance(a, complex) for a in args):
        z = complex(args[0])
        if builtin.complex_derivative is not None:
            _backprop(walk, expr.args[0],
                      seed * _conj(complex_rule_at(builtin.complex_derivative, z)))
        elif name in _NON_HOLOMORPHIC:
            _backprop(walk, expr.args[0], _NON_HOLOMORPHIC[name](z, seed))
        else:
            raise RlangTypeError(f"`{name}` has no gradient for a complex argument",
                                 expr.span)
        return
    partials = rule_at(builtin.partials, [_real_number(a) for a in args])
    for k, partial in enumerate(partials):
        if partial is not None:
            _send(walk, expr, k, args, seed, partial)


def _send(walk, expr, k: int, values, seed, partial) -> None:
    """Add seed · partial to the gradients of operand k of `expr` (a binary operator
    or a built-in call, whose operands had `values`), unless the partial is zero by
    its rule and the seed not finite (Note [Partials zero by rule],
    rlang/ad/zero_partials.py)."""
    operand = (expr.left, expr.right)[k] if type(expr) is ast.Binary else expr.args[k]
    if isinstance(partial, (int, float, complex)) and partial == 0 and not _finite(seed) \
            and zero_by_rule(expr, k, values, walk.evaluator.consts):
        return
    _backprop(walk, operand, seed * partial)


def _finite(seed) -> bool:
    """Whether a seed is a finite number (a dual number counts as finite)."""
    if isinstance(seed, complex):
        return cmath.isfinite(seed)
    return not isinstance(seed, float) or math.isfinite(seed)
