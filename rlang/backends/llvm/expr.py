"""LLVM IR for typed IR expressions (the expression half of backends/llvm/emit.py).

`ExprEmitter` is the base of the function emitter: `expr(e)` returns an LLVM value
of `llvm_type(e.type)`; the helpers convert between register and storage types
(bools are i1 in registers and one byte in memory), address array elements, and
declare the C library and the runtime helpers the code calls.

Semantics follow rlang/interp/ops.py exactly: integers wrap; `//` and `%` floor (Python's
rules, also for floats); integer division by zero is a checked error and never a
trap (the divisor is made safe even where the check is off, so that no input can
crash the process); float operations follow IEEE.
"""
from __future__ import annotations

from llvmlite import ir as ll

from ...ir import nodes as ir
from .arith import emit_binary, emit_builtin, floor_div_int
from .convert import emit_convert
from .hoisted_checks import hoisted_bounds, hoisting
from .inline_math import inline_exp
from .types import F32, F64, I1, I8, I32, I64, llvm_type, local_name, storage_type

#: Registry functions computed by a C library function of the same meaning.
_LIBM = {"sin": "sin", "cos": "cos", "tan": "tan", "asin": "asin", "acos": "acos",
         "atan": "atan", "sinh": "sinh", "cosh": "cosh", "tanh": "tanh", "exp": "exp",
         "log": "log", "log1p": "log1p", "expm1": "expm1", "sqrt": "sqrt", "cbrt": "cbrt",
         "hypot": "hypot", "floor": "floor", "ceil": "ceil", "round": "nearbyint",
         "fabs": "fabs", "fmod": "fmod", "pow": "pow", "atan2": "atan2",
         "copysign": "copysign"}

#: The C library's functions on doubles that the code calls: pure as the code sees
#: them (Note [The C library's math is pure]).
_PURE = frozenset(_LIBM.values())


# Note [The C library's math is pure]
# ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
# C's `log`, `sqrt`, `pow`, ... set `errno` on a domain or range error, so LLVM must
# keep a call whose result nobody reads: it guards it (`x > 0 ? skip : log(x)`,
# "conditional dead call elimination") and keeps `sqrt`'s call behind the `sqrtsd`
# it inlines.  No rlang code reads `errno`, so the declarations say the functions
# touch no memory, return and do not unwind (what C compilers assume under
# -fno-math-errno).  Dead calls then go: the gradient of `a ** 2` computes
# log(a) for the exponent's gradient, which is dropped when the exponent is a
# constant, and the kept call, taken for every negative `a` with libm's error
# path (`__math_invalid`), was 5 % of the graph-embedding gradient's time.  The
# values are the same functions' values: only calls whose results are unused
# are removed.


class _PureAttributes(ll.values.FunctionAttributes):
    """Function attributes llvmlite does not list, for the C library's math."""
    _known = ll.values.FunctionAttributes._known | {"memory(none)", "willreturn",
                                                    "nosync", "nofree"}


