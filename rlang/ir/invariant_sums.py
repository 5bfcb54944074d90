"""Sum a loop's conditional gradient updates of one element in a scalar, and add
the sum to the element after the loop.

Note [Invariant sums in registers]
~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
The gradient pass of a CSC mat-vec `y![rowval[p]] += nzval[p] * x[j]` added
`seed · nzval[p]` to `x·grad[j]` in every pass of its `p` loop, inside the branch
that skips zero seeds (Note [Zero seeds], rlang/ir/guards.py: loops that scatter,
and then also those that gathered, keep their branches).  The element does not
move with `p`, but LLVM keeps an element in a register through a loop only when
every pass stores it: a store under a branch is not one it may make
unconditional.  So every pass loaded, added and stored `x·grad[j]`, a chain
through memory of about 9 cycles a nonzero: the pullback with a dense seed took
185 µs for 50,000 nonzeros, SciPy's `A.T @ seed` 76 µs.  (That pass now has
selects, Note [Seed branches in serial loops]; a loop that scatters, as the pass
of `y![p] += w[j] * x[idx[p]]` adding into `x·grad[idx[p]]` and `w·grad[j]`,
keeps its branch and is summed here.)

`sum_invariant_updates(module)` rewrites such a loop (a `for`, not `@parallel`)
as

    t ← 0.0;  for … (… t += v …) end;  if t ≠ 0: x·grad[j] += t;  t → …

for every array whose only mentions in the loop are updates at one index made of
constants and variables the loop does not write (no loads), at least one of them
under an `if`, all of them chain-rule sums (`Update.reassociable`: Note
[Reassociable gradient sums], rlang/ad/adjoint_ir.py, so their terms may be
grouped differently; only rounding changes).  The scalar lives in a register and
the branch still skips zero seeds.  The final add runs only where the sum is not
zero: where the loop ran no pass, the index need not be valid (`g[n - 1]` in a
loop over `0:n-1` with n = 0, and gradient places are not bounds-checked), and a
sum that is not zero was added to by a pass that used the index.  A zero sum
skipped changes only the sign of a zero gradient, as Note [Known zeros] allows.
Loops nest: an inner loop's final add is a conditional update of the outer loop,
which may sum it in turn.

Updates that every pass runs are left to LLVM, which keeps those in registers
itself (and vectorises their sums).
"""
from __future__ import annotations

from dataclasses import replace

from . import nodes as ir
from .walk import (defined_vars, expr_vars, nested_bodies, reads_element, stmt_exprs,
                   stmt_places, walk, with_function_bodies, written_vars)

_FLOAT = ("f64", "f32")


def sum_invariant_updates(module: ir.Module) -> ir.Module:
    """`module` with the conditional invariant updates of its loops summed in
    scalars (the same object when there are none)."""
    return with_function_bodies(module, lambda fn: _in_body(fn.body))


def _in_body(body: tuple) -> tuple:
    new = []
    for stmt in body:
        stmt = _in_nested(stmt)
        if isinstance(stmt, ir.For) and not stmt.parallel:
            new += _summed(stmt)
        else:
            new.append(stmt)
    return body if len(new) == len(body) and all(a is b for a, b in zip(new, body)) \
        else tuple(new)


def _in_nested(stmt):
    """`stmt` with the loops of its nested bodies rewritten."""
    if isinstance(stmt, ir.If):
        branches = tuple(replace(b, body=_in_body(b.body)) for b in stmt.branches)
        orelse = _in_body(stmt.orelse)
        if orelse is stmt.orelse and all(a.body is b.body
                                         for a, b in zip(branches, stmt.branches)):
            return stmt
        return replace(stmt, branches=branches, orelse=orelse)
    if isinstance(stmt, (ir.For, ir.While)):
        body = _in_body(stmt.body)
        return stmt if body is stmt.body else replace(stmt, body=body)
    if isinstance(stmt, ir.From):
        body, step = _in_body(stmt.body), _in_body(stmt.step)
        return stmt if body is stmt.body and step is stmt.step else \
            replace(stmt, body=body, step=step)
    return stmt


