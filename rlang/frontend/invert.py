"""The inverter: AST of a statement → AST of its inverse (LANGUAGE.md §6).

`invert_stmt(s)` has one case per statement form; `invert_body(stmts)` inverts a
statement list (reversed order, each statement inverted, `@routine` pairs kept in
place with their middle inverted); `invert_function` and `invert_program` lift it to
whole definitions.  Everything here is pure, inverted nodes keep the span of the node
they came from (so a failure while running backward points at the forward source),
and `invert(invert(x)) == x` for every tree the parser produces.

# Note [Loop inversion]
`for i = a:s:b` visits a, a+s, …, L with L = a + s·⌊(b−a)/s⌋.  Its inverse visits
the same values from L back to a: `for i = L:-s:a`.  When |s| is the literal 1,
L is just b (or the loop is empty either way), so the inverse is `for i = b:-s:a`.
Otherwise the start is written out as the expression `a + s * ((b - a) // s)`, and
inverting a loop of exactly that shape gives back `for i = a:s:b`, which keeps
inversion an involution.  `b - a` overflows i64 when the range is wider than 2^63;
so the interpreter and the compiled backends recognise that shape
(`inverted_range`) and run the range a:s:b backward, computing L exactly, instead
of evaluating the expression.
"""
from __future__ import annotations

from dataclasses import replace

from . import ast
from ..errors import InternalError, RlangError
from ..primitives import INSTRUCTION_TABLE


def invert_stmt(stmt):
    """The statement that undoes `stmt`."""
    match stmt:
        case ast.Update(op=op):
            return replace(stmt, op=ast.UPDATE_OPS[op])
        case ast.Instr(name=name):
            return replace(stmt, name=INSTRUCTION_TABLE[name].inverse)
        case ast.Alloc(name=name, value=value):
            return ast.Dealloc(name, value, span=stmt.span)
        case ast.Dealloc(name=name, value=value):
            return ast.Alloc(name, value, span=stmt.span)
        case ast.Zeros(inverse=inverse):
            return replace(stmt, inverse=not inverse)
        case ast.CallStmt(inverse=inverse) | ast.Derivative(inverse=inverse):
            return replace(stmt, inverse=not inverse)
        case ast.Block(body=body):
            # `~begin B end` undoes B, so its inverse `~begin ~B end` runs B again;
            # flipping the body and keeping the flag makes this an involution.
            return replace(stmt, body=invert_body(body))
        case ast.If():
            return _invert_if(stmt)
        case ast.While(pre=pre, post=post, body=body):
            return ast.While(post, pre, invert_body(body), span=stmt.span)
        case ast.From(start=start, body=body, step=step, stop=stop):
            return ast.From(stop, invert_body(body), invert_body(step), start, span=stmt.span)
        case ast.For():
            return _invert_for(stmt)
        case ast.Annotated(stmt=inner):
            return replace(stmt, stmt=invert_stmt(inner))
        case ast.Safe():
            return stmt
        case ast.Routine() | ast.UnRoutine():
            raise InternalError("@routine markers are inverted with their block (invert_body)")
    raise InternalError(f"invert_stmt: unknown statement {type(stmt).__name__}")


def invert_body(stmts: tuple) -> tuple:
    """The inverse of a statement list.

    The list is read as a sequence of items, where an item is a statement or a
    routine segment `@routine R; middle…; ~@routine`.  The inverse lists the items in
    reverse order, inverting plain statements and, for a segment, keeping R and
    inverting the middle (compute – copy – uncompute, with the copy undone).
    Unpaired markers are left where they are (the checker reports them).
    """
    items = _segment(list(stmts))
    return tuple(_flatten(_invert_item(item) for item in reversed(items)))


def _segment(stmts: list) -> list:
    """Group a flat statement list into plain statements and routine segments."""
    stack: list[list] = [[]]
    openers: list = []
    for stmt in stmts:
        if isinstance(stmt, ast.Routine):
            openers.append(stmt)
            stack.append([])
        elif isinstance(stmt, ast.UnRoutine) and openers:
            middle = stack.pop()
            stack[-1].append(("routine", openers.pop(), middle, stmt))
        else:
            stack[-1].append(stmt)
    while openers:  # unpaired @routine: keep its statements in place, uninverted order
        middle = stack.pop()
        stack[-1].append(("unpaired", openers.pop(), middle))
    return stack[0]


def _invert_item(item):
    if isinstance(item, tuple) and item[0] == "routine":
        _, opener, middle, closer = item
        inverted_middle = [_invert_item(x) for x in reversed(middle)]
        return ("routine", opener, inverted_middle, closer)
    if isinstance(item, tuple):
        return item
    if isinstance(item, ast.UnRoutine):
        return item
    return invert_stmt(item)


def _flatten(items):
    out = []
    for item in items:
        if isinstance(item, tuple) and item[0] == "routine":
            _, opener, middle, closer = item
            out.append(opener)
            out.extend(_flatten(middle))
            out.append(closer)
        elif isinstance(item, tuple):
            _, opener, middle = item
            out.append(opener)
            out.extend(_flatten(middle))
        else:
            out.append(item)
    return out


