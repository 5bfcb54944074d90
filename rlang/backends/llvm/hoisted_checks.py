"""One bounds check per array axis for an expression whose checked reads all have
constant indices (Note [Constant indices checked once]).

- `hoisted_bounds(*exprs)`: the plan for expressions computed one after another (a
  `HoistedBounds`), or None where their checks stay where they are.
- `checked_runs(stmts, across)`: a body's statements in runs, each with the plan
  hoisted before it (scalar ancillas' values together where `across`).
- `hoisting(em, plan)`: a context in which the function emitter `em`
  (backends/llvm/emit.py) leaves out the checks of `plan`'s reads, made once at
  its start (`emit_hoisted_bounds`).
"""
from __future__ import annotations

from contextlib import contextmanager
from dataclasses import dataclass

from llvmlite import ir as ll

from .. import abi
from ...ir import nodes as ir
from .types import I64

# Note [Constant indices checked once]
# ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
# A read of an array element checks each index against the axis's extent where the
# read is made: a compare, a branch, and a block that records the site and the
# values.  An expression like `x[0]*x[0] + x[1]*x[7] + …` of 1,000 terms had 2,000
# such checks in its forward and as many in its gradient pass: most of the 3.4 MB
# of LLVM IR whose compiling took 2.1 s of its first gradient.
#
# Where every check of an expression is a bounds check of an array read whose
# indices are constants (and nothing in it branches: no `&&`/`||`, no `let`), all
# of its reads run whenever any does, with nothing observable between them.  So the
# reads along one axis of one array are checked once, before the expression, with
# their largest index (compared unsigned, as every bounds check is: a negative
# index is out of bounds); the reads themselves go unchecked.  Where one of those
# checks fails, a cold loop finds the read that failed first in the order the
# reads' own checks ran (a table of index, axis and site, in that order) and
# records what its check would have: the same site, index and extent, so the
# error is the interpreter's (LANGUAGE.md §8).  The table keeps only a read whose
# index is larger than every earlier one's along its axis: a read no larger than an
# earlier one cannot fail first.  Expressions with fewer than MIN_READS checked
# reads keep their checks where they are.
#
# A derivative pass computes an expression's reads into scalar ancillas one
# statement each (`elem_k ← x[i]`, Note [Elements read more than once],
# rlang/ad/adjoint_ir.py), so a run of such statements is planned as one
# expression: they write only their own registers, and a derivative pass reports
# no frame variables at an error (Note [Frame variables in compiled errors],
# backends/llvm/report.py), so a failure before the run is the same as one inside
# it.  The 1,000-term sum's gradient pass had 2,000 checks, one a statement.
#
# Measured on that sum (`rlang.grad`, an empty disk cache): the forward module's IR
# 913 → 300 kB, the gradient module's 1.83 → 1.14 MB (LLVM 1.21 → 0.92 s), the
# first gradient 4.1 → 3.1-3.3 s.  Constant offsets are also folded where the
# element's address is made (`x[3]` of a unit-stride axis: no multiply, no add).

#: the fewest checked reads for which an expression's checks are hoisted
MIN_READS = 3

#: the expression nodes through which every operand is computed, unconditionally
_STRAIGHT = (ir.Const, ir.Read, ir.Dim, ir.Unary, ir.Compare, ir.Reinterpret,
             ir.Builtin, ir.Select, ir.Guarded, ir.Nonzero)


@dataclass(frozen=True)
class HoistedBounds:
    """`axes`: (array var, axis) in order of first read; `largest[a]`: the largest
    index of axis a's reads, as unsigned; `table`: (index, axis number, site) of
    the reads that may fail first, in the order their checks ran; `sites`: the
    sites of every check the plan makes (`site + axis` of each read)."""

    axes: tuple
    largest: tuple
    table: tuple
    sites: frozenset


def hoisted_bounds(*exprs) -> HoistedBounds | None:
    """The plan for the bounds checks of expressions computed in this order, or
    None where their checks stay at their reads (a check of another kind, a read at
    a computed index, a branch inside, or fewer than MIN_READS checked reads)."""
    reads: list = []            # (var, axis, index, site) in the order checks run
    if not all(_collect(e, reads) for e in exprs):
        return None
    return _plan(reads)


def _plan(reads: list) -> HoistedBounds | None:
    """The plan for checked reads (var, axis, index, site) in the order their checks
    run, or None for fewer than MIN_READS."""
    if len(reads) < MIN_READS:
        return None
    axes: dict = {}
    largest: list = []
    table = []
    for var, axis, index, site in reads:
        key = (var, axis)
        number = axes.get(key)
        unsigned = index & (2 ** 64 - 1)
        if number is None:
            number = axes[key] = len(largest)
            largest.append(unsigned)
            table.append((unsigned, number, site))
        elif unsigned > largest[number]:
            largest[number] = unsigned
            table.append((unsigned, number, site))
    return HoistedBounds(tuple(axes), tuple(largest), tuple(table),
                         frozenset(site for *_, site in reads))


