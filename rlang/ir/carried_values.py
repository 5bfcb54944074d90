"""Carry a recurrence's value from pass to pass in a scalar, not through the zero
it was added to (the last IR pass; Note [Recurrences carried in registers]).

Note [Recurrences carried in registers]
~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
A recurrence kept in an array, `for i = 1:n  s[i] += r * s[i-1] * (1 - s[i-1])`,
writes each element once, onto a zero: first_writes.py marks the update
`signed_zero`, and it stores `0.0 + v` (v's bits, but +0.0 for v = −0.0, as the
interpreter's `s[i] += v` gives).  The next pass loads that element again, so the
add sits on the serial chain: 12 cycles a pass where Numba's `s = r*s*(1 - s)`
takes 8 (benchmarks/primal_speed.py: 1.47–1.56× Numba's forward).

The add changes nothing but the sign of a zero, and a chain of `+`, `-` and `*`
keeps that difference to the sign of a zero: if u and u' differ only there (or are
the same), so do u ∘ w and u' ∘ w for ∘ in + − ×, whatever w is (a zero gives ±0,
or w itself, or the default NaN with an infinity, the same either way).  So when
the carried element reaches v only through such operations, 0.0 + v(u) and
0.0 + v(0.0 + u) are the same bits, and the pass may carry the raw v instead:

    u ← 0.0;  if the loop runs:  u += s[start − step]        (before the loop)
    for i …
        t ← v[s[i − step] := u];  s[i] += t;  SWAP(u, t);  t → ·   (t freed unchecked)
    u → ·

The store keeps its `0.0 + t`, off the chain; u's first value (0.0 + the element
the first pass reads) differs from the element at most in the sign of a zero,
which the same argument covers.  Where it applies, `carry_recurrences(module)`
requires:

- a `for` loop whose index moves by one (not `@parallel`, not the inverse of
  another: its first pass is its start) and whose body is one
  update `A[…, i + c, …] += v` of f64, marked `signed_zero` (a first write onto
  a zero), without alias checks;
- v reads A only as `A[…, i + c − step, …]` (the other indices the same, loop
  invariant), unchecked (a bounds check on the read would be lost), and only
  through `+`, `-` (binary and unary) and `*` up to v;
- nothing else in the body (the update is all of it), but temporaries the update
  reads, allocated before it with values that can fail no check and freed
  unchecked after it, which are put back into v (the gradient pass's recomputation
  of the recurrence materialises its nodes: rlang/ad/shadow.py `materialise`).

With invcheck on, such an update keeps its alias checks (i − 1 is not i) and is
left alone.  The interpreter runs the update as written.  The ancilla-array
recurrence's forward (n = 2·10^6) went from 5.3–5.6 ms (1.47–1.56× Numba's) to
3.63–3.91 ms (1.00–1.04×).

Note [Gradients carried in registers]
~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
The gradient pass of such a recurrence runs it backwards: `s·grad[i-1] += seed ·
P` with seed = s·grad[i], an update onto a zero that stores its value (a gradient
sum, not the interpreter's bits: Note [Updates onto zeros], rlang/ir/onto_zeros.py),
next to the chain rule's temporaries and the update of r's gradient, a scalar.
The next pass loads the element back: a store and a load on the chain, 4–5 cycles
of store forwarding a pass.  Here the stored value is what the next pass reads
(nothing else in the loop writes memory), so every read of that element takes a
scalar u instead, whatever the operations on the way:

    t ← v[s·grad[i] := u];  s·grad[i-1] += t;  …the rest, reads of s·grad[i] as u…;
    SWAP(u, t);  t → ·

`carry_recurrences` does this for a `for` loop with the conditions above on its
index, whose body is one such update (`onto_zero`, not `signed_zero`, f64, no
alias checks) and otherwise only scalar temporaries and updates of scalars, and
whose reads of the array are all of the element the previous pass stored,
unchecked.  u's first value is 0.0 plus that element: a gradient whose zero may
lose its sign, as a reassociated sum's may.
"""
from __future__ import annotations

from dataclasses import replace

from . import nodes as ir
from .affine import affine_index, loop_direction
from .walk import (expr_vars, has_checks, mapped, nested_bodies, stmt_exprs,
                   with_function_bodies, with_nested_bodies, written_vars)

_CHAIN_OPS = ("+", "-", "*")
_SCALARS = ("f64", "f32", "i64", "i32", "bool")


def carry_recurrences(module: ir.Module) -> ir.Module:
    """`module` with its recurrences kept in arrays carried in scalars (the same
    object when there are none)."""
    return with_function_bodies(module, lambda fn: _in_body(fn.body, written_vars(fn.body)))


