"""Expressions and views, evaluated by the interpreter.

`Evaluator.eval(expr, env)` gives the value of a pure expression in an environment
(a dict of local variables; constants come from the evaluator).  `Evaluator.ref(view,
env)` resolves a view (`x`, `a[i, j]`, `z.re`) to a `Ref` that can be read and
written; index expressions are evaluated once, when the ref is made.

While a ref is `watched`, reading that same memory in an expression raises a
ReversibilityError: this is the run-time half of the rule "the target of an update
is not read by its right-hand side" (LANGUAGE.md §5), for `a[i] += a[j]`, i == j.
"""
from __future__ import annotations


import numpy as np

from ..frontend import ast
from . import ops
from ..errors import ReversibilityError, RlangRuntimeError, RlangTypeError
from ..primitives import BUILTINS, CONSTANTS, CONVERSIONS
from .limits import LITERAL_ITEM_BYTES, array_bytes
from .scalar_functions import apply_builtin, convert
from ..dual import Dual, refuse_tangent
from ..gvalue import GVar, value_of
from ..numbers import F32, I32, Fixed, ULog
from ..values import (ELEMENT_OVERFLOW_MESSAGE, I64_MAX, SUMMARY_ITEMS, UNBOUNDED_INTEGERS,
                     Stack, a_type, array_from_nested, array_to_nested, make_array, one_of,
                     read_element, stack_index_message, summarize, summarize_array_start,
                     type_name, write_element, zero_of)


class Ref:
    """A resolved view: something that can be read and written.  `text` (how the view
    is written in source, for messages) is computed only when a message needs it, and
    is also the Ref's `str()`."""

    __slots__ = ()

    def __str__(self):
        return self.text


class VarRef(Ref):
    """A whole local variable."""

    __slots__ = ("env", "name", "text")

    def __init__(self, env: dict, name: str):
        self.env, self.name, self.text = env, name, name

    def get(self):
        return self.env[self.name]

    def set(self, value):
        self.env[self.name] = value

    def overlaps(self, other: Ref) -> bool:
        if isinstance(other, VarRef):
            if self.env is other.env and self.name == other.name:
                return True
            mine = self.env[self.name]
            return isinstance(mine, np.ndarray) and mine is other.env[other.name]
        return other.overlaps(self)


class ElemRef(Ref):
    """One element of an array."""

    __slots__ = ("array", "index", "view", "log")

    def __init__(self, array: np.ndarray, index: tuple, view, log):
        self.array, self.index, self.view, self.log = array, index, view, log

    @property
    def text(self) -> str:
        return view_text(self.view)

    def get(self):
        return read_element(self.array, self.index)

    def set(self, value):
        if self.log is not None:
            self.log(self)
        try:
            write_element(self.array, self.index, value)
        except OverflowError:       # an unbounded (Janus) integer past the element's i64
            raise RlangRuntimeError(ELEMENT_OVERFLOW_MESSAGE, self.view.span) from None

    def overlaps(self, other: Ref) -> bool:
        if isinstance(other, ElemRef):
            return self.array is other.array and self.index == other.index
        if isinstance(other, FieldRef):
            return other.overlaps(self)
        return isinstance(other, VarRef) and other.env[other.name] is self.array


class FieldRef(Ref):
    """The `.re` or `.im` part of a complex view."""

    __slots__ = ("base", "field", "view")

    def __init__(self, base: Ref, field: str, view):
        self.base, self.field, self.view = base, field, view

    @property
    def text(self) -> str:
        return view_text(self.view)

    def get(self):
        value = self.base.get()
        return value.real if self.field == "re" else value.imag

    def set(self, value):
        refuse_tangent(value, "complex")
        old = self.base.get()
        new = complex(value, old.imag) if self.field == "re" else complex(old.real, value)
        self.base.set(new)

    def overlaps(self, other: Ref) -> bool:
        if isinstance(other, FieldRef):
            return self.base.overlaps(other.base) and self.field == other.field
        return self.base.overlaps(other)


