"""Zero seeds in the gradient pass: skipped by a branch, or zeroed by a select.

Note [Zero seeds]
~~~~~~~~~~~~~~~~~
The interpreter's backward run does not descend into an expression whose seed is
zero (rlang/ad/gradient_interpreter.py): no product is formed, so an infinite partial derivative
behind a zero seed gives no NaN, and nothing is added anywhere.  The gradient pass
(rlang/ad/adjoint_ir.py) says the same in two ways:

- the chain rule of one update's seed is an `if` (`when_nonzero`): its statements
  run only where the seed is not zero (`ir.Nonzero`).  In a serial loop where most
  seeds are zero this skips the products and the read-modify-writes of the
  gradients they would add to;
- a `Guarded` product is the same thing as an expression, `0 if seed == 0 else
  seed · partial`, for the seeds inside such a chain (a node's seed can be zero
  where its parent's is not).

A branch in a loop that LLVM would otherwise vectorise stops it vectorising (the
triangular loop of GMM's gradient at d = 64 ran 2.1x slower), and where seeds are
mostly nonzero a select costs no more than a branch.  `selects_outside_gathers(module)`
therefore turns every seed branch back into `Guarded` values (each update and
temporary of the branch gets the branch's guards), except in the loop bodies that
do not vectorise anyway, where the branch skips the work of zero seeds and costs
one predictable compare where the selects cost a compare and a select for every
product (Note [Seed branches in serial loops]).  The two forms compute the same
gradients; a guarded update adds +0.0 where the branch adds nothing, which differs
only in the sign of a zero gradient.

Note [Seed branches in serial loops]
~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
Two kinds of loop body keep their seed branches:

- bodies that scatter (write at an index loaded from memory, as a gradient pass
  adding into `x·grad[idx[i]]`: LLVM does not vectorise a loop whose passes may
  write one element), and bodies that gather (read at such an index) and hold a
  loop of their own (LLVM vectorises innermost loops only).  A body that gathers
  alone is vectorised, with its seed branch as masked loads and stores: the
  pullback of a sparse y += A·x (CSC, 1000 × 1000, 50,000 nonzeros), which
  gathers `y·grad[rowval[p]]` and adds into `nzval·grad[p]`, took 45 µs a pass so,
  35 µs with selects (its loads and stores whole vectors), with a dense seed and
  with a seed of one nonzero (the gradient of y[0]) alike; and the loop sums the
  column's gradient itself, in vector registers (Note [Invariant sums in
  registers] sums only updates under a branch);
- bodies with a dependence carried from pass to pass through an array element:
  an element written at an index that moves with the loop (`i + c`) and read or
  written in the same body at another offset of the same index (`i + c'`, the
  other indices the same), as an in-place recurrence's inverse restoring `y[i]`
  from `y[i - 1]`, or a gradient pass adding into `y·grad[i - 1]` what it reads
  from `y·grad[i]`.  The passes of such a loop wait on each other, so LLVM does
  not vectorise it, and the selects sat in the serial code: GradBench's ode
  gradient (n = 10^4, s = 10; about fifty guarded products a pass) took
  1.18–1.90 ms with selects, 1.0–1.34 ms with the branches, and 0.92–1.27 ms with
  no guard at all (which would not be the interpreter's result);

  but not where a seed branch's condition reads an element that an earlier pass
  of the loop may have written (a write at another offset of the loop's index,
  on the side the loop comes from; anything not affine counts).  There the seed
  is the serial chain itself, as in the ancilla-array recurrence's gradient
  (`seed ← s·grad[i]` in the pass that adds into `s·grad[i - 1]`, i going down):
  under a branch the store of `s·grad[i - 1]` is conditional, so LLVM no longer
  forwards it to the next pass's load in a register, and the chain gained a store
  and a load: 15.5–18 → 25–30 ms for n = 2·10^6 (benchmarks/primal_speed.py).
  The selects stay there.  In ode's gradient pass the seed `y·grad[i]` is read
  before the passes that add into it (i going up, adding below i), so it is not
  on the chain.

The tangent transform (rlang/ad/tangent_ir.py) adds the seeds' tangents to the
condition, as a dual seed is zero only when both of its parts are.
"""
from __future__ import annotations

import math
from dataclasses import replace

from . import nodes as ir
from .affine import affine_index, loop_direction
from .walk import (expr_vars, reads_element, stmt_exprs, stmt_places,
                   with_function_bodies, written_vars)


def when_nonzero(values: tuple, stmts: list) -> list:
    """`stmts` run only where some of `values` is not zero (none: nothing)."""
    if not stmts:
        return []
    return [ir.If((ir.Branch(ir.Nonzero(values), None, tuple(stmts)),), (), None)]


def seed_guards(stmt):
    """The values of a seed branch made by `when_nonzero` (None for any other
    statement)."""
    if isinstance(stmt, ir.If) and stmt.site is None and not stmt.orelse and \
            len(stmt.branches) == 1 and isinstance(stmt.branches[0].pre, ir.Nonzero):
        return stmt.branches[0].pre.values
    return None


