"""Generated programs over the number systems of LANGUAGE.md §3: f64, fixed, ulog and
complex values and arrays of them, next to the i64 and bool values of
tests/property/generators.py.

`SystemsBuilder` is generators.py's `Builder` with four more scalar kinds (F64, FIXED,
ULOG, CPLX) and their arrays; every construct of the base generator (branches,
loops, `@routine`, calls and uncalls, `@parallel for`, …) now also meets them.  What
it adds:

* expressions of each kind (`expr(kind, …)`): `+ - *` and division by a value that
  cannot be zero (`e / (1.5 + e * e)`, `q / fixed(0.7)`, `z / complex(1.5 + x * x, y)`),
  bare literals next to a fixed operand (`q * 0.5`), ulog `* / +` and `l ** p`, the
  built-ins defined for each kind (`sin cos tanh atan sqrt exp hypot min max` of
  floats; `exp log sqrt sin cos tanh conj` of complex numbers; `abs abs2 angle real
  imag`, `log(l)`, `floor(q)`), the conversions `f64(…) fixed(…) ulog(…) i64(…)
  complex(re, im)`, and the fields `z.re`, `z.im`;
* updates: `+=`/`-=` on f64, fixed (exactly, also of an integer) and complex values and
  on the fields `z.re`/`z.im`, `*=`/`/=` on ulog values; SWAP within each kind,
  NEG, CONJ on complex, ROT/IROT/HADAMARD on f64 views;
* ancillas of each kind (`t ← zero(fixed)`, `t ← one(ulog)`, `@zeros complex t`,
  `zeros(ulog, 3)`, `t ← e`), uncomputed by `~@routine`, `~begin` or by hand;
* comparisons of fixed, ulog and f64 values in conditions, `@safe print` of fixed and
  f64 values, and `@parallel for` loops over arrays of every kind.

The promise of generators.py (no run-time error, every check passes) holds for
integers, bools and fixed values as long as the floats stay finite: fixed arithmetic
wraps, integers reach it only through `fixed(e % 1000)` and floats only through
`fixed(sin(e))` or `fixed(tanh(e))`.  Floats can overflow or cancel: a program whose
float values grow out of range may produce inf or nan, fail a deallocation check or
convert nan to fixed; the tests then ask for the same error from both backends.  `system_cases()` draws (program, inputs):
floats in [-2, 2], fixed raw values both modest and over the whole i64 range, ulog
logarithms in [-3, 3].
"""
from __future__ import annotations

import numpy as np
from hypothesis import strategies as st

from rlang.frontend import ast
from rlang.numbers import Fixed, FixedArray, ULog, ULogArray
from rlang.frontend.printer import format_program

from gen_parts import (ARR, BARR, BOOL, COST_BUDGET, I64_MAX, I64_MIN, INT, MAX_LEN, Ctx,
                       GeneratedProgram, HypothesisDraws, argument, arguments, binary, lit, name,
                       names_in)
from generators import Builder

F64, FIXED, ULOG, CPLX = "f64", "fixed", "ulog", "complex"
F64S, FIXEDS, ULOGS, CPLXS = "f64[]", "fixed[]", "ulog[]", "complex[]"
SYSTEMS = (F64, FIXED, ULOG, CPLX)

FLOAT_LITERALS = (0.5, 1.5, 2.0, 0.25, 3.0, 0.75, -1.25, 1e-3)
FIXED_LITERALS = (0.3, -1.25, 2.0, 0.001, 7.5, -3.0, 0.7071067811865476, -0.5)
NONZERO_FIXED = (3.0, 0.7, -1.5, 7.25, 2.0, -0.1)
ULOG_LITERALS = (0.5, 1.5, 2.0, 3.0, 0.125)
ULOG_POWERS = (2.0, 0.5, -1.0, 3.0, 1.5)


def flit(x: float):
    """A float literal as the parser builds it."""
    return ast.FloatLit(x) if x >= 0 else ast.Unary("-", ast.FloatLit(-x))


def call(func: str, *args) -> ast.Call:
    return ast.Call(func, tuple(args))


def typed(func: str, scalar: str) -> ast.Call:
    """`func(T)` for a type T: `zero(fixed)`, `one(ulog)`."""
    return call(func, ast.TypeExpr(ast.TypeRef(scalar)))


