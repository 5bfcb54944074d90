"""Drop statements whose only effect is on ancillas that are freed unchecked.

`prune_module(module)` returns a module (the same one when nothing changes) in which
every function body has lost the statements that cannot matter:

Note [Dead uncomputation]
~~~~~~~~~~~~~~~~~~~~~~~~~
`@routine … ~@routine` computes ancillas, uses them, and uncomputes them so that
`x → e` can check that they are back where they started.  With invcheck off (or
under `@invcheckoff`) that deallocation checks nothing (`Dealloc.site` is None), so
the uncomputation writes values nobody reads: half of the arithmetic of a program
like GMM's objective.  LLVM removes such code for scalars, not for arrays, nor for
loops and calls; this pass removes it on the IR, by a backward liveness walk over
each statement list:

- a statement is *quiet* when it can have no effect but its writes: no check site
  anywhere in it (bounds, alias, division, conversion, domain checks: an error must
  still be raised), no `print`/`show`/`assert`, no `while`/`from` loop (which might
  not end), no `for` loop with a step that is not a nonzero constant, no checked
  `POP` (an unchecked one is quiet: Note [Stacks nobody reads]), and calls only
  to quiet, non-recursive functions;
- a quiet statement none of whose written variables is live afterwards is dropped;
- an unchecked `Dealloc` ends its variable's life; everything a kept statement
  mentions becomes live; at the end of a function body the parameters and `main`'s
  store are live; at the end of a `while`/`from` loop body everything but its own
  ancillas (a later pass may read them), and at the end of a `for` loop body what
  Note [Liveness in for loops] says.

Allocations and deallocations are kept (memory is still taken and given back), so
the program stays well formed; only the values left in dead ancillas differ, and
nothing can observe them; scalars are the exception (Note [Scalars nobody
reads]).  A scalar allocated for nobody (not live after its allocation: a gradient
pass's seeds of a dropped gradient, `seed ← h·grad · ∂h/∂s` for an integer s) is
given a zero instead of its value, when computing that value can fail no check:
otherwise it would keep alive what the value reads, and with it every update of
it (ode's step length h, whose gradient four updates a component summed for
nobody).

Bounds checks are made with invcheck off too (Note [Checks invcheck does not turn
off], rlang/lower/statements.py), so an uncomputation that indexes arrays is kept unless its
indexing is under `@inbounds`: the benchmarks' and the standard library's loops
carry it.

Note [Liveness in for loops]
~~~~~~~~~~~~~~~~~~~~~~~~~~~~
A variable is live at the end of a pass of a `for` body when the code after the
loop reads it, or when the next pass reads it before writing it: the least
solution of  live_out = live_after ∪ live_in(body),  found by pruning the body
again with a larger live_out until it stops growing (it starts from live_after, so
an ancilla that only its own dead updates read stays dead).  Liveness is per
variable, so an array that a pass reads anywhere would stay live at the end of
every pass; but a pass that touches only its own slice (`qx[k, j]` in a loop over
k, every mention of `qx` in the body indexed by `k` at the same axis) cannot read
what another pass wrote, and such *private* arrays carry no liveness from one pass
to the next.  The same holds where the indices at that axis are k plus constants
and no pass reads an element an earlier pass wrote: the uncomputation of a
recurrence kept in an ancilla array, `for i = n:-1:1  s[i] -= r·s[i-1]·(1 − s[i-1])`,
writes s[i] and reads only below it, where no earlier pass wrote, so its updates
are dead once nothing reads s after the loop (the computing loop, which reads
s[i-1] that the pass before wrote, keeps them).  This is what drops the uncomputation inside the gradient pass of
GMM's objective: the adjoint of `~@routine` still reads `qx[k, ·]` for the chain
rule, but the `qx[k, r] -= …` that restores it is dead in every pass.

Note [Restoration nobody reads]
~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
A gradient pass runs ~f over values that carry gradients: besides the chain rule
it restores f's inputs, `y[rowval[p]] -= nzval[p]·x[j]` in the pass of the sparse
product `y += A x`, half of that pass's memory traffic.  The compiled drivers that
run a pass from Python (rlang/ad/compiled.py, gradient_route.py, jacobian_rows.py,
batched.py; `rlang.vjp`) read only the gradients it leaves, and the primal values
of ulog arguments (their gradients come back in value space): the caller's arrays
are put back from copies (Note [The caller's arrays], ad/callers_arrays.py) or the
pass ran on copies.  So the llvm backend marks the other primal parameters of such
a pass's entry function `final_unread` (`restoration_unread`, ad/derivatives.py),
as it does the primal parameters and their tangents of a gradient pass's tangent
("tan_grad": Hessians, `rlang.hvp`, whose drivers read the gradients and their
tangents, and whose Hessian groups copy the arguments in again for every group), and
this pass leaves them out of what is live at the end of the body: quiet
restorations that only they would see are dropped, as dead uncomputation is.  A
restoration that the chain rule reads later stays (it is live there), and so does
every check.  A function called from compiled code (a recursive pass, the pass
inside a derivative statement) keeps all its parameters live: its caller reads
them.  A C library's passes (`rlang compile`) and the cuda backend's, whose
device arrays are the caller's own and are not put back from copies, restore
their inputs as before.
"""
from __future__ import annotations