def selects_outside_gathers(module: ir.Module) -> ir.Module:
    """`module` with its seed branches as guarded values, except in the loops that
    gather or scatter (the same object when nothing changes)."""
    return with_function_bodies(module, lambda fn: _in_body(fn.body, False))


def _in_body(body: tuple, branches: bool) -> tuple:
    """`body` with its seed branches as guarded values unless `branches`."""
    new = []
    for stmt in body:
        if seed_guards(stmt) is not None and not branches:
            flat = _flattened((stmt,))
            new += [stmt] if flat is None else flat
        else:
            new.append(_in_stmt(stmt, branches))
    return body if len(new) == len(body) and all(a is b for a, b in zip(new, body)) \
        else tuple(new)


def _in_stmt(stmt, branches: bool):
    if isinstance(stmt, ir.For):
        serial = _serial_gathers(stmt) or _carried_through_elements(stmt)
        body = _in_body(stmt.body, serial)
        return stmt if body is stmt.body else replace(stmt, body=body)
    if isinstance(stmt, ir.While):
        body = _in_body(stmt.body, _gathers_or_scatters(stmt.body))
        return stmt if body is stmt.body else replace(stmt, body=body)
    if isinstance(stmt, ir.From):
        inner = _gathers_or_scatters(stmt.body + stmt.step)
        body, step = _in_body(stmt.body, inner), _in_body(stmt.step, inner)
        if body is stmt.body and step is stmt.step:
            return stmt
        return replace(stmt, body=body, step=step)
    if isinstance(stmt, ir.If):
        new = tuple(replace(b, body=_in_body(b.body, branches)) for b in stmt.branches)
        orelse = _in_body(stmt.orelse, branches)
        if orelse is stmt.orelse and all(a.body is b.body
                                         for a, b in zip(new, stmt.branches)):
            return stmt
        return replace(stmt, branches=new, orelse=orelse)
    return stmt


def _gathers_or_scatters(body: tuple, scatters_only: bool = False) -> bool:
    """Whether the statements of a loop body (not those of nested loops) read or
    write (with `scatters_only`, write) an element at an index loaded from memory."""
    for stmt in body:
        if isinstance(stmt, ir.If):
            if any(_gathers_or_scatters(b.body, scatters_only) for b in stmt.branches) or \
                    _gathers_or_scatters(stmt.orelse, scatters_only):
                return True
        elif isinstance(stmt, (ir.For, ir.While, ir.From)):
            continue
        for place in stmt_places(stmt):
            if any(reads_element(i) for i in getattr(place, "indices", ())):
                return True
        if not scatters_only and any(_gathers(e) for e in stmt_exprs(stmt)):
            return True
    return False


def _serial_gathers(loop: ir.For) -> bool:
    """Whether a `for` body gathers or scatters where LLVM will not vectorise it
    (Note [Seed branches in serial loops]): it scatters (a write at a loaded index
    may meet another pass's), or it gathers and holds a loop of its own."""
    return _gathers_or_scatters(loop.body, scatters_only=True) or \
        _gathers_or_scatters(loop.body) and _holds_loop(loop.body)


def _holds_loop(body: tuple) -> bool:
    """Whether a body (its branches included) holds a loop."""
    return any(isinstance(stmt, (ir.For, ir.While, ir.From)) or isinstance(stmt, ir.If) and (
        any(_holds_loop(b.body) for b in stmt.branches) or _holds_loop(stmt.orelse))
        for stmt in body)


def _carried_through_elements(loop: ir.For) -> bool:
    """Whether the loop's passes wait on each other through an array element while
    its seeds do not (Note [Seed branches in serial loops]): the body (with its
    branches, not nested loops) writes an element at an index moving with the loop
    and reads or writes the same array at another offset of that index, and no
    seed branch's condition reads an element an earlier pass may have written."""
    written = written_vars(loop.body) - {loop.var}
    accesses = [(place.var, tuple(affine_index(i, written, loop.var)
                                  for i in place.indices), is_write)
                for place, is_write in _element_accesses(loop.body)]
    writes = [(var, at) for var, at, is_write in accesses if is_write]
    if not any(None not in at and other is var and _other_offset(at, w, loop.var)
               for var, at, _ in accesses for other, w in writes):
        return False
    direction = loop_direction(loop)
    for var, at in _seed_loads(loop.body, {}, written, loop.var):
        if any(other is var for other, _ in writes) and (
                direction == 0 or None in at or
                any(_written_before(at, w, loop.var, direction)
                    for other, w in writes if other is var)):
            return False
    return True


def _other_offset(at: tuple, write: tuple, index) -> bool:
    """Whether an access of an array at affine indices `at` and a write of it at
    `write` differ only in the offset of the loop's index, in one position."""
    return None not in write and _moved(at, write, index) is not None


def _moved(at: tuple, write: tuple, index):
    """(offset read, offset written) where two index tuples differ only there, in a
    position holding the loop's index; None otherwise."""
    if len(at) != len(write):
        return None
    moved = [k for k, (x, y) in enumerate(zip(at, write)) if x != y]
    if len(moved) != 1 or at[moved[0]][0] is not index or write[moved[0]][0] is not index:
        return None
    return at[moved[0]][1], write[moved[0]][1]


