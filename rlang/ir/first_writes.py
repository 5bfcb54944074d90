"""Find the array ancillas whose zeros nobody reads, and mark them so that the
backends need not write those zeros (`Alloc.written_first`).

Note [Arrays written before they are read]
~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
An array ancilla starts as zeros, and a reversible program fills it by updates:
Horner's rule in llsq's blocks, `h[j, l] += x[j] + t[l] * h[j + 1, l]` for j
from m - 2 down to 0 after `h[m - 1, l] += x[m - 1]`, or a recurrence kept in an
array, `s[i] += r * s[i - 1] * (1 - s[i - 1])`.  The first update of each element
adds to the zero it was given (0 + v, which is v but for the sign of a zero), and
once the uncomputation is gone (Note [Dead uncomputation], rlang/ir/prune.py) no
one reads those zeros but the first updates.  Writing them cost llsq's blocks a
memset of 32 kB each: a fifth of the primal and of the gradient (n = 4096,
m = 128: 4 MB of zeros a call).

`mark_first_writes(module)` walks the statements after each zeros allocation of an
f64, f32, i64 or i32 array up to its deallocation, knowing which elements are
written so far as boxes, one interval per axis whose ends are linear in
variables that do not change there (`m - 1`, a loop's index plus a constant):

- an update of an element inside a box where the written elements surely are
  (`must`) reads what an earlier update wrote; an update of an element outside
  every box where they may be (`may`) is a first write: it is marked `onto_zero`
  with `signed_zero`, so that it computes 0 ± v from a constant zero, the same bits
  as the add from memory, and its element joins both;
- a `for` loop with a step of ±1 (not `@parallel`) is walked once for a pass k
  whose elements written in earlier passes are the sweep of what one pass writes
  (a box with k + c at one axis, the others not moving) from the first pass to
  k - 1 (or from k + 1 downward); after the loop, the sweep to its last pass.  A
  sweep of a loop that does not run is an empty box, as the interval [a, a - 1]
  is empty.  A box whose ends move with k in any other way (a triangle's rows
  c + 1 … d - 1 for column c, GMM's `qx[k, r, p] += …` in evals/gmm.rev) sweeps
  into one that holds what every pass may write, in `may` alone: the triangle's
  additions to elements written before stay updates inside `must`, and GMM's qx
  lost its zeroing.  Boxes that touch at one axis and are equal at the others are
  joined into one in `must` (a smaller set than the union, and only where that is
  harmless: never in `may`);
- whether an element is inside or outside a box is proved by eliminating the loop
  indices (each within its loop's first and last pass) and comparing constants;
  what cannot be proved is not assumed;
- any other use of the array (a read outside `must`, a call, SWAP, a stack, a
  branch or `while` that mentions it, a write with indices that are not linear)
  ends the walk, and the allocation keeps its zeros; a checked deallocation reads
  every element, so it needs `must` to cover the array.

Where the walk reaches the deallocation, the zeros are never read and the
allocation is marked: the llvm backend then takes its memory without zeroing it
(backends/llvm/ancillas.py).  The interpreter and the cuda backend zero as before;
the first writes' values are the same either way.
"""
from __future__ import annotations

from dataclasses import replace

from . import nodes as ir
from .affine import loop_direction
from .walk import (expr_vars, has_checks, nested_bodies, stmt_exprs, stmt_places, walk,
                   with_function_bodies, with_nested_bodies, written_vars)

_ELEMENTS = ("f64", "f32", "i64", "i32")


def mark_first_writes(module: ir.Module) -> ir.Module:
    """`module` with its array allocations whose zeros nobody reads marked
    `written_first`, and their first writes `onto_zero` (the same object when
    there are none)."""
    return with_function_bodies(module, lambda fn: _mark_body(fn.body, _Mentions()))


def _mark_body(body: tuple, mentions: "_Mentions") -> tuple:
    """`body` (and every statement list inside it) with its allocations marked."""
    new = [_mark_nested(stmt, mentions) for stmt in body]
    for k, stmt in enumerate(new):
        if isinstance(stmt, ir.Alloc) and _zeros_array(stmt):
            end = _dealloc_index(new, k, stmt.var)
            if end is None:
                continue
            marked = _Walk(stmt, mentions).region(tuple(new[k + 1:end + 1]))
            if marked is not None:
                new[k] = replace(stmt, written_first=True)
                new[k + 1:end + 1] = marked
    return body if all(a is b for a, b in zip(new, body)) else tuple(new)