from dataclasses import replace

from . import nodes as ir
from .walk import defined_vars, expr_vars, has_checks, mentioned_vars, nested_bodies, \
    stmt_exprs, stmt_places, walk, written_vars


def prune_module(module: ir.Module) -> ir.Module:
    effects = _Effects(module)
    functions, changed = {}, False
    called = _called(module) if any(f.final_unread for f in module.functions.values()) \
        else set()
    for symbol, fn in module.functions.items():
        unread = fn.final_unread if symbol not in called else frozenset()
        live_out = (set(fn.params) - unread) | set(fn.results)
        body = _prune(fn.body, live_out, effects)
        changed |= body is not fn.body
        functions[symbol] = fn if body is fn.body else replace(fn, body=body)
    return ir.Module(module.entry, functions, module.sites) if changed else module


def written_arrays(module: ir.Module, symbol: str) -> frozenset:
    """The positions of the array parameters the function `symbol` of `module` may
    write, through its calls too (a pass that restores nothing nobody reads writes
    only its gradients: its callers need not copy the others)."""
    return frozenset(_Effects(module).written_arrays.get(symbol, ()))


def _called(module: ir.Module) -> set:
    """The symbols some function of `module` calls (Note [Restoration nobody
    reads]: a function called from compiled code has a caller that reads its
    parameters' final values)."""
    return {stmt.callee for fn in module.functions.values() for stmt in walk(fn.body)
            if isinstance(stmt, ir.Call)}


