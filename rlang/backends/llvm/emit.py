"""LLVM IR generation from the typed reversible IR (rlang/ir/nodes.py), with llvmlite.ir.

`emit_module(module, name)` returns an `llvmlite.ir.Module` with one function per
specialisation (calling convention: rlang/backends/abi.py) and one `<symbol>_entry`
per specialisation for callers outside generated code (for Python, `<symbol>_pyentry`
instead: Note [Arrays read by the entry point] in backends/llvm/marshal.py).  Expressions are
emitted by rlang/backends/llvm/expr.py.

Checks are branches to a cold block that records the site id (and a few values) in
`ctx` and returns 1; a caller that sees 1 appends its call site to `ctx`'s frames
and returns 1 too, so the Python side can rebuild the call chain (backends/errors.py).
Statements that carry no site emit no check at all.
"""
from __future__ import annotations

import numpy as np
from llvmlite import ir as ll

from ...ir import nodes as ir
from ...ad.derivatives import complete
from ...ir.passes import run_passes
from ...ir.prune import written_arrays
from ...primitives import UPDATE_TABLE
from .. import abi
from .expr import ExprEmitter, counted_loop
from .hoisted_checks import checked_runs, hoisting
from .instructions import emit_instr
from .types import F64, I1, I32, I64, I8, local_name, storage_type
from .alias import ParameterScopes, distinct_gradients
from .batch import emit_batch_entry
from .ancillas import AncillaEmitter
from .parallel import SharedWriteEmitter
from .polls import PollEmitter
from .threaded import ThreadedLoopEmitter
from ...ir.blocks import plan_blocks
from ...ir.iteration_lanes import laned_blocks
from ..abi import PRINT_HOOK
from .report import ReportEmitter, shown
from .marshal import NOT_ADDRESSABLE, READ_ONLY, WRITEABLE, array_header
from .stacks import STACK_TYPE, StackEmitter
from ...ir.call_graph import depth_counted_symbols, inlined_once, recursive_symbols

#: A tolerance for float deallocation checks (rlang.interp.comparisons.ATOL).
from ...interp.comparisons import ATOL


def descriptor_type(ndim: int) -> ll.LiteralStructType:
    return ll.LiteralStructType([I8.as_pointer(), ll.ArrayType(I64, ndim),
                                 ll.ArrayType(I64, ndim)])


def param_type(t):
    if isinstance(t, ir.ArrayType):
        return descriptor_type(t.ndim).as_pointer()
    if isinstance(t, ir.StackType):
        return STACK_TYPE.as_pointer()
    return storage_type(t).as_pointer()


def emit_module(module: ir.Module, name: str = "rev", report_locals: bool = True,
                python_entries: bool = True, shared: frozenset = frozenset()) -> ll.Module:
    """The LLVM module of `module`; `report_locals`: failed checks hand the frames'
    variables to Python (Note [Frame variables in compiled errors], backends/llvm/report.py;
    off for derivative passes); `python_entries`: each function's entry point is the
    `<symbol>_pyentry` that Python calls (Note [Arrays read by the entry point],
    backends/llvm/marshal.py) where NumPy's array layout allows it, else `<symbol>_entry`;
    `shared`: the shadows of gradients (rlang/ad/derivatives.py), which `@parallel for`
    blocks may sum privately.  The result's `threaded_loops` lists what Python needs
    to run the planned parallel loops (Note [Parallel loops on threads], rlang/ir/blocks.py),
    its `entry_writes` the positions of the array parameters the entry function may
    write once the IR passes ran."""
    module = run_passes(complete(module))   # ad/derivatives.py, then ir/passes.py
    out = ll.Module(name=name)
    out.entry_writes = written_arrays(module, module.entry)
    recursive, counted = recursive_symbols(module), depth_counted_symbols(module)
    distinct = distinct_gradients(module)
    once = inlined_once(module)
    module, plans = plan_blocks(module, shared)
    module, plans = laned_blocks(module, plans)     # Note [Iterations in lanes]
    outlined = {}                       # block and reduction symbols → their loop's function
    for plan in plans.values():
        for symbol in (plan.threaded.block, plan.threaded.reduce):
            if symbol is not None:
                outlined[symbol] = plan
    distinct |= {s for s, plan in outlined.items() if plan.owner in distinct}
    header = array_header() if python_entries else None
    functions = {}
    for symbol, fn in module.functions.items():
        fnty = ll.FunctionType(I32, [I64.as_pointer()] + [param_type(p.type)
                                                          for p in fn.params + fn.results])
        functions[symbol] = ll.Function(out, fnty, name=symbol)
    for symbol, fn in module.functions.items():
        inline = fn.inline or symbol in once        # Note [Functions called once are inlined]
        _FunctionEmitter(out, functions, module, fn, symbol in recursive,
                         symbol in distinct, report_locals and symbol not in outlined,
                         inline, symbol in counted, plans).emit()
        if symbol in outlined:          # the same code on every path: never inlined
            functions[symbol].attributes.add("noinline")
            if python_entries:          # for Python's pool (backends/llvm/blocks.py)
                _emit_entry(out, functions[symbol], fn)
            else:                       # a C library's callers never see them
                functions[symbol].linkage = "internal"
            continue
        if symbol == module.entry or header is None:    # Note [Entry points of the entry]
            _emit_entry(out, functions[symbol], fn, header)
        else:                           # reached from this module's code only
            functions[symbol].linkage = "internal"
        if symbol == module.entry:      # for batches and foreign calls (jax.ffi)
            if header is not None:
                _emit_entry(out, functions[symbol], fn)
            emit_batch_entry(out, functions[symbol], fn)    # Note [One native call per
            #                                                 batch], backends/llvm/batch.py
    out.threaded_loops = [plan.threaded for plan in sorted(plans.values(),
                                                           key=lambda p: p.number)]
    return out