class ExprEmitter:
    """Expression emission; subclasses provide `builder`, `llfn`, `out`, `ctx`,
    `slots`, `array_cache`, `fail_if` and `module`."""

    def __init__(self, builder: ll.IRBuilder):
        self.builder = builder
        self.ctx_words: dict = {}       # index → its address (`ctx_word`)
        self.hoisted: frozenset = frozenset()   # sites checked before the expression

    def ctx_word(self, index: int):
        """The address of a context word, computed once in the entry block (a check
        records its site and values through them: 4,000 checks had made 12,000)."""
        word = self.ctx_words.get(index)
        if word is None:
            saved = self.builder.block
            self.builder.position_at_start(self.llfn.entry_basic_block)
            word = self.ctx_words[index] = self.builder.gep(self.ctx, [ll.Constant(I64, index)])
            self.builder.position_at_end(saved)
        return word

    def cold_branch(self, condition, taken, otherwise) -> None:
        """A branch to `taken` where `condition` holds, marked almost never taken."""
        self.builder.cbranch(condition, taken, otherwise).set_metadata(
            "prof", cold_weights(self.out))

    # --------------------------------------------------------------- helpers
    def constant(self, value, t: str):
        if t == "bool":
            return ll.Constant(I1, int(bool(value)))
        if t in ("f32", "f64", "ulog"):
            return ll.Constant(llvm_type(t), float(value))
        return ll.Constant(llvm_type(t), int(value))

    def from_storage(self, value, t):
        if t == "bool":
            return self.builder.icmp_unsigned("!=", value, ll.Constant(I8, 0))
        return value

    def to_storage(self, value, t):
        if t == "bool":
            return self.builder.zext(value, I8)
        return value

    def to_f64(self, value, t: str):
        if t == "f64":
            return value
        if t == "f32":
            return self.builder.fpext(value, F64)
        if t == "bool":
            return self.builder.uitofp(value, F64)
        return self.builder.sitofp(value, F64)

    def from_f64(self, value, t: str):
        return self.builder.fptrunc(value, F32) if t == "f32" else value

    def entry_alloca(self, lltype, name: str):
        """An alloca in the entry block (so that mem2reg promotes it)."""
        entry = self.llfn.entry_basic_block
        saved = self.builder.block
        if entry.instructions:
            self.builder.position_before(entry.instructions[0])
        else:
            self.builder.position_at_end(entry)
        slot = self.builder.alloca(lltype, name=local_name(name))
        self.builder.position_at_end(saved)
        return slot

    def runtime(self, name: str, ret, args):
        """A declared external function (C library)."""
        existing = self.out.globals.get(name)
        if existing is not None:
            return existing
        fn = ll.Function(self.out, ll.FunctionType(ret, args), name=name)
        if name in _PURE:       # Note [The C library's math is pure]
            fn.attributes = _PureAttributes(["nounwind", "memory(none)", "willreturn",
                                             "nosync", "nofree"])
        elif name not in ("calloc", "free"):
            fn.attributes.add("nounwind")
        return fn

    def call_math(self, name: str, args, c_library: bool = False):
        """A C math function on doubles (`exp`: the module's own, Note [An exp LLVM
        can vectorise] in backends/llvm/inline_math.py, unless `c_library`)."""
        if name == "exp" and not c_library:
            return self.builder.call(inline_exp(self.out), args)
        fn = self.runtime(_LIBM[name], F64, [F64] * len(args))
        return self.builder.call(fn, args)

    # ---------------------------------------------------------------- arrays
    def array_parts(self, var: ir.Var):
        """(data pointer typed to the element, shape values, stride values).  Those of
        parameters are loaded once at the entry (`load_parameter_arrays`)."""
        cached = self.array_cache.get(var)
        if cached is not None:
            return cached
        b = self.builder
        desc = self.slots[var]
        zero = ll.Constant(I32, 0)
        raw = b.load(b.gep(desc, [zero, zero]))
        data = b.bitcast(raw, storage_type(var.type.elem).as_pointer())
        shape = [b.load(b.gep(desc, [zero, ll.Constant(I32, 1), ll.Constant(I32, k)]))
                 for k in range(var.type.ndim)]
        strides = [b.load(b.gep(desc, [zero, ll.Constant(I32, 2), ll.Constant(I32, k)]))
                   for k in range(var.type.ndim)]
        if var.type.unit_stride:        # Note [Unit-stride arrays] (rlang/ir/nodes.py)
            strides[-1] = ll.Constant(I64, 1)
        return data, shape, strides

    def array_for_print(self, var: ir.Var) -> list:
        """An array for the print hook: its data address (a pointer, which `call_hook`
        passes uncaptured: Note [Reports do not capture]), then its shape and strides
        as the bits of 2·ndim doubles (llvm_errors.print_values reads the elements)."""
        b = self.builder
        data, shape, strides = self.array_parts(var)
        return [b.bitcast(data, I8.as_pointer())] + [b.bitcast(w, F64) for w in shape + strides]

    def load_parameter_arrays(self, params) -> None:
        """Load the descriptors of the array parameters (call at the entry); their
        data pointers root the alias scopes (rlang/backends/llvm/alias.py)."""
        for var in params:
            if isinstance(var.type, ir.ArrayType):
                self.array_cache[var] = self.array_parts(var)
                self.scopes.root(self.array_cache[var][0], var)

    def element_pointer(self, var: ir.Var, indices, site, field=None):
        """The pointer to an element (to one part of a complex element with `field`)."""
        b = self.builder
        if isinstance(var.type, ir.StackType):      # a stack's item k (lower/expressions.py)
            i, length = self.expr(indices[0]), self.stack_length(var)
            self.fail_if(b.icmp_unsigned(">=", i, length), site, [i, length])
            return b.gep(self.stack_items(self.slots[var], var.type.elem), [i])
        data, shape, strides = self.array_parts(var)
        offset = ll.Constant(I64, 0)
        for k, (index, extent, stride) in enumerate(zip(indices, shape, strides)):
            i = self.expr(index)
            if site is not None and site + k not in self.hoisted:
                outside = b.icmp_unsigned(">=", i, extent)     # negative: huge unsigned
                self.fail_if(outside, site + k, [i, extent])
            offset = _sum(b, offset, _product(b, i, stride))
        pointer = b.gep(data, [offset])
        return pointer if field is None else self.part(pointer, field)

    def part(self, pointer, field: int):
        """The pointer to the re (0) or im (1) double of a complex."""
        return self.builder.gep(pointer, [ll.Constant(I32, 0), ll.Constant(I32, field)])

    def nonzero_count_function(self, scalar: str):
        """`int64 rev_nonzero_<scalar>(T *data, int64 n)`: how many elements are not
        zero (floats: not within ATOL of 0)."""
        return self._count_function(scalar, compare_with_array=False)

    def mismatch_count_function(self, scalar: str):
        """`int64 rev_mismatch_<scalar>(T *a, T *b, int64 n)`: how many elements differ
        (floats: by more than ATOL, two NaNs equal)."""
        return self._count_function(scalar, compare_with_array=True)

    def _count_function(self, scalar: str, compare_with_array: bool):
        from ...interp.comparisons import ATOL

        name = f"rev_{'mismatch' if compare_with_array else 'nonzero'}_{scalar}"
        existing = self.out.globals.get(name)
        if existing is not None:
            return existing
        elem = storage_type(scalar)
        pointers = [elem.as_pointer()] * (2 if compare_with_array else 1)
        fn = ll.Function(self.out, ll.FunctionType(I64, pointers + [I64]), name=name)
        fn.linkage = "internal"
        n = fn.args[-1]
        b = ll.IRBuilder(fn.append_basic_block("entry"))
        count = b.alloca(I64)
        b.store(ll.Constant(I64, 0), count)
        with counted_loop(b, fn, n, b.alloca(I64)) as i:
            x = b.load(b.gep(fn.args[0], [i]))
            zero = float("-inf") if scalar == "ulog" else 0     # zero(ulog) is log 0
            y = b.load(b.gep(fn.args[1], [i])) if compare_with_array else \
                ll.Constant(elem, None if scalar == "complex" else zero)
            if scalar == "complex":         # (re, im) pairs: the complex check equality
                distance = b.call(self.runtime(_LIBM["hypot"], F64, [F64, F64]), [
                    b.fsub(b.extract_value(x, k), b.extract_value(y, k)) for k in (0, 1)])
                equal = b.and_(*(b.fcmp_ordered("==", b.extract_value(x, k),
                                                b.extract_value(y, k)) for k in (0, 1)))
                bad = b.not_(b.or_(equal, b.fcmp_ordered("<=", distance,
                                                         ll.Constant(F64, ATOL))))
            elif ir.representation(scalar) in ("f32", "f64"):
                wide_x = b.fpext(x, F64) if scalar == "f32" else x
                wide_y = b.fpext(y, F64) if scalar == "f32" else y
                magnitude = b.call(self.runtime("fabs", F64, [F64]), [b.fsub(wide_x, wide_y)])
                close = b.fcmp_ordered("<=", magnitude, ll.Constant(F64, ATOL))
                same = b.or_(b.or_(close, b.fcmp_ordered("==", wide_x, wide_y)),
                             b.and_(b.fcmp_unordered("uno", wide_x, wide_x),
                                    b.fcmp_unordered("uno", wide_y, wide_y)))
                bad = b.not_(same)
            else:
                bad = b.icmp_signed("!=", x, y)
            b.store(b.add(b.load(count), b.zext(bad, I64)), count)
        b.ret(b.load(count))
        return fn

    # ----------------------------------------------------------- expressions
    def expr(self, e):
        return getattr(self, "_e_" + type(e).__name__.lower())(e)

    def checked_once(self, e):
        """`expr(e)` for a statement's whole expression, its reads at constant
        indices checked once per array axis before it where they may be (Note
        [Constant indices checked once], backends/llvm/hoisted_checks.py)."""
        if self.hoisted:        # a scalar ancilla of a run whose reads were checked
            return self.expr(e)  # before it (`checked_runs`): all of its checks there
        with hoisting(self, hoisted_bounds(e)):
            return self.expr(e)

    def _e_const(self, e: ir.Const):
        return self.constant(e.value, e.type)

    def _e_read(self, e: ir.Read):
        if e.field is not None:
            return self.builder.load(self.part(self.slots[e.var], e.field))
        return self.from_storage(self.builder.load(self.slots[e.var]), e.var.type)

    def _e_let(self, e: ir.Let):
        """Note [Lets in conditions] (rlang/ir/nodes.py): the value in a slot of its
        own, which the body's reads load."""
        slot = self.entry_alloca(storage_type(e.var.type), e.var.name)
        self.slots[e.var] = slot
        if e.var.type == "complex":
            for k, part in enumerate(self.complex_parts(e.value)):
                self.builder.store(part, self.part(slot, k))
        else:
            self.builder.store(self.to_storage(self.expr(e.value), e.var.type), slot)
        return self.expr(e.body)

    def _e_load(self, e: ir.Load):
        pointer = self.element_pointer(e.var, e.indices, e.site, e.field)
        return self.from_storage(self.builder.load(pointer), e.type)

    def _e_dim(self, e: ir.Dim):
        if isinstance(e.var.type, ir.StackType):
            return self.stack_length(e.var)
        _, shape, _ = self.array_parts(e.var)
        if e.axis is not None:
            return shape[e.axis]
        count = ll.Constant(I64, 1)
        for extent in shape:
            count = self.builder.mul(count, extent)
        return count

    def _e_unary(self, e: ir.Unary):
        x = self.expr(e.operand)
        if e.op == "!":
            return self.builder.xor(x, ll.Constant(I1, 1))
        if e.op == "~":
            return self.builder.not_(x)
        return self.builder.fneg(x) if e.type in ("f32", "f64") else self.builder.neg(x)

    def _e_logic(self, e: ir.Logic):
        b = self.builder
        left = self.expr(e.left)
        start = b.block
        right_block = self.llfn.append_basic_block("logic.right")
        done = self.llfn.append_basic_block("logic.end")
        if e.op == "&&":
            b.cbranch(left, right_block, done)
        else:
            b.cbranch(left, done, right_block)
        b.position_at_end(right_block)
        right = self.expr(e.right)
        right_end = b.block
        b.branch(done)
        b.position_at_end(done)
        phi = b.phi(I1)
        phi.add_incoming(ll.Constant(I1, 0 if e.op == "&&" else 1), start)
        phi.add_incoming(right, right_end)
        return phi

    def _e_compare(self, e: ir.Compare):
        left, right = self.expr(e.left), self.expr(e.right)
        t = ir.representation(e.left.type)
        if t in ("f32", "f64"):
            if e.op == "!=":
                return self.builder.fcmp_unordered("!=", left, right)
            return self.builder.fcmp_ordered(e.op, left, right)
        if t == "bool":
            return self.builder.icmp_unsigned(e.op, left, right)
        return self.builder.icmp_signed(e.op, left, right)

    def _e_select(self, e: ir.Select):
        return self.builder.select(self.expr(e.cond), self.expr(e.then), self.expr(e.otherwise))

    def _e_guarded(self, e: ir.Guarded):
        b = self.builder
        all_zero = ll.Constant(I1, 1)
        for guard in e.guards:
            all_zero = b.and_(all_zero, b.fcmp_ordered("==", self.expr(guard),
                                                       ll.Constant(F64, 0.0)))
        return b.select(all_zero, ll.Constant(F64, 0.0), self.expr(e.value))

    def _e_nonzero(self, e: ir.Nonzero):
        b = self.builder
        some = ll.Constant(I1, 0)
        for value in e.values:              # NaN is not zero
            some = b.or_(some, b.fcmp_unordered("!=", self.expr(value), ll.Constant(F64, 0.0)))
        return some

    def _e_reinterpret(self, e: ir.Reinterpret):
        return self.expr(e.operand)         # a ulog and its logarithm: the same double

    def _e_checked(self, e: ir.Checked):
        reported = [self.value_for_report(self.expr(x), x.type) for x in e.reported]
        self.fail_if(self.builder.not_(self.expr(e.cond)), e.site, reported)
        return self.expr(e.value)

    def _e_convert(self, e: ir.Convert):
        return emit_convert(self, e)

    def _e_binary(self, e: ir.Binary):
        return emit_binary(self, e)

    def _e_builtin(self, e: ir.Builtin):
        return emit_builtin(self, e)

    def floor_div_i64(self, a, b_):
        return floor_div_int(self, a, b_, I64)