class _Effects:
    """What the calls of a module can do: `quiet`, the functions whose bodies are
    quiet, calls included (a recursive function never is: it may not end, and it
    checks its depth); `written_arrays[symbol]`, the positions of the array
    parameters a function may write, through its calls too."""

    def __init__(self, module: ir.Module):
        self.module = module
        self.sizes = _size_vars(module)
        self.quiet: set = set()
        self.written_arrays: dict = {}
        changed = True
        while changed:                  # until neither set grows
            changed = False
            for symbol, fn in module.functions.items():
                if symbol not in self.quiet and all(self.is_quiet(s) for s in fn.body):
                    self.quiet.add(symbol)
                    changed = True
                params = {var: k for k, var in enumerate(fn.params)
                          if isinstance(var.type, ir.ArrayType)}
                written = {params[var] for stmt in fn.body for var in self.written(stmt)
                           if var in params}
                if written != self.written_arrays.get(symbol, set()):
                    self.written_arrays[symbol] = written
                    changed = True

    def written(self, stmt) -> set:
        """The variables from outside a statement that it may change."""
        out = set()
        for s in walk((stmt,)):
            if isinstance(s, ir.Update):
                out.add(s.target.var)
            elif isinstance(s, ir.Instr):
                out.update(place.var for place in s.places)
            elif isinstance(s, (ir.Push, ir.Pop)):
                out.update((s.stack, s.place.var))
            elif isinstance(s, ir.Call):
                callee = self.module.functions[s.callee]
                arrays = self.written_arrays.get(s.callee, set())
                for k, arg in enumerate(s.args):
                    if isinstance(arg, ir.Read) or isinstance(arg.type, ir.ArrayType):
                        if k in arrays:
                            out.add(arg.var)
                    elif k in callee.written or k in callee.accumulated:
                        out.add(arg.var)
            elif isinstance(s, (ir.Alloc, ir.Dealloc)):
                out.add(s.var)
        return out - defined_vars([s for body in nested_bodies(stmt) for s in body])

    def sized(self, alloc: ir.Alloc) -> bool:
        """Whether an array allocation's extents cannot be negative (Note
        [Allocations nobody reads]): a copy of an array literal, or zeros whose
        extents are sizes."""
        return isinstance(alloc.value, ir.ConstArray) or alloc.value is None and \
            all(_is_size(d, self.sizes) for d in alloc.dims)

    def is_quiet(self, stmt) -> bool:
        """Whether a statement can have no effect but its writes (see the Note)."""
        for s in walk((stmt,)):
            if isinstance(s, (ir.Print, ir.Assert, ir.While, ir.From)):
                return False            # output, loops that might not end
            if isinstance(s, ir.Pop) and s.zero_site is not None:
                return False            # a checked pop (Note [Stacks nobody reads])
            if isinstance(s, ir.Alloc) and isinstance(s.var.type, ir.ArrayType) and \
                    not self.sized(s):
                return False            # a negative size is an error (Note [Allocations
            #                             nobody reads])
            if isinstance(s, ir.Call) and s.callee not in self.quiet:
                return False
            if isinstance(s, ir.For) and not (isinstance(s.step, ir.Const) and s.step.value):
                return False
            if getattr(s, "alias_site", None) is not None or \
                    (getattr(s, "site", None) is not None and not isinstance(s, ir.Call)):
                return False            # a check (a call's site only names the call)
            if isinstance(s, ir.Update) and s.alias_checks:
                return False
            if any(has_checks(e) for e in stmt_exprs(s)):
                return False
            for place in stmt_places(s):
                if getattr(place, "site", None) is not None or \
                        any(has_checks(i) for i in getattr(place, "indices", ())):
                    return False
        return True


# Note [Stacks nobody reads]
# ~~~~~~~~~~~~~~~~~~~~~~~~~~~
# PUSH and POP are quiet with invcheck off.  LANGUAGE.md §6 lists "pop: `x` is 0 and
# `s` not empty" among the checks invcheck turns off; compiled code still checks
# that a stack it pops is not empty (Note [Checks invcheck does not turn off],
# rlang/lower/statements.py) so that a pop never reads outside the stack's buffer,
# but a pop that is not run reads nothing.  A push can fail only for lack of memory,
# as an allocation can (Note [Allocations nobody reads]).  This is what drops the
# uncomputation of a loop that keeps its branches' records on a stack: GradBench's
# lse takes its maximum so (evals/lse.rev), and the `~@routine` that popped every
# record back after the sum was a sixth of its primal.
#
# A push whose stack nobody reads afterwards (no pop, length, copy, call or checked
# deallocation of it later, nor in a later pass of an enclosing loop) is still
# needed for the zero it leaves in its place, when that place is live: it becomes a
# swap with a fresh zero, and the stack stays empty.  So a stack that a loop's
# passes share (kmeans' search, evals/kmeans.rev: the records of each point's
# minimum, pushed in its `@routine` and popped in its `~@routine`) loses its pops
# in every pass, and its pushes do not pile up in their place: memory stays what
# the program with its pops would take.