def _written_before(at: tuple, write: tuple, index, direction: int) -> bool:
    """Whether the element a pass reads at `at` may be one an earlier pass wrote at
    `write` (anything not provably otherwise)."""
    if None in write:
        return True
    if at == write:             # each pass its own element, or all passes one
        return not any(base is index for base, _ in at)
    offsets = _moved(at, write, index)
    if offsets is None:
        return True
    read, written = offsets
    return (read - written) * direction < 0


def _seed_loads(body: tuple, defined: dict, written: frozenset, index):
    """(array, affine indices) of the element loads the conditions of the body's
    seed branches (at any depth outside nested loops) depend on, through the
    scalars the body defines before them (`defined`: scalar → its values);
    `written`: what the loop's body writes, `index` the loop's index."""
    for stmt in body:
        if isinstance(stmt, ir.Alloc) and not isinstance(stmt.var.type, ir.ArrayType) \
                and stmt.value is not None:
            defined.setdefault(stmt.var, []).append(stmt.value)
        elif isinstance(stmt, ir.Update) and isinstance(stmt.target, ir.VarPlace):
            defined.setdefault(stmt.target.var, []).append(stmt.value)
        values = seed_guards(stmt)
        if values is not None:
            for load in _loads_behind(values, defined, set()):
                yield load.var, tuple(affine_index(i, written, index) for i in load.indices)
        if isinstance(stmt, ir.If):
            for branch in stmt.branches:
                yield from _seed_loads(branch.body, defined, written, index)
            yield from _seed_loads(stmt.orelse, defined, written, index)


def _loads_behind(values, defined: dict, seen: set):
    """The element loads `values` read, directly or through `defined` scalars."""
    for value in values:
        yield from _loads(value)
        for var in expr_vars(value):
            if var not in seen and var in defined:
                seen.add(var)
                yield from _loads_behind(defined[var], defined, seen)


def _element_accesses(body: tuple):
    """(place or load, is a write) for every element a body's statements and their
    branches write or read (not nested loops')."""
    for stmt in body:
        if isinstance(stmt, ir.If):
            for branch in stmt.branches:
                yield from _element_accesses(branch.body)
            yield from _element_accesses(stmt.orelse)
            continue
        if isinstance(stmt, (ir.For, ir.While, ir.From)):
            continue
        for place in stmt_places(stmt):
            if isinstance(place, ir.ElemPlace):
                yield place, True
        for e in stmt_exprs(stmt):
            yield from ((load, False) for load in _loads(e))


def _loads(e):
    if isinstance(e, ir.Load):
        yield e
    for x in ir.operands(e):
        yield from _loads(x)


def _gathers(e) -> bool:
    """Whether an expression loads an element at an index it loads from memory."""
    if isinstance(e, ir.Load) and any(reads_element(i) for i in e.indices):
        return True
    return any(_gathers(x) for x in ir.operands(e))


def flattened_seed_branch(stmt):
    """A seed branch (`when_nonzero`) as the guarded statements it is equal to, or
    None where it holds a statement that cannot be guarded."""
    return _flattened((stmt,)) if seed_guards(stmt) is not None else None


def _flattened(body: tuple, guards: tuple = ()):
    """`body` with its seed branches as guarded values, or None where a branch holds
    a statement that cannot be guarded (or, at the top, there is no branch)."""
    out, found = [], False
    for stmt in body:
        values = seed_guards(stmt)
        if values is not None:
            inner = _flattened(stmt.branches[0].body, guards + (values,))
            if inner is None:
                return None
            out += inner
            found = True
        elif not guards:
            out.append(stmt)
        elif isinstance(stmt, ir.Update) and stmt.op in ("+=", "-=") and \
                stmt.value.type == "f64":
            out.append(replace(stmt, value=_guard(stmt.value, guards)))
        elif isinstance(stmt, ir.Alloc) and stmt.var.type == "f64" and \
                stmt.value is not None:
            out.append(replace(stmt, value=_guard(stmt.value, guards)))
        elif isinstance(stmt, ir.Dealloc) and stmt.site is None:
            out.append(stmt)
        else:
            return None
    return tuple(out) if found or guards else None


def _guard(value, guards: tuple):
    """`value`, or zero where the values of some enclosing branch are all zero (no
    select where `value` is zero there anyway: a seed, or a seed times a constant)."""
    for values in reversed(guards):
        if not _zero_with(value, values):
            value = ir.Guarded(values, value)
    return value


def _zero_with(value, values: tuple) -> bool:
    """Whether `value` is zero wherever all of `values` are."""
    if value in values:
        return True
    if isinstance(value, ir.Unary) and value.op == "-":
        return _zero_with(value.operand, values)
    if isinstance(value, ir.Binary) and value.op == "*":
        return any(_zero_with(x, values) and isinstance(y, ir.Const) and
                   math.isfinite(y.value) for x, y in ((value.left, value.right),
                                                       (value.right, value.left)))
    return False