# Note [Entry points of the entry]
# ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
# Python calls one function of each module it compiles: the module's entry (a
# specialisation, or a derivative pass of one), each module being compiled for
# one.  The functions it calls are reached from compiled code only, so they get
# no `_pyentry`: those were 6 % of the forward module's LLVM IR and 10 % of the
# gradient pass's for GradBench's GMM, optimised and compiled for nothing.  A
# C library (`rlang compile`, python_entries off) keeps an `_entry` for every
# function, which its callers may call.  NativeModule.function refuses a symbol
# with no entry point rather than call address 0.
#
# The functions with no entry point are internal to the module: once LLVM has
# inlined one into all its callers, nothing is left of it to optimise and compile
# again.  External, GMM's gradient kept a second copy of its block function's
# pass (6,148 of the optimised module's 16,550 lines): its O3 passes and code
# generation took 4.04 s, internal 2.78 s, and the code Python runs is the same.

def _emit_entry(out: ll.Module, target: ll.Function, fn: ir.Function,
                header: tuple | None = None) -> None:
    """`int32 <symbol>_entry(int64 *ctx, void **args)`; with `header`,
    `<symbol>_pyentry`, where an array argument's pointer is its NumPy array object,
    whose fields (at the byte offsets `header`: data, nd, dimensions, strides, flags)
    become a descriptor here.  Before the function runs, an array of another rank,
    or that cannot be used in place, makes it return NOT_ADDRESSABLE, and a
    read-only array that the function updates READ_ONLY with its position in ctx
    (Note [Arrays read by the entry point], backends/llvm/marshal.py)."""
    entry = ll.Function(out, ll.FunctionType(I32, [I64.as_pointer(),
                                                   I8.as_pointer().as_pointer()]),
                        name=target.name + ("_entry" if header is None else "_pyentry"))
    builder = ll.IRBuilder(entry.append_basic_block("entry"))
    ctx, args = entry.args
    values = [ctx]
    descriptors = {} if header is None else {      # (allocas in the entry block)
        k: builder.alloca(descriptor_type(p.type.ndim))
        for k, p in enumerate(fn.params) if isinstance(p.type, ir.ArrayType)}
    for k, param in enumerate(fn.params + fn.results):
        raw = builder.load(builder.gep(args, [ll.Constant(I32, k)]))
        if k in descriptors:
            obj = builder.load(builder.bitcast(raw, I8.as_pointer().as_pointer()))
            values.append(_fill_descriptor(builder, ctx, obj, descriptors[k], param.type,
                                           header, k if k in fn.written else None))
        else:
            values.append(builder.bitcast(raw, param_type(param.type)))
    builder.ret(builder.call(target, values))


def _fill_descriptor(b: ll.IRBuilder, ctx, obj, descriptor, t: ir.ArrayType, header: tuple,
                     written_at):
    """`descriptor` made of the NumPy array at `obj`; returns from the entry point first
    where it does not fit `t` in place (its rank; its data aligned for the element;
    every stride in whole elements) or, when the function updates it (`written_at`:
    its position), where it is read-only."""
    data_at, nd_at, dims_at, strides_at, flags_at = header
    item = abi.ITEM_BYTES[t.elem]

    def field(offset, kind):
        return b.load(b.bitcast(b.gep(obj, [ll.Constant(I64, offset)]), kind.as_pointer()))

    def refuse_unless(fits, status):
        with b.if_then(b.not_(fits), likely=False):
            b.ret(ll.Constant(I32, status))

    refuse_unless(b.icmp_signed("==", field(nd_at, I32), ll.Constant(I32, t.ndim)),
                  NOT_ADDRESSABLE)         # (before the extents are read)
    data = field(data_at, I8.as_pointer())
    dims, steps = field(dims_at, I64.as_pointer()), field(strides_at, I64.as_pointer())
    alignment = ll.Constant(I64, np.dtype(abi.ITEM_DTYPES[t.elem]).alignment - 1)
    fits = b.icmp_unsigned("==", b.and_(b.ptrtoint(data, I64), alignment), ll.Constant(I64, 0))
    b.store(data, b.gep(descriptor, [ll.Constant(I32, 0), ll.Constant(I32, 0)]))

    def slot(part, axis):
        return b.gep(descriptor, [ll.Constant(I32, 0), ll.Constant(I32, part),
                                  ll.Constant(I32, axis)])

    for axis in range(t.ndim):
        stride = b.load(b.gep(steps, [ll.Constant(I64, axis)]))
        fits = b.and_(fits, b.icmp_signed("==", b.srem(stride, ll.Constant(I64, item)),
                                          ll.Constant(I64, 0)))
        b.store(b.load(b.gep(dims, [ll.Constant(I64, axis)])), slot(1, axis))
        b.store(b.sdiv(stride, ll.Constant(I64, item)), slot(2, axis))
    refuse_unless(fits, NOT_ADDRESSABLE)
    if written_at is not None:
        writable = b.icmp_unsigned("!=", b.and_(field(flags_at, I32), ll.Constant(I32, WRITEABLE)),
                                   ll.Constant(I32, 0))
        with b.if_then(b.not_(writable), likely=False):
            b.store(ll.Constant(I64, written_at), b.gep(ctx, [ll.Constant(I64, abi.CTX_IVALS)]))
            b.ret(ll.Constant(I32, READ_ONLY))
    return descriptor


