"""Partial derivatives of IR expressions, traced from the primitive registry.

The compiled gradients and Hessians (rlang/ad/adjoint_ir.py, rlang/ad/tangent_ir.py) need the
partial derivatives of an IR node as IR expressions.  They are not re-derived here:
`partials(node)` runs the registry's own rules (`primitives.OPERATOR_PARTIALS`,
`BUILTINS[name].partials`) on `Sym` values, which build IR instead of computing.
The rules are written with lifted functions (`primitives.lift`) and lazy choices
(`primitives.select`), which dispatch to `Sym.apply_builtin` and `Sym.select`.

Every symbolic value is an f64 expression (an f32 or fixed operand is converted
first), as the interpreter computes partial derivatives in Python floats.  ulog
values are differentiated in log space (Note [Number systems in the IR], rlang/ir/nodes.py):
a conversion to a ulog has the partial 1/x, one from a ulog the value e^ℓ.  Python numbers in a rule
become f64 constants; a constant zero partial is recognised (`is_zero`) so that no
code is generated for it.
"""
from __future__ import annotations

from ..ir import nodes as ir
from ..errors import InternalError
from ..primitives import BUILTINS, OPERATOR_PARTIALS

FLOATS = ir.DIFFERENTIABLE_TYPES


def as_f64(expr):
    """An IR expression of a differentiable type as an f64 expression (its value)."""
    return expr if expr.type == "f64" else ir.Convert(expr, "f64")


def constant(value: float) -> ir.Const:
    return ir.Const(float(value), "f64")


def is_zero(expr) -> bool:
    return isinstance(expr, ir.Const) and expr.value == 0.0


def is_one(expr) -> bool:
    return isinstance(expr, ir.Const) and expr.value == 1.0


def lift_value(value):
    """A registry rule's value (a Sym or a Python number) as an f64 IR expression."""
    if isinstance(value, Sym):
        return value.expr
    if isinstance(value, (bool, int, float)):
        return constant(value)
    raise InternalError(f"a partial-derivative rule returned {value!r}")


class Sym:
    """An f64 IR expression that registry rules compute with."""

    __slots__ = ("expr",)

    def __init__(self, expr):
        self.expr = expr

    def _binary(self, op, left, right):
        a, b = lift_value(left), lift_value(right)
        if op == "*" and (is_zero(a) or is_zero(b)):
            return Sym(constant(0.0))
        if op == "*" and is_one(a):
            return Sym(b)
        if op in ("*", "/") and is_one(b):
            return Sym(a)
        if op in ("+", "-") and is_zero(b):
            return Sym(a)
        if op == "+" and is_zero(a):
            return Sym(b)
        return Sym(ir.Binary(op, a, b, "f64"))

    def __add__(self, other):
        return self._binary("+", self, other)

    def __radd__(self, other):
        return self._binary("+", other, self)

    def __sub__(self, other):
        return self._binary("-", self, other)

    def __rsub__(self, other):
        return self._binary("-", other, self)

    def __mul__(self, other):
        return self._binary("*", self, other)

    def __rmul__(self, other):
        return self._binary("*", other, self)

    def __truediv__(self, other):
        return self._binary("/", self, other)

    def __rtruediv__(self, other):
        return self._binary("/", other, self)

    def __pow__(self, other):
        return self._binary("**", self, other)

    def __rpow__(self, other):
        return self._binary("**", other, self)

    def __neg__(self):
        return Sym(ir.Unary("-", self.expr, "f64"))

    def __abs__(self):
        return self.apply_builtin("abs")

    def _compare(self, op, other):
        return SymCondition(ir.Compare(op, self.expr, lift_value(other)))

    def __lt__(self, other):
        return self._compare("<", other)

    def __le__(self, other):
        return self._compare("<=", other)

    def __gt__(self, other):
        return self._compare(">", other)

    def __ge__(self, other):
        return self._compare(">=", other)

    def __eq__(self, other):
        return self._compare("==", other)

    def __ne__(self, other):
        return self._compare("!=", other)

    __hash__ = None

    def apply_builtin(self, name: str) -> "Sym":
        return Sym(ir.Builtin(name, (self.expr,), "f64"))

    def __float__(self):
        raise InternalError("a partial-derivative rule converted a symbolic value with "
                            "float(); write it with lifted functions (rlang/dual.py)")

    def __bool__(self):
        raise InternalError("a partial-derivative rule branched on a symbolic value; "
                            "write it with primitives.select")


class SymCondition:
    """A symbolic comparison: a rule can only `select` on it."""

    __slots__ = ("expr",)

    def __init__(self, expr):
        self.expr = expr

    def select(self, then, otherwise) -> Sym:
        a, b = lift_value(then), lift_value(otherwise)
        if a == b:
            return Sym(a)
        return Sym(ir.Select(self.expr, a, b, "f64"))

    def __bool__(self):
        raise InternalError("a partial-derivative rule branched on a symbolic value; "
                            "write it with primitives.select")


def differentiable(expr) -> bool:
    """Whether the chain rule goes through (or ends at) `expr`: a float value."""
    return expr.type in FLOATS


def partials(node) -> list:
    """(k, ∂node/∂operand k as an f64 IR expression) for each operand k of a float IR
    node (numbered as `ir.operands` numbers them) through which gradients flow; []
    for leaves, constants and integer operands."""
    if not differentiable(node):
        return []
    if isinstance(node, ir.Binary) and node.op in OPERATOR_PARTIALS:
        rule = OPERATOR_PARTIALS[node.op]
        return _pairs(node, rule(Sym(as_f64(node.left)), Sym(as_f64(node.right))))
    if isinstance(node, ir.Unary) and node.op == "-":
        return [(0, constant(-1.0))]
    if isinstance(node, ir.Convert):
        return _conversion_partial(node)
    if isinstance(node, (ir.Reinterpret, ir.Checked)):
        return [(0, constant(1.0))] if differentiable(ir.operands(node)[0]) else []
    if isinstance(node, ir.Builtin):
        builtin = BUILTINS[node.name]
        if builtin.partials is None or not all(a.type in FLOATS for a in node.args):
            return []
        return _pairs(node, builtin.partials(*(Sym(as_f64(a)) for a in node.args)))
    if isinstance(node, ir.Select):
        return [(1, ir.Select(node.cond, constant(1.0), constant(0.0), "f64")),
                (2, ir.Select(node.cond, constant(0.0), constant(1.0), "f64"))]
    return []


def _conversion_partial(node: ir.Convert) -> list:
    """A conversion between real types passes gradients unchanged; into a ulog it is
    ℓ = log x (∂ℓ/∂x = 1/x), out of one x = e^ℓ (∂x/∂ℓ = x)."""
    source = node.operand.type
    if source not in FLOATS:
        return []
    if node.type == "ulog":
        return [(0, ir.Binary("/", constant(1.0), as_f64(node.operand), "f64"))]
    if source == "ulog":
        return [(0, ir.Convert(node.operand, "f64"))]
    return [(0, constant(1.0))]


def _pairs(node, values) -> list:
    out = []
    for k, (child, value) in enumerate(zip(ir.operands(node), values)):
        if value is None or not differentiable(child):
            continue
        partial = lift_value(value)
        if not is_zero(partial):
            out.append((k, partial))
    return out