def _in_body(body: tuple, written: frozenset) -> tuple:
    new, changed = [], False
    for stmt in body:
        carried = _carried(stmt, written) if isinstance(stmt, ir.For) else None
        if carried is not None:
            new.extend(carried)
            changed = True
            continue
        inner = [_in_body(b, written) for b in nested_bodies(stmt)]
        renewed = with_nested_bodies(stmt, inner) if inner else stmt
        changed |= renewed is not stmt
        new.append(renewed)
    return tuple(new) if changed else body


def _carried(loop: ir.For, written: frozenset):
    """The statements replacing `loop` (see the Note), or None where it does not
    qualify."""
    step = loop_direction(loop)
    if step == 0 or loop.parallel or loop.reverse_of is not None:
        return None
    update = _one_update(loop.body)
    if update is not None and isinstance(update, ir.Update) and update.signed_zero:
        return _carried_sum(loop, update, written, step)
    return _carried_store(loop, written, step)


def _carried_sum(loop: ir.For, update: ir.Update, written: frozenset, step: int):
    """A loop whose one update stores `0.0 + v` (the interpreter's bits): v carried
    raw, where only `+ - *` lead from the carried element to v."""
    recurrence = _recurrence(loop, update, written, step)
    if recurrence is None or not _through_chain_ops(update.value, update.target.var):
        return None
    u, put, reads = recurrence
    value = mapped(update.value, put)
    if value is update.value or _reads_array(value, update.target.var):
        return None
    t = ir.Var(update.target.var.name + "·next", "f64")
    body = (ir.Alloc(t, value),
            replace(update, value=ir.Read(t)),
            ir.Instr("SWAP", (ir.VarPlace(u), ir.VarPlace(t))),
            ir.Dealloc(t, None, None))
    return _around(loop, u, reads[0], body, step)


def _carried_store(loop: ir.For, written: frozenset, step: int):
    """A loop with one update that stores its value (a gradient written onto a zero,
    Note [Gradients carried in registers]) and otherwise only scalar temporaries
    and updates of scalars: every read of the element the previous pass stored
    takes the carried scalar instead."""
    body = loop.body
    stores = [k for k, st in enumerate(body) if isinstance(st, ir.Update) and
              st.onto_zero and not st.signed_zero and isinstance(st.target, ir.ElemPlace)]
    if len(stores) != 1 or not all(_scalar_only(st) for k, st in enumerate(body)
                                   if k != stores[0]):
        return None
    k = stores[0]
    update = body[k]
    recurrence = _recurrence(loop, update, written, step)
    if recurrence is None:
        return None
    u, put, reads = recurrence
    new = [mapped(st, put) for st in body]
    if all(a is b for a, b in zip(new, body)) or any(
            _reads(st, update.target.var) for st in new):
        return None             # nothing carried, or another element read
    t = ir.Var(update.target.var.name + "·next", "f64")
    new[k:k + 1] = [ir.Alloc(t, new[k].value), replace(new[k], value=ir.Read(t))]
    new += [ir.Instr("SWAP", (ir.VarPlace(u), ir.VarPlace(t))), ir.Dealloc(t, None, None)]
    return _around(loop, u, reads[0], tuple(new), step)


def _scalar_only(stmt) -> bool:
    """A statement that writes no memory: a scalar temporary's Alloc (or unchecked
    Dealloc), or an update of a scalar."""
    if isinstance(stmt, ir.Alloc):
        return stmt.var.type in _SCALARS
    if isinstance(stmt, ir.Dealloc):
        return stmt.var.type in _SCALARS and stmt.site is None
    return isinstance(stmt, ir.Update) and isinstance(stmt.target, ir.VarPlace) and \
        stmt.target.var.type in _SCALARS and not stmt.alias_checks


def _reads(stmt, array: ir.Var) -> bool:
    """Whether a statement's expressions read `array`."""
    return any(_reads_array(e, array) for e in stmt_exprs(stmt))


def _reads_array(e, array: ir.Var) -> bool:
    return any(var is array for var in expr_vars(e))


