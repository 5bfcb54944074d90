"""Python source text for typed IR expressions (the expression half of backends/cuda/emit.py).

`ExprWriter.expr(e)` returns the text of a Python expression computing `e`, calling
the helpers of rlang/backends/cuda/scalar.py (host code, the simulator) or
rlang/backends/cuda/device.py (GPUs), which have the same names.  Operators whose
Python meaning differs from the interpreter's are helper calls: integer results are
wrapped (`w64`, `w32`), f32 results rounded once from f64 (`r32`, as the
interpreter computes them), division and powers go through `fdiv`, `idiv`, ….
Plain `+ -` on f64, comparisons and `and`/`or` are written as Python operators:
they mean the same on both sides.  A float product is `fmul`, which a GPU rounds on
its own (Note [No fused multiply-add], backends/cuda/device.py).

fixed, ulog and complex values are held as backends/cuda/systems.py says: a fixed as its raw
integer (`+ -` wrap like i64, `*` and `/` are `fxmul`/`fxdiv`), a ulog as its
logarithm (the lowering already expanded its arithmetic into f64 operations), a
complex scalar as a complex value whose parts are `.real`/`.imag`, and an element
of a complex array as two floats `a[…, 0]`, `a[…, 1]`.

Checks inside expressions (bounds of a load, integer and fixed division by zero, a
conversion that can fail, a number system's domain: `ir.Checked`) are helper calls that record the failure in the error
record `ctx` and give a harmless value; `has_checks(e)` tells the statement writer
to look at `ctx` after evaluating `e`.
"""
from __future__ import annotations

from ...ir import nodes as ir
from ...types_rules import BackendUnsupported

_LOAD = {"bool": "lb", "i32": "li32", "i64": "li64", "f32": "lf32", "f64": "lf64"}
_WRAP = {"i64": "w64", "i32": "w32", "f32": "r32", "fixed": "w64"}
_INT_RANGE = {"i64": ("-9223372036854775808.0", "9223372036854775808.0"),
              "i32": ("-2147483648.0", "2147483648.0")}
_SYSTEMS = ("fixed", "ulog")
_INTEGERS = ("bool", "i32", "i64")


def load_helper(t: str) -> str:
    """The helper that reads an element of type `t` as generated code holds it."""
    return _LOAD[ir.representation(t)]


def operands(e) -> tuple:
    """ir.operands, and the two parts of a ComplexValue."""
    if type(e) is ir.ComplexValue:
        return (e.re, e.im)
    return ir.operands(e)


def check_type(t, what: str = "values", span=None) -> None:
    """Refuse the IR types the cuda backend does not handle: stacks (the lowering
    refuses their statements; this names a stack parameter)."""
    if isinstance(t, ir.StackType):
        raise BackendUnsupported(f"the cuda backend does not handle {ir.type_text(t)} "
                                 f"{what} yet", span)


def literal(value, t: str) -> str:
    """A constant as generated code holds it (a fixed: its raw integer, a ulog: its
    logarithm)."""
    if t == "bool":
        return "True" if value else "False"
    if t in ("i32", "i64", "fixed"):
        text = str(int(value))
        return f"w32({text})" if t == "i32" else text
    if t == "complex":
        value = complex(value)
        return f"complex({literal(value.real, 'f64')}, {literal(value.imag, 'f64')})"
    value = float(value)
    if value != value:
        text = "nan"
    elif value in (float("inf"), float("-inf")):
        text = "inf" if value > 0 else "(-inf)"
    else:
        text = repr(value)
    return f"r32({text})" if t == "f32" else text


def record_args(ints=(), floats=()) -> str:
    """The values of a failed check as `rec` takes them: four integers, four floats."""
    ints = list(ints)[:4] + ["0"] * (4 - len(ints[:4]))
    floats = list(floats)[:4] + ["0.0"] * (4 - len(floats[:4]))
    return ", ".join(ints + floats)


#: The deepest expression the cuda backend writes: each level can cost up to three
#: parentheses of generated Python, whose parser allows 200.
MAX_NESTING = 60


