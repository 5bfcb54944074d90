"""Which `@parallel for` loops run on threads, and the functions they run as
(Note [Parallel loops on threads]).

`plan_blocks(module, shared)` looks at every function of a module about to be
emitted by the llvm backend (after rlang/ir/passes.py) and returns
`(module, plans)`: the module with two functions more per loop it takes, and a
`LoopPlan` per such loop, keyed by `id()` of its `ir.For` (which stays where it
is: the emitter still runs it inline where the Note says so).  `shared` names the
shadows of gradients (rlang/ad/derivatives.py): sums, which a loop may split.

- the block function `<symbol>__blocks<k>(outer…, first, stride, lo, hi)` runs the
  passes lo … hi - 1 (0-based) of the loop, whose index is first + n · stride;
- the reduction `<symbol>__sums<k>(target₁, private₁, …)` adds the blocks' partial
  sums of the shared shadows into their targets (only where there are any).

`ThreadedLoop` is what Python needs of a plan (rlang/backends/llvm/blocks.py): it
goes into the disk cache with the object code.

Note [Parallel loops on threads]
~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
LANGUAGE.md §14: on the llvm backend a `@parallel for` runs on threads, and its
results, gradients included, have the same bits for every thread count.

- **Fixed blocks.**  A loop of `count` passes is cut into `blocks(count)` blocks of
  consecutive passes, a number that depends on the count and on the loop's body
  only: up to MAX_BLOCKS blocks of one pass or more when the body has a loop of its
  own (reached through calls too), of at least LANED_BLOCK passes where the block
  function runs them in lanes (Note [Iterations in lanes], ir/iteration_lanes.py),
  else up to MAX_BLOCKS blocks of at least
  LIGHT_BLOCK passes; and no more blocks than make the private sums below (zeroed
  and added once per block) cost SUMMED_PER_PASS elements per pass.  Fewer than two
  blocks: the loop runs inline, as every loop did before.  Block b holds passes
  lo(b) … lo(b + 1) - 1, with lo(b) = b · (count // n) + min(b, count % n) for n
  blocks.
- **Sums.**  A shadow in `shared` that the body only adds to (`+=`, `-=`, a call's
  accumulated argument), at elements that two passes may share (`ḡw[j]`, a scalar
  `ḡa`), is *private* to a block: each block adds into a zeroed copy of its own,
  and the copies are added into the shadow in block order by the reduction
  function.  Everything else a pass writes is its own (independent iterations,
  LANGUAGE.md §6), so the order of the passes does not change any bit of it.  A
  whole array passed to a call counts as the pass's own when the callee writes it
  only at the index it gets the loop's index for (`ba_one(…, P̄, …, i)` writing
  `P̄[i, k]`: `_written_along`); without that, BA's gradient summed a private copy
  of its whole 36,455 × 15 gradient per block.
- **Who runs the blocks.**  The loop calls `rev_parallel_hook` when it has two
  blocks or more, the call may use threads (ctx[CTX_THREADS] > 1: Python's calls
  set it to `rlang.get_num_threads()`, a C or XLA caller leaves 0) and Python
  installed the hook.  Python runs the block function on its pool and the
  reductions in block order (rlang/backends/llvm/blocks.py); a loop without sums
  goes to the pool as runs of consecutive blocks, four per thread (one call each:
  nothing is summed across its passes, so how they are grouped changes no bit).
  Otherwise the
  compiled code runs the blocks itself, one after the other, through the same
  block and reduction functions (noinline: the same machine code on every path),
  wherever there are private sums or the module reports no frame variables (a
  derivative pass); a primal loop without sums runs inline instead, so that its
  errors show the frame's variables.  Either way the same additions happen in the
  same order: the bits do not depend on the thread count.
- **Errors.**  Python copies the arrays and scalars the loop writes before the
  blocks run (when the body has a check at all).  If a block fails, the copies are
  put back and the hook returns 1: the compiled code then runs the loop again
  without threads, which fails at the interpreter's pass with the interpreter's
  message and frame.
- **What stays inline.**  Loops whose shared writes are checked (invcheck on and
  an array written elsewhere than at the loop's own index: the check needs the
  passes in order, Note [Shared writes in compiled parallel loops]), whose body
  prints (lines would interleave) or reaches a recursive function (deep native
  recursion runs on one big-stack thread), or writes anything but its own array
  elements and private sums (a scalar or a stack from outside, an array from
  outside as a whole).  A `@parallel for` nested in a threaded one runs in its
  block.
"""
from __future__ import annotations

