"""Large array ancillas' memory, kept from one call for the next: the compiled
functions `rev_block_take`/`rev_block_give` that every heap ancilla goes through,
and the process-wide table of kept blocks they share (installed into each loaded
module by `install`, emptied by `release_kept_blocks`).

Note [Large ancillas kept between calls]
~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
A recurrence kept in an ancilla array (`s ← zeros(f64, n + 1)`, n = 2·10^6) needs
16 MB for `s` and, in its gradient pass, 16 MB more for `s`'s gradient.  calloc
takes such blocks from fresh pages (glibc maps them, or gives its heap's top back
to the system when they are freed), and every page then faults twice in the loop
that fills it: once when its zero is read (`s[i] += …` reads before it writes),
once more when it is written.  The gradient spent about 30 of its 44–55 ms in the
kernel (perf: page faults, clearing pages, unmapping).  NumPy pays the faults
too; a caller running the same function again and again (an optimiser, a
sampler) pays them on every call.

So freed heap ancillas of at least KEEP_FROM bytes are kept, up to KEEP_SLOTS
blocks and KEEP_BUDGET bytes in all, in a table shared by every compiled module of
the process, and the next ancilla that fits (a kept block of its size up to twice
it) takes one and zeroes it with memset, whose pages are already there: the
gradient above went from 44 ms to 15 ms (benchmarks/primal_speed.py).  Each block
carries a 16-byte header holding its size (the data stays 16-byte aligned).
Taking and giving swap slots atomically (`xchg`, `cmpxchg`), so `@parallel for`
bodies and threaded calls may share the table; a block is only read after its
taker owns it.  Memory a program frees stays with the process, at most
KEEP_BUDGET bytes of it: the price of the speed, as with any allocator that
caches; `release_kept_blocks()` gives it back.  Compiled code loaded elsewhere (a
shared library of `rlang compile --emit shared`) finds the table's global null and
uses calloc and free alone, with the same headers.  main's store, whose arrays
Python frees, is allocated with plain calloc (backends/llvm/ancillas.py).
"""
from __future__ import annotations

import ctypes
import threading

from llvmlite import ir as ll

from .types import I1, I64, I8

#: The global that points to the table of kept blocks (null: keep none).
KEPT_BLOCKS = "rev_kept_blocks"
#: Blocks smaller than this are not kept (glibc reuses its heap for them).
KEEP_FROM = 1 << 20
#: How many blocks, and how many bytes in all, the table keeps.
KEEP_SLOTS = 8
KEEP_BUDGET = 256 << 20
#: The bytes before each block's data: its size.
HEADER = 16

_POINTER = I8.as_pointer()


def block_functions(out: ll.Module) -> tuple:
    """(`i8* rev_block_take(i64 size)`, `void rev_block_give(i8* data)`) of the
    module `out`, defined on first use.  take gives `size` zero bytes, or null when
    the memory cannot be had; give takes back what take gave."""
    take = out.globals.get("rev_block_take")
    if take is None:
        take = _define_take(out)
        _define_give(out)
    return take, out.globals["rev_block_give"]


def _table(out: ll.Module):
    table = out.globals.get(KEPT_BLOCKS)
    if table is None:
        table = ll.GlobalVariable(out, _POINTER.as_pointer(), name=KEPT_BLOCKS)
        table.initializer = ll.Constant(_POINTER.as_pointer(), None)
    return table


def _function(out: ll.Module, name: str, ret, args) -> ll.Function:
    fn = ll.Function(out, ll.FunctionType(ret, args), name=name)
    fn.linkage = "internal"
    fn.attributes.add("noinline")
    fn.attributes.add("nounwind")
    return fn


def _libc(out: ll.Module, name: str, ret, args) -> ll.Function:
    existing = out.globals.get(name)
    return existing if existing is not None else ll.Function(out, ll.FunctionType(ret, args),
                                                             name=name)


def _counter(b: ll.IRBuilder, table):
    """The table's word after its slots: the bytes its blocks hold."""
    return b.bitcast(b.gep(table, [ll.Constant(I64, KEEP_SLOTS)]), I64.as_pointer())