def _recurrence(loop: ir.For, update: ir.Update, written: frozenset, step: int):
    """(u, the `mapped` function replacing each unchecked read of the element the
    previous pass wrote by u, the list of the reads it replaced) for an f64 update
    `A[…, i + c, …] += v` without alias checks whose other indices are loop
    invariant; None where the update does not qualify."""
    if update.op != "+=" or update.alias_checks or \
            not isinstance(update.target, ir.ElemPlace) or \
            update.target.field is not None or update.target.var.type.elem != "f64":
        return None
    target = update.target
    varying = written | {loop.var}
    at = [affine_index(i, varying, loop.var) for i in target.indices]
    moving = [k for k, a in enumerate(at) if a is not None and a[0] is loop.var]
    if len(moving) != 1 or any(a is None or (a[0] is not None and a[0] in varying)
                               for k, a in enumerate(at) if k != moving[0]):
        return None
    axis = moving[0]
    previous = at[axis][1] - step
    u = ir.Var(target.var.name + "·carried", "f64")
    reads: list = []

    def put(e):
        if isinstance(e, ir.Load) and e.var is target.var and \
                _is_previous(e, target, at, axis, previous, varying):
            reads.append(e)
            return ir.Read(u)
        return None
    return u, put, reads


def _around(loop: ir.For, u: ir.Var, read: ir.Load, body: tuple, step: int) -> list:
    """The loop with its new body, u allocated before it (and given the element
    `read` reads in the first pass, if the loop runs) and freed after it."""
    first = ir.unchecked(loop.start)
    runs = ir.Compare("<=" if step > 0 else ">=", first, ir.unchecked(loop.stop))
    start_indices = tuple(mapped(i, lambda e: first if isinstance(e, ir.Read) and
                                 e.var is loop.var else None) for i in read.indices)
    initial = ir.Load(read.var, start_indices, None, None)
    return [ir.Alloc(u, ir.Const(0.0, "f64")),
            ir.If((ir.Branch(runs, None, (ir.Update(ir.VarPlace(u), "+=", initial),)),),
                  (), None),
            replace(loop, body=body),
            ir.Dealloc(u, None, None)]


def _one_update(body: tuple):
    """The body's one statement, or its one update with the temporaries it reads
    put back into its value (a gradient pass's recomputation: `t ← e … s[i] += …t…
    t → ·`); None for anything else.  A temporary qualifies when its value can fail
    no check and it is freed unchecked after the update."""
    if len(body) == 1:
        return body[0]
    temps: dict = {}
    k = 0
    while k < len(body) and isinstance(body[k], ir.Alloc) and body[k].var.type in _SCALARS \
            and body[k].value is not None and not has_checks(body[k].value):
        temps[body[k].var] = mapped(body[k].value, _put_back(temps))
        k += 1
    frees = body[k + 1:]
    if not temps or k >= len(body) or not isinstance(body[k], ir.Update) or \
            len(frees) != len(temps) or \
            {f.var for f in frees if isinstance(f, ir.Dealloc) and f.site is None} != \
            temps.keys():
        return None
    update = body[k]
    indices = getattr(update.target, "indices", ())
    if update.target.var in temps or any(var in temps for i in indices for var in expr_vars(i)):
        return None
    return replace(update, value=mapped(update.value, _put_back(temps)))


def _put_back(temps: dict):
    """The `mapped` function replacing a read of a temporary by its value."""
    def put(e):
        if isinstance(e, ir.Read) and e.field is None and e.var in temps:
            return temps[e.var]
        return None
    return put


def _is_previous(load: ir.Load, target: ir.ElemPlace, at: list, axis: int, previous: int,
                 varying: set) -> bool:
    """Whether `load` reads, unchecked, the element the previous pass wrote."""
    if load.site is not None or load.field is not None or \
            len(load.indices) != len(target.indices):
        return False
    for k, index in enumerate(load.indices):
        got = affine_index(index, varying, at[axis][0])
        if k == axis:
            if got != (at[axis][0], previous):
                return False
        elif got != at[k] or ir.unchecked(index) != ir.unchecked(target.indices[k]):
            return False
    return True


def _through_chain_ops(e, array) -> bool:
    """Whether every path from `e` down to a load of `array` goes through `+`, `-`
    and `*` of f64 only (Note [Recurrences carried in registers]); one walk."""
    return _chain_reach(e, array) is not None


def _chain_reach(e, array):
    """Whether `e` reads `array` (True/False), or None where some path down to such
    a read passes through another operation."""
    if isinstance(e, ir.Load) and e.var is array:
        return True
    reached = [_chain_reach(x, array) for x in ir.operands(e)]
    if None in reached:
        return None
    if not any(reached):
        return False
    chain = isinstance(e, ir.Binary) and e.op in _CHAIN_OPS and e.type == "f64" or \
        isinstance(e, ir.Unary) and e.op == "-" and e.type == "f64"
    return True if chain else None
