"""What the two derivative transforms of the IR share: shadow variables.

The adjoint transform (rlang/ad/adjoint_ir.py: values plus gradients) and the tangent
transform (rlang/ad/tangent_ir.py: values plus tangents) both turn one IR function into
a function over the same values in which every float variable `v` has a *shadow*
`v·grad` / `v·tan`: an f64 scalar, an f64 array of the same rank, or an f64 stack
(Note [Stacks in the IR]).  Integer and bool variables, and constant arrays, have
none.

`ShadowFunction` does everything that does not depend on which derivative the
shadow carries: the signature (the parameters, then one shadow parameter per float
parameter, in order), the shadow of each variable, place and array allocation,
control flow (the same conditions and loops, bodies transformed), calls (the
derived callee, with the shadows of the float arguments appended), `@safe`
statements, the linear instructions, PUSH and POP (the shadow moves with its value,
through a shadow stack), and the temporaries of `materialise`.  Subclasses give the
rules of updates, rotations and (de)allocations.  `derive_module` applies a
transform to every function of a module; the derived module shares the site table.
"""
from __future__ import annotations

from dataclasses import replace

from ..ir import nodes as ir
from ..primitives import INSTRUCTION_TABLE
from .symbolic import FLOATS
from .symbols import derived_symbol, shadow_type


def derive_module(module: ir.Module, transform) -> ir.Module:
    """The module of `transform(fn, …)` for every function of `module` but the
    helpers of derivative functions, which the derived module gets from its library
    where it calls them (`complete`, rlang/ad/derivatives.py; docs/nested.md)."""
    entry = transform.symbol(module.entry) if module.entry else ""
    derived = ir.Module(entry=entry, sites=module.sites,
                        library={**module.library, **module.functions})
    for fn in module.functions.values():
        if fn.helper:
            continue
        function = transform(fn)
        function.sites = module.sites
        derived.functions[transform.symbol(fn.symbol)] = function.function()
    return derived


def zero(t: str = "f64"):
    """The zero of a shadow type (f64, or complex: a ComplexValue)."""
    if t == "complex":
        return ir.ComplexValue(ir.Const(0.0, "f64"), ir.Const(0.0, "f64"))
    return ir.Const(0.0, "f64")


def place_value(place, checked: bool = False):
    """The value of a place as an expression.  An element is read unchecked unless
    `checked` (the place itself is checked where the statement updates it; a read
    before that update must be checked)."""
    if isinstance(place, ir.VarPlace):
        return ir.Read(place.var, place.field)
    return ir.Load(place.var, place.indices, place.site if checked else None, place.field)



#: what joins a variable's name and its shadow's kind (`x·grad`, `x·grad·tan`): no
#: name of rev has it
SHADOW_MARK = "·"


def shadowed_name(var: ir.Var) -> str:
    """The name of the variable whose shadow (at any depth) `var` is; a variable
    that is no shadow its own name."""
    return var.name.split(SHADOW_MARK)[0]