from dataclasses import dataclass

from ..records import record
from . import nodes as ir
from .call_graph import callees, recursive_symbols
from .shared_writes import tracked_arrays
from .walk import (defined_vars, has_sites, nested_bodies, stmt_exprs, stmt_places, used_vars,
                   walk)

#: The most blocks a loop is cut into (the threads it can use).
MAX_BLOCKS = 64
#: The fewest passes of a block when the body has no loop of its own.
LIGHT_BLOCK = 256
#: The fewest passes of a block whose passes run in lanes (Note [Iterations in
#: lanes], ir/iteration_lanes.py): two groups of LANES.
LANED_BLOCK = 16
#: The most elements of private sums a loop may zero and add per pass, over all its
#: blocks: large shared arrays get fewer blocks.
SUMMED_PER_PASS = 16
#: The element types whose sums a block may keep privately.
_SUMMED = ("f64", "complex")


@record
class Argument:
    """One outer variable of a block function, as Python sees it: `kind` "array",
    "scalar" or "stack"; `role` "read", "written" (its own elements only) or
    "private" (a sum each block keeps a zeroed copy of)."""

    kind: str
    elem: str               # an array's or stack's element type, a scalar's type
    ndim: int
    role: str


@record
class ThreadedLoop:
    """What Python needs to run a planned loop's blocks."""

    block: str              # the block function's symbol
    reduce: str | None      # the reduction's symbol (None: no private sums)
    arguments: tuple        # of Argument, in the order of `LoopPlan.outer`
    can_fail: bool          # the body has checks: copy what it writes first
    heavy: bool             # the body has a loop (blocks of one pass or more)


@dataclass
class LoopPlan:
    """A loop the emitter runs in blocks."""

    number: int
    owner: str              # the symbol of the function holding the loop
    loop: ir.For
    outer: tuple            # Vars passed to the block function, in order
    private: tuple          # the private sums among them (Vars), in order
    threaded: ThreadedLoop
    laned: bool = False     # its block function runs passes in lanes (ir/iteration_lanes.py)