def _mark_nested(stmt, mentions: "_Mentions"):
    bodies = nested_bodies(stmt)
    if not bodies:
        return stmt
    return with_nested_bodies(stmt, [_mark_body(b, mentions) for b in bodies])


def _zeros_array(stmt: ir.Alloc) -> bool:
    t = stmt.var.type
    return isinstance(t, ir.ArrayType) and t.elem in _ELEMENTS and stmt.value is None \
        and not stmt.written_first


def _dealloc_index(body: list, start: int, var: ir.Var):
    for k in range(start + 1, len(body)):
        if isinstance(body[k], ir.Dealloc) and body[k].var is var:
            return k
    return None


class _Unsure(Exception):
    """The walk met a use of the array it cannot follow."""


# ------------------------------------------------------------ linear index forms
#
# A form is a sorted tuple of (variable, coefficient) pairs, then the constant:
# ((var, coef), ...), const.  Variables are compared by identity.

def _form(e, fixed) -> tuple:
    """The linear form of an integer index expression over the variables of
    `fixed` (those that do not change where the form is used)."""
    e = ir.checks_peeled(e)
    if isinstance(e, ir.Const) and type(e.value) is int:
        return (), e.value
    if isinstance(e, ir.Read) and e.field is None and e.var in fixed:
        return ((e.var, 1),), 0
    if isinstance(e, ir.Unary) and e.op == "-":
        return _scaled(_form(e.operand, fixed), -1)
    if isinstance(e, ir.Binary) and e.op in ("+", "-"):
        left, right = _form(e.left, fixed), _form(e.right, fixed)
        return _sum(left, _scaled(right, 1 if e.op == "+" else -1))
    if isinstance(e, ir.Binary) and e.op == "*":
        left, right = _form(e.left, fixed), _form(e.right, fixed)
        if not left[0]:
            return _scaled(right, left[1])
        if not right[0]:
            return _scaled(left, right[1])
    raise _Unsure


def _bound_forms(e, fixed, upper: bool) -> list:
    """Linear forms that an index expression is at most (`upper`) or at least:
    itself where it is linear; each argument of a `min` (of a `max` for a lower
    bound), with constants and linear terms added; no form at all otherwise."""
    e = ir.checks_peeled(e)
    try:
        return [_form(e, fixed)]
    except _Unsure:
        pass
    if isinstance(e, ir.Builtin) and e.name == ("min" if upper else "max"):
        return [f for arg in e.args for f in _bound_forms(arg, fixed, upper)]
    if isinstance(e, ir.Binary) and e.op in ("+", "-"):
        sign = 1 if e.op == "+" else -1
        try:
            right = _form(e.right, fixed)
            return [_sum(f, _scaled(right, sign))
                    for f in _bound_forms(e.left, fixed, upper)]
        except _Unsure:
            pass
        try:
            left = _form(e.left, fixed)
            return [_sum(left, _scaled(f, sign))
                    for f in _bound_forms(e.right, fixed, upper == (sign > 0))]
        except _Unsure:
            pass
    return []


_ZERO = ((), 0)


def _sum(a: tuple, b: tuple) -> tuple:
    coefs: dict = {}
    for var, c in a[0] + b[0]:
        coefs[var] = coefs.get(var, 0) + c
    terms = tuple(sorted(((v, c) for v, c in coefs.items() if c), key=lambda t: id(t[0])))
    return terms, a[1] + b[1]


def _scaled(a: tuple, k: int) -> tuple:
    return tuple((v, c * k) for v, c in a[0] if c * k), a[1] * k


def _plus(a: tuple, k: int) -> tuple:
    return a[0], a[1] + k


def _minus(a: tuple, b: tuple) -> tuple:
    return _sum(a, _scaled(b, -1))


def _coefficient(a: tuple, var) -> int:
    return next((c for v, c in a[0] if v is var), 0)


def _without(a: tuple, var) -> tuple:
    return tuple((v, c) for v, c in a[0] if v is not var), a[1]


