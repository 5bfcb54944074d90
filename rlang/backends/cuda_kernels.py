"""What a `@parallel for` needs to become a kernel: the analysis of the cuda backend.

`plan_kernel(module, fn, stmt, shadows, number)` takes a parallel `ir.For` of a
host function and returns a `KernelPlan`: the variables the body uses from outside
(arrays, scalars it reads, and scalar gradient shadows it adds to), the arrays it
may write, and whether any check can fail inside.  `device_symbols(module, body)`
lists the functions a kernel calls, at any depth (they become device functions).

Refused statically (`BackendUnsupported`, with the loop's position):
- a scalar from outside the loop written by the body (a write shared between
  iterations, LANGUAGE.md §6), except gradient and tangent shadows that are only
  added to: those live in one-element device arrays and are added atomically;
- array ancillas, `@safe print/show` and recursion inside a kernel or its callees.
Elements written by several iterations cannot be seen from names; they are
undefined behaviour on the GPU (docs/cuda.md).
"""
from __future__ import annotations

from dataclasses import dataclass, field

from .. import ir
from ..types_rules import BackendUnsupported
from .cuda_expr import has_checks, operands


@dataclass
class KernelPlan:
    number: int
    loop: ir.For
    arrays: list = field(default_factory=list)          # Vars of outer arrays
    scalars: list = field(default_factory=list)         # outer scalars read
    boxes: list = field(default_factory=list)           # outer shadows added to
    written_arrays: set = field(default_factory=set)
    checked: bool = False                               # an error buffer is needed
    constants: dict = field(default_factory=dict)       # constant Var → global name

    @property
    def name(self) -> str:
        return f"K{self.number}"


def nested_bodies(stmt) -> list:
    """The statement lists directly inside a statement."""
    if isinstance(stmt, ir.If):
        return [b.body for b in stmt.branches] + [stmt.orelse]
    if isinstance(stmt, (ir.While, ir.For)):
        return [stmt.body]
    if isinstance(stmt, ir.From):
        return [stmt.body, stmt.step]
    return []


def walk(body):
    """Every statement of `body`, at any depth."""
    for stmt in body:
        yield stmt
        for inner in nested_bodies(stmt):
            yield from walk(inner)


def expr_vars(e):
    """The variables an expression reads (arrays of loads and dims too)."""
    if isinstance(e, (ir.Read, ir.Load, ir.Dim)):
        yield e.var
    for x in operands(e):
        yield from expr_vars(x)


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
        return [stmt.start, stmt.step, stmt.stop]
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


def device_symbols(module: ir.Module, body) -> list:
    """The functions `body` calls, at any depth, in a fixed order."""
    found: dict = {}
    todo = [s.callee for s in walk(body) if isinstance(s, ir.Call)]
    while todo:
        symbol = todo.pop(0)
        if symbol in found:
            continue
        found[symbol] = None
        todo.extend(s.callee for s in walk(module.functions[symbol].body)
                    if isinstance(s, ir.Call))
    return list(found)


def loop_span(module: ir.Module, stmt: ir.For):
    site = stmt.site if stmt.site is not None else stmt.step_site
    return module.sites[site].span if site is not None else None


def refuse_device_constructs(module: ir.Module, body, span, where: str) -> None:
    """Array ancillas and printing cannot run inside a kernel."""
    for stmt in walk(body):
        if isinstance(stmt, ir.Alloc) and isinstance(stmt.var.type, ir.ArrayType):
            raise BackendUnsupported(f"the cuda backend does not allocate arrays ({where}); "
                                     f"`{stmt.var.name}` is an array ancilla", span)
        if isinstance(stmt, ir.Print):
            raise BackendUnsupported(f"the cuda backend cannot `@safe {stmt.kind}` {where}",
                                     module.sites[stmt.site].span)


def has_sites(stmts) -> bool:
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


def plan_kernel(module: ir.Module, fn: ir.Function, stmt: ir.For, shadows: set,
                number: int, recursive: set) -> KernelPlan:
    span = loop_span(module, stmt)
    plan = KernelPlan(number, stmt)
    refuse_device_constructs(module, stmt.body, span, "inside a `@parallel for`")
    callees = device_symbols(module, stmt.body)
    for symbol in callees:
        callee = module.functions[symbol]
        if symbol in recursive:
            raise BackendUnsupported(f"the cuda backend cannot call the recursive function "
                                     f"`{callee.name}` inside a `@parallel for`", span)
        refuse_device_constructs(module, callee.body, span,
                                 f"in `{callee.name}`, called inside a `@parallel for`")
    local = defined_vars(stmt.body) | {stmt.var}
    constants = {var for var, _ in fn.constants}
    outer = [v for v in used_vars(stmt.body) if v not in local and v not in constants]
    written = {}
    for place, additive in writes(module, stmt.body):
        var = place.var
        written[var] = written.get(var, True) and additive
    for var in outer:
        if isinstance(var.type, ir.ArrayType):
            plan.arrays.append(var)
            if var in written:
                plan.written_arrays.add(var)
        elif var not in written:
            plan.scalars.append(var)
        elif var in shadows and written[var]:
            plan.boxes.append(var)
        else:
            raise BackendUnsupported(
                f"`{var.name}` is written by every iteration of a `@parallel for`; the cuda "
                "backend refuses writes shared between iterations", span)
    plan.checked = has_sites(stmt.body) or any(
        has_sites(module.functions[s].body) for s in callees)
    return plan