def view_text(view) -> str:
    """How a view is written in source: `a[…]` keeps only the root and the shape."""
    from ..frontend.printer import format_expr

    try:
        return format_expr(view)
    except Exception:  # the printer is only used for messages here
        root = ast.view_root(view)
        return root.id if root is not None else "?"


class Evaluator:
    """Evaluates expressions; `consts` holds the program's constants by name."""

    def __init__(self, consts: dict):
        self.consts = consts
        self.watched: Ref | None = None
        self.write_log = None      # called with each ElemRef written (parallel loops)
        self.dual_mode = False     # a Hessian run: f64 arrays hold dual numbers
        self.memo: dict | None = None   # when a dict: id(node) → value of every node evaluated
        self.budget = None         # the interpreter's sandbox Budget, if any (limits.py)

    # ---------------------------------------------------------------- views
    def ref(self, view, env: dict) -> Ref:
        """Resolve a view to a Ref (RlangTypeError if it is not a view)."""
        if isinstance(view, ast.Name):
            if view.id in env:
                return VarRef(env, view.id)
            if view.id in self.consts or view.id in CONSTANTS:
                raise RlangTypeError(f"`{view.id}` is a constant and cannot be updated",
                                     view.span)
            raise RlangRuntimeError(f"`{view.id}` is not defined here", view.span)
        if isinstance(view, ast.Index):
            array = self._array_of(view.base, env)
            index = self.indices(view, array, env)
            return ElemRef(array, index, view, self.write_log)
        if isinstance(view, ast.Field):
            base = self.ref(view.base, env)
            value = value_of(base.get())
            if not isinstance(value, complex):
                raise RlangTypeError(f"`.{view.name}` needs a complex value, got "
                                     f"{a_type(value)}", view.span)
            return FieldRef(base, view.name, view)
        raise RlangTypeError("only a variable, an array element or a field can be updated",
                             getattr(view, "span", None))

    def _array_of(self, base, env):
        array = self.eval(base, env)
        if not isinstance(array, np.ndarray):
            raise RlangTypeError(f"cannot index {a_type(array)}", base.span)
        return array

    def indices(self, node: ast.Index, array: np.ndarray, env: dict) -> tuple:
        """The evaluated, bounds-checked index tuple of `node` into `array`."""
        if len(node.indices) != array.ndim:
            raise RlangTypeError(f"{type_name(array)} needs {array.ndim} "
                                 f"ind{'ex' if array.ndim == 1 else 'ices'}, got "
                                 f"{len(node.indices)}", node.span)
        index = []
        for expr, extent in zip(node.indices, array.shape):
            i = self.eval(expr, env)
            if isinstance(i, bool) or not isinstance(i, int):
                raise RlangTypeError(f"an index must be an integer, got {type_name(i)} "
                                     f"{summarize(i)}", expr.span)
            if not 0 <= i < extent:
                raise RlangRuntimeError(
                    f"index {i} is out of bounds for an axis of length {extent} "
                    f"(indices are 0-based)", expr.span)
            index.append(i)
        return tuple(index)

    # ---------------------------------------------------------- expressions
    def eval(self, expr, env: dict):
        """The value of `expr`."""
        method = _EVAL.get(type(expr))
        if method is None:
            raise RlangTypeError(f"{type(expr).__name__} is not an expression",
                                 getattr(expr, "span", None))
        value = method(self, expr, env)
        if self.memo is not None:
            self.memo[id(expr)] = value
        return value

    def eval_expected(self, expr, env: dict):
        """The value a deallocation compares with: `eval(expr)`, except that
        `zeros(T, n…)` is a read-only view of one zero of that shape, so that checking
        `a → zeros(T, n)` takes no memory the size of `a` (nor counts in a sandbox)."""
        if type(expr) is ast.Call and expr.func == "zeros":
            scalar, shape = _zeros_shape(self, expr, env)
            one = make_array((1,) * len(shape), scalar, dual=self.dual_mode)
            try:
                return np.broadcast_to(one, tuple(shape), subok=True)
            except ValueError:      # more bytes than NumPy can address: no array has
                raise UnaddressableZeros(one, tuple(shape)) from None   # that shape
        return self.eval(expr, env)

    def eval_recording(self, expr, env: dict, memo: dict):
        """The value of `expr`, recording in `memo` the value of every node evaluated
        (id(node) → value), so that a gradient pass need not evaluate them again."""
        outer, self.memo = self.memo, memo
        try:
            return self.eval(expr, env)
        finally:
            self.memo = outer

    def _name(self, expr: ast.Name, env):
        name = expr.id
        if name in env:
            value = env[name]
            if type(value) is GVar:         # the gradient run: expressions see values
                value = value.x
            watched = self.watched
            if watched is not None and isinstance(watched, VarRef) and watched.env is env \
                    and watched.name == name:
                raise _alias_error(watched, expr)
            return value
        if name in self.consts:
            return self.consts[name]
        if name in CONSTANTS:
            return CONSTANTS[name]
        raise RlangRuntimeError(f"`{name}` is not defined here", expr.span)

    def _index(self, expr: ast.Index, env):
        array = self.eval(expr.base, env)
        if not isinstance(array, np.ndarray):
            if isinstance(array, Stack) and len(expr.indices) == 1:
                return self._stack_element(array, expr, env)
            raise RlangTypeError(f"cannot index {a_type(array)}", expr.base.span)
        index = self.indices(expr, array, env)
        watched = self.watched
        if watched is not None:
            element = watched.base if type(watched) is FieldRef else watched
            if type(element) is ElemRef and element.array is array and element.index == index:
                raise _alias_error(watched, expr)
        return read_element(array, index)

    def _stack_element(self, stack: Stack, expr: ast.Index, env):
        """`s[k]`, element k of a stack counted from the bottom: read only, what
        Janus's `top(s)` is (Note [Janus in rev's AST])."""
        k = self.eval(expr.indices[0], env)
        if isinstance(k, bool) or not isinstance(k, int):
            raise RlangTypeError(f"an index must be an integer, got {type_name(k)} "
                                 f"{summarize(k)}", expr.indices[0].span)
        if not 0 <= k < len(stack.items):
            raise RlangRuntimeError(stack_index_message(k, len(stack.items)), expr.span)
        return stack.items[k]

    def _field(self, expr: ast.Field, env):
        watched = self.watched
        if type(watched) is FieldRef and ast.is_view(expr.base):
            # a field target conflicts only with the same field of the same value
            self.watched = None
            try:
                base = self.ref(expr.base, env)
                value = value_of(base.get())
            finally:
                self.watched = watched
            if watched.field == expr.name and watched.base.overlaps(base):
                raise _alias_error(watched, expr)
        else:
            value = self.eval(expr.base, env)
        if not isinstance(value, complex):
            raise RlangTypeError(f"`.{expr.name}` needs a complex value, got "
                                 f"{a_type(value)}", expr.span)
        return value.real if expr.name == "re" else value.imag

    def _unary(self, expr: ast.Unary, env):
        if expr.op == "-" and type(expr.operand) is ast.IntLit and expr.operand.value == 1 << 63:
            return -(1 << 63)      # the literal -9223372036854775808
        return ops.unary(expr.op, self.eval(expr.operand, env), expr.span)

    def _int(self, expr: ast.IntLit, env):
        if expr.value > I64_MAX and not UNBOUNDED_INTEGERS.get():
            raise RlangTypeError(f"integer literal {expr.value} is out of the range of i64 "
                                 f"(at most {I64_MAX})", expr.span)
        return expr.value

    def _binary(self, expr: ast.Binary, env):
        op = expr.op
        if op in ("&&", "||"):
            left = ops.truth(self.eval(expr.left, env), f"the left operand of `{op}`",
                             expr.left.span)
            if left == (op == "||"):
                return left
            return ops.truth(self.eval(expr.right, env), f"the right operand of `{op}`",
                             expr.right.span)
        left, right = self.eval(expr.left, env), self.eval(expr.right, env)
        if type(expr.left) in _LITERAL_NODES or type(expr.right) in _LITERAL_NODES:
            left, right = adapt_literals(expr, left, right)
        return ops.binary(op, left, right, expr.span)

    def _array(self, expr: ast.ArrayLit, env):
        items = [self.eval(item, env) for item in expr.items]
        if self.budget is not None:
            count = sum(item.size if isinstance(item, np.ndarray) else 1 for item in items)
            self.budget.check(count * LITERAL_ITEM_BYTES, expr.span, "an array literal")
        nested = [array_to_nested(item) if isinstance(item, np.ndarray) else item
                  for item in items]
        for item in items:
            if not isinstance(item, (bool, int, float, complex, Fixed, ULog, Dual, np.ndarray)):
                raise RlangTypeError(f"an array literal cannot hold {a_type(item)}",
                                     expr.span)
        shapes = {np.shape(item) for item in nested}
        if len(shapes) > 1:
            raise RlangTypeError("the rows of an array literal must all have the same shape, "
                                 f"got {', '.join(str(s) for s in sorted(shapes))}", expr.span)
        try:
            return array_from_nested(nested, dual=self.dual_mode)
        except (ValueError, OverflowError, TypeError) as error:
            raise RlangTypeError(f"invalid array literal: {error}", expr.span) from None

    def _call(self, expr: ast.Call, env):
        name = expr.func
        handler = _STRUCTURAL.get(name)
        if handler is not None:
            return handler(self, expr, env)
        if name in CONVERSIONS:
            return convert(name, self.eval(expr.args[0], env), expr.span)
        builtin = BUILTINS.get(name)
        if builtin is None:
            raise RlangTypeError(f"`{name}` is not a built-in function", expr.span)
        if not builtin.min_args <= len(expr.args) <= builtin.max_args:
            raise RlangTypeError(f"`{name}` takes {builtin.min_args} argument(s), got "
                                 f"{len(expr.args)}", expr.span)
        args = [self.eval(arg, env) for arg in expr.args]
        return apply_builtin(builtin, args, expr.span)


