"""Walks over IR statements and expressions: what a statement list reads, writes,
allocates and checks.  Shared by the cuda backend's kernel analysis
(rlang/backends/cuda/kernels.py) and the dead-code pass (rlang/ir/prune.py)."""
from __future__ import annotations

from dataclasses import fields, is_dataclass, replace

from . import nodes as ir


def nested_bodies(stmt) -> list:
    """The statement lists directly inside a statement."""
    if isinstance(stmt, ir.If):
        return [b.body for b in stmt.branches] + [stmt.orelse]
    if isinstance(stmt, (ir.While, ir.For)):
        return [stmt.body]
    if isinstance(stmt, ir.From):
        return [stmt.body, stmt.step]
    return []


def with_nested_bodies(stmt, bodies: list):
    """`stmt` with its statement lists (in `nested_bodies`' order) replaced by
    `bodies`; the same object when each is the one it had."""
    if all(new is old for new, old in zip(bodies, nested_bodies(stmt))):
        return stmt
    if isinstance(stmt, ir.If):
        branches = tuple(replace(b, body=w) for b, w in zip(stmt.branches, bodies))
        return replace(stmt, branches=branches, orelse=bodies[-1])
    if isinstance(stmt, ir.From):
        return replace(stmt, body=bodies[0], step=bodies[1])
    return replace(stmt, body=bodies[0])


def walk(body):
    """Every statement of `body`, at any depth."""
    for stmt in body:
        yield stmt
        for inner in nested_bodies(stmt):
            yield from walk(inner)


def expr_vars(e):
    """The variables an expression reads (arrays of loads and dims too; not those its
    Lets bind), in the order of a depth-first walk.  The walk keeps its own stack: nested generators (`yield
    from` at each level) pass every variable up through all the levels above it,
    which made a 30,000-term sum's compile quadratic (100 s)."""
    pending = [e]
    bound = set()           # the variables of Lets (Note [Lets in conditions])
    while pending:
        e = pending.pop()
        if isinstance(e, (ir.Read, ir.Load, ir.Dim)) and e.var not in bound:
            yield e.var
        elif isinstance(e, ir.Let):
            bound.add(e.var)
        children = [e.re, e.im] if isinstance(e, ir.ComplexValue) else []
        children.extend(ir.operands(e))
        pending.extend(reversed(children))


def _place_vars(place):
    yield place.var
    for i in getattr(place, "indices", ()):
        yield from expr_vars(i)


def stmt_exprs(stmt) -> list:
    """The expressions a statement evaluates itself (not those of nested bodies)."""
    kind = type(stmt)
    if kind is ir.Update:
        return [stmt.value] + [i for indices, _ in stmt.alias_checks for i in indices]
    if kind is ir.Instr:
        return [stmt.angle] if stmt.angle is not None else []
    if kind is ir.Alloc:
        return ([stmt.value] if stmt.value is not None and
                not isinstance(stmt.value, ir.ConstArray) else []) + list(stmt.dims)
    if kind is ir.Dealloc:
        return [stmt.value] if stmt.value is not None and \
            not isinstance(stmt.value, ir.ConstArray) else []
    if kind is ir.If:
        return [x for b in stmt.branches for x in (b.pre, b.post) if x is not None]
    if kind is ir.While:
        return [stmt.pre, stmt.post]
    if kind is ir.From:
        return [stmt.start, stmt.stop]
    if kind is ir.For:
        return [stmt.start, stmt.step, stmt.stop, *(stmt.reverse_of or ())]
    if kind is ir.Print:
        return [value for _, value in stmt.args if value is not None]
    if kind is ir.Assert:
        return [stmt.cond]
    return []


def stmt_places(stmt) -> list:
    if isinstance(stmt, ir.Update):
        return [stmt.target]
    if isinstance(stmt, ir.Instr):
        return list(stmt.places)
    if isinstance(stmt, ir.Call):
        return list(stmt.args)
    if isinstance(stmt, (ir.Push, ir.Pop)):
        return [stmt.place]
    return []


def used_vars(body) -> list:
    """Every variable `body` uses, in order of first use."""
    seen: dict = {}
    for stmt in walk(body):
        for e in stmt_exprs(stmt):
            for var in expr_vars(e):
                seen.setdefault(var, None)
        for place in stmt_places(stmt):
            if isinstance(place, ir.Read):
                seen.setdefault(place.var, None)
            else:
                for var in _place_vars(place):
                    seen.setdefault(var, None)
        if isinstance(stmt, ir.Dealloc) and isinstance(stmt.value, ir.Read):
            seen.setdefault(stmt.value.var, None)
    return list(seen)