class counted_loop:
    """`with counted_loop(builder, fn, n, counter, "name") as i:` emits
    `for i in 0 … n-1` around the statements of the block; `counter` is an i64 slot
    (an alloca of the entry block, so that loops do not grow the stack)."""

    def __init__(self, builder, fn, n, counter, name: str = "loop"):
        self.b, self.fn, self.n, self.counter, self.name = builder, fn, n, counter, name

    def __enter__(self):
        b = self.b
        b.store(ll.Constant(I64, 0), self.counter)
        self.head = self.fn.append_basic_block(f"{self.name}.head")
        self.body = self.fn.append_basic_block(f"{self.name}.body")
        self.done = self.fn.append_basic_block(f"{self.name}.end")
        b.branch(self.head)
        b.position_at_end(self.head)
        i = b.load(self.counter)
        b.cbranch(b.icmp_unsigned("<", i, self.n), self.body, self.done)
        b.position_at_end(self.body)
        self.i = i
        return i

    def __exit__(self, *exc):
        b = self.b
        b.store(b.add(self.i, ll.Constant(I64, 1)), self.counter)
        self.back_edge = b.branch(self.head)
        b.position_at_end(self.done)
        return False


class LoopID(ll.values.MDValue):
    """A loop's `!llvm.loop` metadata: a distinct node whose first operand is
    itself, then the hints (`loop_hints`)."""

    def descr(self, buf):
        rest = "".join(", " + op.get_reference() for op in self.operands)
        buf += (f"distinct !{{ {self.get_reference()}{rest} }}", "\n")


