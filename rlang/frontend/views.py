"""What the checker asks of views (Name, Index and Field expressions): the views an
expression reads, their index expressions, and whether two views share memory by
their names alone.  Pure functions of the AST, used by rlang/frontend/check.py."""
from __future__ import annotations

from .ast import ArrayLit, Binary, Call, Field, Index, Name, Unary, is_view

#: Built-ins that read only the shape of their first argument.
SHAPE_READERS = ("length", "size")


def children(expr) -> tuple:
    match expr:
        case Index():
            return (expr.base, *expr.indices)
        case Field():
            return (expr.base,)
        case Unary():
            return (expr.operand,)
        case Binary():
            return (expr.left, expr.right)
        case Call():
            return expr.args
        case ArrayLit():
            return expr.items
    return ()


def read_views(expr) -> list:
    """The views an expression reads (its maximal Name/Index/Field nodes, and those in
    their index expressions), in source order; `length(a)`/`size(a, d)` read only the
    shape of `a`.  An explicit stack, not nested generators: time linear in the size
    of the expression, and no Python recursion however deep it is."""
    views, pending = [], [expr]
    while pending:
        node = pending.pop()
        if is_view(node):
            views.append(node)
            inner = indices_of(node)
        elif isinstance(node, Call) and node.func in SHAPE_READERS and node.args:
            first = node.args[0]
            inner = (indices_of(first) if is_view(first) else [first]) + list(node.args[1:])
        else:
            inner = children(node)
        pending.extend(reversed(inner))
    return views


def indices_of(view) -> list:
    """The index expressions of a view, outermost first."""
    indices = []
    while isinstance(view, (Index, Field)):
        if isinstance(view, Index):
            indices.extend(view.indices)
        view = view.base
    return indices


def access_path(view) -> tuple[str, list]:
    steps = []
    while isinstance(view, (Index, Field)):
        steps.append(view.indices if isinstance(view, Index) else view.name)
        view = view.base
    return view.id, steps[::-1]


def overlaps(first, second) -> bool:
    """True when the names alone show that two views share memory: same root, and one
    access path is a prefix of the other (identical index expressions, same fields).
    Different index expressions are a question for run time, so they give False."""
    root1, path1 = access_path(first)
    root2, path2 = access_path(second)
    return root1 == root2 and all(a == b for a, b in zip(path1, path2))


def is_whole(view) -> bool:
    """True for a variable or a field of one: a view that no index selects a part of."""
    while isinstance(view, Field):
        view = view.base
    return isinstance(view, Name)
