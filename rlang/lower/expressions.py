"""Lowering of expressions to typed IR (the expression half of rlang/lower/statements.py).

`lower_expr(fl, node, literal_type)` takes a `_FunctionLowering` (for the scope,
the sites and the constants) and an AST expression, and returns an IR expression
whose operands have been converted to the operator's type.  The rules are those of
rlang/interp/ops.py and rlang/interp/scalar_functions.py, on types.
"""
from __future__ import annotations

import numpy as np

from ..frontend import ast
from ..ir import nodes as ir
from ..errors import RlangTypeError
from ..frontend.ast import is_number_literal
from ..interp.evaluate import view_text
from .complex_functions import complex_builtin, complex_power
from .complex import Pair, complex_binary, f64, load_pair, \
    negate, read_pair
from .systems import SYSTEMS, from_system, log_of, system_binary, system_constant, \
    to_system, zero_or_one
from ..numbers import F32, I32, Fixed, ULog
from ..primitives import BUILTINS
from ..types_rules import SUPPORTED_SCALARS, BackendUnsupported, builtin_type, promote
from ..values import OVERFLOW_MESSAGE, with_article

_ARITHMETIC = ("+", "-", "*", "/", "//", "%", "**")
_BITWISE = ("^", "&", "|", "<<", ">>")
_COMPARE = ("==", "!=", "<", "<=", ">", ">=")
def _folded(value, source: str, t: str):
    """The constant `value` of type `source` converted to `t` exactly as the emitted
    conversion would convert it, or None where it is left to run time.  (Folding
    f32(0.1) with Python's `float` kept 0.1 unrounded: llvm printed
    f64(f32(0.1)) as 0.1, the interpreter as 0.10000000149011612.)"""
    if t == "f64" and source in ("f64", "f32", "i64", "i32", "bool"):
        return float(value)
    if t == "f32" and source in ("f64", "f32"):
        return float(np.float32(value))
    if t == "i64" and source in ("i64", "i32", "bool"):
        return int(value)
    return None


def convert(value, t: str):
    """`value` as type `t` (constants are converted now where that is exact)."""
    if value.type == t:
        return value
    if isinstance(value.type, (ir.ArrayType, ir.StackType)):    # no code could do it
        raise BackendUnsupported(f"a conversion of {ir.type_text(value.type)} to "
                                 f"{ir.type_text(t)}")
    if isinstance(value, ir.Const):
        folded = _folded(value.value, value.type, t)
        if folded is not None:
            return ir.Const(folded, t)
    return ir.Convert(value, t)


def lower_expr(fl, node, literal_type: str | None = None):
    kind = type(node)
    if kind is ast.IntLit:
        return _int_literal(fl, node, node.value, literal_type)
    if kind is ast.FloatLit:
        if literal_type in SYSTEMS:
            return system_constant(float(node.value), literal_type, node.span)
        t = literal_type if literal_type == "f32" else "f64"
        return ir.Const(float(node.value), t)
    if kind is ast.BoolLit:
        return ir.Const(bool(node.value), "bool")
    if kind is ast.Name:
        return _name(fl, node)
    if kind is ast.Index:
        if isinstance(node.base, ast.Name) and len(node.indices) == 1 and \
                isinstance(getattr(fl.lookup_array(node.base.id), "type", None), ir.StackType):
            return _stack_element(fl, node)
        var = fl.array_var(node)
        if var.type.elem == "complex":
            return load_pair(var, fl.indices(node, var), fl.bounds_site(node))
        return ir.Load(var, fl.indices(node, var), fl.bounds_site(node))
    if kind is ast.Field:
        return fl.field_value(node)
    if kind is ast.ImagLit:
        return Pair(ir.Const(0.0, "f64"), ir.Const(float(node.value), "f64"))
    if kind is ast.Unary:
        return _unary(fl, node, literal_type)
    if kind is ast.Binary:
        return _binary(fl, node)
    if kind is ast.Call:
        return _call(fl, node)
    raise BackendUnsupported(f"the compiled backends do not handle {kind.__name__} "
                             "expressions yet", getattr(node, "span", None))


