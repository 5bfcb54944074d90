"""Python source for the cuda backend: host functions, device functions and kernels.

`write_program(module, shadows)` turns a typed IR module (rlang/ir/nodes.py) into a
`Program`: one Python source text, with

- `H_<symbol>(ctx, ctxf, params…)` for every function: the host part.  Arrays are
  `runtime.Arr` mirrors (host and device copies); each `@parallel for` is a
  kernel launch (`launch`), everything else runs as Python;
- `D_<symbol>(ctx, ctxf, params…)` for every function a kernel calls, at any depth:
  device functions, compiled with `numba.cuda.jit(device=True)`;
- `K<n>(…)` for each `@parallel for` of a host function: a kernel whose threads
  take the iterations `start + n·step` for n = thread id, thread id + grid size, …
  (a grid-stride loop, so any range length fits any grid).

Every function returns `(status, values…)`: status 0, or 1 when a check failed (the
failure is in the error record `ctx`/`ctxf`, layout rlang/backends/abi.py, and each
caller appends its call site while unwinding, as the llvm backend does); the values
are the final values of the scalar parameters that go back to the caller (written
ones, copied; accumulated ones — gradients of read-only views — added to the
caller's place, with 0 passed in).  Kernels copy the record of the failed
iteration first in the loop's order into a device error buffer (`publish`).

fixed, ulog and complex values are held as rlang/backends/cuda/systems.py says: a
fixed as its raw integer, a ulog as its logarithm, a complex scalar as a complex
value (a part is written by making a new one: `store`), a complex array as float64
pairs (`a[…, 0]`, `a[…, 1]`).

Note [Atomic gradients]: in a gradient kernel, iterations that read the same value
(a scalar from outside the loop, an element read by several iterations) all add to
its gradient.  Every update of a gradient (or tangent) shadow that is not private
to the iteration — a shadow array element, or the one-element device array that
holds the shadow of an outer scalar — is `cuda.atomic.add`, in kernels and in the
device functions they call (whose array parameters may be shared); the gradient of
a complex value is two such adds, one per part (of pairs, or of a two-element box).
Updates of values and of shadows of the iteration's own ancillas are plain stores.

Note [Shared writes on the GPU] is in rlang/backends/cuda/shared_writes.py.
"""
from __future__ import annotations

from dataclasses import dataclass, field, replace

from ...ir import nodes as ir
from ...ad.derivatives import complete
from ...ir.passes import run_passes
from ...primitives import UPDATE_TABLE
from .instructions import write_instr
from ...errors import InternalError
from .. import abi
from ...ir.walk import has_checks
from .expr import ExprWriter, check_type, load_helper, record_args
from .scalar import CTXF_WORDS
from .shared_writes import SharedWriteWriter, Tracker
from . import privatised
from .host_loops import outline_loops, runs_anywhere, worth_compiling
from .kernels import KernelPlan, device_symbols, plan_kernel


@dataclass
class Program:
    source: str                                          # host functions
    device_source: str = ""                              # device functions and kernels
    kernels: list = field(default_factory=list)          # KernelPlan, by number
    device: list = field(default_factory=list)           # symbols of device functions
    cpu: list = field(default_factory=list)              # symbols compiled for the CPU
    cpu_source: str = ""                                 # their `C_<symbol>` functions
    outlined: dict = field(default_factory=dict)         # id(loop) → its function's symbol
    module: ir.Module | None = None                      # the module written (outlined)
    constants: dict = field(default_factory=dict)        # global name → ConstArray
    back: dict = field(default_factory=dict)             # symbol → positions returned


#: The name prefix of a function's code in each mode (kernels are `K<n>`).
PREFIXES = {"host": "H_", "device": "D_", "kernel": "D_", "cpu": "C_"}


def returned_positions(fn: ir.Function) -> list:
    """The scalar parameter positions a function hands back (written or accumulated)."""
    return [k for k, p in enumerate(fn.params) if not isinstance(p.type, ir.ArrayType)
            and (k in fn.written or k in fn.accumulated)]