def complex_lit(re: float, im: float):
    imag = ast.ImagLit(abs(im))
    return binary("+" if im >= 0 else "-", flit(re), imag)


class SystemsBuilder(Builder):
    """Draws programs over i64, bool and the number systems `systems` (by default all of
    f64, fixed, ulog and complex): parameters and ancillas of those kinds only."""

    ARRAY_OF = {**Builder.ARRAY_OF, F64: F64S, FIXED: FIXEDS, ULOG: ULOGS, CPLX: CPLXS}
    TYPE_OF = {**Builder.TYPE_OF, **{k: ast.TypeRef(k) for k in SYSTEMS},
               **{ARRAY: ast.TypeRef(k, 1) for k, ARRAY in
                  ((F64, F64S), (FIXED, FIXEDS), (ULOG, ULOGS), (CPLX, CPLXS))}}
    PARAMS = ((INT, (1, 2)), (BOOL, (0, 1)), (ARR, (0, 1)), (BARR, (0, 1)), (F64, (0, 2)),
              (FIXED, (0, 2)), (ULOG, (0, 2)), (CPLX, (0, 2)), (F64S, (0, 1)),
              (FIXEDS, (0, 1)), (ULOGS, (0, 1)), (CPLXS, (0, 1)))
    PREFIX = {**Builder.PREFIX, F64: "r", FIXED: "q", ULOG: "l", CPLX: "z", F64S: "rs",
              FIXEDS: "qs", ULOGS: "ls", CPLXS: "zs"}

    def __init__(self, draws, calls: bool = True, systems=SYSTEMS, parallel: int = 1):
        super().__init__(draws, calls, stacks=False)
        self.systems = tuple(systems)
        self.parallel = parallel        # the weight of `@parallel for` among statements
        self.PARAMS = tuple((kind, counts) for kind, counts in self.PARAMS
                            if kind in (INT, BOOL, ARR, BARR) + self.systems
                            + tuple(self.ARRAY_OF[k] for k in self.systems))

    # ------------------------------------------------------------ leaves
    def leaf_of(self, kind: str, ctx: Ctx, exclude, depth: int):
        """A variable or array element of `kind` (not in `exclude`), or None."""
        scalars = ctx.readable(kind, exclude)
        arrays = ctx.readable(self.ARRAY_OF[kind], exclude)
        if not scalars and not arrays:
            return None
        if scalars and (not arrays or self.chance(0.6)):
            return name(self.choice(scalars))
        return self.element(ctx, self.choice(arrays), exclude, max(depth - 1, 0))

    def int_leaf(self, ctx: Ctx, exclude, depth: int):
        """The base leaves, and now and then `i64(floor(q))` of a fixed value."""
        if self.chance(0.1):
            q = self.leaf_of(FIXED, ctx, exclude, depth)
            if q is not None:
                return call("i64", call("floor", q))
        return super().int_leaf(ctx, exclude, depth)

    def small_int(self, ctx: Ctx, exclude, modulus: int):
        """`e % modulus`: an integer in [0, modulus) (safe to convert to fixed)."""
        return binary("%", self.int_expr(ctx, 1, exclude), lit(modulus))

    # ------------------------------------------------------------ expressions
    def expr(self, kind: str, ctx: Ctx, depth: int, exclude=frozenset()):
        makers = {F64: self.f64_expr, FIXED: self.fixed_expr, ULOG: self.ulog_expr,
                  CPLX: self.complex_expr}
        if kind in makers:
            return makers[kind](ctx, depth, exclude)
        return super().expr(kind, ctx, depth, exclude)

    def f64_leaf(self, ctx: Ctx, exclude, depth: int):
        pick = self.choice(["lit", "var", "var", "var", "int", "fixed", "ulog", "complex"])
        if pick == "int":
            return call("f64", self.small_int(ctx, exclude, 97))
        if pick == "fixed":
            q = self.leaf_of(FIXED, ctx, exclude, depth)
            if q is not None:
                return call(self.choice(["f64", "floor"]), q)
        if pick == "ulog":
            l = self.leaf_of(ULOG, ctx, exclude, depth)        # noqa: E741
            if l is not None:
                return call("log", l)
        if pick == "complex":
            z = self.leaf_of(CPLX, ctx, exclude, depth)
            if z is not None:
                func = self.choice(["real", "imag", "abs", "abs2", "angle", ".re", ".im"])
                return ast.Field(z, func[1:]) if func.startswith(".") else call(func, z)
        if pick != "lit":
            view = self.leaf_of(F64, ctx, exclude, depth)
            if view is not None:
                return view
        return flit(self.choice(FLOAT_LITERALS))

    def f64_expr(self, ctx: Ctx, depth: int, exclude=frozenset()):
        if depth <= 0 or self.chance(0.3):
            return self.f64_leaf(ctx, exclude, depth)
        sub = lambda: self.f64_expr(ctx, depth - 1, exclude)      # noqa: E731
        kind = self.small(0, 9)
        if kind <= 2:
            return binary(self.choice(["+", "-", "*"]), sub(), sub())
        if kind == 3:
            return binary("/", sub(), binary("+", flit(1.5), binary("*", sub(), sub())))
        if kind == 4:
            return call(self.choice(["sin", "cos", "tanh", "atan"]), sub())
        if kind == 5:
            inner = sub()
            return call("sqrt", binary("+", flit(1.0), binary("*", inner, inner)))
        if kind == 6:
            return call(self.choice(["min", "max", "hypot"]), sub(), sub())
        if kind == 7:
            return call("exp", call("sin", sub()))
        if kind == 8:
            return ast.Unary("-", sub())
        return binary("**", sub(), lit(2))

    def fixed_leaf(self, ctx: Ctx, exclude, depth: int):
        pick = self.choice(["var", "var", "var", "lit", "int", "float"])
        if pick == "var":
            view = self.leaf_of(FIXED, ctx, exclude, depth)
            if view is not None:
                return view
        if pick == "int":
            return call("fixed", self.small_int(ctx, exclude, 1000))
        if pick == "float":         # |sin|, |tanh| ≤ 1: always in the range of fixed
            return call("fixed", call(self.choice(["sin", "tanh"]),
                                      self.f64_expr(ctx, 1, exclude)))
        return call("fixed", flit(self.choice(FIXED_LITERALS)))

    def fixed_expr(self, ctx: Ctx, depth: int, exclude=frozenset()):
        if depth <= 0 or self.chance(0.3):
            return self.fixed_leaf(ctx, exclude, depth)
        sub = lambda: self.fixed_expr(ctx, depth - 1, exclude)    # noqa: E731
        kind = self.small(0, 6)
        if kind <= 2:
            return binary(self.choice(["+", "-", "*"]), sub(), sub())
        if kind == 3:               # a nonzero divisor: a fixed or a bare literal
            divisor = flit(self.choice(NONZERO_FIXED))
            if self.chance(0.5):
                divisor = call("fixed", divisor)
            return binary("/", sub(), divisor)
        if kind == 4:               # a bare literal takes the fixed operand's type
            other = flit(self.choice(FIXED_LITERALS)) if self.chance(0.6) else \
                lit(self.small(-9, 9))
            return binary(self.choice(["*", "+", "-"]), sub(), other)
        if kind == 5:
            return ast.Unary("-", sub())
        return sub()

    def ulog_leaf(self, ctx: Ctx, exclude, depth: int):
        pick = self.choice(["var", "var", "var", "lit", "int", "float"])
        if pick == "var":
            view = self.leaf_of(ULOG, ctx, exclude, depth)
            if view is not None:
                return view
        if pick == "int":           # ulog of an integer ≥ 1
            return call("ulog", binary("+", self.small_int(ctx, exclude, 7), lit(1)))
        if pick == "float":         # ulog of a float ≥ 0.5
            return call("ulog", binary("+", call("abs", self.f64_expr(ctx, 1, exclude)),
                                       flit(0.5)))
        return call("ulog", flit(self.choice(ULOG_LITERALS)))

    def ulog_expr(self, ctx: Ctx, depth: int, exclude=frozenset()):
        """A ulog expression, never zero: `*`, `/` and `+` of nonzero ulogs (`-` could
        cancel to zero, and `l *= 0` cannot be undone)."""
        if depth <= 0 or self.chance(0.3):
            return self.ulog_leaf(ctx, exclude, depth)
        sub = lambda: self.ulog_expr(ctx, depth - 1, exclude)     # noqa: E731
        kind = self.small(0, 4)
        if kind <= 2:
            return binary(self.choice(["*", "/", "+"]), sub(), sub())
        if kind == 3:
            power = flit(self.choice(ULOG_POWERS)) if self.chance(0.7) else \
                call("sin", self.f64_expr(ctx, 0, exclude))
            return binary("**", sub(), power)
        return sub()

    def complex_leaf(self, ctx: Ctx, exclude, depth: int):
        pick = self.choice(["var", "var", "var", "lit", "parts", "conj"])
        if pick in ("var", "conj"):
            view = self.leaf_of(CPLX, ctx, exclude, depth)
            if view is not None:
                return call("conj", view) if pick == "conj" else view
        if pick == "parts":
            return call("complex", self.f64_expr(ctx, 1, exclude),
                        self.f64_expr(ctx, 1, exclude))
        return complex_lit(self.choice(FLOAT_LITERALS), self.choice(FLOAT_LITERALS))

    def complex_expr(self, ctx: Ctx, depth: int, exclude=frozenset()):
        if depth <= 0 or self.chance(0.3):
            return self.complex_leaf(ctx, exclude, depth)
        sub = lambda: self.complex_expr(ctx, depth - 1, exclude)  # noqa: E731
        kind = self.small(0, 6)
        if kind <= 2:
            return binary(self.choice(["+", "-", "*"]), sub(), sub())
        if kind == 3:               # a real or an int operand promotes
            other = self.f64_expr(ctx, depth - 1, exclude) if self.chance(0.7) else \
                lit(self.small(-5, 5))
            return binary(self.choice(["+", "-", "*"]), sub(), other)
        if kind == 4:               # the real part of the divisor is at least 1.5
            x = self.f64_expr(ctx, 1, exclude)
            return binary("/", sub(), call("complex", binary("+", flit(1.5), binary("*", x, x)),
                                           self.f64_expr(ctx, 1, exclude)))
        if kind == 5:
            return call(self.choice(["exp", "log", "sqrt", "sin", "cos", "tanh"]), sub())
        return ast.Unary("-", sub())

    def comparison(self, ctx: Ctx, depth: int, exclude):
        """Integer comparisons, and comparisons of fixed, ulog and f64 values."""
        kind = self.choice([INT, INT, FIXED, ULOG, F64])
        if kind == INT or not (ctx.readable(kind, exclude) +
                               ctx.readable(self.ARRAY_OF[kind], exclude)):
            return super().comparison(ctx, depth, exclude)
        op = self.choice(["==", "!=", "<", "<=", ">", ">="])
        return binary(op, self.leaf_of(kind, ctx, exclude, 1),
                      self.expr(kind, ctx, max(depth - 1, 0), exclude))

    # ------------------------------------------------------------ statements
    def statement_kinds(self, ctx: Ctx) -> list[str]:
        kinds = super().statement_kinds(ctx)
        if "parallel_for" in kinds:
            kinds += ["parallel_for"] * (self.parallel - 1)
        return kinds + ["system_update"] * 6 + ["system_instr"] * 3

    def system_update(self, ctx: Ctx, kind: str, view, root: str) -> ast.Update:
        """An update of `view` (of `kind`, its root variable `root`)."""
        exclude = {root}
        if kind == ULOG:
            value = self.ulog_expr(ctx, 2, exclude) if self.chance(0.8) else \
                flit(self.choice(ULOG_LITERALS))
            return ast.Update(view, self.choice(["*=", "/="]), value)
        op = self.choice(["+=", "-="])
        if kind == FIXED and self.chance(0.2):          # an integer into a fixed
            return ast.Update(view, op, self.small_int(ctx, exclude, 1000))
        if kind == CPLX and self.chance(0.3):           # a field, or a real into a complex
            if self.chance(0.6):
                return ast.Update(ast.Field(view, self.choice(["re", "im"])), op,
                                  self.f64_expr(ctx, 2, exclude))
            return ast.Update(view, op, self.f64_expr(ctx, 2, exclude))
        return ast.Update(view, op, self.expr(kind, ctx, 2, exclude))

    def gen_system_update(self, ctx: Ctx):
        kinds = [k for k in SYSTEMS if self.writable_roots(ctx, k)]
        if not kinds:
            return None
        self.spend(ctx)
        kind = self.choice(kinds)
        view, root = self.writable_view(ctx, kind)
        return [self.system_update(ctx, kind, view, root)]

    def f64_views(self, ctx: Ctx) -> list[tuple]:
        """(kind, root) of the writable roots of f64 views: f64 values and the
        fields of complex values."""
        return [(F64, r) for r in self.writable_roots(ctx, F64)] + \
            [(CPLX, r) for r in self.writable_roots(ctx, CPLX)]

    def gen_system_instr(self, ctx: Ctx):
        options = []
        for kind, unary in ((F64, ["NEG"]), (FIXED, ["NEG"]), (ULOG, []),
                            (CPLX, ["NEG", "CONJ"])):
            roots = self.writable_roots(ctx, kind)
            options += [(n, kind) for n in unary] * bool(roots)
            options += [("SWAP", kind)] * (len(roots) >= 2)
        if len(self.f64_views(ctx)) >= 2:
            options += [("ROT", F64), ("IROT", F64), ("HADAMARD", F64), ("SWAP", "field")]
        if not options:
            return None
        self.spend(ctx)
        instr, kind = self.choice(options)
        if instr in ("NEG", "INC", "DEC", "CONJ"):
            view, _ = self.writable_view(ctx, kind)
            return [ast.Instr(instr, (view,))]
        if kind in SYSTEMS and instr == "SWAP":
            roots = self.draws.permutation(self.writable_roots(ctx, kind))[:2]
            return [ast.Instr("SWAP", tuple(self.view_of(ctx, r, roots) for r in roots))]
        # two f64 views of different roots: f64 values, elements, complex fields
        pairs = self.draws.permutation(self.f64_views(ctx))[:2]
        roots = [r for _, r in pairs]
        views = []
        for kind, root in pairs:
            view = self.view_of(ctx, root, roots)
            views.append(ast.Field(view, self.choice(["re", "im"])) if kind == CPLX else view)
        if instr == "ROT" or instr == "IROT":
            views.append(self.f64_expr(ctx, 1, set(roots)))
        return [ast.Instr(instr, tuple(views))]

    def gen_print(self, ctx: Ctx):
        """The base prints, and `@safe print`/`show` of fixed and f64 values."""
        values = ctx.readable(FIXED) + ctx.readable(F64)
        if not values or self.chance(0.5):
            return super().gen_print(ctx)
        self.spend(ctx)
        picked = [name(self.choice(values)) for _ in range(self.small(1, 2))]
        if FIXED in self.systems and self.chance(0.3):
            picked.append(self.fixed_expr(ctx, 1))
        return [ast.Safe(self.choice(["print", "show"]), tuple(picked))]

    def parallel_update(self, inner: Ctx, arr: str, element: ast.Index):
        kind = next((k for k in SYSTEMS if self.ARRAY_OF[k] == inner.vars[arr]), None)
        if kind is None:
            return super().parallel_update(inner, arr, element)
        instr = {F64: "NEG", FIXED: "NEG", CPLX: "CONJ"}.get(kind)
        if instr is not None and self.chance(0.3):
            return ast.Instr(instr, (element,))
        return self.system_update(inner, kind, element, arr)

    # ------------------------------------------------------------ ancillas
    def compute_allocs(self, ctx: Ctx):
        if self.chance(0.4):
            return super().compute_allocs(ctx)
        kind = self.choice(self.systems)
        t = self.fresh("t")
        form = self.small(0, 3)
        if form == 0 and kind != ULOG:          # @zeros T t u
            names = (t, self.fresh("t")) if self.chance(0.4) else (t,)
            return [ast.Zeros(ast.TypeRef(kind), names)], {n: kind for n in names}
        if form == 1:                           # t ← zeros(T, L)
            return [ast.Alloc(t, ast.Call("zeros", (ast.TypeExpr(ast.TypeRef(kind)),
                                                    lit(self.small(1, MAX_LEN)))))], \
                {t: self.ARRAY_OF[kind]}
        value = self.expr(kind, ctx, 2) if form == 2 else self.start_value(kind)
        return [ast.Alloc(t, value)], {t: kind}

    def start_value(self, kind: str):
        """A constant to allocate an ancilla of `kind` with (and to free it with)."""
        if kind == FIXED:
            return typed("zero", "fixed") if self.chance(0.5) else \
                call("fixed", flit(self.choice(FIXED_LITERALS)))
        if kind == ULOG:
            return typed("one", "ulog")
        return flit(0.0) if kind == F64 else complex_lit(0.0, 0.0)

    def manual_compute(self, ctx: Ctx):
        """The base form, or `t ← c; t += e; … t -= e; t → c` over a system (for ulog:
        `t ← one(ulog); t *= e; … t /= e; t → one(ulog)`); floats start at 0 so that
        `(0 + e) - e` is exactly 0."""
        if self.chance(0.4):
            return super().manual_compute(ctx)
        kind = self.choice(self.systems)
        t = self.fresh("t")
        start = self.start_value(kind)
        value = self.expr(kind, ctx, 2)
        do, undo = ("*=", "/=") if kind == ULOG else self.choice([("+=", "-="), ("-=", "+=")])
        middle_ctx = ctx.with_vars(**{t: kind}).freeze(names_in(value) | {t}).inner()
        self.spend(ctx, 4)
        middle = self.body(middle_ctx, 1, 3)
        return [ast.Alloc(t, start), ast.Update(name(t), do, value), *middle,
                ast.Update(name(t), undo, value), ast.Dealloc(t, start)]