def _int_literal(fl, node, value: int, literal_type):
    """The integer literal `node` (of value `value`: a negated literal's node is the
    negation) where rev's literal rule gives it `literal_type` (None: i64).  An i32
    literal out of the i32 range fails where it is evaluated, as the interpreter's
    does (rlang/interp/evaluate.py `adapt_literal`).  Past the i64 range it is the
    interpreter's type error in every context (a ulog or f32 one too: the literal is
    an i64 before it adapts)."""
    if value >= 1 << 63:
        raise RlangTypeError(f"integer literal {value} is out of the range of i64 "
                             f"(at most {(1 << 63) - 1})", node.span)
    if literal_type in SYSTEMS:
        return system_constant(value, literal_type, node.span)
    if literal_type == "i32":
        if -(1 << 31) <= value < (1 << 31):
            return ir.Const(value, "i32")
        site = fl.error_site("message", node.span, (
            f"the literal {view_text(node)}: {value} is out of the range of i32",))
        return ir.Checked(ir.Const(0, "i32"), ir.Const(False, "bool"), site)
    if literal_type == "f32":
        return ir.Const(float(value), "f32")
    return ir.Const(value, "i64")


def _name(fl, node: ast.Name):
    var = fl.scope.get(node.id)
    if var is not None:
        return read_pair(var) if var.type == "complex" else ir.Read(var)
    consts = fl.lowering.consts
    if node.id in consts:
        value = consts[node.id]
        if isinstance(value, bool):
            return ir.Const(value, "bool")
        if isinstance(value, I32):
            return ir.Const(int(value), "i32")
        if isinstance(value, int):
            return ir.Const(value, "i64")
        if isinstance(value, F32):
            return ir.Const(float(value), "f32")
        if isinstance(value, float):
            return ir.Const(value, "f64")
        if isinstance(value, Fixed):
            return ir.Const(value.raw, "fixed")
        if isinstance(value, ULog):
            return ir.Const(value.log, "ulog")
        if isinstance(value, complex):
            return Pair(ir.Const(value.real, "f64"), ir.Const(value.imag, "f64"))
        array = fl.lookup_array(node.id)        # a constant array, read only
        if array is not None:
            return ir.Read(array)
        raise BackendUnsupported(f"the constant `{node.id}` has a type the compiled "
                                 "backends do not handle yet", node.span)
    raise RlangTypeError(f"`{node.id}` is not defined here", node.span)


def _unary(fl, node: ast.Unary, literal_type):
    if node.op == "-" and type(node.operand) is ast.IntLit and node.operand.value == 1 << 63:
        return ir.Const(-(1 << 63), "i64")
    if node.op == "-" and type(node.operand) is ast.IntLit:
        return _int_literal(fl, node, -node.operand.value, literal_type)
    if node.op == "-" and is_number_literal(node):
        if literal_type in SYSTEMS:
            inner = lower_expr(fl, node.operand)
            return system_constant(-inner.value, literal_type, node.span)
        inner = lower_expr(fl, node.operand, literal_type)
        return ir.Const(-inner.value, inner.type)
    operand = lower_expr(fl, node.operand)
    t = operand.type
    if node.op == "-" and t == "complex":
        return negate(operand)
    if node.op == "-":
        if t not in ("i32", "i64", "f32", "f64", "fixed"):
            hint = "; a ulog is never negative" if t == "ulog" else ""
            raise RlangTypeError(f"unary `-` cannot be applied to {_a_type(t)}{hint}",
                                 node.span)
        return ir.Unary("-", operand, t)
    if node.op == "!":
        if t != "bool":
            raise RlangTypeError(f"`!` needs a bool, got {_a_type(t)}", node.span)
        return ir.Unary("!", operand, "bool")
    if t == "bool":                 # `~` of a bool is its negation (rlang/interp/ops.py)
        return ir.Unary("!", operand, "bool")
    if t not in ("i32", "i64"):
        raise RlangTypeError(f"`~` needs an integer or bool, got {ir.type_text(t)}", node.span)
    return ir.Unary("~", operand, t)


def _operands(fl, node: ast.Binary):
    """Both operands, a number literal adopting a narrower type of the other."""
    left_literal, right_literal = is_number_literal(node.left), is_number_literal(node.right)
    if left_literal and not right_literal:
        right = lower_expr(fl, node.right)
        left = lower_expr(fl, node.left, _adopted(right.type))
    elif right_literal and not left_literal:
        left = lower_expr(fl, node.left)
        exponent = node.op == "**" and left.type == "ulog"     # `l ** 2` stays a number
        right = lower_expr(fl, node.right, None if exponent else _adopted(left.type))
    else:
        left, right = lower_expr(fl, node.left), lower_expr(fl, node.right)
    for side in (left, right):
        if isinstance(side.type, (ir.ArrayType, ir.StackType)):    # the interpreter's error
            verb = "cannot compare" if node.op in _COMPARE else "cannot be applied to"
            raise RlangTypeError(f"`{node.op}` {verb} {_a_type(side.type)}", node.span)
        if not isinstance(side.type, str) or side.type not in SUPPORTED_SCALARS:
            raise BackendUnsupported(f"`{node.op}` on {ir.type_text(side.type)} in the "
                                     "compiled backends", node.span)
    return left, right