class ShadowFunction:
    """One function with shadows; see the module docstring."""

    #: "grad" or "tan": the suffix of shadow names and the prefix of derived symbols.
    kind = ""
    #: The module's site table (set by derive_module), for sites of new statements.
    sites: list | None = None

    def __init__(self, fn: ir.Function):
        self.fn = fn
        self.shadows: dict = {}            # Var → its shadow Var
        self.constants = {var for var, _ in fn.constants}
        self.temp_count = 0

    @classmethod
    def symbol(cls, symbol: str) -> str:
        """The symbol of the derived function (`rev_f__f64` → `rev_grad_f__f64`)."""
        return derived_symbol(cls.kind, symbol)

    def function(self) -> ir.Function:
        fn = self.fn
        shadowed = [k for k, v in enumerate(fn.params) if self.shadow(v) is not None]
        shadow_params = tuple(self.shadow(fn.params[k]) for k in shadowed)
        body = self.body(fn.body) if fn.derivative is None else self.derivative_body()
        # a shadow goes back as its parameter does; the shadow of a read-only one
        # (a gradient the caller may pass twice) is accumulated
        n = len(fn.params)
        written = fn.written | {n + j for j, k in enumerate(shadowed) if k in fn.written}
        accumulated = fn.accumulated | {n + j for j, k in enumerate(shadowed)
                                        if k in fn.accumulated or self.accumulates(k)}
        return ir.Function(self.symbol(fn.symbol), fn.name, fn.inverse,
                           fn.params + shadow_params, body, fn.span, fn.results,
                           fn.constants, frozenset(written), frozenset(accumulated - written),
                           fn.inline, self.derived_derivative())

    def derivative_body(self) -> tuple:
        """The body of the derived version of a derivative function (its
        `ir.DerivativeOf`, rlang/ad/nested_ir.py): by default the transformed body."""
        return self.body(self.fn.body)

    def derived_derivative(self):
        """The `derivative` of the derived function: none by default (the derived
        version of a derivative function is an ordinary function)."""
        return None

    def accumulates(self, k: int) -> bool:
        """Whether the shadow of parameter k is added to when the parameter is only
        read: gradients are (adjoint_ir.py); tangents are not."""
        return False

    # ----------------------------------------------------------------- shadows
    def shadow(self, var: ir.Var):
        """The shadow variable of `var` (None for integers, bools, constants)."""
        if var in self.constants:
            return None
        shadow = self.shadows.get(var)
        if shadow is None:
            t = shadow_type(var.type)
            if t is None:
                return None
            shadow = ir.Var(f"{var.name}{SHADOW_MARK}{self.kind}", t, var.is_param)
            self.shadows[var] = shadow
        return shadow

    def shadow_place(self, place):
        """The shadow of a place (an element's shadow is unchecked: the place itself
        was checked)."""
        shadow = self.shadow(place.var)
        if shadow is None:
            return None
        if isinstance(place, ir.VarPlace):
            return ir.VarPlace(shadow, place.field)
        return ir.ElemPlace(shadow, tuple(ir.unchecked(i) for i in place.indices), None,
                            place.field)

    def shadow_value(self, leaf):
        """The shadow of a leaf expression (`Read`, `Load`) as an expression, or None."""
        if isinstance(leaf, ir.Read):
            shadow = self.shadow(leaf.var)
            return None if shadow is None else ir.Read(shadow, leaf.field)
        if isinstance(leaf, ir.Load):
            shadow = self.shadow(leaf.var)
            return None if shadow is None else ir.Load(
                shadow, tuple(ir.unchecked(i) for i in leaf.indices), None, leaf.field)
        return None

    def shadow_array_alloc(self, stmt: ir.Alloc, copy_arrays: bool) -> list:
        """The shadow beside a new float array or stack: zeros (an empty stack), or a
        copy of the source's shadow where the new one copies a stack (its items keep
        their shadows, as the interpreter's copied GVar items do) or, with
        `copy_arrays`, an array (tangents are copied with values; a copied array's
        gradient starts at zero)."""
        shadow = self.shadow(stmt.var)
        if shadow is None:
            return []
        copied = isinstance(stmt.value, ir.Read) and \
            (copy_arrays or isinstance(stmt.var.type, ir.StackType))
        source = self.shadow(stmt.value.var) if copied else None
        if source is None and isinstance(stmt.var.type, ir.StackType):
            return [ir.Alloc(shadow)]
        return [ir.Alloc(shadow, None if source is None else ir.Read(source), stmt.dims)]

    def memory_site(self, var: ir.Var) -> int:
        """The site of a failed growth of the buffer of `var`, a shadow stack pushed
        where no value stack is (always checked, as every push)."""
        self.sites.append(ir.Site("stack_memory", None, self.fn.name, self.fn.inverse,
                                  (var.name,)))
        return len(self.sites) - 1

    def shadow_dealloc(self, var: ir.Var) -> list:
        shadow = self.shadow(var)
        return [] if shadow is None else [ir.Dealloc(shadow, None, None)]

    # ------------------------------------------------------------- temporaries
    def fresh_var(self, name: str, t) -> ir.Var:
        """A new variable of this function (temporaries, loop indices)."""
        self.temp_count += 1
        return ir.Var(f"{name}·{self.temp_count}", t)

    def temp(self, value, name: str = "t") -> tuple:
        """A new temporary holding `value`: (var, its Alloc)."""
        var = self.fresh_var(name, value.type)
        return var, ir.Alloc(var, value)

    def materialise(self, expr, allocs: list, temps: list, values: dict):
        """Bind every float operator node of `expr` (and every float element read) to a
        temporary, bottom-up, as the interpreter records node values.  Appends the
        Allocs to `allocs` and the temporaries to `temps`; `values` maps id(node) →
        the expression of its value (a temporary's Read, or the leaf itself).
        Returns the expression of the whole value."""
        kind = type(expr)
        if kind in (ir.Read, ir.Const) or expr.type not in FLOATS:
            values[id(expr)] = expr
            return expr
        if kind is ir.Load:
            var, alloc = self.temp(expr, "elem")
        else:
            new = tuple(self.materialise(x, allocs, temps, values) for x in ir.operands(expr))
            var, alloc = self.temp(ir.with_operands(expr, new))
        allocs.append(alloc)
        temps.append(var)
        values[id(expr)] = ir.Read(var)
        return ir.Read(var)

    def free_temps(self, temps: list) -> list:
        """The Deallocs of temporaries (in reverse order) and of the shadows some of
        them were given (a temporary nobody differentiated has none)."""
        out = []
        for var in reversed(temps):
            shadow = self.shadows.get(var)
            out += ([] if shadow is None else [ir.Dealloc(shadow, None, None)]) + \
                [ir.Dealloc(var, None, None)]
        return out

    # -------------------------------------------------------------- statements
    def body(self, stmts) -> tuple:
        out: list = []
        for stmt in stmts:
            out.extend(ir.visit(self, stmt))
        return tuple(out)

    def _if(self, stmt: ir.If) -> list:
        branches = tuple(ir.Branch(b.pre, b.post, self.body(b.body)) for b in stmt.branches)
        return [ir.If(branches, self.body(stmt.orelse), stmt.site)]

    def _while(self, stmt: ir.While) -> list:
        return [ir.While(stmt.pre, stmt.post, self.body(stmt.body), stmt.site)]

    def _from(self, stmt: ir.From) -> list:
        return [ir.From(stmt.start, self.body(stmt.body), self.body(stmt.step), stmt.stop,
                        stmt.site)]

    def _for(self, stmt: ir.For) -> list:
        return [replace(stmt, body=self.body(stmt.body))]

    def _call(self, stmt: ir.Call) -> list:
        """The derived callee, with the shadows of the float arguments appended
        (arguments are places of this function: every float one has a shadow)."""
        shadows = tuple(s for s in (self.shadow_place(a) for a in stmt.args) if s is not None)
        return [ir.Call(self.symbol(stmt.callee), stmt.args + shadows, stmt.site,
                        stmt.alias_site)]

    def _instr(self, stmt: ir.Instr) -> list:
        """By the registry's `gradient` (Note [Instruction rules], rlang/primitives.py):
        a "linear" instruction acts on the shadows as on the values (SWAP, NEG,
        HADAMARD), and one that reads a differentiable operand (ROT / IROT's angle)
        is the subclass's `rotation`; others leave the shadows alone (INC, DEC,
        FLIP).  CONJ, PUSH and POP never reach the IR as instructions."""
        rule = INSTRUCTION_TABLE[stmt.name]
        shadows = tuple(self.shadow_place(p) for p in stmt.places)
        if any(s is None for s in shadows) or rule.gradient != "linear":
            return [stmt]
        if rule.read_gradient is None:
            return [stmt, ir.Instr(stmt.name, shadows)]
        return self.rotation(stmt, shadows)

    def _push(self, stmt: ir.Push) -> list:
        """The shadow goes on the shadow stack beside the value (Note [Stacks in the
        IR]); PUSH zeroes it, as the interpreter's GVar PUSH does."""
        shadow = self.shadow(stmt.stack)
        if shadow is None:
            return [stmt]
        return [stmt, ir.Push(shadow, self.shadow_place(stmt.place), stmt.memory_site)]

    def _pop(self, stmt: ir.Pop) -> list:
        """The shadow stack's top overwrites the place's shadow (unchecked: the value
        pop before it was checked)."""
        shadow = self.shadow(stmt.stack)
        if shadow is None:
            return [stmt]
        return [stmt, ir.Pop(shadow, self.shadow_place(stmt.place), None)]

    def _print(self, stmt: ir.Print) -> list:
        return [stmt]

    def _assert(self, stmt: ir.Assert) -> list:
        return [stmt]