_LITERAL_NODES = (ast.IntLit, ast.FloatLit, ast.Unary)


def adapt_literals(expr: ast.Binary, left, right):
    """A number literal takes the type of the other operand where that type is
    narrower than the literal's default (i32, f32) or is a number system (fixed,
    ulog): `x * 2.0` stays f32 when x is, `q + 0.5` is fixed when q is."""
    if expr.op == "**" and type(left) is ULog:     # `l ** 2`: the exponent stays a number
        return left, right
    if ast.is_number_literal(expr.left) and not ast.is_number_literal(expr.right):
        left = adapt_literal(left, right, expr.left)
    elif ast.is_number_literal(expr.right) and not ast.is_number_literal(expr.left):
        right = adapt_literal(right, left, expr.right)
    return left, right


def adapt_literal(value, other, node):
    """`value` (a literal's) converted to the type of `other` when rev's literal rule
    applies; otherwise unchanged."""
    kind = type(other)
    try:
        if kind is I32 and type(value) is int:
            if not -(1 << 31) <= value < (1 << 31):
                raise ValueError(f"{value} is out of the range of i32")
            return I32(value)
        if kind is F32 and type(value) in (int, float):
            return F32(value)
        if kind is Fixed and type(value) in (int, float):
            return Fixed.from_value(value)
        if kind is ULog and type(value) in (int, float):
            return ULog.from_value(value)
    except ValueError as error:
        raise RlangRuntimeError(f"the literal {format_expr_safe(node)}: {error}",
                                node.span) from None
    return value


