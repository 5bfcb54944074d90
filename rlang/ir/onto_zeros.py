"""Mark the updates of a derivative's zero ancillas that only write their first
value (`Update.onto_zero`): the backends store the value without loading the zero.

Note [Updates onto zeros]
~~~~~~~~~~~~~~~~~~~~~~~~~
A gradient pass accumulates into ancillas it allocates as zeros: `x·grad ←
0.0; x·grad += seed`, and in a reverse loop `s·grad[i - 1] += seed·19 * r` onto an
element no earlier pass touched.  The add reads a zero and puts `0 + v` in the
chain of every pass: in the logistic recurrence's gradient (rlang/ir/prune.py's
example; benchmarks/primal_speed.py) the element written in pass i is the seed of
pass i - 1, so the load and the add sit on the serial chain.  LLVM cannot drop
`0.0 + v` itself: it is v except for v = -0.0, which it may not assume away.

`mark_updates_onto_zeros(module)` finds updates whose target is known zero and
marks them; `+= v` then stores v, `-= v` stores -v, `^= v` stores v.  That is
exact for integers, and for floats but for the sign of a zero, so it is done only
to a derivative's own variables (named with `·`), where only the sign of a zero
gradient can differ, as in Note [Known zeros] (rlang/ir/zeros.py).  A program's
own values keep their add: `s[i] += r * s[i-1] * (1 - s[i-1])` onto a zero still
adds, so -0.0 turns into +0.0 as the interpreter has it (one add in the forward
recurrence's chain that Numba's `s = r * s * (1 - s)` does not have).

What is known zero, walking each statement list in order (`_Zeros`):

- a derivative's float scalar allocated as 0.0, or array allocated as zeros, is
  zero everywhere; a scalar stops being zero at its first write;
- an array stays zero except at the elements written so far, when each write is an
  update of one element whose indices are made of integer constants, and of
  variables that the function never writes, plus a constant (`n`, `n - 1`): two
  such indices are known different when they differ by a constant;
- a `for` loop (not `@parallel`) over an array known zero except at such elements
  writes a fresh element in each pass when every write of the array in its body is
  an update at the same indices, one of them the loop index plus a constant and the
  others loop-invariant, and when the elements known written lie on the far side
  of the loop's start (`s·grad[n] += …` before `for i = n:-1:1 … s·grad[i - 1]`);
  the first such update of each pass is onto a zero.  Updates inside the body's
  seed branches count as the body's (a branch may skip them, which leaves the
  element zero): loops whose passes wait on each other keep those branches (Note
  [Seed branches in serial loops], rlang/ir/guards.py), and there the store is
  on the serial chain;
- anything else that writes the variable (an instruction, a call, a nested
  statement, a stack operation) ends what is known of it.
"""
from __future__ import annotations

from dataclasses import replace

from . import nodes as ir
from .affine import affine_index, loop_direction
from .guards import seed_guards
from .walk import nested_bodies, with_function_bodies, with_nested_bodies, written_vars

_FLOAT = ("f64", "f32")


def mark_updates_onto_zeros(module: ir.Module) -> ir.Module:
    """`module` with its updates onto known-zero derivative variables marked
    `onto_zero` (the same object when there are none)."""
    return with_function_bodies(module, lambda fn: _mark_body(fn.body, _written_anywhere(fn.body)))


def _written_anywhere(body) -> frozenset:
    """The variables some statement of `body` writes, binds or frees: an index made
    of other variables means the same element wherever it is evaluated."""
    return written_vars(body)


def _derivative_zero(stmt: ir.Alloc) -> bool:
    """Whether `stmt` allocates a derivative's float variable as all zero."""
    if not stmt.var.is_made:
        return False
    t = stmt.var.type
    if isinstance(t, ir.ArrayType):
        return t.elem in _FLOAT and stmt.value is None
    return t in _FLOAT and isinstance(stmt.value, ir.Const) and stmt.value.value == 0


def _mark_body(body: tuple, written: frozenset) -> tuple:
    """`body` with its updates onto zeros marked (the same object when none)."""
    zeros = _Zeros(written)
    kept = []
    for stmt in body:
        if isinstance(stmt, ir.Alloc) and _derivative_zero(stmt):
            zeros.allocated(stmt.var)
        elif isinstance(stmt, ir.Update) and zeros.onto_zero(stmt):
            stmt = replace(stmt, onto_zero=True)
        elif isinstance(stmt, ir.For):
            stmt = zeros.loop(stmt)
        else:
            zeros.forget_written(stmt)
        stmt = _mark_nested(stmt, written)
        kept.append(stmt)
    if all(a is b for a, b in zip(kept, body)):
        return body
    return tuple(kept)


def _mark_nested(stmt, written: frozenset):
    """A statement with the ancillas its nested bodies allocate themselves marked."""
    bodies = nested_bodies(stmt)
    if not bodies:
        return stmt
    return with_nested_bodies(stmt, [_mark_body(b, written) for b in bodies])