def _summed(loop: ir.For) -> list:
    """`[loop]`, or the loop with its summable updates on scalars, between their
    allocations and their final adds."""
    sums = _summable(loop)
    if not sums:
        return [loop]
    scalars = {}
    for array, place in sums.items():
        scalars[array] = (ir.Var(array.name + "·sum", array.type.elem), place)
    body = _on_scalars(loop.body, scalars)
    before = [ir.Alloc(t, ir.Const(0.0, t.type)) for t, _ in scalars.values()]
    after = []
    for t, place in scalars.values():
        add = ir.Update(place, "+=", ir.Read(t), reassociable=True)
        after.append(ir.If((ir.Branch(ir.Nonzero((ir.Read(t),)), None, (add,)),), (), None))
        after.append(ir.Dealloc(t, None, None))
    return before + [replace(loop, body=body)] + after


def _summable(loop: ir.For) -> dict:
    """{array: place} for the arrays the loop mentions only in updates that may be
    summed, at one place, one of them conditional."""
    written, defined = written_vars((loop,)), defined_vars(loop.body)
    places, conditional, summable = {}, set(), set()
    for update, depth in _updates(loop.body, 0):
        if _may_sum(update, written) and update.target.var not in defined:
            summable.add(id(update))
            array = update.target.var
            if places.setdefault(array, update.target) != update.target:
                places[array] = None                # two indices: not one element
            if depth:
                conditional.add(array)
    candidates = {a: p for a, p in places.items() if p is not None and a in conditional}
    if not candidates:
        return {}
    for stmt in walk(loop.body):
        if id(stmt) in summable and stmt.target == candidates.get(stmt.target.var):
            mentioned = [v for e in stmt_exprs(stmt) for v in expr_vars(e)]  # (not its target)
        else:
            mentioned = _mentions(stmt)
        for var in mentioned:
            candidates.pop(var, None)
    return candidates


def _updates(body: tuple, depth: int):
    """(update, how many `if`s it is under) for the updates of `body` outside
    nested loops."""
    for stmt in body:
        if isinstance(stmt, ir.Update):
            yield stmt, depth
        elif isinstance(stmt, ir.If):
            for inner in nested_bodies(stmt):
                yield from _updates(inner, depth + 1)


def _may_sum(stmt: ir.Update, written: frozenset) -> bool:
    """Whether `stmt` is a chain-rule sum into a real element at an index that a
    loop writing `written` does not move."""
    target = stmt.target
    return stmt.reassociable and stmt.op in ("+=", "-=") and not stmt.alias_checks and \
        isinstance(target, ir.ElemPlace) and target.site is None and \
        target.field is None and not target.claims and \
        isinstance(target.var.type, ir.ArrayType) and target.var.type.elem in _FLOAT and \
        not any(reads_element(i) or any(v in written for v in expr_vars(i))
                for i in target.indices)


def _mentions(stmt) -> list:
    """The variables a statement itself reads, writes, allocates or frees."""
    out = [v for e in stmt_exprs(stmt) for v in expr_vars(e)]
    for place in stmt_places(stmt):
        out.append(place.var)
        out += [v for i in getattr(place, "indices", ()) for v in expr_vars(i)]
    if isinstance(stmt, (ir.Alloc, ir.Dealloc)):
        out.append(stmt.var)
        if isinstance(stmt, ir.Dealloc) and isinstance(stmt.value, ir.Read):
            out.append(stmt.value.var)
    return out


def _on_scalars(body: tuple, scalars: dict) -> tuple:
    """`body` with its updates of the summed arrays made updates of their scalars."""
    new = []
    for stmt in body:
        if isinstance(stmt, ir.Update) and stmt.target.var in scalars:
            t, _ = scalars[stmt.target.var]
            stmt = replace(stmt, target=ir.VarPlace(t), onto_zero=False)
        elif isinstance(stmt, ir.If):
            stmt = replace(stmt, branches=tuple(replace(b, body=_on_scalars(b.body, scalars))
                                                for b in stmt.branches),
                           orelse=_on_scalars(stmt.orelse, scalars))
        new.append(stmt)
    return tuple(new)
