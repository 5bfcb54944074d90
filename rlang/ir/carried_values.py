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
- nothing else in the body (the update is all of it).

With invcheck on, such an update keeps its alias checks (i − 1 is not i) and is
left alone.  The interpreter runs the update as written.  The ancilla-array
recurrence's forward (n = 2·10^6) went from 5.3–5.6 ms (1.47–1.56× Numba's) to
3.63–3.91 ms (1.00–1.04×).
"""
from __future__ import annotations

from dataclasses import replace

from . import nodes as ir
from .affine import affine_index, loop_direction
from .walk import mapped, nested_bodies, with_nested_bodies, written_vars

_CHAIN_OPS = ("+", "-", "*")


def carry_recurrences(module: ir.Module) -> ir.Module:
    """`module` with its recurrences kept in arrays carried in scalars (the same
    object when there are none)."""
    functions, changed = {}, False
    for symbol, fn in module.functions.items():
        body = _in_body(fn.body, written_vars(fn.body))
        changed |= body is not fn.body
        functions[symbol] = fn if body is fn.body else replace(fn, body=body)
    return ir.Module(module.entry, functions, module.sites) if changed else module


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
    if step == 0 or loop.parallel or loop.reverse_of is not None or len(loop.body) != 1:
        return None
    update = loop.body[0]
    if not isinstance(update, ir.Update) or update.op != "+=" or not update.signed_zero \
            or update.alias_checks or not isinstance(update.target, ir.ElemPlace) or \
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
    loads = []

    def replace_load(e):
        if isinstance(e, ir.Load) and e.var is target.var:
            loads.append(e)
            return ir.Read(u)
        return None

    value = mapped(update.value, replace_load)
    if not loads or not all(_is_previous(load, target, at, axis, previous, varying)
                            for load in loads) or \
            not _through_chain_ops(update.value, target.var):
        return None
    t = ir.Var(target.var.name + "·next", "f64")
    first = ir.unchecked(loop.start)
    runs = ir.Compare("<=" if step > 0 else ">=", first, ir.unchecked(loop.stop))
    start_indices = tuple(mapped(i, lambda e: first if isinstance(e, ir.Read) and
                                 e.var is loop.var else None) for i in loads[0].indices)
    initial = ir.Load(target.var, start_indices, None, None)
    body = (ir.Alloc(t, value),
            replace(update, value=ir.Read(t)),
            ir.Instr("SWAP", (ir.VarPlace(u), ir.VarPlace(t))),
            ir.Dealloc(t, None, None))
    return [ir.Alloc(u, ir.Const(0.0, "f64")),
            ir.If((ir.Branch(runs, None, (ir.Update(ir.VarPlace(u), "+=", initial),)),),
                  (), None),
            replace(loop, body=body),
            ir.Dealloc(u, None, None)]


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
