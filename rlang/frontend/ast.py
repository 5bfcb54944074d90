"""The abstract syntax tree of rev.

Every node is a frozen dataclass (made by `records.record`); every node has a `span`
keyword field that is left out of equality, so two trees compare equal when they mean
the same program wherever their text stood (the round-trip and double-inversion tests
rely on this).  Children are tuples, so trees are hashable and safe to share.

Expressions
    IntLit, FloatLit, ImagLit, BoolLit, StrLit, ArrayLit, Name, Index, Field,
    Unary, Binary, Call (a pure built-in), TypeExpr (a type used as a value: f64, stack{f64})
Views (what a statement may update) are the expressions Name, Index and Field.
Statements
    Update, Instr, Alloc, Dealloc, Zeros, CallStmt, Derivative, Block, Routine,
    UnRoutine, If, While, From, For, Annotated, Safe
Top level
    Function, Const, Include, Program
"""
from __future__ import annotations

from dataclasses import field

from ..primitives import UPDATE_TABLE
from ..records import record
from ..span import NO_SPAN, Span


def _span():
    return field(default=NO_SPAN, compare=False, repr=False, kw_only=True)


# --------------------------------------------------------------------------- types

#: The scalar type names of the language (LANGUAGE.md §3).
SCALAR_TYPES = ("i64", "i32", "bool", "f64", "f32", "fixed", "ulog", "complex")


@record
class TypeRef:
    """A type as written: `f64`, `f64[:,:]` (ndim 2), `stack{i64}` (is_stack)."""

    #: a type passed as a value (`zeros(f64, n)`) is shown as "type" by
    #: rlang.values.type_name, which sits below the AST and reads this instead
    rev_type_name = "type"

    scalar: str
    ndim: int = 0
    is_stack: bool = False
    span: Span = _span()


# --------------------------------------------------------------------- expressions

@record
class IntLit:
    value: int
    span: Span = _span()


@record
class FloatLit:
    value: float
    span: Span = _span()


@record
class ImagLit:
    """An imaginary literal `2.0im`; `value` is the coefficient."""

    value: float
    span: Span = _span()


@record
class BoolLit:
    value: bool
    span: Span = _span()


@record
class StrLit:
    """A string; legal only as an argument of `@safe print/show/assert`."""

    value: str
    span: Span = _span()


@record
class ArrayLit:
    items: tuple
    span: Span = _span()


@record
class Name:
    id: str
    span: Span = _span()


@record
class Index:
    base: object            # an expression (a view when used as a target)
    indices: tuple          # expressions, 0-based
    span: Span = _span()


@record
class Field:
    base: object
    name: str               # "re" or "im"
    span: Span = _span()


@record
class Unary:
    op: str                 # "-", "!", "~"
    operand: object
    span: Span = _span()


@record
class Binary:
    op: str                 # "||" "&&" "==" "!=" "<" "<=" ">" ">=" "|" "^" "&" "<<" ">>"
                            # "+" "-" "*" "/" "//" "%" "**"
    left: object
    right: object
    span: Span = _span()


@record
class Call:
    """A call of a pure built-in function inside an expression: `sin(x)`, `zeros(f64, 3)`."""

    func: str
    args: tuple
    span: Span = _span()


@record
class TypeExpr:
    """A type written where a value stands, as in `zero(f64)` or `stack(i64)`."""

    type: TypeRef
    span: Span = _span()


VIEW_NODES = (Name, Index, Field)


def is_view(expr) -> bool:
    """True for a Name, or an Index/Field whose base is itself a view."""
    if isinstance(expr, Name):
        return True
    if isinstance(expr, (Index, Field)):
        return is_view(expr.base)
    return False


def view_root(expr) -> Name | None:
    """The variable a view is part of (`a` for `a[i].re`), or None if not a view."""
    while isinstance(expr, (Index, Field)):
        expr = expr.base
    return expr if isinstance(expr, Name) else None


# ---------------------------------------------------------------------- statements

#: Update operators and their inverses (the registry's, rlang/primitives.py).
UPDATE_OPS = {op: rule.inverse for op, rule in UPDATE_TABLE.items()}