def defined_vars(body) -> set:
    """The variables that `body` allocates or binds as loop indices."""
    out = set()
    for stmt in walk(body):
        if isinstance(stmt, ir.Alloc):
            out.add(stmt.var)
        elif isinstance(stmt, ir.For):
            out.add(stmt.var)
    return out


def written_vars(body, bindings: bool = True) -> frozenset:
    """The variables the statements of `body` (at any depth) write, bind or free
    (without `bindings`: write, the allocations and deallocations left out)."""
    out = set()
    for s in walk(body):
        if isinstance(s, ir.Update):
            out.add(s.target.var)
        elif isinstance(s, ir.Instr):
            out.update(place.var for place in s.places)
        elif isinstance(s, (ir.Push, ir.Pop)):
            out.update((s.stack, s.place.var))
        elif isinstance(s, ir.Call):
            out.update(arg.var for arg in s.args)
        elif isinstance(s, ir.For) or bindings and isinstance(s, (ir.Alloc, ir.Dealloc)):
            out.add(s.var)
    return frozenset(out)


def writes(module: ir.Module, body):
    """(place, additive) for every place `body` writes at any depth; `additive` when
    the write only adds to it (`+=`, `-=`, a call's accumulated argument)."""
    for stmt in walk(body):
        if isinstance(stmt, ir.Update):
            yield stmt.target, stmt.op in ("+=", "-=")
        elif isinstance(stmt, ir.Instr):
            for place in stmt.places:
                yield place, False
        elif isinstance(stmt, ir.Call):
            callee = module.functions[stmt.callee]
            for k, arg in enumerate(stmt.args):
                if isinstance(arg, ir.Read) or isinstance(arg.type, ir.ArrayType):
                    yield arg, False
                elif k in callee.written:
                    yield arg, False
                elif k in callee.accumulated:
                    yield arg, True


def reads_element(e) -> bool:
    """Whether an expression reads an array element."""
    return isinstance(e, ir.Load) or any(reads_element(x) for x in ir.operands(e))


def has_checks(e) -> bool:
    """Whether evaluating `e` can record a failed check."""
    if getattr(e, "site", None) is not None:
        return True
    if isinstance(e, ir.ComplexValue):
        return has_checks(e.re) or has_checks(e.im)
    return any(has_checks(x) for x in ir.operands(e))


def has_sites(stmts) -> bool:
    """Whether any statement of `stmts`, at any depth, can record a failed check."""
    for stmt in walk(stmts):
        if any(getattr(stmt, name, None) is not None
               for name in ("site", "alias_site", "step_site")):
            return True
        if isinstance(stmt, ir.Update) and stmt.alias_checks:
            return True
        if any(has_checks(e) for e in stmt_exprs(stmt)):
            return True
        if any(has_checks(i) for p in stmt_places(stmt)
               for i in getattr(p, "indices", ())):
            return True
        if any(getattr(p, "site", None) is not None for p in stmt_places(stmt)):
            return True
    return False




def mapped(node, change):
    """`node` (a statement, place, expression or tuple of them, IR nodes being
    dataclasses) with every part for which `change(part)` gives a value other than
    None replaced by that value; the parts `change` replaces are not looked into,
    and what nothing replaced is the same object."""
    new = change(node)
    if new is not None:
        return new
    if isinstance(node, tuple):
        items = tuple(mapped(x, change) for x in node)
        return node if all(a is b for a, b in zip(items, node)) else items
    if is_dataclass(node) and not isinstance(node, type):
        changes = {}
        for f in fields(node):
            value = getattr(node, f.name)
            new = mapped(value, change)
            if new is not value:
                changes[f.name] = new
        return replace(node, **changes) if changes else node
    return node


def mentioned_vars(stmt) -> set:
    """Every variable a statement (at any depth) reads, writes or binds."""
    out = set()
    for s in walk((stmt,)):
        for e in stmt_exprs(s):
            out.update(expr_vars(e))
        for place in stmt_places(s):
            out.add(place.var)
            for index in getattr(place, "indices", ()):
                out.update(expr_vars(index))
        if isinstance(s, (ir.Alloc, ir.Dealloc, ir.For)):
            out.add(s.var)
        if isinstance(s, (ir.Push, ir.Pop)):
            out.add(s.stack)
        if isinstance(s, ir.Dealloc) and isinstance(s.value, ir.Read):
            out.add(s.value.var)
    return out


def with_function_bodies(module: ir.Module, rewrite) -> ir.Module:
    """`module` with each function's body replaced by `rewrite(fn)` (a pass over
    every function); the same object when every body is the one it had."""
    functions, changed = {}, False
    for symbol, fn in module.functions.items():
        body = rewrite(fn)
        changed |= body is not fn.body
        functions[symbol] = fn if body is fn.body else replace(fn, body=body)
    return ir.Module(module.entry, functions, module.sites) if changed else module