class _Walk:
    """The walk over the statements after one zeros allocation (Note [Arrays
    written before they are read])."""

    def __init__(self, alloc: ir.Alloc, mentions: "_Mentions"):
        self.var = alloc.var
        self.mentioned = mentions
        self.dims = alloc.dims
        self.must: list = []        # boxes: tuples of (lo, hi) forms, one per axis
        self.may: list = []
        self.ranges: dict = {}      # loop index -> (lowest, highest) forms
        self.fixed: set = set()     # variables that do not change in the region

    def region(self, stmts: tuple):
        """`stmts` (ending with the deallocation) with the first writes marked, or
        None when the walk cannot follow the array through them."""
        self.fixed = _FixedVars(stmts)
        self.last = []                  # the array's last index at each axis
        for d in self.dims:
            try:
                self.last.append(_plus(_form(d, self.fixed), -1))
            except _Unsure:
                self.last.append(None)  # (an extent that is not linear)
        try:
            return self.body(stmts)
        except _Unsure:
            return None

    # -------------------------------------------------------------- statements
    def body(self, stmts: tuple) -> tuple:
        return tuple(stmt if self._unread(stmts, k) else self.statement(stmt)
                     for k, stmt in enumerate(stmts))

    def _unread(self, stmts: tuple, k: int) -> bool:
        """Whether `stmts[k]` allocates a scalar nobody reads before its unchecked
        deallocation: a dead temporary (the seed of a zero gradient) whose value,
        whatever it is, goes nowhere."""
        stmt = stmts[k]
        if not isinstance(stmt, ir.Alloc) or isinstance(stmt.var.type, ir.ArrayType) or \
                stmt.value is None or has_checks(stmt.value):
            return False
        for later in stmts[k + 1:]:
            if isinstance(later, ir.Dealloc) and later.var is stmt.var:
                return later.site is None
            if stmt.var in self.mentioned(later):
                return False
        return False

    def statement(self, stmt):
        var = self.var
        if isinstance(stmt, ir.Dealloc) and stmt.var is var:
            if stmt.site is not None and not self._covers_all():
                raise _Unsure
            return stmt
        if isinstance(stmt, ir.Dealloc) and stmt.site is None:
            return stmt             # unchecked: its value is not evaluated
        if isinstance(stmt, ir.Update) and stmt.target.var is var:
            return self.update(stmt)
        if isinstance(stmt, ir.For) and self._mentions(stmt):
            return self.loop(stmt)
        if self._mentions(stmt):
            if var in written_vars((stmt,)):
                raise _Unsure
            for s in walk((stmt,)):                 # it only reads the array
                for e in stmt_exprs(s):
                    self.reads(e)
                for place in stmt_places(s):
                    if isinstance(place, ir.Read) and place.var is var:
                        raise _Unsure
                    for e in getattr(place, "indices", ()):
                        self.reads(e)
        return stmt

    def update(self, stmt: ir.Update) -> ir.Update:
        target = stmt.target
        if not isinstance(target, ir.ElemPlace) or target.field is not None:
            raise _Unsure
        for e in stmt_exprs(stmt) + list(target.indices):
            self.reads(e)
        point = tuple(_form(i, self.fixed) for i in target.indices)
        if any(self._inside(point, box) for box in self.must):
            return stmt
        if not all(self._outside(point, box) for box in self.may):
            raise _Unsure
        box = tuple((p, p) for p in point)
        self.may.append(box)
        self.must = _joined(self.must + [box])
        if stmt.onto_zero:
            return stmt
        return replace(stmt, onto_zero=True, signed_zero=True)

    def reads(self, e) -> None:
        """Check that every element of the array that `e` reads is in `must`."""
        pending = [e]
        while pending:
            e = pending.pop()
            if isinstance(e, ir.Read) and e.var is self.var:
                raise _Unsure
            if isinstance(e, ir.Load) and e.var is self.var:
                point = tuple(_form(i, self.fixed) for i in e.indices)
                if not any(self._inside(point, box) for box in self.must):
                    raise _Unsure
            if isinstance(e, ir.ComplexValue):
                pending.extend((e.re, e.im))
            pending.extend(ir.operands(e))

    def loop(self, loop: ir.For) -> ir.For:
        direction = loop_direction(loop)
        if direction == 0 or loop.parallel:
            raise _Unsure
        for e in stmt_exprs(loop):
            self.reads(e)
        k = loop.var
        per_pass = _Writes(self).of(loop.body, k)       # empty: it only reads the array
        first, last = _ends(loop)
        low, high = (first, last) if direction > 0 else (last, first)
        self.ranges[k] = (_bound_forms(low, self.fixed, upper=False),
                          _bound_forms(high, self.fixed, upper=True))
        if per_pass:
            first, last = _form(first, self.fixed), _form(last, self.fixed)
            must0, may0 = self.must, self.may
            self._swept(must0, may0, per_pass, k, first, (((k, 1),), -direction), direction)
        self.fixed.add(k)
        body = self.body(loop.body)
        del self.ranges[k]
        self.fixed.discard(k)
        if per_pass:
            self._swept(must0, may0, per_pass, k, first, last, direction)
        return loop if body == loop.body else replace(loop, body=body)

    def _swept(self, must0, may0, per_pass, k, first, last, direction) -> None:
        """`must` and `may` after the passes first … last of a loop over `k` whose
        passes each write `per_pass`, from `must0` and `may0` before it."""
        swept = [(*_sweep(box, k, first, last, direction), sure)
                 for box, sure in per_pass]
        self.may = may0 + [box for box, _, _ in swept]
        self.must = _joined(must0 + [box for box, exact, sure in swept if exact and sure])

    # ------------------------------------------------------------------ proofs
    def _nonnegative(self, form: tuple) -> bool:
        """Whether `form` is at least 0 for every value of the loop indices in
        their ranges and of the other variables: each index, innermost first, is
        replaced by the end of its range that makes the form least (either of the
        bounds known of that end will do)."""
        return self._least_nonnegative(form, list(self.ranges))

    def _least_nonnegative(self, form: tuple, indices: list) -> bool:
        while indices:
            k = indices.pop()
            c = _coefficient(form, k)
            if c:
                lows, highs = self.ranges[k]
                return any(self._least_nonnegative(
                    _sum(_without(form, k), _scaled(bound, c)), list(indices))
                    for bound in (lows if c > 0 else highs))
        return not form[0] and form[1] >= 0

    def _inside(self, point: tuple, box: tuple) -> bool:
        """Whether the element at `point`, read or written (so within the array:
        a bounds check fails otherwise, or `@inbounds` promised it), is in `box`."""
        return all((lo == _ZERO or self._nonnegative(_minus(p, lo))) and
                   (hi == last or self._nonnegative(_minus(hi, p)))
                   for p, (lo, hi), last in zip(point, box, self.last))

    def _outside(self, point: tuple, box: tuple) -> bool:
        return any(self._nonnegative(_plus(_minus(lo, p), -1)) or
                   self._nonnegative(_plus(_minus(p, hi), -1))
                   for p, (lo, hi) in zip(point, box))

    def _covers_all(self) -> bool:
        """Whether one box of `must` holds every element of the array."""
        return None not in self.last and any(
            all(self._nonnegative(_scaled(lo, -1)) and self._nonnegative(_minus(hi, last))
                for (lo, hi), last in zip(box, self.last))
            for box in self.must)

    def _mentions(self, stmt) -> bool:
        return self.var in self.mentioned(stmt)


