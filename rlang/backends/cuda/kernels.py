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
Elements written by several iterations cannot be seen from names: with invcheck
on they are checked as the program runs (`owners`, `inner_owners`: Note [Shared
writes on the GPU], backends/cuda/shared_writes.py).
"""
from __future__ import annotations

from dataclasses import dataclass, field

from ...ir import nodes as ir
from ...ir.blocks import loop_roles
from ...ir.shared_writes import tracked_arrays
from ...ir.walk import defined_vars, has_sites, used_vars, walk, writes
from ...types_rules import BackendUnsupported


@dataclass
class KernelPlan:
    number: int
    loop: ir.For
    arrays: list = field(default_factory=list)          # Vars of outer arrays
    scalars: list = field(default_factory=list)         # outer scalars read
    boxes: list = field(default_factory=list)           # outer shadows added to
    written_arrays: set = field(default_factory=set)
    checked: bool = False                               # an error buffer is needed
    owners: list = field(default_factory=list)          # arrays whose writes it claims
    inner_owners: list = field(default_factory=list)    # (site, Var) of inner loops
    constants: dict = field(default_factory=dict)       # constant Var → global name
    private: list = field(default_factory=list)         # sums privatised (privatised.py)
    own: set = field(default_factory=set)               # shadows each pass adds to alone

    @property
    def name(self) -> str:
        return f"K{self.number}"

    def private_positions(self) -> tuple:
        """(the positions of the privatised arrays among a launch's arguments —
        start, step, count, then `arrays` —, the numbers of the privatised boxes)."""
        return (tuple(3 + self.arrays.index(v) for v in self.private if v in self.arrays),
                tuple(self.boxes.index(v) for v in self.private if v in self.boxes))


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
    plan.owners = tracked_arrays(module, stmt)
    plan.inner_owners = [(inner.site, var) for inner in walk(stmt.body)
                         if isinstance(inner, ir.For) and inner is not stmt
                         for var in tracked_arrays(module, inner)]
    if shadows and not (plan.owners or plan.inner_owners):
        roles = loop_roles(module, stmt, shadows, outer) or {}
        plan.private = [v for v in outer if roles.get(v) == "private"
                        and (v in plan.arrays or v in plan.boxes)]
        plan.own = {v for v in plan.arrays if v in shadows and roles.get(v) == "written"}
    plan.checked = bool(plan.owners or plan.inner_owners) or has_sites(stmt.body) or any(
        has_sites(module.functions[s].body) for s in callees)
    return plan