def _collect(e, reads: list) -> bool:
    """Append the checked reads of `e` to `reads` in the order the emitter checks
    them; False where `e` has a check or a branch the plan cannot take."""
    kind = type(e)
    if kind is ir.Load:
        if isinstance(e.var.type, ir.StackType):
            return e.site is None
        if e.site is None:
            return all(_collect(i, reads) for i in e.indices)
        if not all(type(i) is ir.Const for i in e.indices):
            return False
        reads.extend((e.var, k, int(i.value), e.site + k) for k, i in enumerate(e.indices))
        return True
    if kind in (ir.Binary, ir.Convert):
        if e.site is not None:
            return False
    elif kind not in _STRAIGHT:
        return False
    return all(_collect(x, reads) for x in ir.operands(e))


def checked_runs(stmts, across: bool):
    """(statements, plan or None) for `stmts` in order: where `across`, each run of
    consecutive scalar ancillas whose values qualify, planned together; every
    other statement alone, with no plan (its expression is planned where it is
    emitted, `ExprEmitter.checked_once`)."""
    run: list = []
    reads: list = []            # the run's checked reads, in order
    for stmt in stmts:
        if across and _scalar_ancilla(stmt) and _collect(stmt.value, found := []):
            run.append(stmt)
            reads += found
            continue
        if run:
            yield tuple(run), _plan(reads)
            run, reads = [], []
        yield (stmt,), None
    if run:
        yield tuple(run), _plan(reads)


def _scalar_ancilla(stmt) -> bool:
    return type(stmt) is ir.Alloc and isinstance(stmt.var.type, str) and \
        stmt.var.type != "complex" and stmt.value is not None


@contextmanager
def hoisting(em, plan: HoistedBounds | None):
    """Emit `plan`'s checks (none for None), and leave its reads' own checks out of
    what is emitted inside the context."""
    if plan is None:
        yield
        return
    emit_hoisted_bounds(em, plan)
    outer, em.hoisted = em.hoisted, em.hoisted | plan.sites
    try:
        yield
    finally:
        em.hoisted = outer


def emit_hoisted_bounds(em, plan: HoistedBounds) -> None:
    """Emit the plan's checks at `em.builder`'s position: one compare per axis, and
    a cold path that records the failing read as its own check would have."""
    b = em.builder
    shapes = {var: em.array_parts(var)[1] for var, _ in plan.axes}     # (loaded once)
    extents = [shapes[var][axis] for var, axis in plan.axes]
    outside = None
    for extent, largest in zip(extents, plan.largest):
        fails = b.icmp_unsigned(">=", ll.Constant(I64, _signed(largest)), extent)
        outside = fails if outside is None else b.or_(outside, fails)
    cold = em.llfn.append_basic_block("bounds.cold")
    ok = em.llfn.append_basic_block("bounds.ok")
    em.cold_branch(outside, cold, ok)
    b.position_at_end(cold)
    _find_failing_read(em, plan, extents, ok)
    b.position_at_end(ok)


def _find_failing_read(em, plan: HoistedBounds, extents, ok) -> None:
    """The cold path: the first read of the table outside its axis, recorded as a
    bounds check records it (site, index, extent), then the error exit."""
    b = em.builder
    entries = [_signed(number) for row in plan.table for number in row]
    kind = ll.ArrayType(I64, len(entries))
    table = ll.GlobalVariable(em.out, kind, em.out.get_unique_name("rev_bounds_table"))
    table.global_constant, table.linkage = True, "internal"
    table.initializer = ll.Constant(kind, entries)
    start = b.block
    scan = em.llfn.append_basic_block("bounds.scan")
    found = em.llfn.append_basic_block("bounds.fail")
    step = em.llfn.append_basic_block("bounds.next")
    b.branch(scan)
    b.position_at_end(scan)
    row = b.phi(I64)
    row.add_incoming(ll.Constant(I64, 0), start)
    zero = ll.Constant(I64, 0)

    def entry(column: int):
        at = b.add(b.mul(row, ll.Constant(I64, 3)), ll.Constant(I64, column))
        return b.load(b.gep(table, [zero, at]))

    index, axis, site = entry(0), entry(1), entry(2)
    extent = extents[0]
    for number in range(1, len(extents)):
        extent = b.select(b.icmp_unsigned("==", axis, ll.Constant(I64, number)),
                          extents[number], extent)
    b.cbranch(b.icmp_unsigned(">=", index, extent), found, step)
    b.position_at_end(step)
    following = b.add(row, ll.Constant(I64, 1))
    row.add_incoming(following, step)
    b.cbranch(b.icmp_unsigned("<", following, ll.Constant(I64, len(plan.table))), scan, ok)
    b.position_at_end(found)
    b.store(b.add(site, ll.Constant(I64, 1)), em.ctx_word(abi.CTX_SITE))
    b.store(index, em.ctx_word(abi.CTX_IVALS))
    b.store(extent, em.ctx_word(abi.CTX_IVALS + 1))
    b.branch(em.error_exit())


def _signed(number: int) -> int:
    """An i64 constant's value for the bits of `number` (an unsigned index)."""
    return number - 2 ** 64 if number >= 2 ** 63 else number