def format_expr_safe(node) -> str:
    return view_text(node)


def _alias_error(watched: Ref, read) -> ReversibilityError:
    return ReversibilityError(
        f"`{watched.text}` is read by the right-hand side of its own update "
        f"(the same memory as `{view_text(read)}`)", read.span)


def _type_arg(evaluator, expr: ast.Call, position: int = 0) -> ast.TypeRef:
    arg = expr.args[position]
    if not isinstance(arg, ast.TypeExpr):
        raise RlangTypeError(f"`{expr.func}` needs a type (such as f64) as argument "
                             f"{position + 1}", arg.span)
    scalar = arg.type.scalar
    if scalar == "stack":
        raise RlangTypeError("`stack` is not a scalar type", arg.span)
    return arg.type


def _length(evaluator, expr, env):
    value = evaluator.eval(expr.args[0], env)
    if isinstance(value, np.ndarray):
        return int(value.size)
    if isinstance(value, Stack):
        return len(value.items)
    raise RlangTypeError(f"`length` needs an array or a stack, got {a_type(value)}",
                         expr.span)


def _size(evaluator, expr, env):
    value = evaluator.eval(expr.args[0], env)
    dim = evaluator.eval(expr.args[1], env)
    if not isinstance(value, np.ndarray):
        raise RlangTypeError(f"`size` needs an array, got {a_type(value)}", expr.span)
    if isinstance(dim, bool) or not isinstance(dim, int) or not 0 <= dim < value.ndim:
        raise RlangRuntimeError(f"`size`: dimension {summarize(dim)} does not exist in a "
                                f"{value.ndim}-dimensional array (dimensions are 0-based)",
                                expr.args[1].span)
    return int(value.shape[dim])


