"""Drop updates that add a value known to be zero.

Note [Known zeros]
~~~~~~~~~~~~~~~~~~
The gradient pass of a compute-copy-uncompute function first recomputes the
routine's ancillas (rlang/ad/adjoint_ir.py runs the inverse of the uncomputation), and at
that point the gradients of those ancillas are the zeros they were allocated with:
every chain-rule update of that phase adds a product of a zero gradient
(`x·grad[j] += -xc·grad[j]`), a read-modify-write of every input gradient for
nothing.  `drop_zero_updates(module)` finds them by a forward walk over each body
that tracks the f64/f32 variables known to be all zero:

- an array allocated as `zeros(…)` or a scalar allocated as a zero constant is zero;
- a value is known zero when it is a zero constant, the read or load of a zero
  variable, its negation, its product with a finite constant (a seed scaled by a
  constant partial derivative, `0.5 · g`), or a `Guarded` product one of whose
  guards is known zero (a guarded product is 0 for a zero seed even where the
  partial is not finite, as the interpreter skips zero seeds);
- `+=`/`-=` of a known-zero value is dropped (x ± 0 is x; only the sign of a zero
  gradient can differ), and so is the chain rule of a known-zero seed (a branch
  that runs where the seed is nonzero, Note [Zero seeds] in rlang/ir/guards.py);
- any other write makes its variable unknown: updates, instructions, the written
  arguments of calls;
- a loop body starts from what is zero on every pass (the walk is repeated until
  nothing more becomes unknown); after an `if`, what every branch leaves zero.
  One update left in a loop body because its value was not seen to be zero makes
  its target unknown on the next pass, and with it everything that target feeds:
  before constant-scaled seeds counted, GMM's gradient kept the whole triangular
  recomputation (d = 64: 1.34 s → 0.99 s).

The pass runs before the dead-code pass (rlang/ir/prune.py), which then drops the
scalar temporaries that only fed the dropped updates.
"""
from __future__ import annotations

import math

from . import nodes as ir
from .guards import seed_guards
from .walk import (has_checks, nested_bodies, with_function_bodies, with_nested_bodies,
                   written_vars)

_FLOAT = ("f64", "f32")


def drop_zero_updates(module: ir.Module) -> ir.Module:
    """`module` without updates that add known zeros (the same object when none)."""
    return with_function_bodies(module, lambda fn: _walk_body(fn.body, frozenset(), module)[0])


def _walk_body(body: tuple, zero: frozenset, module) -> tuple:
    """(the body without zero updates, the variables known zero after it)."""
    kept, zero = [], set(zero)
    for stmt in body:
        if isinstance(stmt, ir.Update) and stmt.op in ("+=", "-=") and \
                _is_zero(stmt.value, zero) and not _checks(stmt) and _exact_to_drop(stmt):
            continue
        guards = seed_guards(stmt)      # a seed branch that never runs
        if guards is not None and all(_is_zero(g, zero) for g in guards):
            continue
        stmt = _walk_nested(stmt, zero, module)
        _transfer(stmt, zero, module)
        kept.append(stmt)
    if len(kept) == len(body) and all(a is b for a, b in zip(kept, body)):
        return body, frozenset(zero)
    return tuple(kept), frozenset(zero)


def _walk_nested(stmt, zero: set, module):
    """A statement with its nested bodies walked; `zero` becomes what holds after it
    for the variables its bodies write (the statement's own effect is `_transfer`)."""
    bodies = nested_bodies(stmt)
    if not bodies:
        return stmt
    if isinstance(stmt, ir.If):
        exits, new = [], []
        for body in bodies:
            walked, after = _walk_body(body, frozenset(zero), module)
            new.append(walked)
            exits.append(after)
        zero.intersection_update(*exits)
        return with_nested_bodies(stmt, new)
    entry = frozenset(zero)             # a loop: what no pass makes unknown
    while True:
        after = entry
        for body in bodies:
            _, after = _walk_body(body, after, module)
        narrowed = entry & after
        if narrowed == entry:
            break
        entry = narrowed
    walked = [_walk_body(body, entry, module)[0] for body in bodies]
    zero.intersection_update(entry)
    return with_nested_bodies(stmt, walked)      # the same object when nothing dropped


def _transfer(stmt, zero: set, module) -> None:
    """Update `zero` for what `stmt` itself allocates or writes."""
    if isinstance(stmt, ir.Alloc):
        t = stmt.var.type
        if isinstance(t, ir.ArrayType):
            zero.discard(stmt.var)
            if stmt.value is None and t.elem in _FLOAT:
                zero.add(stmt.var)
        elif t in _FLOAT and stmt.value is not None and _is_zero(stmt.value, zero):
            zero.add(stmt.var)
        else:
            zero.discard(stmt.var)
        return
    zero.difference_update(written_vars((stmt,)))


def _exact_to_drop(update: ir.Update) -> bool:
    """Whether dropping `update`, which adds a known zero, is exact: always for a
    derivative's own variables (shadows and temporaries, named with `·`; only the sign
    of a zero gradient can differ), and for the program's values only where the sign
    of the zero makes x ± 0 = x for every x: `+= -0.0` and `-= 0.0`.  (`w += 0.0` on
    w = -0.0 gives +0.0 in IEEE arithmetic: dropping it printed -0.0 on llvm.)"""
    if update.target.var.is_made:
        return True
    value = update.value
    if isinstance(value, ir.Const) and isinstance(value.value, float):
        negative = math.copysign(1.0, value.value) < 0
        return negative if update.op == "+=" else not negative
    return False


def _checks(update: ir.Update) -> bool:
    """Whether an update can fail a check (which dropping it would hide)."""
    place = update.target
    return bool(update.alias_checks) or getattr(place, "site", None) is not None or \
        any(has_checks(i) for i in getattr(place, "indices", ())) or \
        has_checks(update.value)


def _is_zero(e, zero: set) -> bool:
    kind = type(e)
    if kind is ir.Const:
        return e.type in _FLOAT and e.value == 0
    if kind is ir.Read or kind is ir.Load:
        return e.field is None and e.var in zero
    if kind is ir.Unary:
        return e.op == "-" and _is_zero(e.operand, zero)
    if kind is ir.Guarded:
        return any(_is_zero(g, zero) for g in e.guards)
    if kind is ir.Binary and e.op == "*":     # a seed scaled by a finite constant
        return any(_is_zero(x, zero) and type(y) is ir.Const and math.isfinite(y.value)
                   for x, y in ((e.left, e.right), (e.right, e.left)))
    return False