@record
class Update:
    """`target op value` with op one of UPDATE_OPS (`⊻=` is spelt `^=`)."""

    target: object
    op: str
    value: object
    span: Span = _span()


@record
class Instr:
    """A built-in instruction `NAME(args…)`; `a <=> b` is `Instr("SWAP", (a, b))`."""

    name: str
    args: tuple
    span: Span = _span()


@record
class Alloc:
    """`name ← value`: a new local variable (an ancilla)."""

    name: str
    value: object
    span: Span = _span()


@record
class Dealloc:
    """`name → value`: free a local whose value must equal `value`."""

    name: str
    value: object
    span: Span = _span()


@record
class Zeros:
    """`@zeros T a b c` (or `~@zeros T a b c` when `inverse`)."""

    type: TypeRef
    names: tuple
    inverse: bool = False
    span: Span = _span()


@record
class CallStmt:
    """`f(args…)`, or `~f(args…)` when `inverse`."""

    func: str
    args: tuple
    inverse: bool = False
    span: Span = _span()


@record
class Derivative:
    """`grad f(args…) wrt p, … into t, …`: add to the views `targets` the gradient of
    f's first parameter (the loss, after f runs on `args`) with respect to f's
    parameters `wrt` (names), by reverse mode (`mode` "grad") or forward mode
    ("fgrad"); `~grad …` (`inverse`) subtracts it.  docs/nested.md."""

    mode: str
    func: str
    args: tuple
    wrt: tuple
    targets: tuple
    inverse: bool = False
    span: Span = _span()


@record
class Block:
    """`begin … end`, or `~begin … end` (run the inverse of the body) when `inverse`."""

    body: tuple
    inverse: bool = False
    span: Span = _span()


@record
class Routine:
    """`@routine begin … end`: run now; the matching `~@routine` runs its inverse."""

    body: tuple
    span: Span = _span()


@record
class UnRoutine:
    """`~@routine`: undo the nearest unmatched `@routine` of the same block."""

    span: Span = _span()


@record
class IfBranch:
    """One `if`/`elseif` arm; `post` is None when it is the same as `pre`."""

    pre: object
    post: object
    body: tuple
    span: Span = _span()


@record
class If:
    branches: tuple                 # of IfBranch, at least one
    orelse: tuple | None = None     # the `else` body, or None when absent
    span: Span = _span()


@record
class While:
    pre: object
    post: object
    body: tuple
    span: Span = _span()


@record
class From:
    """Janus loop `from start do body loop step until stop`."""

    start: object
    body: tuple
    step: tuple
    stop: object
    span: Span = _span()


@record
class For:
    """`for var = start:step:stop … end` (inclusive; step is IntLit(1) when omitted)."""

    var: str
    start: object
    step: object
    stop: object
    body: tuple
    parallel: bool = False
    span: Span = _span()


@record
class Annotated:
    """`@invcheckoff S` or `@inbounds S` (`annotation` without the `@`)."""

    annotation: str
    stmt: object
    span: Span = _span()


@record
class Safe:
    """`@safe print(…)`, `@safe show(…)`, `@safe assert(cond[, "msg"])`."""

    func: str
    args: tuple
    span: Span = _span()


# ----------------------------------------------------------------------- top level

@record
class Param:
    name: str
    type: TypeRef | None = None
    span: Span = _span()


@record
class Function:
    name: str
    params: tuple           # of Param
    body: tuple
    inline: bool = False
    span: Span = _span()


@record
class Const:
    name: str
    value: object
    span: Span = _span()


@record
class Include:
    path: str
    span: Span = _span()


@record
class Program:
    items: tuple            # Function, Const and Include, in source order
    span: Span = _span()

    @property
    def functions(self) -> tuple:
        return tuple(item for item in self.items if isinstance(item, Function))


def is_number_literal(node) -> bool:
    """An integer or float literal, possibly negated: `2`, `0.5`, `-3.0`."""
    if isinstance(node, Unary) and node.op == "-":
        node = node.operand
    return isinstance(node, (IntLit, FloatLit))