class _Mentions:
    """The variables each statement mentions at any depth (reads, writes, index
    expressions, allocation), worked out once per statement (by identity)."""

    def __init__(self):
        self.known: dict = {}

    def __call__(self, stmt) -> frozenset:
        found = self.known.get(id(stmt))
        if found is not None:
            return found[1]
        out = set()
        for e in stmt_exprs(stmt):
            out.update(expr_vars(e))
        for place in stmt_places(stmt):
            out.add(place.var)
            for i in getattr(place, "indices", ()):
                out.update(expr_vars(i))
        if isinstance(stmt, (ir.Alloc, ir.Dealloc)):
            out.add(stmt.var)
        for inner in nested_bodies(stmt):
            for s in inner:
                out |= self(s)
        found = frozenset(out)
        self.known[id(stmt)] = (stmt, found)     # the statement kept: its id stays its own
        return found


class _FixedVars(set):
    """The variables that do not change in a region: the loop indices added, and
    every integer scalar the region's statements do not write (worked out when
    first asked)."""

    def __init__(self, stmts: tuple):
        super().__init__()
        self.stmts = stmts
        self.changing = None

    def __contains__(self, var) -> bool:
        if set.__contains__(self, var):
            return True
        if var.type not in ("i64", "i32"):
            return False
        if self.changing is None:
            self.changing = written_vars(self.stmts)
        return var not in self.changing


