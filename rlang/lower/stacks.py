"""Lowering of stacks (Note [Stacks in the IR], rlang/ir/nodes.py): the stack half of
rlang/lower/statements.py.

Each function takes the `_FunctionLowering` `fl` (scope, sites, places) and an AST
statement, and returns the IR statements:

- `push_pop(fl, stmt)`: PUSH / POP → `ir.Push` / `ir.Pop`, with the interpreter's
  type errors (rlang/interp/instructions.py) raised while lowering;
- `stack_alloc(fl, stmt)`: `s ← stack(T)` → an `ir.Alloc` of an empty stack;
- `stack_dealloc(fl, stmt, var)`: `s → stack(T)` → an `ir.Dealloc` checking that
  the stack is empty (with the checks on).
"""
from __future__ import annotations

from ..frontend import ast
from ..ir import nodes as ir
from ..errors import RlangTypeError
from ..types_rules import SUPPORTED_SCALARS, BackendUnsupported
from ..values import with_article


def is_stack_call(node) -> bool:
    """Whether `node` is the expression `stack(T)`."""
    return isinstance(node, ast.Call) and node.func == "stack"


def push_pop(fl, stmt: ast.Instr) -> list:
    stack_node, value_node = stmt.args[0], stmt.args[1]
    stack = fl.place(stack_node)
    if not isinstance(stack.type, ir.StackType):
        raise RlangTypeError(f"{stmt.name} needs a stack as its first operand, got "
                             f"{with_article(ir.type_text(stack.type))}", stmt.span)
    elem = stack.type.elem
    place = fl.place(value_node)
    if place.type != elem:
        raise RlangTypeError(f"{stmt.name} needs {with_article(elem)} to go with the "
                             f"stack{{{elem}}} `{_text(stack_node)}`, got "
                             f"{with_article(ir.type_text(place.type))}", stmt.span)
    if stmt.name == "PUSH":
        memory = fl.error_site("stack_memory", stmt.span, (_text(stack_node),))
        return [ir.Push(stack.var, place, memory)]
    empty = fl.error_site("pop_empty", stmt.span, (_text(stack_node), fl.checks))
    zero = fl.site("pop_zero", stmt.span, (_text(value_node), elem))
    return [ir.Pop(stack.var, place, empty, zero)]


def names_stack(fl, node) -> ir.Var | None:
    """The stack variable a name denotes (None: not a stack variable)."""
    var = fl.scope.get(node.id) if isinstance(node, ast.Name) else None
    return var if var is not None and isinstance(var.type, ir.StackType) else None


def stack_alloc(fl, stmt: ast.Alloc) -> list:
    """`s ← stack(T)`: a new empty stack of T; `s ← t`: a copy of the stack t."""
    source = names_stack(fl, stmt.value)
    elem = source.type.elem if source is not None else _element_type(stmt.value)
    var = ir.Var(stmt.name, ir.StackType(elem))
    fl.scope[stmt.name] = var
    return [ir.Alloc(var, None if source is None else ir.Read(source))]


def stack_dealloc(fl, stmt: ast.Dealloc, var: ir.Var) -> list:
    """`s → stack(T)`: the stack must be empty (the interpreter compares it with an
    empty stack item by item, whatever T); `s → t`: it must equal the stack t of the
    same type, item by item."""
    source = names_stack(fl, stmt.value)
    if source is not None:
        if source.type != var.type:
            raise BackendUnsupported(f"deallocating a {ir.type_text(var.type)} with a "
                                     f"{ir.type_text(source.type)} in compiled code",
                                     stmt.value.span)
        return [ir.Dealloc(var, ir.Read(source), fl.site("dealloc_stack", stmt.span,
                                                         (stmt.name, var.type.elem)))]
    if not is_stack_call(stmt.value):
        raise BackendUnsupported("the compiled backends deallocate stacks with `stack(T)` "
                                 "or another stack", stmt.value.span)
    _element_type(stmt.value)
    return [ir.Dealloc(var, None, fl.site("dealloc_stack", stmt.span,
                                          (stmt.name, var.type.elem)))]


def _element_type(node: ast.Call) -> str:
    arg = node.args[0] if len(node.args) == 1 else None
    t = arg.type if isinstance(arg, ast.TypeExpr) else None
    if t is None or t.ndim or t.is_stack:
        raise RlangTypeError("`stack(T)` needs a scalar type T", node.span)
    if t.scalar not in SUPPORTED_SCALARS:
        raise BackendUnsupported(f"stacks of {t.scalar} in the compiled backends", node.span)
    return t.scalar


def _text(node) -> str:
    from ..frontend.printer import format_expr

    return format_expr(node)