# Note [Scalars nobody reads]
# ~~~~~~~~~~~~~~~~~~~~~~~~~~~
# A scalar allocated with a constant (or a zero given it by Note [Dead
# uncomputation]) and freed unchecked, with no statement between the two that
# mentions it, is dropped with its deallocation: it takes no memory a program could
# run out of, and nothing can observe it.  A gradient pass leaves such pairs where
# a seed is known to be zero (`seed ← 0.0 … seed → `, its chain rule dropped by
# Note [Known zeros], rlang/ir/zeros.py); kept, they made a loop body more than the
# one update that Note [Recurrences carried in registers] (rlang/ir/carried_values.py)
# carries, so the gradient pass's recomputation of an ancilla-array recurrence
# kept its add onto zero in the chain.


# Note [Allocations nobody reads]
# ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
# An array allocation can fail: for a negative extent (an error at its source
# position) or for lack of memory.  A statement that allocates is still quiet when
# its extents cannot be negative: integer constants of at least 0, `size`/`length`
# of arrays, and variables that hold only such values (allocated from them and never
# written otherwise, anywhere in the module).  Dropping it then changes no value and
# no error but one: memory that is never read is not taken, so it cannot run out,
# as C compilers drop a `malloc` whose memory nobody uses.  This is what lets the
# uncall of a function that allocates its own ancillas go with the rest of dead
# uncomputation: GradBench's hand tracking objective took its whole pose back
# (`~pose_hand!` under `~@routine`, whose `skin!` allocates two arrays of the
# vertices) after using it, twice the arithmetic of the objective.


def _size_vars(module: ir.Module) -> frozenset:
    """The integer scalars of `module` that hold only sizes: every allocation of
    them takes a size (`_is_size`), and nothing else writes them."""
    allocs, written = {}, set()
    for fn in module.functions.values():
        written |= written_vars(fn.body, bindings=False)
        for s in walk(fn.body):
            if isinstance(s, ir.Alloc) and s.var.type in ("i64", "i32"):
                allocs.setdefault(s.var, []).append(s.value)
    sizes: set = set()
    while True:             # (a size may be computed from another: m ← n, n ← size(x))
        more = {var for var, values in allocs.items() if var not in written and
                var not in sizes and all(_is_size(v, sizes) for v in values)}
        if not more:
            return frozenset(sizes)
        sizes |= more


def _is_size(e, sizes) -> bool:
    """Whether the integer expression `e` cannot be negative: a constant ≥ 0, an
    array's extent, or a variable of `sizes`."""
    if isinstance(e, ir.Const):
        return type(e.value) is int and e.value >= 0
    if isinstance(e, ir.Dim):
        return True
    return isinstance(e, ir.Read) and e.field is None and e.var in sizes


_ZEROS = {"f64": 0.0, "f32": 0.0, "i64": 0, "i32": 0, "bool": False}


def _allocated_for_nobody(stmt: ir.Alloc) -> ir.Alloc:
    """A scalar allocation nobody reads, with a zero for its value where that value
    reads something and can fail no check (Note [Dead uncomputation])."""
    t = stmt.var.type
    if t not in _ZEROS or stmt.value is None or isinstance(stmt.value, ir.Const) or \
            has_checks(stmt.value):
        return stmt
    return replace(stmt, value=ir.Const(_ZEROS[t], t))


def _prune(body: tuple, live_out: set, effects: _Effects) -> tuple:
    """`body` without its dead quiet statements, given the variables live after it
    (`body` itself when nothing is dropped)."""
    return _prune_live(body, live_out, effects)[0]


def _prune_live(body: tuple, live_out: set, effects: _Effects) -> tuple:
    """(`body` pruned as `_prune` does, the variables live before it)."""
    live = set(live_out)
    kept = []
    for stmt in reversed(body):
        if isinstance(stmt, ir.Dealloc) and stmt.site is None:
            live.discard(stmt.var)
            kept.append(stmt)
            continue
        if not isinstance(stmt, ir.Alloc) and effects.is_quiet(stmt) and \
                not (effects.written(stmt) & live):
            continue
        if isinstance(stmt, ir.Push) and stmt.stack not in live:
            zeroing = _zeroing(stmt.place)      # Note [Stacks nobody reads]
            if zeroing is not None:
                kept.extend(reversed(zeroing))
                live |= mentioned_vars(stmt) - {stmt.stack}
                continue
        if isinstance(stmt, ir.Alloc) and stmt.var not in live:
            stmt = _allocated_for_nobody(stmt)
        stmt = _prune_inside(stmt, live, effects)
        kept.append(stmt)
        live |= mentioned_vars(stmt)
    kept = _without_unread_scalars(kept[::-1])
    if len(kept) == len(body) and all(a is b for a, b in zip(kept, body)):
        return body, live
    return tuple(kept), live