def write_program(module: ir.Module, shadows: frozenset = frozenset(),
                  all_device: bool = False) -> Program:
    """The program of `module`; with `all_device`, every function that can run on the
    GPU also gets its device function (for `rlang compile --emit ptx`)."""
    from ...ir.call_graph import depth_counted_symbols, recursive_symbols

    module = run_passes(complete(module))   # ad/derivatives.py, then ir/passes.py
    program = Program("")
    recursive = recursive_symbols(module)
    counted = depth_counted_symbols(module)     # (before the outlined loops: not frames)
    anywhere = runs_anywhere(module, recursive)
    module, program.outlined = outline_loops(module, anywhere)   # Note [Host loops compiled]
    anywhere += list(program.outlined.values())
    lines, device_lines = [], []
    for symbol, fn in module.functions.items():
        program.back[symbol] = returned_positions(fn)
        for var in fn.params + fn.results:
            check_type(var.type, f"parameters (`{var.name}`)", fn.span)
    for symbol, fn in module.functions.items():
        writer = FunctionWriter(program, module, fn, "host", shadows, recursive, counted)
        lines += writer.write()
    device: dict = {}
    for plan in program.kernels:
        for symbol in device_symbols(module, plan.loop.body):
            device[symbol] = None
    if all_device:          # (a loop taken out of host code is not a function to show)
        outlined = set(program.outlined.values())
        for symbol in anywhere:
            if symbol not in outlined:
                device[symbol] = None
    program.cpu = worth_compiling(module, anywhere, counted)     # Note [Host loops compiled]
    program.module = module
    cpu_lines = []
    for symbol in program.cpu:
        cpu_lines += FunctionWriter(program, module, module.functions[symbol], "cpu", shadows,
                                    recursive).write()
    program.cpu_source = "\n".join(cpu_lines) + "\n"
    for symbol in device:
        writer = FunctionWriter(program, module, module.functions[symbol], "device", shadows,
                                recursive)
        device_lines += writer.write()
    for plan in program.kernels:
        for variant in ("plain",) + (privatised.VARIANTS if plan.private else ()):
            device_lines += KernelWriter(program, module, plan, shadows, variant).write()
    program.device = list(device)
    program.source = "\n".join(lines) + "\n"
    program.device_source = "\n".join(device_lines) + "\n"
    return program