class _FunctionEmitter(AncillaEmitter, StackEmitter, ReportEmitter, SharedWriteEmitter,
                       ThreadedLoopEmitter, PollEmitter, ExprEmitter):
    """Emits the body of one IR function."""

    def __init__(self, out, functions, module: ir.Module, fn: ir.Function, recursive: bool,
                 distinct: bool, report_locals: bool = True, inline: bool = False,
                 counts_depth: bool = False, plans: dict | None = None):
        self.out, self.functions, self.module, self.fn = out, functions, module, fn
        self.plans = plans or {}        # id(For) → LoopPlan (rlang/ir/blocks.py)
        self.recursive = recursive      # its ancillas live on the heap, it is not inlined
        self.counts_depth = counts_depth    # (depth_counted_symbols)
        self.llfn = functions[fn.symbol]
        self.llfn.attributes.add("nounwind")
        if inline and not recursive:    # `@inline function` (LANGUAGE.md §4), or called once
            self.llfn.attributes.add("alwaysinline")
        entry = self.llfn.append_basic_block("entry")
        self.builder = ll.IRBuilder(entry)
        self.ctx = self.llfn.args[0]
        self.slots: dict = {}           # Var → pointer (scalar storage or descriptor)
        self.array_cache: dict = {}     # Var → (data pointer, shape, strides) values
        self.results = {}               # store variable → its result pointer
        self.scalar_params = []         # (local, argument pointer, how it goes back)
        self.stack_arrays = set()       # array ancillas that may live on the stack
        self.on_stack = {}              # … → i1 slot: this allocation is on the stack
        self.owned = []                 # ancillas holding heap memory, allocated so far
        # Note [Frame variables in compiled errors] (backends/llvm/report.py)
        self.reports_locals, self.locals_sites, self.locals_buffer = report_locals, {}, None
        self.visible = [var for var in fn.params if shown(var)]
        self.exits: dict = {}           # scope → its error exit blocks (`error_exit`,
        #                                 `release_owned`)
        self.tracking: dict = {}        # For.site → its shared-write record (parallel.py)
        # Note [Array parameters do not overlap] (backends/llvm/alias.py)
        self.scopes = ParameterScopes(out, fn, distinct)
        super().__init__(self.builder)
        for k, (var, arg) in enumerate(zip(fn.params + fn.results, self.llfn.args[1:])):
            arg.name = local_name(var.name)
            if var in fn.results:
                self.results[var] = arg
            elif isinstance(var.type, ir.ArrayType):
                self.slots[var] = arg
                arg.add_attribute("noalias")
            elif isinstance(var.type, ir.StackType):
                self.slots[var] = arg
            else:
                local = self.entry_alloca(storage_type(var.type), var.name)
                back = "copy" if k in fn.written else "add" if k in fn.accumulated else None
                self.scalar_params.append((local, arg, back))
                self.slots[var] = local

    # ------------------------------------------------------------------ body
    def emit(self) -> None:
        # Note [Scalar parameters in locals]: a scalar argument is copied into a local
        # at the entry and back at the normal exit (`write_back`).  Locals are promoted
        # to registers, so a hot loop does not store an accumulator through a pointer
        # the optimiser must assume aliases the arrays (that had kept loops from
        # vectorising), and a view argument is copy-in/copy-out, as in the
        # interpreter.  After a failed check nothing is written back: the call raises.
        self.initial = {}
        self.scopes.declare(self.builder)
        for local, arg, back in self.scalar_params:
            value = self.builder.load(arg)
            self.builder.store(value, local)
            self.initial[local] = value
        for var, constant in self.fn.constants:
            self.slots[var] = self.constant_descriptor(constant, var.name)
        self.load_parameter_arrays(self.fn.params + tuple(v for v, _ in self.fn.constants))
        depth_ptr = self.ctx_word(abi.CTX_DEPTH)
        if self.counts_depth:
            depth = self.builder.add(self.builder.load(depth_ptr), ll.Constant(I64, 1))
            self.builder.store(depth, depth_ptr)
            too_deep = self.builder.icmp_signed(">", depth, self.builder.load(
                self.ctx_word(abi.CTX_MAX_DEPTH)))
            self.fail_if(too_deep, self.depth_site(), ())
        self.stack_arrays |= self.small_array_candidates(self.fn.body)
        self.emit_body(self.fn.body)
        if not self.builder.block.is_terminated:
            if self.counts_depth:
                self.builder.store(self.builder.sub(self.builder.load(depth_ptr),
                                                    ll.Constant(I64, 1)), depth_ptr)
            self.write_back()
            self.builder.ret(ll.Constant(I32, 0))
        self.scopes.tag(self.llfn)

    def write_back(self) -> None:
        """Scalar parameters back to the caller: written ones copied, accumulated ones
        (gradients of read-only views) added as the change, as the interpreter does
        (`adjoint.GradInterpreter._call_adjoint`), so that one gradient passed for
        two read-only parameters receives both contributions."""
        b = self.builder
        for local, arg, back in self.scalar_params:
            if back == "copy":
                b.store(b.load(local), arg)
            elif back == "add":
                b.store(self.add_change(b.load(arg), b.load(local), self.initial[local]), arg)

    def add_change(self, target, now, before):
        """target + (now − before), part by part for a complex."""
        b = self.builder
        if now.type != F64:
            for k in (0, 1):
                part = self.add_change(b.extract_value(target, k), b.extract_value(now, k),
                                       b.extract_value(before, k))
                target = b.insert_value(target, part, k)
            return target
        return b.fadd(target, b.fsub(now, before))

    def depth_site(self) -> int:
        return self.module.add_site(ir.Site("depth", self.fn.span, self.fn.name,
                                            self.fn.inverse))

    def emit_body(self, stmts) -> None:
        for run, plan in checked_runs(stmts, across=not self.reports_locals):
            with hoisting(self, plan):       # Note [Constant indices checked once]
                for stmt in run:
                    ir.visit(self, stmt)

    # ---------------------------------------------------------------- errors
    def fail_if(self, condition, site: int | None, values, record=None) -> None:
        """Branch to an error exit recording `site` and `values` when `condition`;
        `record()`, if given, emits more of the record there.  The exit frees the
        memory of the ancillas allocated so far (`release_owned`)."""
        if site is None:
            return
        fail = self.llfn.append_basic_block("fail")
        ok = self.llfn.append_basic_block("ok")
        self.cold_branch(condition, fail, ok)
        self.builder.position_at_end(fail)
        self.builder.store(ll.Constant(I64, site + 1), self.ctx_word(abi.CTX_SITE))
        ints = [v for v in values if v.type == I64]
        floats = [v for v in values if v.type == F64]
        for k, value in enumerate(ints[:4]):
            self.builder.store(value, self.ctx_word(abi.CTX_IVALS + k))
        for k, value in enumerate(floats[:4]):
            self.builder.store(self.builder.bitcast(value, I64),
                               self.ctx_word(abi.CTX_FVALS + k))
        if record is not None:
            record()
        self.builder.branch(self.error_exit())
        self.builder.position_at_end(ok)

    def error_exit(self):
        """The block that ends a failed call in the current scope: it reports the
        frame's variables, frees the ancillas' memory and returns 1.  One per scope
        (the variables shown, where they live), shared by all the failure branches
        there, so a loop with many checks holds one copy; where nothing is
        reported (derivative passes), the scope is the memory owned alone."""
        owned = tuple((var, id(self.slots[var]), id(self.on_stack.get(var)))
                      for var in self.owned)
        if not self.reports_locals:
            return self.release_owned(owned)
        key = ("report", tuple((var, id(self.slots.get(var))) for var in self.visible),
               owned)
        block = self.exits.get(key)
        if block is None:
            block = self.exits[key] = self.llfn.append_basic_block("error.exit")
            with self.builder.goto_block(block):
                self.report_locals()
                self.builder.branch(self.release_owned(owned))
        return block

    def value_for_report(self, value, t: str):
        """A value as an i64 or a double for the error record."""
        t = ir.representation(t)
        if t in ("f32", "f64"):
            return self.builder.fpext(value, F64) if t == "f32" else value
        if t == "bool":
            return self.builder.zext(value, I64)
        return self.builder.sext(value, I64) if t == "i32" else value

    # ---------------------------------------------------------------- places
    def address(self, place):
        """The pointer to a place's storage."""
        if isinstance(place, ir.VarPlace):
            slot = self.slots[place.var]
            return slot if place.field is None else self.part(slot, place.field)
        return self.element_pointer(place.var, place.indices, place.site, place.field)

    def load_place(self, place):
        return self.from_storage(self.builder.load(self.address(place)), place.type)

    def store_place(self, place, value) -> None:
        self.builder.store(self.to_storage(value, place.type), self.address(place))

    # ------------------------------------------------------------- statements
    def _update(self, stmt: ir.Update) -> None:
        target = stmt.target
        if isinstance(target, ir.ElemPlace) and stmt.alias_checks:
            target_indices = [self.expr(i) for i in target.indices]
            for indices, site in stmt.alias_checks:
                same = ll.Constant(I1, 1)
                for a, b in zip(target_indices, indices):
                    same = self.builder.and_(same, self.builder.icmp_signed("==", a,
                                                                            self.expr(b)))
                self.fail_if(same, site, ())
        pointer = self.address(target)
        value = self.checked_once(stmt.value)
        t = ir.representation(target.type)     # a ulog's logarithm goes up or down
        combines = UPDATE_TABLE[stmt.op].combines      # the IR has += -= ^= only
        # onto a zero (Note [Updates onto zeros], rlang/ir/onto_zeros.py): no load, and
        # `nsz` lets LLVM fold 0 ± v unless the zero's sign is kept (`signed_zero`)
        old = self.from_storage(ll.Constant(storage_type(target.type), 0) if stmt.onto_zero
                                else self.builder.load(pointer), target.type)
        if combines == "xor":
            new = self.builder.xor(old, value)
        elif t in ("f32", "f64"):
            flags = ("reassoc",) * stmt.reassociable + \
                ("nsz",) * (stmt.onto_zero and not stmt.signed_zero)
            wide = t == "f32" and stmt.value.type == "f64"     # Note [f32 updates]
            if wide:
                old = self.builder.fpext(old, ll.DoubleType())
            new = self.builder.fadd(old, value, flags=flags) if combines == "add" else \
                self.builder.fsub(old, value, flags=flags)
            if wide:
                new = self.builder.fptrunc(new, ll.FloatType())
        else:
            new = self.builder.add(old, value) if combines == "add" else \
                self.builder.sub(old, value)
        self.claim(target)
        self.builder.store(self.to_storage(new, t), pointer)

    def _instr(self, stmt: ir.Instr) -> None:
        emit_instr(self, stmt)          # backends/llvm/instructions.py

    def _alloc(self, stmt: ir.Alloc) -> None:
        self._allocate(stmt)
        if shown(stmt.var):
            self.visible.append(stmt.var)

    def _allocate(self, stmt: ir.Alloc) -> None:
        var = stmt.var
        if isinstance(var.type, (ir.ArrayType, ir.StackType)):
            if isinstance(var.type, ir.ArrayType):
                self._alloc_array(stmt)
            else:
                self.alloc_stack(stmt)
            self.owned.append(var)
            return
        slot = self.results.get(var) or self.entry_alloca(storage_type(var.type), var.name)
        self.slots[var] = slot
        if var.type == "complex":
            for k, part in enumerate(self.complex_parts(stmt.value)):
                self.builder.store(part, self.part(slot, k))
            return
        self.builder.store(self.to_storage(self.checked_once(stmt.value), var.type), slot)

    def complex_parts(self, value: ir.ComplexValue) -> tuple:
        return self.expr(value.re), self.expr(value.im)

    def constant_data(self, constant: ir.ConstArray):
        """A pointer to the elements of a constant array (a private global)."""
        elem = storage_type(constant.elem)
        values = [self.to_storage_constant(v, constant.elem) for v in constant.values]
        array_type = ll.ArrayType(elem, len(values))
        data = ll.GlobalVariable(self.out, array_type,
                                 name=self.out.get_unique_name("rev_const"))
        data.global_constant = True
        data.linkage = "private"
        data.initializer = ll.Constant(array_type, values)
        return self.builder.bitcast(data, elem.as_pointer())

    def to_storage_constant(self, value, t: str):
        if t == "bool":
            return ll.Constant(I8, int(bool(value)))
        if t == "complex":
            return ll.Constant(storage_type(t), [ll.Constant(F64, complex(value).real),
                                                 ll.Constant(F64, complex(value).imag)])
        return self.constant(value, t)

    def constant_descriptor(self, constant: ir.ConstArray, name: str):
        desc = self.entry_alloca(descriptor_type(len(constant.shape)), name)
        data = self.builder.bitcast(self.constant_data(constant), I8.as_pointer())
        self.fill_descriptor(desc, data, [ll.Constant(I64, n) for n in constant.shape])
        return desc

    def fill_descriptor(self, desc, data, dims) -> None:
        """Store data pointer, shape and C-order strides into a descriptor."""
        b = self.builder
        b.store(data, b.gep(desc, [ll.Constant(I32, 0), ll.Constant(I32, 0)]))
        stride = ll.Constant(I64, 1)
        for axis in reversed(range(len(dims))):
            b.store(dims[axis], b.gep(desc, [ll.Constant(I32, 0), ll.Constant(I32, 1),
                                             ll.Constant(I32, axis)]))
            b.store(stride, b.gep(desc, [ll.Constant(I32, 0), ll.Constant(I32, 2),
                                         ll.Constant(I32, axis)]))
            stride = b.mul(stride, dims[axis])

    def _alloc_array(self, stmt: ir.Alloc) -> None:
        var = stmt.var
        ndim = var.type.ndim
        desc = self.results.get(var) or self.entry_alloca(descriptor_type(ndim), var.name)
        dims = [self.expr(d) for d in stmt.dims]
        memory, count, size = self._array_size(stmt, dims)
        shown = dims if stmt.sites else ()
        data = self.array_data(stmt, count, size, memory, shown)
        self.fill_descriptor(desc, data, dims)
        if isinstance(stmt.value, ir.ConstArray):
            memcpy = self.runtime("memcpy", I8.as_pointer(),
                                  [I8.as_pointer(), I8.as_pointer(), I64])
            source = self.builder.bitcast(self.constant_data(stmt.value), I8.as_pointer())
            self.builder.call(memcpy, [data, source, size])
        elif isinstance(stmt.value, ir.Read):
            self.slots[var] = desc
            self.copy_elements(var, stmt.value.var)
        elif var.type.elem == "ulog":           # zero(ulog) is log 0 = -inf
            typed = self.builder.bitcast(data, F64.as_pointer())
            with counted_loop(self.builder, self.llfn, count, self.entry_alloca(I64, "i"),
                              "fill") as i:
                self.builder.store(ll.Constant(F64, float("-inf")), self.builder.gep(typed, [i]))
        self.slots[var] = desc

    def _array_size(self, stmt: ir.Alloc, dims):
        """Check the extents of a new array (none negative; the size in bytes fits an
        int64, as NumPy requires, the zero extents aside) and return (the site of a
        failed allocation, the element count, the size in bytes).  The failures are
        the interpreter's errors at the sites of `zeros(T, n…)` (ir.Alloc.sites);
        the allocation's failure records the shape for its message."""
        b = self.builder
        sites = self.module.allocation_sites(stmt, self.fn)
        for d, site in zip(dims, sites[1:]):
            self.fail_if(b.icmp_signed("<", d, ll.Constant(I64, 0)), site, [d])
        count, nonzero = ll.Constant(I64, 1), ll.Constant(I64, 1)
        overflow = ll.Constant(I1, 0)
        item = ll.Constant(I64, abi.ITEM_BYTES[stmt.var.type.elem])
        for factor in [*dims, item]:
            one_if_zero = b.select(b.icmp_signed("==", factor, ll.Constant(I64, 0)),
                                   ll.Constant(I64, 1), factor)
            product = b.smul_with_overflow(nonzero, one_if_zero)
            nonzero = b.extract_value(product, 0)
            overflow = b.or_(overflow, b.extract_value(product, 1))
            count = b.mul(count, factor) if factor is not item else count
        size = b.mul(count, item)
        self.fail_if(overflow, sites[0], [size],
                     record=self.shape_recorder(dims if stmt.sites else ()))
        return sites[0], count, size

    def _dealloc(self, stmt: ir.Dealloc) -> None:
        self._deallocate(stmt)
        if stmt.var in self.visible:
            self.visible.remove(stmt.var)

    def _deallocate(self, stmt: ir.Dealloc) -> None:
        var = stmt.var
        if isinstance(var.type, (ir.ArrayType, ir.StackType)):
            # freed by the failure exit of its own check too: owned until freed here
            if isinstance(var.type, ir.ArrayType):
                self._dealloc_array(stmt)
            else:
                self.dealloc_stack(stmt)
            if var in self.owned:
                self.owned.remove(var)
            return
        if stmt.site is not None and var.type == "complex":
            value = [self.builder.load(self.part(self.slots[var], k)) for k in (0, 1)]
            expected = self.complex_parts(stmt.value)
            self.fail_if(self.complex_differs(value, expected), stmt.site, value + list(expected))
        elif stmt.site is not None:
            value = self.from_storage(self.builder.load(self.slots[var]), var.type)
            expected = self.checked_once(stmt.value)
            t = stmt.value.type         # an integer against an f64: Note [Integers
            compared = value if t == var.type else self.to_f64(value, var.type)  # dealloc…]
            differs = self.values_differ(compared, expected, t)
            self.fail_if(differs, stmt.site, [self.value_for_report(value, var.type),
                                              self.value_for_report(expected, t)])

    def complex_differs(self, value, expected):
        """The check equality of complex numbers (rlang.interp.comparisons.values_equal): equal,
        or |value − expected| ≤ ATOL."""
        b = self.builder
        equal = b.and_(b.fcmp_ordered("==", value[0], expected[0]),
                       b.fcmp_ordered("==", value[1], expected[1]))
        distance = self.call_math("hypot", [b.fsub(value[0], expected[0]),
                                            b.fsub(value[1], expected[1])])
        close = b.fcmp_ordered("<=", distance, ll.Constant(F64, ATOL))
        return b.not_(b.or_(equal, close))

    def values_differ(self, value, expected, t: str):
        """The check equality of LANGUAGE.md §6: exact for integers, within ATOL for
        floats, two NaNs equal."""
        b = self.builder
        t = ir.representation(t)
        if t == "complex":
            return self.complex_differs([b.extract_value(value, k) for k in (0, 1)],
                                        [b.extract_value(expected, k) for k in (0, 1)])
        if t not in ("f32", "f64"):
            return b.icmp_signed("!=", value, expected)
        x, y = self.to_f64(value, t), self.to_f64(expected, t)
        equal = b.fcmp_ordered("==", x, y)
        close = b.fcmp_ordered("<=", self.call_math("fabs", [b.fsub(x, y)]),
                               ll.Constant(F64, ATOL))
        both_nan = b.and_(b.fcmp_unordered("uno", x, x), b.fcmp_unordered("uno", y, y))
        return b.not_(b.or_(b.or_(equal, close), both_nan))

    def _print(self, stmt: ir.Print) -> None:
        words = self.report_words([value for _, value in stmt.args if value is not None])
        buffer = self.entry_alloca(ll.ArrayType(F64, max(1, len(words))), "print")
        self.call_hook(PRINT_HOOK, stmt.site, words, buffer)

    def _assert(self, stmt: ir.Assert) -> None:
        self.fail_if(self.builder.not_(self.expr(stmt.cond)), stmt.site, ())

    # ----------------------------------------------------------- control flow
    def _if(self, stmt: ir.If) -> None:
        b = self.builder
        done = self.llfn.append_basic_block("if.end")
        taken_slot = self.entry_alloca(I64, "taken") if stmt.site is not None else None
        for k, branch in enumerate(stmt.branches):
            then = self.llfn.append_basic_block(f"if.then{k}")
            other = self.llfn.append_basic_block(f"if.else{k}")
            b.cbranch(self.expr(branch.pre), then, other)
            b.position_at_end(then)
            if taken_slot is not None:
                b.store(ll.Constant(I64, k), taken_slot)
            self.emit_body(branch.body)
            if not b.block.is_terminated:
                b.branch(done)
            b.position_at_end(other)
        if taken_slot is not None:
            b.store(ll.Constant(I64, len(stmt.branches)), taken_slot)
        self.emit_body(stmt.orelse)
        if not b.block.is_terminated:
            b.branch(done)
        b.position_at_end(done)
        if taken_slot is not None:
            self._check_if_posts(stmt, b.load(taken_slot))

    def _check_if_posts(self, stmt: ir.If, taken) -> None:
        """After branch `taken` (len(branches): else), its post holds and no earlier
        post does; the site of branch k is `stmt.site + k`."""
        b = self.builder
        for k, branch in enumerate(stmt.branches):
            holds = self.expr(branch.post)
            is_taken = b.icmp_signed("==", taken, ll.Constant(I64, k))
            earlier = b.icmp_signed(">", taken, ll.Constant(I64, k))
            bad = b.or_(b.and_(is_taken, b.not_(holds)), b.and_(earlier, holds))
            self.fail_if(bad, stmt.site + k, [taken])

    def _while(self, stmt: ir.While) -> None:
        b = self.builder
        if stmt.site is not None:
            self.fail_if(self.expr(stmt.post), stmt.site, [ll.Constant(I64, 0)])
        head = self.llfn.append_basic_block("while.head")
        body = self.llfn.append_basic_block("while.body")
        done = self.llfn.append_basic_block("while.end")
        b.branch(head)
        b.position_at_end(head)
        b.cbranch(self.expr(stmt.pre), body, done)
        b.position_at_end(body)
        self.emit_scope(stmt.body)
        if stmt.site is not None:
            self.fail_if(b.not_(self.expr(stmt.post)), stmt.site, [ll.Constant(I64, 1)])
        self.poll_preemption()      # Note [Leaving the quick code], tiers.py
        b.branch(head)
        b.position_at_end(done)

    def _from(self, stmt: ir.From) -> None:
        b = self.builder
        if stmt.site is not None:
            self.fail_if(b.not_(self.expr(stmt.start)), stmt.site, [ll.Constant(I64, 0)])
        body = self.llfn.append_basic_block("from.body")
        test = self.llfn.append_basic_block("from.test")
        step = self.llfn.append_basic_block("from.step")
        done = self.llfn.append_basic_block("from.end")
        b.branch(body)
        b.position_at_end(body)
        self.emit_scope(stmt.body)
        b.branch(test)
        b.position_at_end(test)
        b.cbranch(self.expr(stmt.stop), done, step)
        b.position_at_end(step)
        self.emit_scope(stmt.step)
        if stmt.site is not None:
            self.fail_if(self.expr(stmt.start), stmt.site, [ll.Constant(I64, 1)])
        self.poll_preemption()
        b.branch(body)
        b.position_at_end(done)

    def _for(self, stmt: ir.For) -> None:
        b = self.builder
        start, step, stop = (self.expr(e) for e in (stmt.start, stmt.step, stmt.stop))
        zero = ll.Constant(I64, 0)
        self.fail_if(b.icmp_signed("==", step, zero), stmt.step_site, ())
        # the index is computed from the iteration number, not carried
        if stmt.reverse_of is None:
            count, _ = self.trip_count(start, step, stop)
            first, stride = start, step
        else:           # a:s:b backward (Note [Loop inversion]): from its last value
            a, s, b_ = (self.expr(e) for e in stmt.reverse_of)
            count, steps = self.trip_count(a, s, b_)
            first = b.add(a, b.mul(steps, s))
            stride = b.sub(zero, s)
        plan = self.plans.get(id(stmt))
        done = None if plan is None else self.run_in_blocks(plan, count, first, stride)
        slot = self.entry_alloca(I64, stmt.var.name)
        self.slots[stmt.var] = slot
        counter = self.entry_alloca(I64, "iteration")
        tracking = self.start_tracking(stmt, first, stride)     # parallel.py
        with counted_loop(b, self.llfn, count, counter, "for") as n:
            index = b.add(first, b.mul(n, stride))
            b.store(index, slot)
            self.begin_iteration(tracking, n, index)
            self.emit_scope(stmt.body)
            if stmt.site is not None:
                now = b.load(slot)
                self.fail_if(b.icmp_signed("!=", now, index), stmt.site, [index, now])
            self.poll_preemption()
        self.stop_tracking(stmt, tracking)
        if done is not None:            # threaded.py: the blocks ran, or the loop inline
            b.branch(done)
            b.position_at_end(done)
        if stmt.site is not None:
            after = [self.expr(e) for e in (stmt.start, stmt.step, stmt.stop)]
            for k, (before, now) in enumerate(zip((start, step, stop), after)):
                self.fail_if(b.icmp_signed("!=", before, now), stmt.site + 1 + k,
                             [before, now, start, step])

    def trip_count(self, start, step, stop):
        """(count, steps): the number of values of `start:step:stop` (step nonzero),
        and the number of steps from the first value to the last (count - 1, not
        held; meaningless when the count is 0).  The count is exact for every
        i64 range but one: the distance is taken as unsigned, so a range wider than 2^63
        (where `stop - start` overflows) counts right: an unsigned count, which
        `counted_loop` compares unsigned (`0:typemax(i64)` has 2^63 values; read
        as signed, that count was negative and the loop ran no pass).  The one
        range of 2^64 values (all of i64, step 1) is held at 2^64 - 1 passes: the
        last would come centuries later."""
        b = self.builder
        zero, one = ll.Constant(I64, 0), ll.Constant(I64, 1)
        up = b.icmp_signed(">", step, zero)
        empty = b.select(up, b.icmp_signed("<", stop, start), b.icmp_signed("<", start, stop))
        distance = b.select(up, b.sub(stop, start), b.sub(start, stop))
        stride = b.select(up, step, b.sub(zero, step))
        passes = b.udiv(distance, stride)               # the count is passes + 1, held
        whole = b.icmp_unsigned("==", passes, ll.Constant(I64, -1))     # at 2^64 - 1
        count = b.select(whole, passes, b.add(passes, one))
        return b.select(empty, zero, count), passes

    # ----------------------------------------------------------------- calls
    def _call(self, stmt: ir.Call) -> None:
        b = self.builder
        if stmt.alias_site is not None:
            self._check_call_aliasing(stmt)
        before = self.values_before_call(stmt)         # parallel.py
        args = [self.ctx]
        for arg in stmt.args:
            args.append(self.address(arg))
        status = b.call(self.functions[stmt.callee], args)
        failed = b.icmp_signed("!=", status, ll.Constant(I32, 0))
        with b.if_then(failed, likely=False):
            count_ptr = self.ctx_word(abi.CTX_NFRAMES)     # Note [Deep call chains]
            count = b.load(count_ptr)
            head = ll.Constant(I64, abi.HEAD_FRAMES)
            ring = b.add(head, b.urem(b.sub(count, head), ll.Constant(I64, abi.TAIL_FRAMES)))
            slot = b.select(b.icmp_signed("<", count, head), count, ring)
            b.store(ll.Constant(I64, stmt.site),
                    b.gep(self.ctx, [b.add(slot, ll.Constant(I64, abi.CTX_FRAMES))]))
            b.store(b.add(count, ll.Constant(I64, 1)), count_ptr)
            b.branch(self.error_exit())         # (a failed call returns 1)
        self.claim_call_arguments(stmt, before)

    def _check_call_aliasing(self, stmt: ir.Call) -> None:
        """Written arguments must not overlap another argument: compare addresses
        (scalars, elements) and data pointers (arrays), as pointers (a `ptrtoint`
        would capture them: Note [Reports do not capture], backends/llvm/report.py)."""
        b = self.builder
        written = set(self.module.sites[stmt.alias_site].detail[1])
        # An array without elements shares memory with nothing (NumPy's rule): two
        # empty ancillas may have one address on the stack (a gradient pass's `y` and
        # its shadow, generated test in tests/backends/llvm/test_llvm_threads.py).
        pointers, empty = [], []
        for arg in stmt.args:
            if isinstance(arg, ir.VarPlace) and isinstance(arg.var.type, ir.ArrayType):
                data, shape, _ = self.array_parts(arg.var)
                pointers.append(b.bitcast(data, I8.as_pointer()))
                none = ll.Constant(I1, 0)
                for extent in shape:
                    none = b.or_(none, b.icmp_signed("==", extent, ll.Constant(I64, 0)))
                empty.append(none)
            else:
                pointers.append(b.bitcast(self.address(arg), I8.as_pointer()))
                empty.append(ll.Constant(I1, 0))
        for i in sorted(written):
            for j in range(len(pointers)):
                if j == i or (j in written and j < i):
                    continue
                same = b.and_(b.icmp_unsigned("==", pointers[i], pointers[j]),
                              b.not_(b.or_(empty[i], empty[j])))
                self.fail_if(same, stmt.alias_site, [ll.Constant(I64, i), ll.Constant(I64, j)])