class _Writes:
    """What one pass of a loop body writes of the walk's array: (box, whether
    every element of it is surely written) pairs, whose ends may hold the pass's
    index but no index of a loop inside the body."""

    def __init__(self, walker: _Walk):
        self.walker = walker

    def of(self, body: tuple, index) -> list:
        fixed = self.walker.fixed
        fixed.add(index)
        try:
            return self._boxes(body)
        finally:
            fixed.discard(index)

    def _boxes(self, body: tuple) -> list:
        var, fixed, boxes = self.walker.var, self.walker.fixed, []
        for stmt in body:
            if isinstance(stmt, ir.Update) and stmt.target.var is var:
                if not isinstance(stmt.target, ir.ElemPlace):
                    raise _Unsure
                point = tuple(_form(i, fixed) for i in stmt.target.indices)
                boxes.append((tuple((p, p) for p in point), True))
            elif isinstance(stmt, ir.For) and self.walker._mentions(stmt):
                direction = loop_direction(stmt)
                if direction == 0 or stmt.parallel:
                    raise _Unsure
                first, last = (_form(e, fixed) for e in _ends(stmt))
                fixed.add(stmt.var)
                try:
                    inner = self._boxes(stmt.body)
                finally:
                    fixed.discard(stmt.var)
                for box, sure in inner:
                    swept, exact = _sweep(box, stmt.var, first, last, direction)
                    boxes.append((swept, sure and exact))
        return boxes


def _ends(loop: ir.For) -> tuple:
    """(first, last) index expressions of a loop with a step of ±1."""
    if loop.reverse_of is not None:        # visits a:s:b backward, from b
        return loop.reverse_of[2], loop.reverse_of[0]
    return loop.start, loop.stop


def _sweep(box: tuple, k, first: tuple, last: tuple, direction: int) -> tuple:
    """(the elements the passes first … last of a loop over `k` may write, one
    pass writing `box`; whether they surely do).  An axis at k + c becomes the
    interval between first + c and last + c, empty when the loop does not run, so
    the sweep is exact; a box without k is written by every pass, so only if the
    loop runs, which is not known.  Any other box with k in its ends (a triangle's
    rows c + 1 … d - 1 for column c) gives a box that holds what every pass may
    write, each end taken at the pass where it is farthest out: not exact."""
    moving = [axis for axis, (lo, hi) in enumerate(box)
              if _coefficient(lo, k) or _coefficient(hi, k)]
    if not moving:
        return box, False
    if len(moving) == 1 and box[moving[0]][0] == box[moving[0]][1] and \
            box[moving[0]][0][0] == ((k, 1),):
        axis = moving[0]
        lo = box[axis][0]
        at_first, at_last = _plus(first, lo[1]), _plus(last, lo[1])
        ends = (at_first, at_last) if direction > 0 else (at_last, at_first)
        return box[:axis] + (ends,) + box[axis + 1:], True
    low, high = (first, last) if direction > 0 else (last, first)

    def at(form: tuple, least: bool) -> tuple:
        c = _coefficient(form, k)
        end = low if (c > 0) == least else high
        return _sum(_without(form, k), _scaled(end, c)) if c else form

    return tuple((at(lo, True), at(hi, False)) for lo, hi in box), False


def _joined(boxes: list) -> list:
    """The boxes with each pair that touches at one axis (the first's end + 1 the
    second's start) and is equal at the others joined into one."""
    boxes = list(boxes)
    joined = True
    while joined:
        joined = False
        for a in range(len(boxes)):
            for b in range(len(boxes)):
                if a != b and _touch(boxes[a], boxes[b]):
                    merged = tuple((x[0], y[1]) if x != y else x
                                   for x, y in zip(boxes[a], boxes[b]))
                    boxes = [box for k, box in enumerate(boxes) if k not in (a, b)]
                    boxes.append(merged)
                    joined = True
                    break
            if joined:
                break
    return boxes


def _touch(a: tuple, b: tuple) -> bool:
    different = [axis for axis, (x, y) in enumerate(zip(a, b)) if x != y]
    if len(different) != 1:
        return False
    axis = different[0]
    return _plus(a[axis][1], 1) == b[axis][0]