def _define_take(out: ll.Module) -> ll.Function:
    fn = _function(out, "rev_block_take", _POINTER, [I64])
    fn.return_value.add_attribute("noalias")
    size = fn.args[0]
    calloc = _libc(out, "calloc", _POINTER, [I64, I64])
    free = _libc(out, "free", ll.VoidType(), [_POINTER])
    memset = out.declare_intrinsic("llvm.memset", [_POINTER, I64])
    b = ll.IRBuilder(fn.append_basic_block("entry"))
    fresh = fn.append_basic_block("fresh")
    table = b.load(_table(out))
    keeps = b.and_(b.icmp_unsigned("!=", table, ll.Constant(table.type, None)),
                   b.icmp_unsigned(">=", size, ll.Constant(I64, KEEP_FROM)))
    slot = fn.append_basic_block("slot0")
    b.cbranch(keeps, slot, fresh)
    for j in range(KEEP_SLOTS):
        b.position_at_end(slot)
        following = fn.append_basic_block(f"slot{j + 1}") if j + 1 < KEEP_SLOTS else fresh
        place = b.gep(table, [ll.Constant(I64, j)])
        block = b.atomic_rmw("xchg", place, ll.Constant(_POINTER, None), "acq_rel")
        owned = fn.append_basic_block(f"owned{j}")
        b.cbranch(b.icmp_unsigned("!=", block, ll.Constant(_POINTER, None)), owned, following)
        b.position_at_end(owned)
        kept = b.load(b.bitcast(block, I64.as_pointer()))
        fits = b.and_(b.icmp_unsigned(">=", kept, size),
                      b.icmp_unsigned("<=", b.sub(kept, size), size))
        with b.if_else(fits) as (then, otherwise):
            with then:
                b.atomic_rmw("sub", _counter(b, table), kept, "monotonic")
                data = b.gep(block, [ll.Constant(I64, HEADER)])
                b.call(memset, [data, ll.Constant(I8, 0), size, ll.Constant(I1, 0)])
                b.ret(data)
            with otherwise:             # not this one: back into its slot, or freed
                back = b.cmpxchg(place, ll.Constant(_POINTER, None), block, "acq_rel",
                                 "monotonic")
                with b.if_then(b.not_(b.extract_value(back, 1))):
                    b.atomic_rmw("sub", _counter(b, table), kept, "monotonic")
                    b.call(free, [block])
        b.branch(following)
        slot = following
    b.position_at_end(fresh)
    block = b.call(calloc, [b.add(size, ll.Constant(I64, HEADER)), ll.Constant(I64, 1)])
    failed = b.icmp_unsigned("==", block, ll.Constant(_POINTER, None))
    with b.if_then(failed):
        b.ret(block)
    b.store(size, b.bitcast(block, I64.as_pointer()))
    b.ret(b.gep(block, [ll.Constant(I64, HEADER)]))
    return fn


def _define_give(out: ll.Module) -> ll.Function:
    fn = _function(out, "rev_block_give", ll.VoidType(), [_POINTER])
    free = _libc(out, "free", ll.VoidType(), [_POINTER])
    b = ll.IRBuilder(fn.append_basic_block("entry"))
    block = b.gep(fn.args[0], [ll.Constant(I64, -HEADER)])
    table = b.load(_table(out))
    size = b.load(b.bitcast(block, I64.as_pointer()))
    keeps = b.and_(b.icmp_unsigned("!=", table, ll.Constant(table.type, None)),
                   b.icmp_unsigned(">=", size, ll.Constant(I64, KEEP_FROM)))
    with b.if_then(b.not_(keeps)):
        b.call(free, [block])
        b.ret_void()
    held = b.atomic_rmw("add", _counter(b, table), size, "monotonic")
    over = b.icmp_unsigned(">", b.add(held, size), ll.Constant(I64, KEEP_BUDGET))
    drop = fn.append_basic_block("drop")
    slot = fn.append_basic_block("slot0")
    b.cbranch(over, drop, slot)
    for j in range(KEEP_SLOTS):
        b.position_at_end(slot)
        following = fn.append_basic_block(f"slot{j + 1}") if j + 1 < KEEP_SLOTS else drop
        put = b.cmpxchg(b.gep(table, [ll.Constant(I64, j)]), ll.Constant(_POINTER, None),
                        block, "acq_rel", "monotonic")
        with b.if_then(b.extract_value(put, 1)):
            b.ret_void()
        b.branch(following)
        slot = following
    b.position_at_end(drop)
    b.atomic_rmw("sub", _counter(b, table), size, "monotonic")
    b.call(free, [block])
    b.ret_void()
    return fn


