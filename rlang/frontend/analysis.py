"""Facts about functions that several passes need.

`written_params(functions)` gives, per function, the positions of the parameters
its body may update (directly, or by passing them to a callee that may update the
corresponding parameter).  It is a least fixpoint over the call graph, so recursion
is handled.  The checker uses it for the static aliasing and `const`/`for`-index
rules; the interpreter for the run-time aliasing check of calls.
"""
from __future__ import annotations

from . import ast
from ..primitives import INSTRUCTION_TABLE


def walk_stmts(stmts):
    """Every statement in `stmts`, recursively (nested bodies included)."""
    for stmt in stmts:
        yield stmt
        yield from walk_stmts(child_bodies_flat(stmt))


def child_bodies_flat(stmt) -> tuple:
    """The statements directly nested in `stmt`, all bodies concatenated."""
    match stmt:
        case ast.Block(body=body) | ast.Routine(body=body) | ast.While(body=body) \
                | ast.For(body=body):
            return body
        case ast.From(body=body, step=step):
            return body + step
        case ast.If(branches=branches, orelse=orelse):
            return sum((b.body for b in branches), ()) + (orelse or ())
        case ast.Annotated(stmt=inner):
            return (inner,)
    return ()


def written_views(stmt, written: dict) -> list:
    """The views `stmt` itself (not its nested bodies) may update."""
    match stmt:
        case ast.Update(target=target):
            return [target]
        case ast.Instr(name=name, args=args):
            info = INSTRUCTION_TABLE.get(name)
            return [args[i] for i in info.written if i < len(args)] if info else []
        case ast.CallStmt(func=func, args=args):
            positions = written.get(func, frozenset())
            return [arg for i, arg in enumerate(args) if i in positions and ast.is_view(arg)]
        case ast.Derivative(targets=targets):
            return list(targets)
        case ast.Alloc(name=name) | ast.Dealloc(name=name):
            return [ast.Name(name, span=stmt.span)]
        case ast.Zeros(names=names):
            return [ast.Name(n, span=stmt.span) for n in names]
    return []


def written_params(functions: dict) -> dict:
    """function name → frozenset of the parameter positions it may write."""
    written = {name: frozenset() for name in functions}
    changed = True
    while changed:
        changed = False
        for name, fn in functions.items():
            params = [p.name for p in fn.params]
            found = set(written[name])
            for stmt in walk_stmts(fn.body):
                for view in written_views(stmt, written):
                    root = ast.view_root(view)
                    if root is not None and root.id in params:
                        found.add(params.index(root.id))
            if found != written[name]:
                written[name] = frozenset(found)
                changed = True
    return written