def _a_type(t) -> str:
    """An IR type as the interpreter's errors name a value of it ("an f64[:]")."""
    return with_article(ir.type_text(t))


def _adopted(t):
    return t if t in ("i32", "f32", "fixed", "ulog") else None


def _stack_element(fl, node: ast.Index):
    """`s[k]`, element k of a stack from the bottom, read only (Janus's `top(s)` is
    `s[length(s) - 1]`): a Load of the stack, checked against its length."""
    var = fl.lookup_array(node.base.id)
    site = fl.error_site("stack_index", node.span)
    return ir.Load(var, (fl.index(node.indices[0]),), site)


def _binary(fl, node: ast.Binary):
    op = node.op
    if op in ("&&", "||"):
        return ir.Logic(op, fl.cond(node.left), fl.cond(node.right))
    left, right = _operands(fl, node)
    if left.type in SYSTEMS or right.type in SYSTEMS:
        return system_binary(fl, node, left, right)
    if left.type == "complex" or right.type == "complex":
        if op == "**":
            return complex_power(fl, node, left, right)
        return complex_binary(fl, node, left, right)
    if op in _COMPARE:
        if left.type == "bool" and right.type == "bool":
            return ir.Compare(op, left, right)
        t = promote(left.type, right.type)
        return ir.Compare(op, convert(left, t), convert(right, t))
    if op in _BITWISE:
        return _bitwise(node, left, right)
    if op not in _ARITHMETIC:
        raise RlangTypeError(f"unknown operator `{op}`", node.span)
    t = promote(left.type, right.type)
    if op == "/" and t in ("i32", "i64"):
        t = "f64"
    site = None
    if op in ("//", "%", "**") and t in ("i32", "i64") and not _cannot_fail(op, right):
        site = fl.error_site("intdiv" if op != "**" else "intpow", node.span, (op,))
    elif op in ("+", "-", "*") and t == "i64" and fl.lowering.unit.integers == "unbounded":
        site = fl.error_site("message", node.span, (OVERFLOW_MESSAGE,))  # Janus's integers
    return ir.Binary(op, convert(left, t), convert(right, t), t, site)


def _cannot_fail(op: str, right) -> bool:
    """An integer `//` or `%` by a nonzero constant, or `**` to a constant that is not
    negative: no check is needed (and none keeps the statement from being dropped
    as dead, Note [Dead uncomputation])."""
    if not isinstance(right, ir.Const) or isinstance(right.value, bool):
        return False
    return right.value != 0 if op != "**" else right.value >= 0


def _bitwise(node, left, right):
    op = node.op
    if left.type == "bool" and right.type == "bool" and op in ("^", "&", "|"):
        return ir.Binary(op, left, right, "bool")
    for side in (left, right):
        if side.type not in ("bool", "i32", "i64"):
            hint = "; did you mean `**`?" if op == "^" else ""
            raise RlangTypeError(f"`{op}` needs integers or bools, got {side.type}{hint}",
                                 node.span)
    if op in ("<<", ">>"):
        t = "i64" if left.type == "bool" else left.type
        return ir.Binary(op, convert(left, t), convert(right, "i64"), t)
    t = promote(left.type, right.type)
    return ir.Binary(op, convert(left, t), convert(right, t), t)


