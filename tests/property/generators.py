"""Hypothesis strategies for random, well-formed rev programs over i64, bool, i64[:]
and bool[:] (tests/property/systems.py extends them to f64, fixed, ulog and complex).

`programs()` draws a `GeneratedProgram`: one to three functions `f0 … fN` (each may
call or uncall the ones before it, so there is no recursion), built as an AST of
`rlang.frontend.ast` nodes in the canonical form the parser produces, plus the source text
`rlang.frontend.printer.format_program` makes of it.  `arguments(gp)` draws inputs for its last
function (`gp.top`); `cases()` draws both at once (so that a test can name a
hand-written case, see `case_from_source`, in `@example`).  The kinds of values, the
AST helpers, the context and the inputs live in tests/property/gen_parts.py.

"Well-formed" means more than "passes the checker": every generated program, and its
inverse, runs without a run-time error and passes every run-time check of
LANGUAGE.md §6 for every input (i64 arithmetic may wrap; that is still reversible).
The generator keeps that promise by construction:

* Each body is generated in a context that knows which variables are in scope, which
  of them may be written, and which are *frozen* (readable only) because an enclosing
  construct depends on them: the bounds of a `for` (and its index), the conditions of
  an `if`, the counter and limit of a `from`/`while` loop, whatever a computation that
  is later uncomputed reads or writes (`@routine`, `~begin`, `t += e … t -= e`), a
  pushed view until it is popped, the read-only parameters of a function.
* Right-hand sides never read their target (for an array element: the array);
  divisors are nonzero by construction (`e % 7 + 1`, `-(e % 3 + 1)`, literals);
  exponents are in 0..3; shifts may exceed 63 or be negative; array indices are
  `e % length(a)` (floor modulo: always in bounds, the arrays are never empty).
* The index expressions of written views never read another view written by the
  same statement (`SWAP(a[x % n], x)` is not its own inverse; the checker refuses
  it: PROBLEMS.md #1).
* Statements that change a loop counter or an `if` condition (`INC(k)`) are put
  between the generated units of a body, never inside one (a unit such as
  `@routine … ~@routine` may read the counter).
* Loops have small, statically bounded trip counts and a cost model bounds the number
  of statements a run executes.

Constructs: `+= -= ^=` on variables and elements, SWAP/NEG/INC/DEC/FLIP, `x ← e` /
`x → e`, `@zeros`/`~@zeros`, `zeros(T, n)` ancilla arrays, `@routine`/`~@routine`
(nested), `begin`/`~begin`, `if (pre, post)` with `elseif`/`else` (post = pre, post
omitted, and a post different from the pre whose branches change the condition),
`for` with steps 1, -1, 2, -3 and computed steps (empty ranges included), Janus
`from … do … loop … until` and `while (pre, post)` counting loops, calls and uncalls
(on variables, elements, whole arrays and expressions for read-only parameters, or
computed into fresh ancillas and uncomputed), PUSH/POP on stack ancillas,
`@safe print/show/assert` (the inverse prints the forward trace reversed),
`@invcheckoff` and `@inbounds` on simple and compound statements, `@parallel for`
over the elements of an array, bounded recursion (depth ≤ 3, as a call or an uncall),
`const` integers and bools, typed and generic parameters.
"""
from __future__ import annotations

from hypothesis import strategies as st

from rlang.frontend import ast
from rlang.frontend.printer import format_program

from gen_parts import (  # noqa: F401  (case_from_source, main_calling: re-exported)
    ARRAY_OF, BARR, BOOL, COST_BUDGET, HypothesisDraws, INT, MAX_DEPTH, MAX_LEN, STACK_BOOL, STACK_INT, ARR,
    _TYPE_OF, Ctx, GeneratedProgram, Signature, arguments, binary, case_from_source, length,
    lit, main_calling, name, names_in, stack_value)

# ----------------------------------------------------------------------- generator