class FunctionWriter(SharedWriteWriter, ExprWriter):
    """The source of one function, as host code or as a device function."""

    def __init__(self, program: Program, module: ir.Module, fn: ir.Function | None, mode: str,
                 shadows, recursive=frozenset(), counted=frozenset()):
        self.program, self.module, self.fn, self.mode = program, module, fn, mode
        self.shadows = shadows
        self.recursive_symbols = recursive
        self.counts_depth = fn is not None and fn.symbol in counted     # (ir/call_graph.py)
        self.lines: list = []
        self.level = 1
        self.names: dict = {}
        self.count = 0
        self.span = fn.span if fn is not None else None
        self.boxes: dict = {}           # kernels: outer shadow Var → its array's name
        self.registers: dict = {}       # privatised kernels: (box Var, part) → a local
        self.trackers: dict = {}        # kernels: loop site → Tracker (claims)
        self.back = [] if fn is None else [fn.params[k] for k in program.back[fn.symbol]]
        if fn is not None:
            for var, constant in fn.constants:
                self.constant_name(var, constant)

    # ------------------------------------------------------------- plumbing
    def emit(self, text: str) -> None:
        self.lines.append("    " * self.level + text)

    def fresh(self, stem: str = "t") -> str:
        self.count += 1
        return f"_{stem}{self.count}"

    def name(self, var: ir.Var) -> str:
        name = self.names.get(var)
        if name is None:
            self.count += 1
            name = f"{ir.c_identifier(var.name)}_{self.count}"
            self.names[var] = name
        return name

    def constant_name(self, var, constant) -> None:
        """Constant arrays: globals of the program (device code reads them as constant
        memory); the host wraps them in mirrors at the entry."""
        name = f"C{len(self.program.constants)}_{ir.c_identifier(var.name)}"
        self.program.constants[name] = constant
        self.names[var] = name if self.mode != "host" else name.lower()
        self.host_constants = getattr(self, "host_constants", []) + [(name, var)]

    def read(self, var: ir.Var) -> str:
        box = self.boxes.get(var)
        if box and var.type == "complex":
            return f"complex({box}[0], {box}[1])"
        return f"{box}[0]" if box else self.name(var)

    def part(self, var: ir.Var, field: int) -> str:
        """The re (0) or im (1) part of a complex variable."""
        box = self.boxes.get(var)
        if box:
            return f"{box}[{field}]"
        return f"{self.name(var)}.{('real', 'imag')[field]}"

    def array(self, var: ir.Var) -> str:
        return f"{self.name(var)}.h()" if self.mode == "host" else self.name(var)

    def warray(self, var: ir.Var) -> str:
        return f"{self.name(var)}.w()" if self.mode == "host" else self.name(var)

    def _e_dim(self, e: ir.Dim) -> str:
        name = self.name(e.var)
        if e.axis is not None:
            return f"{name}.shape[{e.axis}]"
        if self.mode != "host" and e.var.type.elem == "complex":
            return f"({name}.size // 2)"            # held as pairs (backends/cuda/systems.py)
        return f"{name}.size"

    def shared(self, var: ir.Var) -> bool:
        """Whether updates of `var` go through atomics (Note [Atomic gradients])."""
        if self.mode in ("host", "cpu") or var not in self.shadows:
            return False
        return isinstance(var.type, ir.ArrayType) or var in self.boxes

    # ---------------------------------------------------------------- failing
    def fail_return(self) -> None:
        self.emit(f"return (1,{''.join(' ' + self.read(v) + ',' for v in self.back)})")

    def fail(self, site: int | None, ints=(), floats=()) -> None:
        """Record `site` with its values and leave (inside an `if` already emitted)."""
        self.emit(f"rec(ctx, ctxf, {site}, {record_args(ints, floats)})")
        self.fail_return()

    def fail_if(self, condition: str, site: int | None, ints=(), floats=()) -> None:
        if site is None:
            return
        self.emit(f"if {condition}:")
        self.level += 1
        self.fail(site, ints, floats)
        self.level -= 1

    def after_checks(self) -> None:
        """Leave when an expression just evaluated recorded a failure."""
        self.emit(f"if ctx[{abi.CTX_SITE}] != 0:")
        self.level += 1
        self.fail_return()
        self.level -= 1

    def value(self, e, stem: str = "t") -> str:
        """`e` evaluated into a temporary when it can fail (checked afterwards), or its
        text when it cannot."""
        text = self.expr(e)
        if not has_checks(e):
            return text
        temp = self.fresh(stem)
        self.emit(f"{temp} = {text}")
        self.after_checks()
        return temp

    def temp(self, e, stem: str = "t") -> str:
        """`e` evaluated once into a temporary (checked afterwards)."""
        temp = self.fresh(stem)
        self.emit(f"{temp} = {self.expr(e)}")
        if has_checks(e):
            self.after_checks()
        return temp

    # ----------------------------------------------------------------- places
    def indices(self, place) -> list:
        """The index temporaries of an element place, bounds-checked."""
        temps = [self.temp(i, "i") for i in place.indices]
        if place.site is not None:
            for k, i in enumerate(temps):
                extent = f"{self.name(place.var)}.shape[{k}]"
                self.fail_if(f"not (0 <= {i} < {extent})", place.site + k, [i, extent])
        return temps

    def place_text(self, place, indices=None) -> str:
        """The value of a place whose indices are evaluated."""
        if isinstance(place, ir.VarPlace):
            return self.read(place.var) if place.field is None else \
                self.part(place.var, place.field)
        indices = self.indices(place) if indices is None else indices
        array = self.array(place.var)
        if place.var.type.elem == "complex":        # pairs (backends/cuda/systems.py)
            parts = [f"lf64({array}[{', '.join(indices + [str(k)])}])" for k in (0, 1)]
            return f"complex({parts[0]}, {parts[1]})" if place.field is None else \
                parts[place.field]
        return f"{load_helper(place.type)}({array}[{', '.join(indices)}])"

    def store(self, place, indices, value: str) -> None:
        """Emit `place = value` (a part of a complex variable: a new complex value; a
        whole element of a complex array: both parts)."""
        if isinstance(place, ir.VarPlace):
            var = place.var
            if place.field is None or var in self.boxes:
                target = self.read(var) if place.field is None else self.part(var, place.field)
                self.emit(f"{target} = {value}")
                return
            parts = [value, f"{self.name(var)}.imag"] if place.field == 0 else \
                [f"{self.name(var)}.real", value]
            self.emit(f"{self.name(var)} = complex({parts[0]}, {parts[1]})")
            return
        array = self.warray(place.var)
        if place.var.type.elem != "complex":
            self.emit(f"{array}[{', '.join(indices)}] = {value}")
        elif place.field is not None:
            self.emit(f"{array}[{', '.join(indices + [str(place.field)])}] = {value}")
        else:
            whole = self.fresh("z")
            self.emit(f"{whole} = {value}")
            for k, part in enumerate(("real", "imag")):
                self.emit(f"{array}[{', '.join(indices + [str(k)])}] = {whole}.{part}")

    def atomic_add(self, place, indices, amount: str) -> None:
        """Add `amount` to a shared gradient (Note [Atomic gradients]); a complex one
        part by part."""
        if place.type == "complex":
            whole = self.fresh("z")
            self.emit(f"{whole} = {amount}")
            for k, part in enumerate(("real", "imag")):
                self.atomic_add(replace(place, field=k), indices, f"{whole}.{part}")
            return
        if isinstance(place, ir.VarPlace):
            slot = 0 if place.field is None else place.field
            register = self.registers.get((place.var, slot))
            if register is not None:            # Note [Privatised gradients on the GPU]
                self.emit(f"{register} += {amount}")
            else:
                self.emit(f"cuda.atomic.add({self.boxes[place.var]}, {slot}, {amount})")
            return
        key = indices + ([str(place.field)] if place.field is not None else [])
        key = key[0] if len(key) == 1 else f"({', '.join(key)},)"
        self.emit(f"cuda.atomic.add({self.name(place.var)}, {key}, {amount})")

    # ------------------------------------------------------------- functions
    def write(self) -> list:
        fn = self.fn
        prefix = PREFIXES[self.mode]
        params = ", ".join(self.name(p) for p in fn.params)
        head = f"def {prefix}{fn.symbol}(ctx, ctxf{', ' + params if params else ''}):"
        if self.mode == "host":
            for name, var in getattr(self, "host_constants", []):
                self.emit(f"{self.name(var)} = Arr.constant({name})")
        if self.counts_depth:
            self.emit(f"ctx[{abi.CTX_DEPTH}] += 1")
            depth = self.module.add_site(ir.Site("depth", fn.span, fn.name, fn.inverse))
            self.fail_if(f"ctx[{abi.CTX_DEPTH}] > ctx[{abi.CTX_MAX_DEPTH}]", depth)
        self.body(fn.body)
        if self.counts_depth:
            self.emit(f"ctx[{abi.CTX_DEPTH}] -= 1")
        results = [self.read(v) for v in self.back] + [self.name(v) for v in fn.results]
        self.emit(f"return (0,{''.join(' ' + r + ',' for r in results)})")
        return [head] + self.lines + [""]

    def body(self, stmts) -> None:
        start = len(self.lines)
        for stmt in stmts:
            outlined = self.program.outlined.get(id(stmt)) if self.mode == "host" else None
            if outlined is not None and outlined != self.fn.symbol:
                self.outlined_call(outlined)
            else:
                ir.visit(self, stmt)
        if len(self.lines) == start:
            self.emit("pass")

    def block(self, head: str, stmts) -> None:
        self.emit(head)
        self.level += 1
        self.body(stmts)
        self.level -= 1

    # ------------------------------------------------------------ statements
    def _update(self, stmt: ir.Update) -> None:
        target = stmt.target
        indices = None
        if isinstance(target, ir.ElemPlace):
            indices = [self.temp(i, "i") for i in target.indices]
            for reads, site in stmt.alias_checks:
                others = [self.value(i) for i in reads]
                same = " and ".join(f"({a} == {b})" for a, b in zip(indices, others))
                self.fail_if(same, site)
            if target.site is not None:
                for k, i in enumerate(indices):
                    extent = f"{self.name(target.var)}.shape[{k}]"
                    self.fail_if(f"not (0 <= {i} < {extent})", target.site + k, [i, extent])
        value = self.value(stmt.value, "v")
        t = ir.representation(target.type)     # a ulog's logarithm goes up or down
        combines = UPDATE_TABLE[stmt.op].combines      # the IR has += -= ^= only
        if self.shared(target.var) and combines != "xor":
            self.atomic_add(target, indices, value if combines == "add" else f"(-{value})")
            return
        old = self.place_text(target, indices)
        sign = "+" if combines == "add" else "-"
        if stmt.onto_zero:              # Note [Updates onto zeros], rlang/ir/onto_zeros.py
            old = "0.0" if t in ("f32", "f64") else "0"
        if combines == "xor":
            new = f"w32({old} ^ {value})" if t == "i32" else f"({old} ^ {value})"
        elif t == "f64":
            new = f"({old} {sign} {value})"
        elif t == "f32":
            new = f"r32(f64({old}) {sign} f64({value}))"
        else:
            new = self.wrap(f"({old} {sign} {value})", t)
        self.claim(target, indices)
        self.store(target, indices, new)

    def _instr(self, stmt: ir.Instr) -> None:
        write_instr(self, stmt)         # backends/cuda/instructions.py

    def indices_unchecked(self, place) -> list:
        return [self.temp(i, "i") for i in place.indices]

    def _push(self, stmt) -> None:
        """PUSH / POP: refused, naming the stack type (Note [Stacks in the IR])."""
        check_type(stmt.stack.type, "values", self.span)

    _pop = _push

    def _alloc(self, stmt: ir.Alloc) -> None:
        var = stmt.var
        check_type(var.type, f"ancillas (`{var.name}`)", self.span)
        if not isinstance(var.type, ir.ArrayType):
            self.emit(f"{self.name(var)} = {self.value(stmt.value)}")
            return
        if self.mode != "host":
            raise InternalError("array ancilla in device code")
        dims = [self.value(d) for d in stmt.dims]
        sites = self.module.allocation_sites(stmt, self.fn)
        for d, site in zip(dims, sites[1:]):        # as backends/llvm/emit.py `_array_size`
            self.fail_if(f"{d} < 0", site, [d])
        name = self.name(var)
        shape = f"({', '.join(dims)},)"
        if isinstance(stmt.value, ir.ConstArray):
            cname = f"C{len(self.program.constants)}_{ir.c_identifier(var.name)}"
            self.program.constants[cname] = stmt.value
            self.emit(f"{name} = Arr.copy_of({cname})")
        elif isinstance(stmt.value, ir.Read):           # `b ← a`: a copy of an array
            self.emit(f"{name} = Arr.copy_of({self.name(stmt.value.var)}"
                      f".value('{var.type.elem}'))")
        else:
            self.emit(f"{name} = Arr.zeros({shape}, '{var.type.elem}')")
        self.emit(f"if {name} is None:")            # the shape for zeros' message
        self.level += 1
        for axis, d in enumerate(dims[:abi.ARRAY_DIMS] if stmt.sites else ()):
            self.emit(f"ctx[{abi.CTX_SHAPE + axis}] = {d}")
        self.fail(sites[0], [f"nbytes({shape}, '{var.type.elem}')"])
        self.level -= 1

    def _dealloc(self, stmt: ir.Dealloc) -> None:
        var = stmt.var
        if isinstance(var.type, ir.ArrayType):
            if stmt.site is None:
                return
            name = self.name(var)
            elem = f"'{var.type.elem}'"
            if isinstance(stmt.value, ir.Read):
                count = f"mismatches({name}, {self.name(stmt.value.var)}, {elem})"
            elif isinstance(stmt.value, ir.ConstArray):
                cname = f"C{len(self.program.constants)}_{ir.c_identifier(var.name)}"
                self.program.constants[cname] = stmt.value
                count = f"mismatches({name}, Arr.constant({cname}), {elem})"
            else:                   # all zero, of zeros' extents where it gives them
                zeros_shape = [self.value(d) for d in stmt.shape]
                shape = f"({''.join(d + ', ' for d in zeros_shape)})" if stmt.shape \
                    else "None"
                count = f"nonzeros({name}, {elem}, {shape})"
            temp = self.fresh("n")
            self.emit(f"{temp} = {count}")
            # what the message shows (backends/errors.py, `_dealloc_array`): not for `a → [x, 2x]`
            recorded = self.module.sites[stmt.site].detail[2] != "literal" and \
                max(var.type.ndim, len(stmt.shape)) <= abi.ARRAY_DIMS
            self.emit(f"if {temp} != 0:")
            self.level += 1
            if recorded:
                other = self.name(stmt.value.var) if isinstance(stmt.value, ir.Read) else None
                self.emit(f"record_arrays(ctx, {elem}, {name}, {other})")
                for axis, d in enumerate(zeros_shape if stmt.shape else ()):
                    self.emit(f"ctx[{abi.CTX_EXPECTED_SHAPE + axis}] = {d}")
            self.fail(stmt.site, [temp, str(int(recorded))])
            self.level -= 1
            return
        if stmt.site is None:
            return
        value = self.read(var)
        expected = self.value(stmt.value)
        t = stmt.value.type         # an integer against an f64: Note [Integers
        if t == "complex":          # deallocated against floats] (lower/statements.py)
            differs = f"cdiffers({value}, {expected})"
        elif ir.representation(t) in ("f32", "f64"):
            differs = f"differs(f64({value}), f64({expected}))"
        else:
            differs = f"({value} != {expected})"
        ints, floats = self.report(value, var.type)
        ints2, floats2 = self.report(expected, t)
        self.fail_if(differs, stmt.site, ints + ints2, floats + floats2)

    def _print(self, stmt: ir.Print) -> None:
        if self.mode != "host":
            raise InternalError("print in device code")
        values = [self.value(v) for _, v in stmt.args if v is not None]
        self.emit(f"prt({stmt.site}{''.join(', ' + v for v in values)})")

    def _assert(self, stmt: ir.Assert) -> None:
        self.fail_if(f"not {self.value(stmt.cond)}", stmt.site)

    # ----------------------------------------------------------- control flow
    def _if(self, stmt: ir.If) -> None:
        taken = self.fresh("taken") if stmt.site is not None else None
        opened = 0
        for k, branch in enumerate(stmt.branches):
            condition = self.value(branch.pre, "c")
            self.emit(f"if {condition}:")
            self.level += 1
            if taken:
                self.emit(f"{taken} = {k}")
            self.body(branch.body)
            self.level -= 1
            self.emit("else:")
            self.level += 1
            opened += 1
        if taken:
            self.emit(f"{taken} = {len(stmt.branches)}")
        self.body(stmt.orelse)
        self.level -= opened
        if taken:
            for k, branch in enumerate(stmt.branches):
                holds = self.value(branch.post, "c")
                bad = f"(({taken} == {k}) and not {holds}) or (({taken} > {k}) and {holds})"
                self.fail_if(bad, stmt.site + k, [taken])

    def _while(self, stmt: ir.While) -> None:
        if stmt.site is not None:
            self.fail_if(self.value(stmt.post, "c"), stmt.site, ["0"])
        self.emit("while True:")
        self.level += 1
        condition = self.value(stmt.pre, "c")
        self.emit(f"if not {condition}:")
        self.emit("    break")
        self.body(stmt.body)
        if stmt.site is not None:
            self.fail_if(f"not {self.value(stmt.post, 'c')}", stmt.site, ["1"])
        self.level -= 1

    def _from(self, stmt: ir.From) -> None:
        if stmt.site is not None:
            self.fail_if(f"not {self.value(stmt.start, 'c')}", stmt.site, ["0"])
        self.emit("while True:")
        self.level += 1
        self.body(stmt.body)
        self.emit(f"if {self.value(stmt.stop, 'c')}:")
        self.emit("    break")
        self.body(stmt.step)
        if stmt.site is not None:
            self.fail_if(self.value(stmt.start, "c"), stmt.site, ["1"])
        self.level -= 1

    def loop_range(self, stmt: ir.For) -> tuple:
        """(start, step, count) temporaries of a `for` range, the step checked."""
        start, step, stop = (self.temp(e, s) for e, s in
                             ((stmt.start, "s"), (stmt.step, "st"), (stmt.stop, "e")))
        self.fail_if(f"{step} == 0", stmt.step_site)
        count = self.fresh("cnt")
        self.emit(f"{count} = fcount({start}, {step}, {stop})")
        return start, step, stop, count

    def range_unchanged(self, stmt: ir.For, start, step, stop) -> None:
        if stmt.site is None:
            return
        for k, (before, e) in enumerate(zip((start, step, stop),
                                            (stmt.start, stmt.step, stmt.stop))):
            now = self.value(e)
            self.fail_if(f"{now} != {before}", stmt.site + 1 + k, [before, now, start, step])

    def _for(self, stmt: ir.For) -> None:
        if stmt.parallel and self.mode == "host":
            self.launch(stmt)
            return
        start, step, stop, count = self.loop_range(stmt)
        first, stride = start, step
        if stmt.reverse_of is not None:     # a:s:b backward (Note [Loop inversion])
            a, s, b = (self.temp(e, k) for e, k in zip(stmt.reverse_of, ("ra", "rs", "rb")))
            count, first, stride = self.fresh("cnt"), self.fresh("first"), self.fresh("stride")
            self.emit(f"{count} = fcount({a}, {s}, {b})")
            self.emit(f"{first} = {a} + fsteps({a}, {s}, {b}) * {s}")
            self.emit(f"{stride} = -{s}")
        n, i = self.fresh("n"), self.name(stmt.var)
        tracker = self.inner_tracker(stmt, first, stride, n)
        self.emit(f"{n} = 0")
        self.emit(f"while {n} < {count}:")
        self.level += 1
        self.emit(f"{i} = {first} + {n} * {stride}")
        self.body(stmt.body)
        self.emit(f"{n} += 1")
        self.level -= 1
        if tracker is not None:
            del self.trackers[stmt.site]
        self.range_unchanged(stmt, start, step, stop)

    def launch(self, stmt: ir.For) -> None:
        """A `@parallel for` of host code: a kernel over its range (Note [Atomic
        gradients] for the boxes of outer gradient shadows)."""
        plan = plan_kernel(self.module, self.fn, stmt, self.shadows,
                           len(self.program.kernels), self.recursive_symbols)
        self.program.kernels.append(plan)
        plan.constants = {var: name for name, var in getattr(self, "host_constants", [])}
        start, step, stop, count = self.loop_range(stmt)
        self.emit(f"if {count} > 0:")
        self.level += 1
        buffers, tracked = self.owner_buffers(plan)          # shared_writes.py
        args = [start, step, count] + [f"{self.name(v)}.d()" for v in plan.arrays] + \
            [self.name(v) for v in plan.scalars] + buffers
        failed, sums = self.fresh("failed"), self.fresh("sums")
        initial = "".join(f"{self.name(v)}, " for v in plan.boxes)
        self.emit(f"{failed}, {sums} = launch({plan.name}, {count}, {plan.checked}, "
                  f"({', '.join(args)},), ctx, ctxf, {plan.number}{tracked or ', None'}, "
                  f"({initial}))")
        for k, var in enumerate(plan.boxes):       # Note [Scalar sums come back with the status]
            self.emit(f"{self.name(var)} = {sums}[{k}]")
        for var in plan.arrays:
            if var in plan.written_arrays:
                self.emit(f"{self.name(var)}.written_on_device()")
        self.emit(f"if {failed}:")
        self.level += 1
        self.fail_return()
        self.level -= 2
        self.range_unchanged(stmt, start, step, stop)

    # ----------------------------------------------------------------- calls
    def _call(self, stmt: ir.Call) -> None:
        callee = self.module.functions[stmt.callee]
        back = self.program.back[stmt.callee]
        index_lists = [self.indices(a) if isinstance(a, ir.ElemPlace) else None
                       for a in stmt.args]
        if stmt.alias_site is not None:
            self.call_aliasing(stmt, index_lists)
        args = []
        for k, (arg, indices) in enumerate(zip(stmt.args, index_lists)):
            if isinstance(arg, ir.Read) or isinstance(arg.type, ir.ArrayType):
                args.append(self.name(arg.var))
            elif k in callee.accumulated and k not in callee.written:
                args.append("complex(0.0, 0.0)" if arg.type == "complex" else "0.0")
            else:
                args.append(self.place_text(arg, indices))
        prefix = PREFIXES[self.mode]
        result = self.fresh("r")
        self.emit(f"{result} = {prefix}{stmt.callee}(ctx, ctxf{''.join(', ' + a for a in args)})")
        self.emit(f"if {result}[0] != 0:")
        self.level += 1
        self.emit(f"frame(ctx, {stmt.site})")
        self.fail_return()
        self.level -= 1
        for j, k in enumerate(back):
            arg, indices = stmt.args[k], index_lists[k]
            returned = f"{result}[{j + 1}]"
            if k in callee.written:
                self.claim(arg, indices)        # the interpreter's copy-out, in order
                self.store(arg, indices, returned)
            elif self.shared(arg.var):
                self.atomic_add(arg, indices, returned)
            else:
                self.store(arg, indices, f"{self.place_text(arg, indices)} + {returned}")

    def outlined_call(self, symbol: str) -> None:
        """A loop taken out into a function of its own (host_loops.py): called without
        a frame of its own; the scalars it writes come back."""
        callee = self.module.functions[symbol]
        result = self.fresh("r")
        args = "".join(", " + (self.name(p) if isinstance(p.type, ir.ArrayType) else self.read(p))
                       for p in callee.params)
        self.emit(f"{result} = H_{symbol}(ctx, ctxf{args})")
        self.emit(f"if {result}[0] != 0:")
        self.level += 1
        self.fail_return()
        self.level -= 1
        for j, k in enumerate(self.program.back[symbol]):
            self.store(ir.VarPlace(callee.params[k]), None, f"{result}[{j + 1}]")

    def call_aliasing(self, stmt: ir.Call, index_lists) -> None:
        """Written arguments must not be the same memory as another argument."""
        written = set(self.module.sites[stmt.alias_site].detail[1])
        args = stmt.args
        for i in sorted(written):
            for j in range(len(args)):
                if j == i or (j in written and j < i) or args[i].var is not args[j].var:
                    continue
                a, b = index_lists[i], index_lists[j]
                if a is None or b is None:
                    same = "True" if a is None and b is None else "False"
                else:
                    same = " and ".join(f"({x} == {y})" for x, y in zip(a, b))
                if same != "False":
                    self.fail_if(same, stmt.alias_site, [str(i), str(j)])