def _without_unread_scalars(body: list) -> list:
    """`body` without the scalars it allocates with a constant (or nothing) and frees
    unchecked, nothing between the two mentioning them (Note [Scalars nobody
    reads])."""
    open_at: dict = {}          # a candidate's variable → the position of its Alloc
    drop: set = set()
    for k, stmt in enumerate(body):
        if isinstance(stmt, ir.Dealloc) and stmt.var in open_at and stmt.site is None:
            drop |= {open_at.pop(stmt.var), k}
            continue
        if open_at:
            for var in mentioned_vars(stmt) & open_at.keys():
                del open_at[var]
        if isinstance(stmt, ir.Alloc) and stmt.var.type in _ZEROS and \
                (stmt.value is None or isinstance(stmt.value, ir.Const)):
            open_at[stmt.var] = k
    return [stmt for k, stmt in enumerate(body) if k not in drop] if drop else body


def _prune_inside(stmt, live_after: set, effects: _Effects):
    """A kept statement with the dead code of its loop bodies dropped; `live_after`
    holds the variables live after it."""
    if isinstance(stmt, ir.For):
        return _prune_for(stmt, live_after, effects)
    if isinstance(stmt, ir.If):         # the branch's fi conditions are read after it
        after = set(live_after).union(*(expr_vars(b.post) for b in stmt.branches
                                        if b.post is not None))
        branches = tuple(replace(b, body=_prune(b.body, after, effects))
                         for b in stmt.branches)
        orelse = _prune(stmt.orelse, after, effects)
        if all(new.body is old.body for new, old in zip(branches, stmt.branches)) and \
                orelse is stmt.orelse:
            return stmt
        return replace(stmt, branches=branches, orelse=orelse)
    if isinstance(stmt, ir.While):
        body = _prune(stmt.body, _mentioned_outside(stmt), effects)
        return stmt if body is stmt.body else replace(stmt, body=body)
    if isinstance(stmt, ir.From):
        outer = _mentioned_outside(stmt)
        body = _prune(stmt.body, outer, effects)
        step = _prune(stmt.step, outer, effects)
        if body is stmt.body and step is stmt.step:
            return stmt
        return replace(stmt, body=body, step=step)
    return stmt


#: the zero of each scalar type a push onto a stack nobody reads can leave behind
_ZEROS = {"f64": 0.0, "f32": 0.0, "i64": 0, "i32": 0, "bool": False}


def _zeroing(place) -> list | None:
    """Statements that set `place` to zero, as a push does to what it pushes: a
    swap with a fresh zero (None for types without a plain zero constant)."""
    if place.type not in _ZEROS:
        return None
    zero = ir.Const(_ZEROS[place.type], place.type)
    fresh = ir.Var("zero", place.type)
    return [ir.Alloc(fresh, zero), ir.Instr("SWAP", (place, ir.VarPlace(fresh))),
            ir.Dealloc(fresh, zero, None)]


def _prune_for(loop: ir.For, live_after: set, effects: _Effects) -> ir.For:
    """A `for` loop with the dead code of its body dropped (Note [Liveness in for
    loops]): what is live at the end of a pass is what is live after the loop, and
    what the next pass reads before it writes, except the slices private to a pass."""
    own = defined_vars(loop.body) | {loop.var}
    private = _private_arrays(loop)
    live_out = set(live_after) - own
    while True:
        body, live_in = _prune_live(loop.body, live_out, effects)
        # what the pruned body allocates is its own too: the fresh zeros that stand
        # for pushes (Note [Stacks nobody reads]) are new variables on every round
        grown = live_out | (live_in - own - defined_vars(body) - private)
        if grown == live_out:
            return loop if body is loop.body else replace(loop, body=body)
        live_out = grown