def block_count(count: int, heavy: bool, summed: int = 0, laned: bool = False) -> int:
    """How many blocks a loop of `count` passes is cut into (the Note), when its
    private sums have `summed` elements in all; the compiled code computes the same
    (backends/llvm/threaded.py)."""
    n = count // LANED_BLOCK if laned else count if heavy else count // LIGHT_BLOCK
    return min(n, MAX_BLOCKS, count * SUMMED_PER_PASS // (summed + 1))


def block_start(b: int, count: int, blocks: int) -> int:
    """The first pass of block b."""
    return b * (count // blocks) + min(b, count % blocks)


def plan_blocks(module: ir.Module, shared: frozenset = frozenset()) -> tuple:
    """(module with the block and reduction functions, {id(For): LoopPlan})."""
    planner = _Planner(module, shared)
    for fn in list(module.functions.values()):
        planner.function(fn)
    if not planner.plans:
        return module, {}
    functions = dict(module.functions)
    functions.update(planner.added)
    return ir.Module(module.entry, functions, module.sites), planner.plans


def loop_roles(module: ir.Module, loop: ir.For, shared: frozenset, outer: list):
    """The role of each variable of `outer` (used by `loop`, defined outside it), as
    the Note gives them: "read"; "written" (each pass its own elements); "private"
    (sums the passes only add to, at places two passes may share), which the cuda
    backend privatises per block or per thread (Note [Privatised gradients on the
    GPU], rlang/backends/cuda/privatised.py).  None when the loop's writes do not fit
    the roles."""
    return _Planner(module, shared)._roles(loop, outer)


class _Planner:
    def __init__(self, module: ir.Module, shared: frozenset):
        self.module, self.shared = module, shared
        self._recursive = None          # (`recursive`: not needed by `loop_roles`)
        self.plans: dict = {}
        self.added: dict = {}

    @property
    def recursive(self) -> set:
        if self._recursive is None:
            self._recursive = recursive_symbols(self.module)
        return self._recursive

    def function(self, fn: ir.Function) -> None:
        self._statements(fn, fn.body)

    def _statements(self, fn, body) -> None:
        for stmt in body:
            if isinstance(stmt, ir.For) and stmt.parallel:
                plan = self._plan(fn, stmt)
                if plan is not None:
                    self.plans[id(stmt)] = plan
                    continue
            for inner in nested_bodies(stmt):
                self._statements(fn, inner)

    # ------------------------------------------------------------- analysis
    def _reached(self, body) -> set:
        """The symbols the body calls, at any distance."""
        seen, todo = set(), list(callees(body))
        while todo:
            symbol = todo.pop()
            if symbol not in seen:
                seen.add(symbol)
                todo.extend(callees(self.module.functions[symbol].body))
        return seen

    def _plan(self, fn: ir.Function, loop: ir.For) -> LoopPlan | None:
        if tracked_arrays(self.module, loop):
            return None
        reached = self._reached(loop.body)
        bodies = [loop.body] + [self.module.functions[s].body for s in reached]
        if reached & self.recursive or any(isinstance(s, ir.Print)
                                           for body in bodies for s in walk(body)):
            return None
        inner = defined_vars(loop.body) | {loop.var}
        constants = {var for var, _ in fn.constants}
        outer = [v for v in used_vars(loop.body) if v not in inner and v not in constants]
        roles = self._roles(loop, outer)
        if roles is None:
            return None
        heavy = any(isinstance(s, (ir.For, ir.While, ir.From))
                    for body in bodies for s in walk(body))
        number = len(self.plans)
        private = tuple(v for v in outer if roles[v] == "private")
        block = self._block_function(fn, loop, outer, roles, number)
        reduce = self._reduction(fn, loop, private, number) if private else None
        arguments = tuple(_argument(v, roles[v]) for v in outer)
        threaded = ThreadedLoop(block.symbol, reduce.symbol if reduce else None, arguments,
                                has_sites(loop.body), heavy)
        return LoopPlan(number, fn.symbol, loop, tuple(outer), private, threaded)

    def _roles(self, loop: ir.For, outer: list) -> dict | None:
        """Each outer variable's role (Argument), or None: the loop stays inline."""
        writes: dict = {}           # Var → [(place, Own or None: whole, additive)]
        for stmt in walk(loop.body):
            for var, place, additive in self._writes(stmt, loop):
                writes.setdefault(var, []).append((place, additive))
        read = self._values_read(loop.body)
        own = ir.Read(loop.var)
        roles = {}
        for var in outer:
            found = writes.get(var)
            if not found:
                roles[var] = "read"
                continue
            elements = [p for p, _ in found if isinstance(p, (ir.ElemPlace, Own))]
            if len(elements) == len(found) and any(
                    all(axis in p.axes if isinstance(p, Own) else p.indices[axis] == own
                        for p in elements)
                    for axis in range(var.type.ndim)):
                roles[var] = "written"          # each pass its own elements
            elif var in self.shared and all(a for _, a in found) and var not in read \
                    and _summable(var.type):
                roles[var] = "private"
            elif isinstance(var.type, ir.ArrayType) and var not in self.shared and \
                    all(isinstance(p, ir.ElemPlace) for p, _ in found):
                roles[var] = "written"          # independent passes (LANGUAGE.md §6)
            else:
                return None
        return roles

    def _writes(self, stmt, loop: ir.For):
        """(var, place or None for the whole variable, additive) of each write."""
        if isinstance(stmt, ir.Update):
            yield stmt.target.var, stmt.target, stmt.op in ("+=", "-=")
        elif isinstance(stmt, ir.Instr):
            for place in stmt.places:
                yield place.var, place, False
        elif isinstance(stmt, (ir.Push, ir.Pop)):
            yield stmt.stack, None, False
            yield stmt.place.var, stmt.place, False
        elif isinstance(stmt, ir.Call):
            callee = self.module.functions[stmt.callee]
            for k, arg in enumerate(stmt.args):
                whole = isinstance(arg, ir.Read) or not isinstance(arg.type, str)
                place = self._own_in_call(stmt, k, loop) if whole else arg
                if isinstance(arg.var.type, ir.StackType) or k in callee.written:
                    yield arg.var, place, False
                elif k in callee.accumulated:
                    yield arg.var, place, True

    def _own_in_call(self, call: ir.Call, k: int, loop: ir.For):
        """`Own(axes)` when the callee writes the whole array it gets at position k
        only at elements indexed along each of `axes` by the loop's index (`P[i, 11]`
        in `ba_one(…, P, …, i)` called with the loop's index as i); else None."""
        holders = {j for j, arg in enumerate(call.args) if _holds(arg, {loop.var})}
        axes = _written_along(self.module, call.callee, k, holders)
        return Own(axes) if axes else None

    def _values_read(self, body) -> set:
        """The variables whose values the body reads (a call's arguments at
        positions the callee does not only add to; extents do not count)."""
        read = set()
        for stmt in walk(body):
            for e in stmt_exprs(stmt):
                read.update(_valued_vars(e))
            for place in stmt_places(stmt):
                for index in getattr(place, "indices", ()):
                    read.update(_valued_vars(index))
            if isinstance(stmt, ir.Call):
                callee = self.module.functions[stmt.callee]
                read.update(arg.var for k, arg in enumerate(stmt.args)
                            if k not in callee.accumulated)
            elif isinstance(stmt, (ir.Instr, ir.Push)):
                read.update(place.var for place in stmt_places(stmt))
        return read

    # ----------------------------------------------------------- functions
    def _block_function(self, fn, loop, outer, roles, number) -> ir.Function:
        first, stride, lo, hi = (ir.Var(f"{name}·", "i64", True)
                                 for name in ("first", "stride", "lo", "hi"))

        def at(n):      # first + n · stride
            return ir.Binary("+", ir.Read(first),
                             ir.Binary("*", n, ir.Read(stride), "i64"), "i64")

        last = ir.Binary("-", ir.Read(hi), ir.Const(1, "i64"), "i64")
        body = (ir.For(loop.var, at(ir.Read(lo)), ir.Read(stride), at(last), loop.body,
                       loop.site, loop.step_site),)
        params = tuple(outer) + (first, stride, lo, hi)
        written = frozenset(k for k, v in enumerate(outer) if roles[v] != "read"
                            and not _accumulated(fn, v))
        accumulated = frozenset(k for k, v in enumerate(outer) if roles[v] != "read"
                                and _accumulated(fn, v))
        constants = tuple((v, c) for v, c in fn.constants
                          if v in set(used_vars(loop.body)))
        block = ir.Function(f"{fn.symbol}__blocks{number}", fn.name, fn.inverse, params,
                            body, fn.span, (), constants, written, accumulated)
        self.added[block.symbol] = block
        return block

    def _reduction(self, fn, loop, private, number) -> ir.Function:
        params, body = [], []
        for target in private:
            mine = ir.Var(f"{target.name}·block", private_type(target.type), True)
            params += [target, mine]
            body += _sum_into(target, mine, loop.step_site)
        written = frozenset(2 * k for k, v in enumerate(private) if not _accumulated(fn, v))
        accumulated = frozenset(2 * k for k, v in enumerate(private) if _accumulated(fn, v))
        reduce = ir.Function(f"{fn.symbol}__sums{number}", fn.name, fn.inverse,
                             tuple(params), tuple(body), fn.span, (), (), written,
                             accumulated)
        self.added[reduce.symbol] = reduce
        return reduce


@record
class Own:
    """A whole array written by a call only at elements indexed by the loop's index
    along each of `axes` (`_Planner._own_in_call`)."""

    axes: frozenset


def _written_along(module: ir.Module, symbol: str, k: int, holders: set, depth: int = 0):
    """The axes along which every write of parameter k (an array) of `symbol` is at
    an index that one of the parameters at positions `holders` holds, unchanged
    (through the calls it makes with them too); None when a write is elsewhere."""
    fn = module.functions[symbol]
    target = fn.params[k]
    if depth > 8 or not isinstance(target.type, ir.ArrayType):
        return None
    held = {fn.params[j] for j in holders if j not in fn.written}
    axes = frozenset(range(target.type.ndim))
    for stmt in walk(fn.body):
        callee = module.functions[stmt.callee] if isinstance(stmt, ir.Call) else None
        for j, place in enumerate(stmt_places(stmt)):
            if getattr(place, "var", None) is not target:
                continue
            if callee is not None and j not in callee.written | callee.accumulated:
                continue                        # only read there
            if isinstance(place, ir.ElemPlace):
                axes &= frozenset(a for a, i in enumerate(place.indices)
                                  if isinstance(i, ir.Read) and i.var in held)
            elif callee is not None:            # passed whole: where the callee writes
                inner = {m for m, arg in enumerate(stmt.args) if _holds(arg, held)}
                found = _written_along(module, stmt.callee, j, inner, depth + 1)
                if found is None:
                    return None
                axes &= found
            else:
                return None
    return axes or None


def _holds(arg, variables: set) -> bool:
    """Whether a call argument is one of the (integer) `variables` itself."""
    return isinstance(arg, (ir.Read, ir.VarPlace)) and arg.field is None and \
        arg.var in variables


def _valued_vars(e):
    """The variables an expression reads values of (not only extents)."""
    if isinstance(e, ir.Dim):
        return
    if isinstance(e, (ir.Read, ir.Load)):
        yield e.var
    for index in getattr(e, "indices", ()):
        yield from _valued_vars(index)
    if isinstance(e, ir.ComplexValue):
        yield from _valued_vars(e.re)
        yield from _valued_vars(e.im)
    if isinstance(e, ir.Let):
        yield from _valued_vars(e.value)
        yield from _valued_vars(e.body)
        return
    for operand in ir.operands(e):
        yield from _valued_vars(operand)


def _summable(t) -> bool:
    return (t.elem if isinstance(t, ir.ArrayType) else t) in _SUMMED


def _accumulated(fn: ir.Function, var: ir.Var) -> bool:
    """Whether `var` is a parameter `fn` gets as an accumulated gradient (one buffer
    may be passed for two of them: Note [Array parameters do not overlap])."""
    return any(p is var and k in fn.accumulated for k, p in enumerate(fn.params))


def private_type(t):
    """The type of a block's private copy of a variable of type `t` (C-ordered)."""
    return ir.ArrayType(t.elem, t.ndim, unit_stride=True) if isinstance(t, ir.ArrayType) \
        else t


def _argument(var: ir.Var, role: str) -> Argument:
    t = var.type
    if isinstance(t, ir.ArrayType):
        return Argument("array", t.elem, t.ndim, role)
    if isinstance(t, ir.StackType):
        return Argument("stack", t.elem, 0, role)
    return Argument("scalar", t, 0, role)


def _sum_into(target: ir.Var, mine: ir.Var, step_site: int) -> list:
    """Statements adding `mine` (a block's partial sums) into `target`."""
    fields = (0, 1) if (target.type == "complex" or getattr(target.type, "elem", None)
                        == "complex") else (None,)
    if not isinstance(target.type, ir.ArrayType):
        return [ir.Update(ir.VarPlace(target, f), "+=", ir.Read(mine, f)) for f in fields]
    indices = tuple(ir.Var(f"k{axis}·", "i64") for axis in range(target.type.ndim))
    reads = tuple(ir.Read(k) for k in indices)
    body: tuple = tuple(ir.Update(ir.ElemPlace(target, reads, None, f), "+=",
                                  ir.Load(mine, reads, None, f)) for f in fields)
    for axis in reversed(range(target.type.ndim)):
        last = ir.Binary("-", ir.Dim(target, axis), ir.Const(1, "i64"), "i64")
        body = (ir.For(indices[axis], ir.Const(0, "i64"), ir.Const(1, "i64"), last, body,
                       None, step_site),)
    return list(body)