class KernelWriter(FunctionWriter):
    """The kernel of one `@parallel for` (see the module docstring)."""

    def __init__(self, program: Program, module: ir.Module, plan: KernelPlan, shadows,
                 variant: str = "plain"):
        super().__init__(program, module, None, "kernel", shadows)
        self.plan, self.variant = plan, variant     # Note [Privatised gradients on the GPU]
        self.span = None
        self.names.update(plan.constants)

    def shared(self, var: ir.Var) -> bool:
        """Shadows each pass adds to at its own elements alone (`KernelPlan.own`)
        take plain adds in the kernel's body; device functions, which may be called
        with shared arrays elsewhere, keep their atomic adds."""
        return var not in self.plan.own and super().shared(var)

    def fail_return(self) -> None:
        if self.plan.checked:
            self.emit(f"publish(err, errf, ctx, ctxf, _n, {self.name(self.plan.loop.var)})")
        self.emit("return")

    def write(self) -> list:
        plan = self.plan
        for var in plan.boxes:
            self.boxes[var] = self.fresh("box")
        owners = {var: self.fresh("own") for var in plan.owners}
        self.inner_owners = {key: self.fresh("own") for key in plan.inner_owners}
        if owners:
            self.trackers[plan.loop.site] = Tracker(owners, "_start", "_step", "_n",
                                                     "(_start + _n * _step)")
        narrow = [v for v in plan.scalars if v.type in ("i32", "f32")]
        private = set(plan.private) if self.variant != "plain" else set()

        def param(name: str, var) -> str:
            return privatised.global_name(name) if var in private else name

        params = ["_start", "_step", "_count"] + \
            [param(self.name(v), v) for v in plan.arrays] + \
            [("_p" if v in narrow else "") + self.name(v) for v in plan.scalars] + \
            list(owners.values()) + list(self.inner_owners.values())
        params = [param(self.boxes[v], v) for v in plan.boxes] + params   # launches.py
        if plan.checked:
            params = ["err", "errf"] + params
        if self.variant == "rows":
            params.append("_rows")
        head = f"def {privatised.kernel_name(plan, self.variant)}({', '.join(params)}):"
        if private:
            privatised.write_prologue(self, plan, self.variant)
        self.emit(f"ctx = cuda.local.array({abi.CTX_WORDS}, int64)")
        self.emit(f"ctxf = cuda.local.array({CTXF_WORDS}, float64)")
        self.emit(f"ctx[{abi.CTX_SITE}] = 0")
        self.emit(f"ctx[{abi.CTX_NFRAMES}] = 0")
        for var in narrow:              # Python passes i64 and f64; keep the rev type
            self.emit(f"{self.name(var)} = {'w32' if var.type == 'i32' else 'r32'}"
                      f"(_p{self.name(var)})")
        if self.inner_owners:
            self.emit("_loops = 0")
        self.emit("_n = cuda.grid(1)")
        self.emit("_stride = cuda.gridsize(1)")
        self.emit("while _n < _count:")
        self.level += 1
        self.emit(f"{self.name(plan.loop.var)} = _start + _n * _step")
        self.body(plan.loop.body)
        self.emit("_n += _stride")
        self.level -= 1
        if private:
            privatised.write_epilogue(self, plan, self.variant)
        lines = [head] + self.lines + [""]
        if self.variant == "rows":
            lines += privatised.write_sums_kernel(self, plan)
        return lines