class Builder:
    """Draws one program; `draws` makes its choices (gen_parts.HypothesisDraws or
    RandomDraws).

    A subclass may add kinds of values (tests/property/systems.py: fixed, ulog, complex,
    f64): it extends the tables below and the hooks `expr` (an expression of a kind),
    `statement_kinds`, `compute_allocs` and `parallel_update`."""

    #: kind -> the kind of an array of it; kind -> its type; (kind, (least, most)) of
    #: the parameters of a function; kind -> the first letter of its parameters' names
    ARRAY_OF = ARRAY_OF
    TYPE_OF = _TYPE_OF
    PARAMS = ((INT, (1, 3)), (BOOL, (0, 2)), (ARR, (0, 2)), (BARR, (0, 1)))
    PREFIX = {INT: "x", BOOL: "b", ARR: "a", BARR: "m"}

    def __init__(self, draws, calls: bool = True, stacks: bool = True):
        self.draws = draws
        self.calls = calls
        self.stacks = stacks
        self.consts: dict[str, str] = {}        # `const` name -> INT | BOOL
        self.counter = 0
        self.signatures: dict[str, Signature] = {}
        self.cost = 0
        self.budget = COST_BUDGET

    # -------------------------------------------------------------- small helpers
    def fresh(self, prefix: str) -> str:
        self.counter += 1
        while f"{prefix}{self.counter}" in ast.SCALAR_TYPES:      # `i32`, `i64` are types
            self.counter += 1
        return f"{prefix}{self.counter}"

    def choice(self, options):
        return self.draws.choice(options)

    def chance(self, p: float) -> bool:
        return self.draws.integer(0, 999) < p * 1000

    def small(self, lo: int, hi: int) -> int:
        return self.draws.integer(lo, hi)

    def spend(self, ctx: Ctx, amount: int = 1) -> None:
        self.cost += ctx.weight * amount

    def can_afford(self, ctx: Ctx, amount: int) -> bool:
        return self.cost + ctx.weight * amount <= self.budget

    def is_array(self, kind: str) -> bool:
        return kind in self.ARRAY_OF.values()

    def arrays_in(self, ctx: Ctx, exclude=(), writable: bool = False) -> list[str]:
        """The arrays (of any kind) in scope, or only the writable ones."""
        pick = ctx.writable if writable else ctx.readable
        return [n for kind in self.ARRAY_OF.values() for n in pick(kind, exclude)]

    def scalar_type(self, array_kind: str) -> ast.TypeRef:
        return ast.TypeRef(self.TYPE_OF[array_kind].scalar)

    def expr(self, kind: str, ctx: Ctx, depth: int, exclude=frozenset()):
        """An expression of the scalar `kind` reading nothing in `exclude`."""
        if kind == INT:
            return self.int_expr(ctx, depth, exclude)
        return self.bool_expr(ctx, min(depth, 1), exclude)

    # ---------------------------------------------------------------- expressions
    def int_literal(self):
        kind = self.small(0, 9)
        if kind < 6:
            return lit(self.small(0, 12))
        if kind < 8:
            return lit(-self.small(1, 12))
        return lit(self.draws.integer(-(1 << 62), 1 << 62))

    def int_leaf(self, ctx: Ctx, exclude, depth: int):
        ints = ctx.readable(INT, exclude)
        arrays = ctx.readable(ARR, exclude)
        all_arrays = self.arrays_in(ctx, exclude)
        options = ["lit"] + ["var"] * 3 * bool(ints) + ["elem"] * 2 * bool(arrays) \
            + ["len"] * bool(all_arrays)
        pick = self.choice(options)
        if pick == "lit":
            return self.int_literal()
        if pick == "var":
            return name(self.choice(ints))
        if pick == "len":
            return length(self.choice(all_arrays))
        return self.element(ctx, self.choice(arrays), exclude, max(depth - 1, 0))

    def element(self, ctx: Ctx, arr: str, exclude, depth: int) -> ast.Index:
        """`arr[e % length(arr)]`: always in bounds (floor modulo, non-empty arrays)."""
        index = self.int_expr(ctx, depth, set(exclude) | {arr})
        if isinstance(index, ast.IntLit) and index.value == 0 and self.chance(0.5):
            return ast.Index(name(arr), (index,))
        return ast.Index(name(arr), (binary("%", index, length(arr)),))

    def divisor(self, ctx: Ctx, exclude, depth: int):
        """An expression that is never zero."""
        kind = self.small(0, 3)
        if kind == 0:
            return lit(self.small(1, 9))
        if kind == 1:
            return lit(-self.small(1, 9))
        inner = binary("+", binary("%", self.int_expr(ctx, depth, exclude),
                                   lit(self.small(2, 9))), lit(1))
        return inner if kind == 2 else ast.Unary("-", inner)

    def int_expr(self, ctx: Ctx, depth: int, exclude=frozenset()):
        if depth <= 0 or self.chance(0.3):
            return self.int_leaf(ctx, exclude, depth)
        d = depth - 1
        kind = self.small(0, 13)
        if kind <= 4:
            op = self.choice(["+", "-", "*", "^", "&", "|", "+", "-"])
            return binary(op, self.int_expr(ctx, d, exclude), self.int_expr(ctx, d, exclude))
        if kind <= 6:
            op = self.choice(["//", "%"])
            return binary(op, self.int_expr(ctx, d, exclude), self.divisor(ctx, exclude, d))
        if kind == 7:
            exponent = lit(self.small(0, 3)) if self.chance(0.5) else \
                binary("%", self.int_expr(ctx, d, exclude), lit(4))
            return binary("**", self.int_leaf(ctx, exclude, d), exponent)
        if kind == 8:
            shift = lit(self.small(0, 70)) if self.chance(0.5) else \
                binary("-", binary("%", self.int_expr(ctx, d, exclude), lit(70)), lit(3))
            return binary(self.choice(["<<", ">>"]), self.int_expr(ctx, d, exclude), shift)
        if kind == 9:
            return ast.Unary(self.choice(["-", "~"]), self.int_expr(ctx, d, exclude))
        if kind == 10:
            func = self.choice(["min", "max"])
            return ast.Call(func, (self.int_expr(ctx, d, exclude), self.int_expr(ctx, d, exclude)))
        if kind == 11:
            return ast.Call("abs", (self.int_expr(ctx, d, exclude),))
        return self.int_leaf(ctx, exclude, d)

    def bool_expr(self, ctx: Ctx, depth: int, exclude=frozenset()):
        bools = ctx.readable(BOOL, exclude)
        arrays = ctx.readable(BARR, exclude)
        if depth <= 0 or self.chance(0.3):
            options = ["cmp", "cmp", "lit"] + ["var"] * 2 * bool(bools) + ["elem"] * bool(arrays)
            pick = self.choice(options)
            if pick == "lit":
                return ast.BoolLit(self.chance(0.5))
            if pick == "var":
                return name(self.choice(bools))
            if pick == "elem":
                return self.element(ctx, self.choice(arrays), exclude, max(depth - 1, 0))
            return self.comparison(ctx, depth, exclude)
        d = depth - 1
        kind = self.small(0, 5)
        if kind <= 1:
            op = self.choice(["&&", "||"])
            return binary(op, self.bool_expr(ctx, d, exclude), self.bool_expr(ctx, d, exclude))
        if kind == 2:
            return ast.Unary("!", self.bool_expr(ctx, d, exclude))
        if kind == 3:
            op = self.choice(["^", "&", "|", "==", "!="])
            return binary(op, self.bool_expr(ctx, d, exclude), self.bool_expr(ctx, d, exclude))
        return self.comparison(ctx, d, exclude)

    def comparison(self, ctx: Ctx, depth: int, exclude):
        op = self.choice(["==", "!=", "<", "<=", ">", ">="])
        return binary(op, self.int_expr(ctx, max(depth, 0), exclude),
                      self.int_expr(ctx, max(depth - 1, 0), exclude))

    # ---------------------------------------------------------------- views
    def writable_roots(self, ctx: Ctx, scalar: str, exclude=()) -> list[str]:
        """Variables of type `scalar` and arrays of it that may be written here."""
        return ctx.writable(scalar, exclude) + ctx.writable(self.ARRAY_OF[scalar], exclude)

    def view_of(self, ctx: Ctx, root: str, index_exclude=()):
        """The variable `root`, or an element of it when it is an array; the index
        reads nothing in `index_exclude`."""
        if self.is_array(ctx.vars[root]):
            return self.element(ctx, root, set(index_exclude) | {root}, 1)
        return name(root)

    def writable_view(self, ctx: Ctx, scalar: str, exclude=()):
        """(view, root) of a writable scalar or array element of type `scalar`, or None."""
        roots = self.writable_roots(ctx, scalar, exclude)
        if not roots:
            return None
        root = self.choice(roots)
        return self.view_of(ctx, root), root

    # ---------------------------------------------------------------- statements
    def body(self, ctx: Ctx, lo: int = 1, hi: int | None = None, insert=None) -> tuple:
        """A statement list that leaves the set of live ancillas as it found it.

        `insert`, when given, is a statement put between two of the generated units
        (never inside one: a unit such as `@routine … ~@routine` may depend on a
        variable that `insert` changes, e.g. a loop counter)."""
        if hi is None:
            hi = (3, 3, 2, 2)[min(ctx.depth, 3)]
        units = [self.statement(ctx) for _ in range(self.small(lo, hi))]
        if insert is not None:
            units.insert(self.small(0, len(units)), [insert])
        return tuple(stmt for unit in units for stmt in unit)

    def statement_kinds(self, ctx: Ctx) -> list[str]:
        """The statement kinds (`gen_<kind>` methods) to draw from here, repeated by weight."""
        kinds = ["update"] * 6 + ["instr"] * 3 + ["print"]
        if ctx.depth < MAX_DEPTH and self.can_afford(ctx, 4):
            kinds += ["if", "parity_if", "for", "for", "from", "while", "compute", "compute",
                      "block", "annotated", "parallel_for"] + ["push"] * self.stacks
            if self.signatures and self.calls:
                kinds += ["call", "call", "call"]
        return kinds

    def statement(self, ctx: Ctx) -> list:
        kind = self.choice(self.statement_kinds(ctx))
        made = getattr(self, "gen_" + kind)(ctx)
        if made is None:            # nothing suitable in scope: fall back
            made = self.gen_update(ctx)
        if made is None:            # nothing writable here: compute on fresh ancillas
            made = self.gen_compute(ctx) if ctx.depth <= MAX_DEPTH else self.gen_print(ctx)
        return made

    # simple statements ---------------------------------------------------------
    def gen_update(self, ctx: Ctx):
        options = [INT] * 3 * bool(self.writable_roots(ctx, INT)) \
            + [BOOL] * bool(self.writable_roots(ctx, BOOL))
        if not options:
            return None
        self.spend(ctx)
        view, root = self.writable_view(ctx, self.choice(options))
        if ctx.vars[root] in (BOOL, BARR):
            return [ast.Update(view, "^=", self.bool_expr(ctx, 2, {root}))]
        op = self.choice(["+=", "-=", "^=", "+=", "-="])
        return [ast.Update(view, op, self.int_expr(ctx, 3, {root}))]

    def gen_instr(self, ctx: Ctx):
        ints, bools = self.writable_roots(ctx, INT), self.writable_roots(ctx, BOOL)
        options = ["NEG", "INC", "DEC"] * bool(ints) + ["SWAP", "SWAP"] * (len(ints) >= 2) \
            + ["FLIP"] * bool(bools) + ["SWAP_BOOL"] * (len(bools) >= 2)
        if not options:
            return None
        self.spend(ctx)
        pick = self.choice(options)
        if pick.startswith("SWAP"):
            # choose both roots first: neither index may read the other operand
            roots = self.draws.permutation(ints if pick == "SWAP" else bools)[:2]
            return [ast.Instr("SWAP", tuple(self.view_of(ctx, r, roots) for r in roots))]
        view, _ = self.writable_view(ctx, BOOL if pick == "FLIP" else INT)
        return [ast.Instr(pick, (view,))]

    def gen_print(self, ctx: Ctx):
        """`@safe print(…)`, `@safe show(…)` or an `@safe assert` that holds."""
        readable = ctx.readable(INT) + ctx.readable(BOOL)
        self.spend(ctx)
        kind = self.small(0, 5)
        if kind == 5:
            value = self.int_expr(ctx, 1)
            args = (binary("==", value, value),)
            if self.chance(0.5):
                args += (ast.StrLit("never fails"),)
            return [ast.Safe("assert", args)]
        args = []
        for _ in range(self.small(1, 2)):
            if readable and (kind == 4 or self.chance(0.7)):
                args.append(name(self.choice(readable)))
            elif self.chance(0.5):
                args.append(self.int_expr(ctx, 1))
            else:
                args.append(self.bool_expr(ctx, 1))
        if kind == 3 and self.chance(0.5):
            args.insert(0, ast.StrLit(self.choice(["at", "k =", "∑ \"q\""])))
        return [ast.Safe("show" if kind == 4 else "print", tuple(args))]

    def gen_annotated(self, ctx: Ctx):
        """`@invcheckoff S` / `@inbounds S` around a simple or a compound statement."""
        kind = self.choice(["update", "update", "instr", "if", "for", "from", "while", "block",
                            "call"] + ["push"] * self.stacks)
        made = getattr(self, "gen_" + kind)(ctx) if kind != "call" or self.calls else None
        if not made:
            return None
        at = self.choice([k for k, stmt in enumerate(made)
                          if not isinstance(stmt, (ast.Routine, ast.UnRoutine))])
        wrapped = made[at]
        for _ in range(self.small(1, 2)):
            wrapped = ast.Annotated(self.choice(["invcheckoff", "inbounds"]), wrapped)
        return [*made[:at], wrapped, *made[at + 1:]]

    # if -------------------------------------------------------------------------
    def gen_if(self, ctx: Ctx):
        """`if c1 … elseif c2 … else … end`, the conditions frozen in every branch;
        each post is omitted (`if c`) or the same as its pre (`if (c, c)`)."""
        conds = [self.bool_expr(ctx, 2) for _ in range(self.small(1, 3))]
        inner = ctx.freeze(names_in(conds)).inner()
        self.spend(ctx, len(conds))
        branches = []
        for cond in conds:
            post = None if self.chance(0.5) else cond
            branches.append(ast.IfBranch(cond, post, self.body(inner, 0)))
        orelse = self.body(inner, 0) if self.chance(0.5) else None
        return [ast.If(tuple(branches), orelse)]

    def gen_parity_if(self, ctx: Ctx):
        """`if (v % 2 == 0, v % 2 != 0) … INC(v) … else … DEC(v) … end`: a postcondition
        that differs from the precondition, the branches changing the condition."""
        ints = ctx.writable(INT)
        if not ints:
            return None
        v = self.choice(ints)
        pre = binary("==", binary("%", name(v), lit(2)), lit(0))
        post = binary("!=", binary("%", name(v), lit(2)), lit(0))
        if self.chance(0.5):
            pre = binary("==", binary("&", name(v), lit(1)), lit(0))
            post = binary("==", binary("&", name(v), lit(1)), lit(1))
        inner = ctx.freeze({v}).inner()
        self.spend(ctx, 2)
        then = self.body(inner, 0, 2, insert=ast.Instr("INC", (name(v),)))
        orelse = self.body(inner, 0, 2, insert=ast.Instr("DEC", (name(v),)))
        return [ast.If((ast.IfBranch(pre, post, then),), orelse)]

    # loops ----------------------------------------------------------------------
    def bounded(self, ctx: Ctx, lo: int, hi: int):
        """(expression, least value, greatest value) with values in [lo, hi]."""
        ints = ctx.readable(INT)
        arrays = self.arrays_in(ctx)
        options = ["lit"] + ["mod"] * 2 * bool(ints) + ["len"] * bool(arrays) * (lo <= 0 <= hi)
        pick = self.choice(options)
        if pick == "lit":
            k = self.small(lo, hi)
            return lit(k), k, k
        if pick == "len":                           # length(a) - 1 is in [0, MAX_LEN - 1]
            return binary("-", length(self.choice(arrays)), lit(1)), 0, MAX_LEN - 1
        m = self.small(2, max(2, hi - lo + 1))
        expr = binary("%", name(self.choice(ints)), lit(m))
        if lo != 0:
            expr = binary("+", expr, lit(lo)) if lo > 0 else binary("-", expr, lit(-lo))
        return expr, lo, lo + m - 1

    def gen_for(self, ctx: Ctx):
        kind = self.small(0, 5)
        if kind <= 3:
            step_value = [1, -1, 2, -3][kind]
            step, smin = lit(step_value), abs(step_value)
            positive = step_value > 0
        else:
            ints = ctx.readable(INT)
            if not ints:
                return None
            m = self.small(2, 3)
            step = binary("+", binary("%", name(self.choice(ints)), lit(m)), lit(1))
            positive = kind == 4
            if not positive:
                step = ast.Unary("-", step)
            smin = 1
        low = self.bounded(ctx, -2, 2)
        high = self.bounded(ctx, -1, 5)
        start, stop = (low, high) if positive else (high, low)
        if self.chance(0.15):
            start, stop = stop, start           # (often) an empty range
        span = (stop[2] - start[1]) if positive else (start[2] - stop[1])
        trips = max(0, span // smin + 1)
        if not self.can_afford(ctx, 2 * trips + 1):
            return None
        var = self.fresh("i")
        bound_names = names_in((start[0], step, stop[0]))
        inner = ctx.freeze(bound_names | {var}).with_vars(**{var: INT}).inner(trips)
        self.spend(ctx)
        show = ast.Safe("print", (name(var),)) if self.chance(0.3) else None
        return [ast.For(var, start[0], step, stop[0], self.body(inner, insert=show))]

    def gen_parallel_for(self, ctx: Ctx):
        """`@parallel for i = 0:length(a) - 1` (or backward) whose iterations update only
        `a[i]` (and read neither `a` nor anything the loop writes)."""
        arrays = self.arrays_in(ctx, writable=True)
        if not arrays or not self.can_afford(ctx, 3 * MAX_LEN):
            return None
        arr = self.choice(arrays)
        var = self.fresh("i")
        last = binary("-", length(arr), lit(1))
        start, step, stop = (lit(0), lit(1), last) if self.chance(0.7) else \
            (last, lit(-1), lit(0))
        inner = ctx.freeze(set(ctx.vars)).with_vars(**{var: INT})
        self.spend(ctx, 1 + 3 * MAX_LEN)
        element = ast.Index(name(arr), (name(var),))
        body = tuple(self.parallel_update(inner, arr, element) for _ in range(self.small(1, 3)))
        return [ast.For(var, start, step, stop, body, parallel=True)]

    def parallel_update(self, inner: Ctx, arr: str, element: ast.Index):
        """One update of `element` (= `arr[i]`) that reads neither `arr` nor anything
        written in the loop (`inner` has everything in scope frozen)."""
        if inner.vars[arr] == BARR:
            return ast.Update(element, "^=", self.bool_expr(inner, 1, {arr})) if \
                self.chance(0.6) else ast.Instr("FLIP", (element,))
        if self.chance(0.6):
            return ast.Update(element, self.choice(["+=", "-=", "^="]),
                              self.int_expr(inner, 2, {arr}))
        return ast.Instr(self.choice(["INC", "DEC", "NEG"]), (element,))

    def loop_limit(self, ctx: Ctx, least: int):
        """(expression n, greatest value) with least <= n <= greatest."""
        ints = ctx.readable(INT)
        m = self.small(2, 4)
        if ints and self.chance(0.7):
            expr = binary("%", self.int_expr(ctx, 1), lit(m))
            if least:
                expr = binary("+", expr, lit(least))
            return expr, m - 1 + least
        k = self.small(least, least + m - 1)
        return lit(k), k

    def gen_from(self, ctx: Ctx):
        """A Janus loop counting a fresh ancilla `k` up from 0 to n (or down to 0)."""
        variant = self.small(0, 2)
        limit, greatest = self.loop_limit(ctx, 1 if variant != 1 else 0)
        if not self.can_afford(ctx, 3 * greatest + 2):
            return None
        k = self.fresh("k")
        inner = ctx.freeze(names_in(limit) | {k}).with_vars(**{k: INT}).inner(greatest + 1)
        self.spend(ctx, 3)
        inc, dec = ast.Instr("INC", (name(k),)), ast.Instr("DEC", (name(k),))
        if variant == 0:                # from k == 0 do … INC(k) … loop … until k == n
            do, loop = self.body(inner, 0, 2, insert=inc), self.body(inner, 0, 2)
        elif variant == 1:              # from k == 0 do … loop … INC(k) … until k == n
            do, loop = self.body(inner, 0, 2), self.body(inner, 0, 2, insert=inc)
        else:                           # k ← n; from k == n do … DEC(k) … until k == 0
            do, loop = self.body(inner, 0, 2, insert=dec), self.body(inner, 0, 2)
            return [ast.Alloc(k, limit),
                    ast.From(binary("==", name(k), limit), do, loop,
                             binary("==", name(k), lit(0))),
                    ast.Dealloc(k, lit(0))]
        return [ast.Alloc(k, lit(0)),
                ast.From(binary("==", name(k), lit(0)), do, loop, binary("==", name(k), limit)),
                ast.Dealloc(k, limit)]

    def gen_while(self, ctx: Ctx):
        """`while (k < n, k > 0) … INC(k) … end` (or counting down) on a fresh ancilla."""
        limit, greatest = self.loop_limit(ctx, 0)
        if not self.can_afford(ctx, 2 * greatest + 2):
            return None
        k = self.fresh("k")
        inner = ctx.freeze(names_in(limit) | {k}).with_vars(**{k: INT}).inner(greatest)
        self.spend(ctx, 3)
        if self.chance(0.5):
            body = self.body(inner, 0, 2, insert=ast.Instr("INC", (name(k),)))
            return [ast.Alloc(k, lit(0)),
                    ast.While(binary("<", name(k), limit), binary(">", name(k), lit(0)), body),
                    ast.Dealloc(k, limit)]
        body = self.body(inner, 0, 2, insert=ast.Instr("DEC", (name(k),)))
        return [ast.Alloc(k, limit),
                ast.While(binary(">", name(k), lit(0)), binary("<", name(k), limit), body),
                ast.Dealloc(k, lit(0))]

    # compute – use – uncompute --------------------------------------------------
    def compute(self, ctx: Ctx):
        """(allocating statements S, names S allocates, their kinds): S computes fresh
        ancillas from the variables in scope and writes nothing else."""
        allocs, new = self.compute_allocs(ctx)
        # the computation writes only the new ancillas
        only_new = Ctx({**ctx.vars, **new}, frozenset(ctx.vars) | ctx.frozen,
                       ctx.weight * 2, ctx.depth + 1)      # S runs twice: S and ~S
        stmts = list(allocs) + list(self.body(only_new, 1, 3))
        return stmts, new

    def compute_allocs(self, ctx: Ctx):
        """(allocations, {name: kind}) of the fresh ancillas a computation starts with."""
        allocs, new = [], {}
        form = self.small(0, 3)
        if form == 0:                                   # @zeros i64 t u
            names = [self.fresh("t") for _ in range(self.small(1, 2))]
            allocs.append(ast.Zeros(ast.TypeRef("i64"), tuple(names)))
            new.update({n: INT for n in names})
        elif form == 1:                                 # t ← zeros(i64, L) or bool
            t = self.fresh("t")
            kind = self.choice([ARR, ARR, BARR])
            scalar = "i64" if kind == ARR else "bool"
            allocs.append(ast.Alloc(t, ast.Call("zeros", (ast.TypeExpr(ast.TypeRef(scalar)),
                                                          lit(self.small(1, MAX_LEN))))))
            new[t] = kind
        elif form == 2:                                 # c ← false / c ← e
            c = self.fresh("c")
            value = ast.BoolLit(False) if self.chance(0.5) else self.bool_expr(ctx, 1)
            allocs.append(ast.Alloc(c, value))
            new[c] = BOOL
        else:                                           # t ← 0 / t ← e
            t = self.fresh("t")
            value = lit(0) if self.chance(0.5) else self.int_expr(ctx, 2)
            allocs.append(ast.Alloc(t, value))
            new[t] = INT
        return allocs, new

    def gen_compute(self, ctx: Ctx):
        """S; M; ~S with M never touching what S reads or writes, in one of the forms
        `@routine begin S end … ~@routine`, `begin S end … ~begin S end`, or S spelt
        out and uncomputed by hand (`t ← e0; t += e; … t -= e; t → e0`)."""
        form = self.small(0, 3)
        if form == 3:
            return self.manual_compute(ctx)
        stmts, new = self.compute(ctx)
        return self.use_and_uncompute(ctx, stmts, new, form)

    def use_and_uncompute(self, ctx: Ctx, stmts: list, new: dict, form: int) -> list:
        """S; M; ~S for a computation S that allocated `new`, in form 0, 1 or 2."""
        middle_ctx = ctx.with_vars(**new).freeze(names_in(stmts)).inner()
        middle = self.body(middle_ctx, 1, 3)
        if form == 0:
            return [ast.Routine(tuple(stmts)), *middle, ast.UnRoutine()]
        if form == 1:
            return [ast.Block(tuple(stmts)), *middle, ast.Block(tuple(stmts), inverse=True)]
        return [*stmts, *middle, ast.Block(tuple(stmts), inverse=True)]

    def manual_compute(self, ctx: Ctx):
        t = self.fresh("t")
        start = lit(0) if self.chance(0.5) else self.int_expr(ctx, 1)
        value = self.int_expr(ctx, 2)
        op = self.choice(["+=", "-=", "^="])
        middle_ctx = ctx.with_vars(**{t: INT}).freeze(names_in((start, value)) | {t}).inner()
        self.spend(ctx, 4)
        middle = self.body(middle_ctx, 1, 3)
        undo = ast.UPDATE_OPS[op]
        return [ast.Alloc(t, start), ast.Update(name(t), op, value), *middle,
                ast.Update(name(t), undo, value), ast.Dealloc(t, start)]

    # stacks ---------------------------------------------------------------------
    def gen_push(self, ctx: Ctx):
        """PUSH(s, v) … POP(s, v) on a stack ancilla (a fresh one, or one in scope)."""
        scalar = BOOL if self.chance(0.25) else INT
        kind = STACK_BOOL if scalar == BOOL else STACK_INT
        picked = self.writable_view(ctx, scalar)
        if picked is None:
            return None
        view, root = picked
        frozen = names_in(view) | {root}        # the element and its index stay put
        stacks = ctx.readable(kind)
        fresh = not stacks or self.chance(0.6)
        s = self.fresh("s") if fresh else self.choice(stacks)
        inner = ctx.with_vars(**{s: kind}).freeze(frozen).inner()
        self.spend(ctx, 4)
        middle = self.body(inner, 0, 3)
        out = [ast.Instr("PUSH", (name(s), view)), *middle, ast.Instr("POP", (name(s), view))]
        if fresh:
            out = [ast.Alloc(s, stack_value(kind)), *out, ast.Dealloc(s, stack_value(kind))]
        return out

    # blocks and calls -----------------------------------------------------------
    def gen_block(self, ctx: Ctx):
        return [ast.Block(self.body(ctx.inner(), 1, 3), inverse=self.chance(0.5))]

    def gen_call(self, ctx: Ctx):
        affordable = [s for s in self.signatures.values() if self.can_afford(ctx, s.cost + 1)]
        if not affordable:
            return None
        sig = self.choice(sorted(affordable, key=lambda s: s.name))
        # written parameters first: distinct, writable roots of the right kind
        used: set[str] = set()
        chosen: dict[int, object] = {}
        for k, (_, kind, read_only) in enumerate(sig.params):
            if read_only:
                continue
            if self.is_array(kind):
                options = ctx.writable(kind, used)
            else:
                options = self.writable_roots(ctx, kind, used)
            if not options:                 # not enough writable views here
                return self.call_on_ancillas(ctx, sig)
            root = self.choice(options)
            used.add(root)
            chosen[k] = root
        args = []
        for k, (_, kind, read_only) in enumerate(sig.params):
            if not read_only:
                root = chosen[k]
                # an index must not read a variable this call writes
                args.append(name(root) if self.is_array(kind) else self.view_of(ctx, root, used))
            elif not self.is_array(kind):
                args.append(self.expr(kind, ctx, 2, used))
            else:
                arrays = ctx.readable(kind, used)
                if not arrays:
                    return None
                args.append(name(self.choice(arrays)))
        self.cost += ctx.weight * (sig.cost + 1)
        return [ast.CallStmt(sig.name, tuple(args), inverse=self.chance(0.4))]

    def call_on_ancillas(self, ctx: Ctx, sig: Signature):
        """Compute with a call into fresh ancillas, use them, uncompute:
        `@routine begin t ← e; c ← false; f(t, c, x + 1) end … ~@routine` (or ~begin)."""
        if not self.can_afford(ctx, 2 * sig.cost + 2):
            return None
        allocs, new, args = [], {}, []
        for _, kind, read_only in sig.params:
            if read_only and self.is_array(kind):
                arrays = ctx.readable(kind)
                if not arrays:
                    return None
                args.append(name(self.choice(arrays)))
                continue
            if read_only:
                args.append(self.expr(kind, ctx, 2))
                continue
            t = self.fresh("t")
            if self.is_array(kind):
                value = ast.Call("zeros", (ast.TypeExpr(self.scalar_type(kind)),
                                           lit(self.small(1, MAX_LEN))))
            else:
                value = self.expr(kind, ctx, 1)
            allocs.append(ast.Alloc(t, value))
            new[t] = kind
            args.append(name(t))
        self.cost += 2 * ctx.weight * (sig.cost + 1)
        call = ast.CallStmt(sig.name, tuple(args), inverse=self.chance(0.4))
        return self.use_and_uncompute(ctx, [*allocs, call], new, self.small(0, 2))

    # functions ------------------------------------------------------------------
    def function(self, fname: str, budget: int = COST_BUDGET) -> ast.Function:
        """A function; with some chance a recursive one (see `recursion`)."""
        params = []
        for kind, (lo, hi) in self.PARAMS:
            for _ in range(self.small(lo, hi)):
                params.append((self.fresh(self.PREFIX[kind]), kind, self.chance(0.25)))
        depth = self.fresh("n") if self.calls and self.chance(0.25) else None
        if depth is not None:
            params.append((depth, INT, True))
        params = self.draws.permutation(params)
        if all(read_only for _, _, read_only in params):
            at = next(k for k, (p, _, _) in enumerate(params) if p != depth)
            params[at] = (params[at][0], params[at][1], False)
        ctx = Ctx({**self.consts, **{p: kind for p, kind, _ in params}},
                  frozenset(p for p, _, read_only in params if read_only) | set(self.consts))
        # a recursive function runs its body up to 4 times (depth 0..3)
        self.cost, self.budget = 0, budget // (4 if depth else 1)
        units = [self.statement(ctx) for _ in range(self.small(1, 4))]
        if depth is not None:
            units.insert(self.small(0, len(units)), self.recursion(ctx, fname, params, depth))
        body = tuple(stmt for unit in units for stmt in unit)
        typed = self.chance(0.7)
        signature = Signature(fname, tuple(params), self.cost * (4 if depth else 1))
        self.signatures[fname] = signature
        return ast.Function(fname, tuple(
            ast.Param(p, self.TYPE_OF[kind] if typed or self.chance(0.3) else None)
            for p, kind, _ in params), body)

    def recursion(self, ctx: Ctx, fname: str, params, depth: str) -> list:
        """`if n > 0 && n <= 3 … f(x, y, n - 1) … end` (or `~f`): bounded recursion on
        the read-only parameter n; every other parameter is passed on as it is."""
        cond = binary("&&", binary(">", name(depth), lit(0)), binary("<=", name(depth), lit(3)))
        args = tuple(binary("-", name(p), lit(1)) if p == depth else name(p)
                     for p, _, _ in params)
        call = ast.CallStmt(fname, args, inverse=self.chance(0.3))
        inner = ctx.inner()
        branch = self.body(inner, 0, 2, insert=call)
        return [ast.If((ast.IfBranch(cond, None if self.chance(0.5) else cond, branch),))]


def build_program(draws, max_functions: int = 3, calls: bool = True,
                  stacks: bool = True) -> GeneratedProgram:
    """A program of 1..max_functions functions, its choices made by `draws`; the last
    function is the one to run.  With `calls=False` no function calls another (each
    can be inverted on its own); with `stacks=False` there is no PUSH/POP."""
    builder = Builder(draws, calls, stacks)
    consts = []
    for _ in range(draws.integer(0, 2)):               # `const C = literal`, read anywhere
        const = builder.fresh("C")
        if builder.chance(0.7):
            consts.append(ast.Const(const, builder.int_literal()))
            builder.consts[const] = INT
        else:
            consts.append(ast.Const(const, ast.BoolLit(builder.chance(0.5))))
            builder.consts[const] = BOOL
    count = draws.integer(1, max_functions)
    functions = [builder.function(f"f{k}", COST_BUDGET // (1 if k == count - 1 else 5))
                 for k in range(count)]
    program = ast.Program(tuple(consts) + tuple(functions))
    return GeneratedProgram(program, format_program(program), functions[-1].name,
                            dict(builder.signatures))


@st.composite
def programs(draw, max_functions: int = 3, calls: bool = True,
             stacks: bool = True) -> GeneratedProgram:
    """`build_program` with Hypothesis's choices."""
    return build_program(HypothesisDraws(draw), max_functions, calls, stacks)


@st.composite
def cases(draw, max_functions: int = 3, calls: bool = True, stacks: bool = True):
    """(program, arguments of its top function): one strategy, so that a test can
    name a case in `@example`."""
    gp = draw(programs(max_functions, calls, stacks))
    return gp, draw(arguments(gp))
