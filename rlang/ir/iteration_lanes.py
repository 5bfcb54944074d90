"""Independent iterations of a `@parallel for` run LANES at a time, in SIMD lanes
(Note [Iterations in lanes]).

`laned_blocks(module, plans)` takes the module and the loop plans of
rlang/ir/blocks.py `plan_blocks` and returns them with each plan's block
function rewritten (and the plan marked `laned`) where its body allows it, so
that its passes go through in groups of LANES: every statement of a group's
passes that is not a loop or a branch the passes share becomes a loop over the
LANES passes, innermost, which LLVM turns into vector instructions.  Block
functions it cannot rewrite are left as they are.

Note [Iterations in lanes]
~~~~~~~~~~~~~~~~~~~~~~~~~~
Per-point code such as a mixture model's log-likelihood runs, for each point, loops
over 2–10 coordinates or components: too short for LLVM's vectoriser, which only
vectorises innermost loops, so one point at a time they run scalar.  The points
are independent (`@parallel for`, LANGUAGE.md §6; rlang/ir/blocks.py has checked
that each pass writes only its own elements and adds to private sums), so the
order in which their statements run is free, and a block of passes can run LANES
passes side by side (issue #26, item 3; GradBench's gmm.rev, llsq.rev and
kmeans.rev do it by hand):

- the block's passes n = lo … hi − 1 go in groups g, g + 1, …, g + LANES − 1 (the
  passes left over at the end run as before, one at a time);
- a scalar a pass allocates with a value every pass gives it (an extent, `d ←
  size(x, 1)`) and never changes is allocated once for the group; the other
  variables a pass allocates at the top of the body, or inside loops and
  branches the passes share, get a lane axis: a scalar becomes an array of LANES
  (its initial value stored into each lane), an array of shape s one of shape
  s × LANES (the lane last, so that the lanes of one element are adjacent);
- a `for` whose bounds, and an `if` whose conditions, are the same in every pass
  (they read neither the loop's index nor a variable with a lane axis) are kept,
  once for the group, with their bodies rewritten the same way;
- every other statement runs in a loop over the lanes p = 0 … LANES − 1, with the
  loop's index i = first + (g + p) · stride and each laned variable's element p;
  consecutive such statements share one loop over the lanes;
- a 2-d array the passes only read, each in its own row (`x[i, j]`, j not a
  constant), is read through a copy of the group's rows made first, lane last
  (`x·rows[j, p]`), so that the lanes of one j are adjacent, as gmm.rev's block
  is.

Each pass runs its own statements in its own order, so what every pass computes
is the same to the bit, and the forward run's results are the interpreter's.  A
statement that adds into a place the lanes share (a private sum: the gradient of
a value every pass reads) is not put in lanes: its additions would have to stay
in order, one lane after the other, and such gradients ran up to 2.6x slower in
lanes than one pass at a time (vectorised along their own inner loop).  A body
is rewritten only where nothing in it can fail a check (invcheck off,
`@inbounds`): the passes' errors must come in the interpreter's order, one pass
at a time.  It makes no calls (a callee could fail, or take a laned array
whole), uses no stack and no complex or number-system scalar ancilla, and has a
loop of its own (a body without one is what LLVM vectorises already, across the
passes).  The blocks of a laned loop hold at least two groups (LANED_BLOCK,
rlang/ir/blocks.py), and a primal's laned loop runs its blocks even on one
thread (nothing in it can fail, so no error needs the inline loop's frame).
Figures: benchmarks/README.md, "Session 36".
"""
from __future__ import annotations

from dataclasses import replace

from . import nodes as ir
from .walk import defined_vars, expr_vars, mapped, stmt_exprs, stmt_places, walk, written_vars

#: Passes side by side: two vectors of four doubles with AVX2.
LANES = 8

#: The scalar types whose ancillas get a lane axis.
_LANED_SCALARS = ("f64", "f32", "i64", "i32")

_I64 = "i64"


def laned_blocks(module: ir.Module, plans: dict) -> tuple:
    """(`module` with the block functions of `plans` (rlang/ir/blocks.py) running
    their passes LANES at a time where they can, the plans with `laned` set for
    those): the module docstring."""
    functions, laned_plans, changed = dict(module.functions), dict(plans), False
    for key, plan in plans.items():
        symbol = plan.threaded.block
        laned = laned_block(functions[symbol], plan.loop.step)
        if laned is not None:
            functions[symbol], changed = laned, True
            laned_plans[key] = replace(plan, laned=True)
    if not changed:
        return module, plans
    return ir.Module(module.entry, functions, module.sites), laned_plans