def _zero(evaluator, expr, env):
    return zero_of(_type_arg(evaluator, expr).scalar)


def _one(evaluator, expr, env):
    return one_of(_type_arg(evaluator, expr).scalar)


def _zeros_shape(evaluator, expr, env) -> tuple[str, list]:
    """The scalar type and the shape of `zeros(T, n…)`."""
    scalar = _type_arg(evaluator, expr).scalar
    shape = []
    for arg in expr.args[1:]:
        n = evaluator.eval(arg, env)
        if isinstance(n, bool) or not isinstance(n, int) or n < 0:
            raise RlangRuntimeError(f"`zeros`: a dimension must be a non-negative integer, "
                                    f"got {summarize(n)}", arg.span)
        shape.append(n)
    return scalar, shape


class UnaddressableZeros(Exception):
    """`zeros(T, n…)` of more bytes than NumPy can address, as the value of a
    deallocation: no array equals it (`one` is one zero of T, of the right rank)."""

    def __init__(self, one: np.ndarray, shape: tuple):
        super().__init__(shape)
        self.one, self.shape = one, shape

    def summary(self) -> str:
        """The expected value as `summarize` shows a long array."""
        first = np.broadcast_to(self.one.reshape(-1), (SUMMARY_ITEMS,))
        return summarize_array_start(first, self.shape)


def _zeros(evaluator, expr, env):
    scalar, shape = _zeros_shape(evaluator, expr, env)
    if evaluator.budget is not None:
        evaluator.budget.check(array_bytes(shape, scalar), expr.span,
                               f"an array of shape {tuple(shape)}")
    try:
        return make_array(shape, scalar, dual=evaluator.dual_mode)
    except (MemoryError, ValueError):       # no memory, or more bytes than an int64
        raise RlangRuntimeError(f"`zeros`: cannot allocate an array of shape {tuple(shape)}",
                                expr.span) from None


def _stack(evaluator, expr, env):
    return Stack(_type_arg(evaluator, expr).scalar)


def _complex(evaluator, expr, env):
    parts = [refuse_tangent(evaluator.eval(arg, env), "complex") for arg in expr.args]
    if len(parts) == 1 and isinstance(parts[0], complex):
        return parts[0]
    for part in parts:
        if type(part) not in (bool, int, I32, float, F32, Fixed, ULog):
            raise RlangTypeError(f"`complex` needs real numbers, got {a_type(part)}",
                                 expr.span)
    return complex(*(float(p) for p in parts))


_STRUCTURAL = {"length": _length, "size": _size, "zero": _zero, "one": _one,
               "zeros": _zeros, "stack": _stack, "complex": _complex}


_EVAL = {
    ast.IntLit: Evaluator._int,
    ast.FloatLit: lambda self, e, env: e.value,
    ast.BoolLit: lambda self, e, env: e.value,
    ast.StrLit: lambda self, e, env: e.value,
    ast.ImagLit: lambda self, e, env: complex(0.0, e.value),
    ast.TypeExpr: lambda self, e, env: e.type,
    ast.Name: Evaluator._name,
    ast.Index: Evaluator._index,
    ast.Field: Evaluator._field,
    ast.Unary: Evaluator._unary,
    ast.Binary: Evaluator._binary,
    ast.ArrayLit: Evaluator._array,
    ast.Call: Evaluator._call,
}