def cold_weights(out: ll.Module):
    """`!prof` branch weights of a branch almost never taken, made once per module
    (llvmlite's `set_weights` hashes its operands' text: 60 µs a check)."""
    weights = getattr(out, "cold_weights", None)
    if weights is None:
        weights = out.cold_weights = out.add_metadata(
            [ll.MetaDataString(out, "branch_weights"), ll.Constant(I32, 1),
             ll.Constant(I32, 1 << 20)])
    return weights


def loop_hints(module: ll.Module, **hints) -> LoopID:
    """`!llvm.loop` metadata with integer hints, e.g. `vectorize_width=1`
    (llvm.loop.vectorize.width) or `interleave_count=1`."""
    operands = [module.add_metadata([ll.MetaDataString(module, "llvm.loop." +
                                                       name.replace("_", ".", 1)),
                                     ll.Constant(I32, value)])
                for name, value in hints.items()]
    return LoopID(module, operands, name=str(len(module.metadata)))




def _product(b, x, y):
    """x · y for i64 values, made a constant where both are (an element's offset at
    a constant index of a unit-stride axis), x where y is the constant 1."""
    if isinstance(x, ll.Constant) and isinstance(y, ll.Constant):
        return ll.Constant(I64, (x.constant * y.constant + 2 ** 63) % 2 ** 64 - 2 ** 63)
    if isinstance(y, ll.Constant) and y.constant == 1:
        return x
    return b.mul(x, y)


def _sum(b, x, y):
    """x + y for i64 values, without the add where x is the constant 0."""
    if isinstance(x, ll.Constant) and x.constant == 0:
        return y
    return b.add(x, y)