class _Zeros:
    """The derivative variables known zero, each with the indices of its elements
    written since (a list of affine index tuples; empty: all zero)."""

    def __init__(self, written: frozenset):
        self.written = written          # the function's written variables
        self.known: dict = {}

    def allocated(self, var: ir.Var) -> None:
        self.known[var] = []

    def onto_zero(self, update: ir.Update) -> bool:
        """Whether `update` writes a known zero; records what it writes."""
        var = update.target.var
        written = self.known.get(var)
        if written is None:
            return False
        if isinstance(update.target, ir.VarPlace):
            del self.known[var]
            return update.target.field is None
        indices = self._affine(update.target)
        if indices is None or update.target.field is not None:
            del self.known[var]
            return False
        fresh = all(_differ(indices, other) for other in written)
        written.append(indices)
        return fresh

    def loop(self, loop: ir.For) -> ir.For:
        """The loop with the first update of each fresh element marked, for the
        arrays known zero on its far side; what it writes is forgotten after it."""
        marked = set()
        if not loop.parallel:
            for var, written in list(self.known.items()):
                if isinstance(var.type, ir.ArrayType) and \
                        self._fresh_in_each_pass(loop, var, written):
                    marked.add(var)
        if marked:
            loop = replace(loop, body=_first_updates_marked(loop.body, marked, set()))
        self.forget_written(loop)
        return loop

    def _fresh_in_each_pass(self, loop: ir.For, var, written: list) -> bool:
        """Whether every write of `var` in the loop's body is an update at indices
        that are one element per pass (the step is never 0: a checked error), never
        one of `written`."""
        targets = set()
        for stmt in _through_seed_branches(loop.body):
            if isinstance(stmt, ir.Update) and stmt.target.var is var:
                if not isinstance(stmt.target, ir.ElemPlace) or stmt.target.field is not None:
                    return False
                targets.add(stmt.target.indices)
            elif _writes(stmt, var):
                return False
        if len(targets) != 1:
            return False
        indices = [affine_index(i, self.written, loop.var) for i in next(iter(targets))]
        if any(i is None for i in indices):
            return False
        moving = [k for k, (base, _) in enumerate(indices) if base is loop.var]
        if len(moving) != 1:
            return False
        if not written:
            return True
        start, direction = _loop_start(loop), loop_direction(loop)
        if start is None:
            return False
        k = moving[0]
        base, first = start[0], start[1] + indices[k][1]     # the first pass's element
        for other in written:       # on the side of the first pass the loop leaves
            other_base, other_offset = other[k]
            if other_base is not base or \
                    not (other_offset < first if direction > 0 else other_offset > first):
                return False
        return True

    def forget_written(self, stmt) -> None:
        for var in list(self.known):
            if _writes(stmt, var):
                del self.known[var]

    def _affine(self, place: ir.ElemPlace):
        indices = tuple(affine_index(i, self.written) for i in place.indices)
        return None if any(i is None for i in indices) else indices


def _through_seed_branches(body: tuple):
    """The statements of `body` in order, those of its seed branches (Note [Zero
    seeds], rlang/ir/guards.py) in place of the branches: each may run or not."""
    for stmt in body:
        if seed_guards(stmt) is not None:
            yield from _through_seed_branches(stmt.branches[0].body)
        else:
            yield stmt


def _first_updates_marked(body: tuple, marked: set, seen: set) -> tuple:
    """`body` with the first update of each variable of `marked` (in the order of
    `_through_seed_branches`) marked onto a zero; `seen` collects those found."""
    new = []
    for stmt in body:
        if seed_guards(stmt) is not None:
            branch = stmt.branches[0]
            inner = _first_updates_marked(branch.body, marked, seen)
            if inner is not branch.body:
                stmt = replace(stmt, branches=(replace(branch, body=inner),))
        elif isinstance(stmt, ir.Update) and stmt.target.var in marked and \
                stmt.target.var not in seen:
            seen.add(stmt.target.var)
            stmt = replace(stmt, onto_zero=True)
        new.append(stmt)
    return body if all(a is b for a, b in zip(new, body)) else tuple(new)


def _writes(stmt, var) -> bool:
    """Whether `stmt` (at any depth) writes or frees `var`."""
    return var in written_vars((stmt,))


def _differ(a: tuple, b: tuple) -> bool:
    """Whether two affine index tuples are known to name different elements."""
    return any(x[0] is y[0] and x[1] != y[1] for x, y in zip(a, b))


def _loop_start(loop: ir.For):
    """The affine index of the loop's first pass, from a step of ±1; None when not
    so simple."""
    if loop_direction(loop) == 0:
        return None
    first = loop.start
    if loop.reverse_of is not None:         # visits a:s:b backward, from b
        first = loop.reverse_of[2]
    return affine_index(first, frozenset())