# ------------------------------------------------------------------ Python's side

#: The process's table: KEEP_SLOTS block addresses (0: empty), then the bytes held.
_TABLE = (ctypes.c_void_p * (KEEP_SLOTS + 1))()
_LOCK = threading.Lock()
_libc_free = ctypes.CDLL(None).free
_libc_free.argtypes = [ctypes.c_void_p]
_libc_free.restype = None


def install(engine) -> None:
    """Point a loaded module's table global (if it has one) at the process's table."""
    address = engine.get_global_value_address(KEPT_BLOCKS)
    if address:
        ctypes.c_void_p.from_address(address).value = ctypes.addressof(_TABLE)


def kept_bytes() -> int:
    """The bytes the table holds now."""
    return _TABLE[KEEP_SLOTS] or 0


def release_kept_blocks() -> int:
    """Free every kept block (compiled code running meanwhile is safe: a block is
    taken out of its slot before it is freed); returns the bytes given back."""
    released = 0
    with _LOCK:
        for j in range(KEEP_SLOTS):
            address = ctypes.addressof(_TABLE) + j * ctypes.sizeof(ctypes.c_void_p)
            block = _exchange_null(address)
            if block:
                size = ctypes.c_int64.from_address(block).value
                _subtract_held(size)
                _libc_free(block)
                released += size
    return released


def _exchange_null(address: int) -> int:
    """Atomically take the pointer at `address`, leaving null (via the compiled
    swap: Python has no atomic exchange of its own)."""
    return _swap()(address)


def _subtract_held(size: int) -> None:
    _add()(ctypes.addressof(_TABLE) + KEEP_SLOTS * ctypes.sizeof(ctypes.c_void_p), -size)


_helpers: dict = {}


def _swap():
    if "swap" not in _helpers:
        _build_helpers()
    return _helpers["swap"]


def _add():
    if "add" not in _helpers:
        _build_helpers()
    return _helpers["add"]


def _build_helpers() -> None:
    """Two tiny compiled functions: an atomic swap with null and an atomic add."""
    import llvmlite.binding as llvm

    llvm.initialize_native_target()
    llvm.initialize_native_asmprinter()
    module = ll.Module("kept_blocks")
    swap = ll.Function(module, ll.FunctionType(I64, [I64]), name="swap")
    b = ll.IRBuilder(swap.append_basic_block("entry"))
    b.ret(b.atomic_rmw("xchg", b.inttoptr(swap.args[0], I64.as_pointer()),
                       ll.Constant(I64, 0), "acq_rel"))
    add = ll.Function(module, ll.FunctionType(ll.VoidType(), [I64, I64]), name="add")
    b = ll.IRBuilder(add.append_basic_block("entry"))
    b.atomic_rmw("add", b.inttoptr(add.args[0], I64.as_pointer()), add.args[1], "monotonic")
    b.ret_void()
    machine = llvm.Target.from_default_triple().create_target_machine()
    engine = llvm.create_mcjit_compiler(llvm.parse_assembly(str(module)), machine)
    engine.finalize_object()
    _helpers["engine"] = engine
    _helpers["swap"] = ctypes.CFUNCTYPE(ctypes.c_uint64, ctypes.c_uint64)(
        engine.get_function_address("swap"))
    _helpers["add"] = ctypes.CFUNCTYPE(None, ctypes.c_uint64, ctypes.c_int64)(
        engine.get_function_address("add"))