def _invert_if(stmt: ast.If) -> ast.If:
    branches = tuple(
        ast.IfBranch(branch.post, branch.pre, invert_body(branch.body), span=branch.span)
        if branch.post is not None
        else replace(branch, body=invert_body(branch.body))
        for branch in stmt.branches
    )
    orelse = None if stmt.orelse is None else invert_body(stmt.orelse)
    return ast.If(branches, orelse, span=stmt.span)


def _negate(expr):
    """-expr, removing a double negation so that negating twice gives back expr."""
    if isinstance(expr, ast.Unary) and expr.op == "-":
        return expr.operand
    return ast.Unary("-", expr, span=getattr(expr, "span", ast.NO_SPAN))


def _is_unit_step(step) -> bool:
    return step == ast.IntLit(1) or step == ast.Unary("-", ast.IntLit(1))


def _last_value(start, step, stop, span):
    """`start + step * ((stop - start) // step)`: the last index a loop reaches."""
    distance = ast.Binary("-", stop, start, span=span)
    count = ast.Binary("//", distance, step, span=span)
    return ast.Binary("+", start, ast.Binary("*", step, count, span=span), span=span)


def _invert_for(stmt: ast.For) -> ast.For:
    """See Note [Loop inversion]."""
    body = invert_body(stmt.body)
    start, step, stop = stmt.start, stmt.step, stmt.stop
    original = inverted_range(start, step, stop)  # first: its step may be a unit one
    if original is not None:                        # (`--1` inverts to `-1`)
        a, s, b = original
        return replace(stmt, start=a, step=s, stop=b, body=body)
    if _is_unit_step(step):
        return replace(stmt, start=stop, step=_negate(step), stop=start, body=body)
    last = _last_value(start, step, stop, stmt.span)
    return replace(stmt, start=last, step=_negate(step), stop=start, body=body)


def inverted_range(start, step, stop):
    """If `for _ = start:step:stop` is the inverse of some `for _ = a:s:b` built by
    `_invert_for`, return (a, s, b); otherwise None."""
    match start:
        case ast.Binary("+", a, ast.Binary("*", s, ast.Binary("//", ast.Binary("-", b, a2), s2))):
            if a == a2 == stop and s == s2 and _negate(s) == step:
                return a, s, b
    return None


def invert_function(fn: ast.Function) -> ast.Function:
    """The function with the same name and parameters whose body is the inverse."""
    return replace(fn, body=invert_body(fn.body))


def invert_program(program: ast.Program, only: str | None = None,
                   included: frozenset = frozenset()) -> ast.Program:
    """The program with every function except `main` replaced by its inverse under
    the same name (Janus's `-i`), or, with `only`, just that one inverted function.
    `included`: the names of functions the program's `include`s define, which it
    keeps as they are: `main`'s calls of them become uncalls.

    See Note [Inverting a whole program]."""
    if only is not None:
        for item in program.items:
            if isinstance(item, ast.Function) and item.name == only:
                return ast.Program((invert_function(item),), span=program.span)
        raise KeyError(only)
    replaced = {item.name for item in program.items
                if isinstance(item, ast.Function) and item.name != "main"}
    items = tuple(
        _restore_calls(invert_function(item), replaced)
        if isinstance(item, ast.Function) and item.name in replaced else
        _restore_calls(item, included) if isinstance(item, ast.Function) else item
        for item in program.items
    )
    return ast.Program(items, span=program.span)


# Note [Inverting a whole program]
# Inverting f's body turns a call `g(x)` into the uncall `~g(x)`.  When the whole
# program is inverted, the name g itself now stands for ~g, so the inverted f must
# call plain `g(x)` again: calls between replaced functions keep their original
# direction.  Calls of functions the program does not replace (from included
# files) stay flipped, and `main`'s calls of them are flipped (`inc(x)` becomes
# `~inc(x)`), so that main runs the inverses of everything it calls, as Janus's
# `-i` has it.  Applying this twice gives back the original program.

def _restore_calls(fn: ast.Function, replaced: set) -> ast.Function:
    return replace(fn, body=_restore_body(fn.body, replaced))


def _restore_body(stmts: tuple, replaced: set) -> tuple:
    return tuple(_restore_stmt(stmt, replaced) for stmt in stmts)


def _restore_stmt(stmt, replaced: set):
    match stmt:
        case ast.CallStmt(func=func, inverse=inverse) if func in replaced:
            return replace(stmt, inverse=not inverse)
        case ast.Derivative(func=func) if func in replaced:
            # `grad f` differentiates f itself, which the inverted program no longer
            # has under its name
            raise RlangError(f"the program cannot be inverted as a whole: `{stmt.mode} "
                             f"{func}` differentiates `{func}`, whose name would stand for "
                             f"its inverse; invert one function (`rlang invert FILE NAME`)",
                             stmt.span)
        case ast.Block(body=body) | ast.Routine(body=body) | ast.While(body=body) \
                | ast.For(body=body):
            return replace(stmt, body=_restore_body(body, replaced))
        case ast.From(body=body, step=step):
            return replace(stmt, body=_restore_body(body, replaced),
                           step=_restore_body(step, replaced))
        case ast.If(branches=branches, orelse=orelse):
            return replace(stmt, branches=tuple(replace(b, body=_restore_body(b.body, replaced))
                                                for b in branches),
                           orelse=None if orelse is None else _restore_body(orelse, replaced))
        case ast.Annotated(stmt=inner):
            return replace(stmt, stmt=_restore_stmt(inner, replaced))
    return stmt