def laned_block(fn: ir.Function, step) -> ir.Function | None:
    """A block function (`plan_blocks`: its body one loop over passes lo … hi − 1
    of index first + n · stride) running its passes LANES at a time, or None
    where its loop's body does not allow it (Note [Iterations in lanes]).  `step`
    is the planned loop's step: where it is a constant, the lanes' indices are
    first + (g + p) · step with that constant, so that LLVM sees the lanes' elements
    of an array indexed by the loop's index next to each other (a stride known
    only at run time kept every such access scalar)."""
    loop, = fn.body
    first, stride, lo, hi = fn.params[-4:]
    if not _laneable(loop.body):
        return None
    group, lane = ir.Var("g·lanes", _I64), ir.Var("p·lanes", _I64)
    step = step if isinstance(step, ir.Const) else ir.Read(stride)
    index = _add(ir.Read(first), _mul(_add(ir.Read(group), ir.Read(lane)), step))
    lanes = _Lanes(loop, lane, index)
    body = lanes.body(loop.body)
    if body is None:
        return None
    body = lanes.rows_in_lanes(loop.body, body)
    # groups start at lo, lo + LANES, … while a whole group fits before hi
    groups = ir.For(group, ir.Read(lo), _const(LANES),
                    _sub(ir.Read(hi), _const(LANES)), tuple(body), None, loop.step_site)
    # the passes after the last whole group, one at a time, as before
    done = _add(ir.Read(lo), _mul(_div(_sub(ir.Read(hi), ir.Read(lo)), _const(LANES)),
                                  _const(LANES)))
    rest = replace(loop, start=_add(ir.Read(first), _mul(done, ir.Read(stride))))
    return replace(fn, body=(groups, rest))


def _laneable(body) -> bool:
    """Whether a loop body qualifies (Note [Iterations in lanes]): no check can fail
    in it, it makes no call and touches no stack, and it has a loop of its own."""
    has_loop = False
    for stmt in walk(body):
        if isinstance(stmt, (ir.Call, ir.Push, ir.Pop, ir.Print, ir.Assert)):
            return False
        if isinstance(stmt, (ir.For, ir.While, ir.From)):
            has_loop = True
        if _checked(stmt):
            return False
    return has_loop


def _checked(stmt) -> bool:
    """Whether `stmt` itself (not its nested bodies) carries a check that can fail;
    a loop's step check is none where the step is a constant other than zero."""
    for name in ("site", "alias_site"):
        if getattr(stmt, name, None) is not None:
            return True
    if isinstance(stmt, ir.For) and not (isinstance(stmt.step, ir.Const) and stmt.step.value):
        return True
    if isinstance(stmt, ir.Update) and stmt.alias_checks:
        return True
    places = stmt_places(stmt)
    if any(getattr(p, "site", None) is not None or getattr(p, "claims", ()) for p in places):
        return True
    exprs = stmt_exprs(stmt) + [i for p in places for i in getattr(p, "indices", ())]
    return any(_has_check(e) for e in exprs)


def _has_check(e) -> bool:
    pending = [e]
    while pending:
        e = pending.pop()
        if isinstance(e, (ir.Load, ir.Binary, ir.Convert, ir.Checked)) and \
                getattr(e, "site", None) is not None:
            return True
        if isinstance(e, ir.ComplexValue):
            pending.extend((e.re, e.im))
        pending.extend(ir.operands(e))
    return False


class _Unlaned(Exception):
    """The body uses a laned variable in a way lanes cannot express."""


