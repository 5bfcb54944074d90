"""Stores into an array ancilla that nothing reads again: made conditional on
storing an element that is read.

Note [Stores nobody reads]
~~~~~~~~~~~~~~~~~~~~~~~~~~
Once a recurrence's gradient is carried in a register (Note [Gradients carried in
registers], rlang/ir/carried_values.py), its backward loop still stores every
element of the gradient array, `s·grad[i - 1] = s·grad·next`, though nothing reads
them but the loop itself, through the register, and after the loop the one element
that becomes the start value's gradient, `s·grad[0]`.  For the ancilla-array
recurrence (benchmarks/primal_speed.py, n = 2·10^6) that is 16 MB written a
gradient for two elements.

`skip_unread_stores(module)` finds, in each statement list, an array ancilla `A`
allocated and freed there (the free unchecked: it reads no element), and a `for`
loop `L` between the two (not `@parallel`) whose body mentions `A` only in stores
of its top level: updates onto a known zero (`onto_zero`, so each is a plain
store), without a bounds check or any check in the value or the indices.  After
`L`, up to the free, `A` may only be read, element by element, in the expressions
of the statements themselves (not in nested bodies, calls or whole-array uses),
at indices that `L` cannot change: their variables are neither `L`'s index nor
written in `L` or between `L` and the read, and they hold no check.  Then a pass
of `L` stores only where its element is one of those read after it (at most
`_MOST_READS` of them): `if i - 1 == 0 then s·grad[i - 1] = …`.  An element that
is read later gets the same value as before; the others are never read again, and
the free does not look at them.  With no read after `L` the stores go.

Where the array is shown in error frames (a program's own variable, Note [Frame
variables in compiled errors], backends/llvm/report.py) a failed check would show
its contents, so there the rewrite needs `L` and the statements up to the free to
hold no check; the lowering's temporaries (names with `·`, as every gradient
array) are never shown.  A skipped store runs no bounds check and no check of its
value: that is why it must have none.

The condition is an integer compare in the loop, beside the store; the element
values are computed as before (the register chain needs them).  The recurrence's
gradient: figures in benchmarks/README.md (session 40).
"""
from __future__ import annotations

from dataclasses import replace

from . import nodes as ir
from .walk import (expr_vars, has_checks, has_sites, mentioned_vars, nested_bodies,
                   stmt_exprs, stmt_places, with_function_bodies, with_nested_bodies,
                   written_vars)

#: the most distinct elements read after the loop that the condition compares
_MOST_READS = 4


def skip_unread_stores(module: ir.Module) -> ir.Module:
    """`module` with its stores nobody reads made conditional or dropped (Note
    [Stores nobody reads]); the same object when nothing changes."""
    return with_function_bodies(module, lambda fn: _in_body(fn.body))


def _in_body(body: tuple) -> tuple:
    """`body` rewritten, nested statement lists first."""
    new = [with_nested_bodies(s, [_in_body(b) for b in nested_bodies(s)]) for s in body]
    for start, stmt in enumerate(new):
        if not (isinstance(stmt, ir.Alloc) and isinstance(stmt.var.type, ir.ArrayType)):
            continue
        end = _free(new, start, stmt.var)
        if end is None:
            continue
        for k in range(start + 1, end):
            if isinstance(new[k], ir.For) and not new[k].parallel:
                new[k] = _rewritten(new[k], stmt.var, new[k + 1:end])
    return body if all(a is b for a, b in zip(new, body)) else tuple(new)


def _free(body: list, start: int, var: ir.Var) -> int | None:
    """Where `var` (allocated at `start`) is freed unchecked, or None."""
    for k in range(start + 1, len(body)):
        stmt = body[k]
        if isinstance(stmt, ir.Dealloc) and stmt.var == var:
            return k if stmt.site is None else None
    return None


def _rewritten(loop: ir.For, array: ir.Var, after: list) -> ir.For:
    """`loop` with its stores into `array` kept only for the elements `after` reads
    (the same loop where the Note's conditions do not hold)."""
    stores = [s for s in loop.body if _plain_store(s, array)]
    if not stores or any(array in mentioned_vars(s) for s in loop.body
                         if not any(s is t for t in stores)):
        return loop
    if not array.is_made and (has_sites(loop.body) or has_sites(after)):
        return loop             # its contents could be shown by a failed check
    reads = _reads_after(loop, array, after)
    if reads is None or len(reads) > _MOST_READS:
        return loop
    body = []
    for stmt in loop.body:
        if not any(stmt is t for t in stores):
            body.append(stmt)
        elif reads:
            condition = _one_of(stmt.target.indices, reads)
            body.append(stmt if condition is None else
                        ir.If((ir.Branch(condition, None, (stmt,)),), (), None))
    return replace(loop, body=tuple(body))


def _plain_store(stmt, array: ir.Var) -> bool:
    """Whether `stmt` stores into an element of `array` with nothing to check."""
    return (isinstance(stmt, ir.Update) and isinstance(stmt.target, ir.ElemPlace)
            and stmt.target.var == array and stmt.onto_zero and stmt.target.site is None
            and not stmt.alias_checks and not has_checks(stmt.value)
            and not any(has_checks(i) for i in stmt.target.indices)
            and array not in expr_vars(stmt.value)
            and not any(array in expr_vars(i) for i in stmt.target.indices))


def _reads_after(loop: ir.For, array: ir.Var, after: list) -> list | None:
    """The distinct index tuples at which `after` reads `array`, each the same after
    the loop as in it; None where `array` is used otherwise or an index may change."""
    changing = set(written_vars(loop.body)) | {loop.var}
    reads: list = []
    for stmt in after:
        changing |= written_vars((stmt,))
        if array not in mentioned_vars(stmt):
            continue
        if isinstance(stmt, (ir.Alloc, ir.Dealloc)) and stmt.var == array or \
                any(place.var == array for place in stmt_places(stmt)) or \
                any(array in mentioned_vars(s) for b in nested_bodies(stmt) for s in b) or \
                isinstance(stmt, ir.Dealloc) and isinstance(stmt.value, ir.Read):
            return None
        exprs = list(stmt_exprs(stmt)) + [i for place in stmt_places(stmt)
                                          for i in getattr(place, "indices", ())]
        for e in exprs:
            loads = _loads_of(e, array)
            if loads is None:
                return None
            for indices in loads:
                if any(has_checks(i) or changing & set(expr_vars(i)) for i in indices):
                    return None
                if indices not in reads:
                    reads.append(indices)
    return reads


def _loads_of(e, array: ir.Var) -> list | None:
    """The index tuples of the loads of `array` in `e`; None where `e` uses the
    whole array (its extents aside)."""
    found, pending = [], [e]
    while pending:                  # (depth first, left to right)
        x = pending.pop()
        if isinstance(x, ir.Load) and x.var == array:
            found.append(tuple(x.indices))
        elif isinstance(x, ir.Read) and x.var == array:
            return None
        parts = [x.re, x.im] if isinstance(x, ir.ComplexValue) else list(ir.operands(x))
        pending.extend(reversed(parts))
    return found


def _one_of(indices: tuple, reads: list):
    """Whether `indices` are one of `reads` (each a tuple of the same length), or
    None where they surely are.  An axis whose index is the same expression in both
    is not compared: its variables do not change in the loop (`_reads_after`)."""
    condition = None
    for read in reads:
        same = None
        for mine, theirs in zip(indices, read):
            if mine != theirs:
                equal = ir.Compare("==", mine, theirs)
                same = equal if same is None else ir.Logic("&&", same, equal)
        if same is None:
            return None
        condition = same if condition is None else ir.Logic("||", condition, same)
    return condition