def _private_arrays(loop: ir.For) -> set:
    """The arrays from outside `loop` that no pass reads from what an earlier pass
    wrote: every mention of them in the body is an element whose index at one fixed
    axis is the loop index plus a constant, and no pass reads an element there that
    an earlier pass wrote (Note [Liveness in for loops]; the loop index is distinct
    on every pass: a nonzero constant step, and a body that does not write it)."""
    if not (isinstance(loop.step, ir.Const) and loop.step.value):
        return set()
    step = loop.step.value
    mentions: dict = {}         # array → [(offsets by axis, written)]
    excluded = set()

    def element(var, indices, written: bool) -> None:
        offsets = {k: c for k, c in ((k, _offset(i, loop.var)) for k, i in enumerate(indices))
                   if c is not None}
        mentions.setdefault(var, []).append((offsets, written))

    def expression(e) -> None:
        if isinstance(e, ir.Load):
            element(e.var, e.indices, False)
        elif isinstance(e, ir.Read) and not isinstance(e.var.type, str):
            excluded.add(e.var)         # a whole array or stack (a call's argument)
        elif isinstance(e, ir.ComplexValue):
            expression(e.re)
            expression(e.im)
        for x in ir.operands(e):
            expression(x)

    for stmt in walk(loop.body):
        for e in stmt_exprs(stmt):
            expression(e)
        for place in stmt_places(stmt):
            if isinstance(place, ir.ElemPlace):
                element(place.var, place.indices, True)     # (read and written)
                for i in place.indices:
                    expression(i)
            else:
                excluded.add(place.var)
        if isinstance(stmt, (ir.Alloc, ir.Dealloc)):
            excluded.add(stmt.var)
            if isinstance(stmt, ir.Dealloc) and isinstance(stmt.value, ir.Read):
                excluded.add(stmt.value.var)
        if isinstance(stmt, (ir.Push, ir.Pop)):
            excluded.add(stmt.stack)
    if loop.var in excluded:    # written (a scalar's place), so perhaps not distinct
        return set()
    return {var for var, found in mentions.items()
            if var not in excluded and _no_pass_reads_an_earlier_write(found, step)}


def _offset(index, var: ir.Var):
    """c where `index` is `var + c` (c a constant integer), else None."""
    if isinstance(index, ir.Read) and index.var is var and index.field is None:
        return 0
    if isinstance(index, ir.Binary) and index.op in ("+", "-"):
        left, right = index.left, index.right
        if isinstance(right, ir.Const) and isinstance(right.value, int) and \
                _offset(left, var) == 0:
            return right.value if index.op == "+" else -right.value
        if index.op == "+" and isinstance(left, ir.Const) and \
                isinstance(left.value, int) and _offset(right, var) == 0:
            return left.value
    return None


def _no_pass_reads_an_earlier_write(mentions: list, step: int) -> bool:
    """Whether, at some axis where every mention's index is the loop index plus a
    constant, no later pass reads what a pass wrote: a pass at index i writes at
    i + w and a pass m ≥ 1 steps later reads at i + m·step + r, the same element
    when w − r = m·step.  (A written place is read too, at the same offset.)"""
    axes = set.intersection(*(set(offsets) for offsets, _ in mentions))
    for axis in axes:
        writes = {offsets[axis] for offsets, written in mentions if written}
        reads = {offsets[axis] for offsets, _ in mentions}
        if not any((w - r) % step == 0 and (w - r) // step >= 1
                   for w in writes for r in reads):
            return True
    return False


def _mentioned_outside(stmt) -> set:
    """What a later pass of a loop, or the code after it, may read: every variable
    the loop mentions except those its body allocates itself."""
    return mentioned_vars(stmt) - {s.var for body in nested_bodies(stmt) for s in body
                                   if isinstance(s, ir.Alloc)}