class _Lanes:
    """The rewriting of one loop body (Note [Iterations in lanes]): `lane` is the
    lane loop's index, `index` the expression of the loop's index in lane `lane`."""

    def __init__(self, loop: ir.For, lane: ir.Var, index):
        self.loop, self.lane, self.index = loop, lane, index
        self.laned: dict = {}           # a pass's variable → its array with a lane axis
        self.written = written_vars(loop.body, bindings=False)
        self.shared: set = set()        # scalar ancillas with one value in every lane

    def body(self, stmts) -> list | None:
        try:
            return self._body(stmts)
        except _Unlaned:
            return None

    def _body(self, stmts) -> list:
        out, run = [], []
        for stmt in stmts:
            for kind, new in self._statement(stmt):
                if kind == "lane":
                    run.append(new)
                    continue
                if run:
                    out.append(self._lane_loop(run))
                    run = []
                out.append(new)
        if run:
            out.append(self._lane_loop(run))
        return out

    def _lane_loop(self, run: list) -> ir.For:
        return ir.For(self.lane, _const(0), _const(1), _const(LANES - 1), tuple(run), None,
                      self.loop.step_site)

    def _statement(self, stmt) -> list:
        """[("group", statement) or ("lane", statement in a lane loop), …]"""
        if isinstance(stmt, ir.Alloc):
            return self._alloc(stmt)
        if isinstance(stmt, ir.Dealloc) and stmt.var in self.laned:
            return [("group", ir.Dealloc(self.laned[stmt.var], None, None))]
        if isinstance(stmt, ir.Dealloc) and stmt.var in self.shared:
            return [("group", stmt)]
        if isinstance(stmt, ir.For) and all(self._uniform(e) for e in stmt_exprs(stmt)):
            return [("group", replace(stmt, body=tuple(self._body(stmt.body))))]
        if isinstance(stmt, ir.If) and all(self._uniform(e) for e in stmt_exprs(stmt)):
            branches = tuple(replace(b, body=tuple(self._body(b.body)))
                             for b in stmt.branches)
            return [("group", replace(stmt, branches=branches,
                                      orelse=tuple(self._body(stmt.orelse))))]
        self._no_sum_across_lanes(stmt)
        return [("lane", self._in_lane(stmt))]

    def _no_sum_across_lanes(self, stmt) -> None:
        """_Unlaned where a statement run in a lane loop writes a place the lanes
        share (a private sum such as a shared read's gradient, `μ̄[k, j] += …`): its
        additions would have to stay in lane order, one after another, where one pass
        at a time they ran side by side along j (GMM-like gradients ran up to 2.6x
        slower in lanes)."""
        local = defined_vars([stmt])
        for inner in walk([stmt]):
            for place in stmt_places(inner):
                var = getattr(place, "var", None)
                if var is None or var in self.laned or var in local:
                    continue
                indices = getattr(place, "indices", ())
                if not any(self.loop.var in set(expr_vars(i)) for i in indices):
                    raise _Unlaned

    def _alloc(self, stmt: ir.Alloc) -> list:
        var = stmt.var
        sites = stmt.sites + stmt.sites[-1:]        # (the lane axis is never negative)
        if isinstance(var.type, ir.ArrayType):
            if stmt.value is not None or not all(self._uniform(d) for d in stmt.dims):
                raise _Unlaned
            laned = self.laned[var] = ir.Var(
                f"{var.name}·lanes", ir.ArrayType(var.type.elem, var.type.ndim + 1, True))
            return [("group", ir.Alloc(laned, None, stmt.dims + (_const(LANES),), sites))]
        if var.type not in _LANED_SCALARS or stmt.value is None:
            raise _Unlaned
        if var not in self.written and self._uniform(stmt.value):
            # (an extent, `d ← size(x, 1)`: the loops it bounds stay shared)
            self.shared.add(var)
            return [("group", stmt)]
        value = self._in_lane(stmt.value)
        laned = self.laned[var] = ir.Var(f"{var.name}·lanes", ir.ArrayType(var.type, 1, True))
        # the value is stored, not added to the zero: `0.0 + -0.0` would be +0.0
        first = ir.Update(self._element(laned, ()), "+=", value, onto_zero=True)
        return [("group", ir.Alloc(laned, None, (_const(LANES),), sites)), ("lane", first)]

    def rows_in_lanes(self, original, body: list) -> list:
        """`body` with the rows of the 2-d arrays the passes only read in their own
        row (`x[i, j]`, j not a constant: the row is swept) copied first into
        lane-major buffers (`x·rows[j, p]`), so that a lane loop reads adjacent
        elements rather than one per row."""
        written = {getattr(p, "var", None) for stmt in walk(original)
                   for p in stmt_places(stmt)}
        loads = [e for stmt in walk(body) for x in stmt_exprs(stmt) + [
            i for p in stmt_places(stmt) for i in getattr(p, "indices", ())]
            for e in _subexpressions(x) if isinstance(e, ir.Load)]
        rows = {}
        for e in loads:
            var = e.var
            if var in written or not isinstance(var.type, ir.ArrayType) or \
                    var.type.ndim != 2 or var in self.laned.values():
                continue
            rows.setdefault(var, []).append(e.indices[0] == self.index and
                                            not isinstance(e.indices[1], ir.Const))
        chosen = [v for v, own in rows.items() if all(own)]
        if not chosen:
            return body
        buffers = {v: ir.Var(f"{v.name}·rows", ir.ArrayType(v.type.elem, 2, True))
                   for v in chosen}
        column = ir.Var("j·rows", _I64)
        before, after = [], []
        for var, buffer in buffers.items():
            width = ir.Dim(var, 1)
            before.append(ir.Alloc(buffer, None, (width, _const(LANES))))
            fill = ir.Update(ir.ElemPlace(buffer, (ir.Read(column), ir.Read(self.lane)), None),
                             "+=", ir.Load(var, (self.index, ir.Read(column)), None),
                             onto_zero=True)
            before.append(ir.For(column, _const(0), _const(1), _sub(width, _const(1)),
                                 (self._lane_loop([fill]),), None, self.loop.step_site))
            after.insert(0, ir.Dealloc(buffer, None, None))

        def swap(node):
            if type(node) is ir.Load and node.var in buffers and node.indices[0] == self.index:
                return ir.Load(buffers[node.var], (node.indices[1], ir.Read(self.lane)), None)
            return None
        return before + [mapped(stmt, swap) for stmt in body] + after

    def _uniform(self, e) -> bool:
        """Whether `e` has one value for every lane of a group."""
        return not any(v is self.loop.var or v in self.laned for v in expr_vars(e))

    def _element(self, laned: ir.Var, indices: tuple) -> ir.ElemPlace:
        return ir.ElemPlace(laned, indices + (ir.Read(self.lane),), None)

    def _in_lane(self, node):
        """`node` (a statement, place or expression, with whatever it holds) as lane
        `lane` runs it: the loop's index and the laned variables replaced."""
        return mapped(node, self._lane_node)

    def _lane_node(self, node):
        """`_in_lane` of one node that names the loop's index or a laned variable;
        None for any other node (its parts are looked at)."""
        kind = type(node)
        if kind is ir.Read:
            if node.var is self.loop.var:
                return self.index
            if node.var in self.laned:
                if node.field is not None or isinstance(node.var.type, ir.ArrayType):
                    raise _Unlaned          # (a whole laned array: a call's argument)
                return ir.Load(self.laned[node.var], (ir.Read(self.lane),), None)
            return None
        if kind is ir.Load and node.var in self.laned:
            indices = tuple(self._in_lane(i) for i in node.indices)
            return replace(node, var=self.laned[node.var],
                           indices=indices + (ir.Read(self.lane),))
        if kind is ir.Dim and node.var in self.laned:
            if node.axis is None:
                raise _Unlaned
            return replace(node, var=self.laned[node.var])
        if kind is ir.VarPlace and node.var in self.laned:
            if node.field is not None:
                raise _Unlaned
            return self._element(self.laned[node.var], ())
        if kind is ir.ElemPlace and node.var in self.laned:
            indices = tuple(self._in_lane(i) for i in node.indices)
            return replace(node, var=self.laned[node.var],
                           indices=indices + (ir.Read(self.lane),))
        if isinstance(node, ir.Var) and (node is self.loop.var or node in self.laned):
            raise _Unlaned                  # (bound or freed where lanes cannot be)
        return None


def _subexpressions(e):
    pending = [e]
    while pending:
        e = pending.pop()
        yield e
        if isinstance(e, ir.ComplexValue):
            pending.extend((e.re, e.im))
        pending.extend(ir.operands(e))


def _const(value: int) -> ir.Const:
    return ir.Const(value, _I64)


def _add(a, b):
    return ir.Binary("+", a, b, _I64)


def _sub(a, b):
    return ir.Binary("-", a, b, _I64)


def _mul(a, b):
    return ir.Binary("*", a, b, _I64)


def _div(a, b):
    return ir.Binary("//", a, b, _I64)