def build_system_program(draws, max_functions: int = 2, calls: bool = True,
                         systems=SYSTEMS, parallel: int = 1) -> GeneratedProgram:
    """A program of 1..max_functions functions over i64, bool and `systems` (no
    stacks), its choices made by `draws`; the last one is the one to run.  `parallel`
    weighs `@parallel for` loops (1: as often as in generators.py)."""
    builder = SystemsBuilder(draws, calls, systems, parallel)
    count = draws.integer(1, max_functions)
    functions = [builder.function(f"f{k}", COST_BUDGET // (1 if k == count - 1 else 5))
                 for k in range(count)]
    program = ast.Program(tuple(functions))
    return GeneratedProgram(program, format_program(program), functions[-1].name,
                            dict(builder.signatures))


@st.composite
def system_programs(draw, max_functions: int = 2, calls: bool = True, systems=SYSTEMS,
                    parallel: int = 1) -> GeneratedProgram:
    """`build_system_program` with Hypothesis's choices."""
    return build_system_program(HypothesisDraws(draw), max_functions, calls, systems, parallel)


# ------------------------------------------------------------------------ inputs

def floats() -> st.SearchStrategy[float]:
    return st.one_of(st.floats(-2.0, 2.0), st.sampled_from([0.0, 1.0, -0.5]))


def fixed_raws() -> st.SearchStrategy[int]:
    """Raw values: |value| < 8, or anywhere in the i64 range (so products wrap)."""
    return st.one_of(st.integers(-(1 << 46), 1 << 46), st.integers(I64_MIN, I64_MAX),
                     st.sampled_from([0, 1 << 43, -(1 << 43), I64_MIN, I64_MAX]))


def ulog_logs() -> st.SearchStrategy[float]:
    return st.one_of(st.floats(-3.0, 3.0), st.just(0.0))


def _arrays(elements, dtype, view=None):
    arrays = st.lists(elements, min_size=1, max_size=MAX_LEN).map(
        lambda xs: np.array(xs, dtype=dtype))
    return arrays if view is None else arrays.map(lambda a: a.view(view))


def system_argument(kind: str) -> st.SearchStrategy:
    """One input of `kind`: Python floats, `Fixed`, `ULog` and complex numbers, NumPy
    float64 and complex128 arrays, `FixedArray` and `ULogArray`."""
    table = {
        F64: floats(), FIXED: fixed_raws().map(Fixed), ULOG: ulog_logs().map(ULog),
        CPLX: st.builds(complex, floats(), floats()),
        F64S: _arrays(floats(), np.float64), FIXEDS: _arrays(fixed_raws(), np.int64, FixedArray),
        ULOGS: _arrays(ulog_logs(), np.float64, ULogArray),
        CPLXS: _arrays(st.builds(complex, floats(), floats()), np.complex128)}
    return table[kind] if kind in table else argument(kind)


@st.composite
def system_cases(draw, max_functions: int = 2, calls: bool = True, systems=SYSTEMS,
                 parallel: int = 1):
    """(program, arguments of its top function) over i64, bool and `systems`."""
    gp = draw(system_programs(max_functions, calls, systems, parallel))
    return gp, draw(arguments(gp, system_argument))