def _call(fl, node: ast.Call):
    name = node.func
    if name == "length":
        return ir.Dim(_array_arg(fl, node, 0, stacks=True), None)
    if name == "size":
        return _size(fl, node)
    if name in ("zero", "one"):
        scalar = node.args[0].type.scalar if isinstance(node.args[0], ast.TypeExpr) else None
        if scalar not in SUPPORTED_SCALARS:
            raise BackendUnsupported(f"`{name}({scalar})`: the compiled backends do not handle "
                                     f"{scalar} values yet", node.span)
        if scalar in SYSTEMS:
            return zero_or_one(scalar, name == "one")
        if scalar == "complex":
            return Pair(ir.Const(0.0 if name == "zero" else 1.0, "f64"), ir.Const(0.0, "f64"))
        unit = 0 if name == "zero" else 1
        return ir.Const(bool(unit) if scalar == "bool" else
                        float(unit) if scalar in ("f64", "f32") else unit, scalar)
    if name in ("f64", "f32", "i64", "i32", "bool"):
        value = lower_expr(fl, node.args[0])
        if value.type == name:
            return value
        if value.type not in SUPPORTED_SCALARS:
            raise BackendUnsupported(f"`{name}` of {ir.type_text(value.type)}", node.span)
        if value.type in SYSTEMS:
            return from_system(fl, value, name, node.span)
        if value.type == "complex":
            raise RlangTypeError(f"`{name}` of a complex number; use real(z), imag(z) or "
                                 "abs(z)", node.span)
        checked = name in ("i64", "i32", "bool") and (value.type in ir.FLOAT_TYPES or
                                                      name != "i64")
        if checked:
            return ir.Convert(value, name, fl.error_site("convert", node.span,
                                                          (name, value.type)))
        return convert(value, name)
    if name in SYSTEMS:
        value = lower_expr(fl, node.args[0])
        if value.type not in SUPPORTED_SCALARS:
            raise RlangTypeError(f"`{name}` cannot convert {ir.type_text(value.type)}",
                                 node.span)
        return to_system(fl, value, name, node.span)
    if name == "complex":
        return _complex_call(fl, node)
    builtin = BUILTINS.get(name)
    if builtin is None:
        raise BackendUnsupported(f"`{name}(…)` in compiled code", node.span)
    args = [lower_expr(fl, arg) for arg in node.args]
    if name == "log" and len(args) == 1 and args[0].type == "ulog":
        return log_of(args[0])              # the logarithm a ulog holds, exactly
    if any(a.type == "complex" for a in args):
        if builtin.complex_forward is None or len(args) != 1:
            raise RlangTypeError(f"`{name}` is not defined for complex numbers", node.span)
        return complex_builtin(fl, name, args[0], node.span)
    for arg in args:
        if isinstance(arg.type, (ir.ArrayType, ir.StackType)):    # the interpreter's error
            raise RlangTypeError(f"`{name}` needs numbers, got {_a_type(arg.type)}", node.span)
        if arg.type not in SUPPORTED_SCALARS:
            raise BackendUnsupported(f"`{name}` of {ir.type_text(arg.type)} in compiled code",
                                     node.span)
    t = builtin_type(builtin, [a.type for a in args])
    operand_type = t if t != "f32" else "f32"
    if builtin.int_preserving and t in ("i32", "i64"):
        operand_type = t
    return ir.Builtin(name, tuple(convert(a, operand_type) for a in args), t)


def _size(fl, node: ast.Call):
    """`size(a, d)`: a constant dimension d is an `ir.Dim`; any other is chosen at run
    time, checked to exist (the interpreter's RlangRuntimeError otherwise)."""
    var = _array_arg(fl, node, 0)
    dim = lower_expr(fl, node.args[1])
    ndim = var.type.ndim
    if isinstance(dim, ir.Const) and dim.type in ("i32", "i64") and 0 <= dim.value < ndim:
        return ir.Dim(var, dim.value)
    if dim.type not in ("i32", "i64"):
        raise BackendUnsupported("`size` needs an integer dimension in compiled code",
                                 node.args[1].span)
    d = convert(dim, "i64")
    extent = ir.Dim(var, ndim - 1)
    for axis in reversed(range(ndim - 1)):
        extent = ir.Select(ir.Compare("==", d, ir.Const(axis, "i64")), ir.Dim(var, axis),
                           extent, "i64")
    exists = ir.Logic("&&", ir.Compare(">=", d, ir.Const(0, "i64")),
                      ir.Compare("<", d, ir.Const(ndim, "i64")))
    site = fl.error_site("size_dimension", node.args[1].span, (ndim,))
    return ir.Checked(extent, exists, site, (d,))


def _complex_call(fl, node: ast.Call):
    """`complex(re, im)` of reals, or `complex(z)`."""
    parts = [lower_expr(fl, arg) for arg in node.args]
    if len(parts) == 1 and isinstance(parts[0], Pair):
        return parts[0]
    for part in parts:              # fixed and ulog parts too, by their values
        if part.type not in ("bool", "i32", "i64", "f32", "f64", "fixed", "ulog"):
            raise RlangTypeError(f"`complex(re, im)` needs real parts, got "
                                 f"{ir.type_text(part.type)}", node.span)
    if len(parts) == 1:
        return Pair(f64(parts[0]), ir.Const(0.0, "f64"))
    return Pair(f64(parts[0]), f64(parts[1]))


def _array_arg(fl, node, k, stacks: bool = False):
    """The array variable (or with `stacks`, the stack variable) argument k names."""
    arg = node.args[k]
    var = fl.lookup_array(arg.id) if isinstance(arg, ast.Name) else None
    kinds = (ir.ArrayType, ir.StackType) if stacks else ir.ArrayType
    if var is None or not isinstance(var.type, kinds):
        raise BackendUnsupported(f"`{node.func}` of something other than an array variable "
                                 "in compiled code", arg.span)
    return var