class ExprWriter:
    """Expression text; subclasses provide `read(var)` and `part(var, field)` (a
    scalar variable, a part of a complex one), `array(var)` (the text of an array
    variable's data), `span` and `fresh()`."""

    nesting = 0         # how deep in an expression `expr` is writing

    def expr(self, e) -> str:
        method = getattr(self, "_e_" + type(e).__name__.lower(), None)
        if method is None:
            raise BackendUnsupported(f"the cuda backend does not handle "
                                     f"{type(e).__name__} expressions yet", self.span)
        if self.nesting >= MAX_NESTING:     # Python's parser stops at 200 parentheses
            raise BackendUnsupported(f"the cuda backend writes expressions nested at most "
                                     f"{MAX_NESTING} deep (its kernels are generated "
                                     f"Python); split this one with ancillas", self.span)
        self.nesting += 1
        try:
            return method(e)
        finally:
            self.nesting -= 1

    def wrap(self, text: str, t: str) -> str:
        helper = _WRAP.get(t)
        return f"{helper}({text})" if helper else text

    def as_f64(self, e) -> str:
        text = self.expr(e)
        return text if e.type == "f64" else f"f64({text})"

    def report(self, text: str, t: str) -> tuple:
        """A value for the error record: (ints, floats); a complex gives two floats."""
        if t == "complex":
            return [], [f"({text}).real", f"({text}).imag"]
        if ir.representation(t) in ("f32", "f64"):
            return [], [f"f64({text})"]
        return [f"ci({text})"], []

    # ---------------------------------------------------------------- leaves
    def _e_const(self, e: ir.Const) -> str:
        return literal(e.value, e.type)

    def _e_read(self, e: ir.Read) -> str:
        return self.read(e.var) if e.field is None else self.part(e.var, e.field)

    def _e_let(self, e: ir.Let) -> str:
        """Note [Lets in conditions] (rlang/ir/nodes.py): the value assigned on a line
        of its own, before the expression that reads it."""
        self.emit(f"{self.name(e.var)} = {self.expr(e.value)}")
        return self.expr(e.body)

    def _e_load(self, e: ir.Load) -> str:
        array = self.array(e.var)
        indices = [self.expr(i) for i in e.indices]
        if e.var.type.elem == "complex":
            return self.complex_load(array, indices, e)
        load = load_helper(e.type)
        if e.site is None:
            return f"{load}({array}[{', '.join(indices)}])"
        if len(indices) > 3:
            raise BackendUnsupported("the cuda backend checks the bounds of arrays of up to "
                                     "three dimensions; use @inbounds", self.span)
        return f"{load}(ldk{len(indices)}({array}, {', '.join(indices)}, " \
            f"Z_{ir.representation(e.type)}, {e.site}, ctx, ctxf))"

    def complex_load(self, array: str, indices: list, e: ir.Load) -> str:
        """A part of an element of a complex array (held as pairs), or the whole
        element as a complex value."""
        if e.field is None:
            parts = [self.complex_load(array, indices, ir.Load(e.var, e.indices, e.site, k))
                     for k in (0, 1)]
            return f"complex({parts[0]}, {parts[1]})"
        if e.site is None:
            return f"lf64({array}[{', '.join(indices)}, {e.field}])"
        if len(indices) > 3:
            raise BackendUnsupported("the cuda backend checks the bounds of arrays of up to "
                                     "three dimensions; use @inbounds", self.span)
        return f"lf64(ldc{len(indices)}({array}, {', '.join(indices)}, {e.field}, " \
            f"{e.site}, ctx, ctxf))"

    def _e_dim(self, e: ir.Dim) -> str:
        array = self.array(e.var)
        if e.axis is not None:
            return f"{array}.shape[{e.axis}]"
        return f"{array}.size"

    # ------------------------------------------------------------- operators
    def _e_unary(self, e: ir.Unary) -> str:
        x = self.expr(e.operand)
        if e.op == "!":
            return f"(not {x})"
        if e.op == "~":
            return self.wrap(f"(~{x})", e.type)
        return self.wrap(f"(-{x})", e.type) if e.type != "f64" else f"(-{x})"

    def _e_logic(self, e: ir.Logic) -> str:
        word = "and" if e.op == "&&" else "or"
        return f"({self.expr(e.left)} {word} {self.expr(e.right)})"

    def _e_compare(self, e: ir.Compare) -> str:
        return f"({self.expr(e.left)} {e.op} {self.expr(e.right)})"

    def _e_select(self, e: ir.Select) -> str:
        return f"({self.expr(e.then)} if {self.expr(e.cond)} else {self.expr(e.otherwise)})"

    def _e_guarded(self, e: ir.Guarded) -> str:
        zero = " and ".join(f"({self.expr(g)} == 0.0)" for g in e.guards)
        return f"(0.0 if {zero} else {self.expr(e.value)})"

    def _e_nonzero(self, e: ir.Nonzero) -> str:
        return "(" + " or ".join(f"({self.expr(v)} != 0.0)" for v in e.values) + ")"

    def _e_reinterpret(self, e: ir.Reinterpret) -> str:
        return self.expr(e.operand)         # a ulog and its logarithm: the same float

    def _e_checked(self, e: ir.Checked) -> str:
        """`value` where `cond` holds; else the failure is recorded (`ckc`) and the
        zero of the value's type stands in."""
        ints, floats = [], []
        for x in e.reported:
            i, f = self.report(self.expr(x), x.type)
            ints, floats = ints + i, floats + f
        zero = f"Z_{ir.representation(e.type)}"
        return f"({self.expr(e.value)} if ckc({self.expr(e.cond)}, {e.site}, ctx, ctxf, " \
            f"{record_args(ints, floats)}) else {zero})"

    def _e_complexvalue(self, e: ir.ComplexValue) -> str:
        return f"complex({self.as_f64(e.re)}, {self.as_f64(e.im)})"

    def _e_binary(self, e: ir.Binary) -> str:
        t = e.type
        if t == "bool":
            return f"({self.expr(e.left)} {e.op} {self.expr(e.right)})"
        if t in ("f32", "f64"):
            return self._float_binary(e)
        a, b = self.expr(e.left), self.expr(e.right)
        op = e.op
        if t == "fixed" and op in ("*", "/"):       # rounded (systems.py, fixed.py)
            if op == "*":
                return f"fxmul({a}, {b})"
            if e.site is not None:
                b = f"cki({b}, {a}, {e.site}, ctx, ctxf)"
            return f"fxdiv({a}, {b})"
        if op in ("+", "-", "*"):
            return self.wrap(f"({a} {op} {b})", t)
        if op in ("&", "|", "^"):
            return f"w32({a} {op} {b})" if t == "i32" else f"({a} {op} {b})"
        if op in ("<<", ">>"):
            return self.wrap(f"{'shl' if op == '<<' else 'shr'}({a}, {b})", t)
        if op == "**":
            if e.site is not None:
                b = f"ckp({b}, {a}, {e.site}, ctx, ctxf)"
            return self.wrap(f"ipow({a}, {b})", t)
        if e.site is not None:
            b = f"cki({b}, {a}, {e.site}, ctx, ctxf)"
        return self.wrap(f"{'idiv' if op == '//' else 'imod'}({a}, {b})", t)

    def _float_binary(self, e: ir.Binary) -> str:
        a, b = self.as_f64(e.left), self.as_f64(e.right)
        op = e.op
        if op in ("+", "-"):
            text = f"({a} {op} {b})"
        elif op == "*":
            text = f"fmul({a}, {b})"
        else:
            helper = {"/": "fdiv", "//": "ffdiv", "%": "fmod", "**": "fpow"}[op]
            text = f"{helper}({a}, {b})"
        return self.wrap(text, e.type)

    def _e_builtin(self, e: ir.Builtin) -> str:
        if e.name == "imag":                # of a real number: zero, as the registry
            return literal(0, e.type)
        if e.name in ("real", "conj"):
            return self.expr(e.args[0])
        if e.type in ("i32", "i64"):
            args = ", ".join(self.expr(a) for a in e.args)
        else:
            args = ", ".join(self.as_f64(a) for a in e.args)
        name = "atan2" if e.name == "atan" and len(e.args) == 2 else e.name
        return self.wrap(f"b_{name}({args})", e.type)

    def _e_convert(self, e: ir.Convert) -> str:
        source, target = e.operand.type, e.type
        x = self.expr(e.operand)
        if source == target:
            return x
        if source in _SYSTEMS:              # through the f64 value
            x, source = (f"fxval({x})" if source == "fixed" else f"b_exp({x})"), "f64"
            if target == "f64":
                return x
        if target in _SYSTEMS:
            return self.to_system(x, source, e)
        if target == "f64":
            return f"f64({x})"
        if target == "f32":
            return f"r32(f64({x}))"
        checked = e.site is not None
        tail = f"{e.site}, ctx, ctxf"
        if target == "bool":
            if source in ("f32", "f64"):
                return f"cvf_bool(f64({x}), {tail})" if checked else f"(f64({x}) == 1.0)"
            return f"cvi_bool({x}, {tail})" if checked else f"({x} == 1)"
        if source in ("f32", "f64"):
            low, high = _INT_RANGE[target]
            if checked:
                return self.wrap(f"cvf_int(f64({x}), {low}, {high}, {tail})", target)
            return self.wrap(f"ci({x})", target)
        if source == "i64" and target == "i32":
            return f"w32(cvi_i32({x}, {tail}))" if checked else f"w32({x})"
        return self.wrap(f"ci({x})", target)

    def to_system(self, x: str, source: str, e: ir.Convert) -> str:
        """fixed(x) (its raw value) or ulog(x) (its logarithm) of a real `x`, checked at
        the conversion's site (backends/cuda/systems.py)."""
        tail = f"{e.site}, ctx, ctxf"
        checked = e.site is not None
        if e.type == "ulog" and checked:        # the failure shows an integer as one
            return f"cvi_ulog(ci({x}), {tail})" if source in _INTEGERS else \
                f"cvf_ulog(f64({x}), {tail})"
        if e.type == "ulog":
            return f"b_log(f64({x}))"
        if source in _INTEGERS:
            return f"cvi_fixed(ci({x}), {tail})" if checked else f"w64(ci({x}) * ONE_RAW)"
        return f"cvf_fixed(f64({x}), {tail})" if checked else f"fxof(f64({x}))"
