"""The LLVM IR of kept blocks (Note [Large ancillas kept between calls],
backends/llvm/kept_blocks.py): each module's `rev_block_take`/`rev_block_give`
(`block_functions`), and the process's routines behind their hooks (`routines`).

Note [Allocators LLVM can see]
~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
LLVM knows calloc and free: memory from calloc is zero and belongs to no one
else, a pointer given to free is not kept, and stores into memory freed next are
dead.  Behind opaque `rev_block_take`/`rev_block_give`, GMM's gradient (which
allocates and frees heap ancillas for every data point) ran 2.5× slower (d = 32,
K = 5, n = 1000: 3.3 → 8.3 ms): `rev_block_give` took the pointer as far as LLVM
knew, so the ancilla escaped and loops over it and the arguments got run-time
overlap checks instead of their vector code.  So `rev_block_give`'s pointer is
`captures(none)` (free's promise: the caller never uses it again; the kept-blocks
table is not the caller's business), and the pair carries the attributes of an
allocator family of its own (`allockind("alloc,zeroed")` and `allocsize(0)`;
`allockind("free")` with `allocptr`; `"alloc-family"="rev_block"`), never inlined,
so that LLVM treats their calls as calloc's and free's.  With `captures(none)`
alone the gradient took 5.5 ms and the forward 1.9 against 1.3 ms; with both,
3.4 ms and 1.3 ms, as with calloc and free.
"""
from __future__ import annotations

import types

from llvmlite import ir as ll

from ..abi import GIVE_HOOK, TAKE_HOOK, TAKE_RAW_HOOK
from .types import I1, I64, I8

#: Blocks smaller than this are not kept: glibc reuses its heap for them (its mmap
#: threshold starts at 128 KiB; Note [Large ancillas kept between calls]).
KEEP_FROM = 1 << 17
#: How many blocks, and how many bytes in all, the table keeps.
KEEP_SLOTS = 8
KEEP_BUDGET = 256 << 20
#: The bytes before each block's data: its size.
HEADER = 16

_POINTER = I8.as_pointer()
_FAMILY = "rev_block"
_TAKE = ll.FunctionType(_POINTER, [I64])
_GIVE = ll.FunctionType(ll.VoidType(), [_POINTER])


# ------------------------------------------------------------ in every module

def block_functions(out: ll.Module) -> tuple:
    """(`i8* rev_block_take(i64 size)`, `void rev_block_give(i8* data)`) of the
    module `out`, defined on first use: take gives `size` zero bytes (null when the
    memory cannot be had), give takes back what take gave; through the process's
    routines where the hooks are set, by calloc and free where not."""
    take = out.globals.get("rev_block_take")
    if take is None:
        take = _wrapper(out, "rev_block_take", _TAKE, TAKE_HOOK)
        _wrapper(out, "rev_block_give", _GIVE, GIVE_HOOK)
    return take, out.globals["rev_block_give"]


def raw_block_take(out: ll.Module) -> ll.Function:
    """`i8* rev_block_take_raw(i64 size)` of the module `out`: `size` bytes that
    need not be zero (Note [Arrays written before they are read],
    rlang/ir/first_writes.py), given back by `rev_block_give`; through the
    process's routines where the hook is set, by malloc where not."""
    block_functions(out)
    take = out.globals.get("rev_block_take_raw")
    return take if take is not None else \
        _wrapper(out, "rev_block_take_raw", _TAKE, TAKE_RAW_HOOK, zeroed=False)


class _AllocatorAttributes(ll.values.FunctionAttributes):
    """Function attributes llvmlite does not list: those that make LLVM treat a
    function as calloc or free (Note [Allocators LLVM can see])."""
    _known = ll.values.FunctionAttributes._known | {
        'allockind("alloc,zeroed")', 'allockind("alloc,uninitialized")',
        'allockind("free")', "allocsize(0)",
        f'"alloc-family"="{_FAMILY}"'}


class _FreedArgument(ll.values.ArgumentAttributes):
    _known = types.MappingProxyType({**ll.values.ArgumentAttributes._known,
                                     "allocptr": False})


def _wrapper(out: ll.Module, name: str, kind: ll.FunctionType, hook_name: str,
             zeroed: bool = True):
    fn = ll.Function(out, kind, name=name)
    fn.linkage = "internal"
    allocates = kind is _TAKE
    zeros = "zeroed" if zeroed else "uninitialized"
    fn.attributes = _AllocatorAttributes([
        "nounwind", "noinline", f'"alloc-family"="{_FAMILY}"',
        *([f'allockind("alloc,{zeros}")', "allocsize(0)"] if allocates else
          ['allockind("free")'])])
    if allocates:
        fn.return_value.add_attribute("noalias")
    else:
        fn.args[0].attributes = _FreedArgument(["allocptr", "captures(none)"])
    hook = ll.GlobalVariable(out, kind.as_pointer(), name=hook_name)
    hook.initializer = ll.Constant(kind.as_pointer(), None)
    b = ll.IRBuilder(fn.append_basic_block("entry"))
    routine = b.load(hook)
    with b.if_then(b.icmp_unsigned("!=", routine, ll.Constant(routine.type, None))):
        result = b.call(routine, list(fn.args))
        b.ret(result) if kind is _TAKE else b.ret_void()
    if kind is _TAKE and zeroed:
        b.ret(b.call(_libc(out, "calloc", _POINTER, [I64, I64]),
                     [fn.args[0], ll.Constant(I64, 1)]))
    elif kind is _TAKE:
        b.ret(b.call(_libc(out, "malloc", _POINTER, [I64]), [fn.args[0]]))
    else:
        b.call(_libc(out, "free", ll.VoidType(), [_POINTER]), [fn.args[0]])
        b.ret_void()
    return fn


def _libc(out: ll.Module, name: str, ret, args) -> ll.Function:
    existing = out.globals.get(name)
    return existing if existing is not None else ll.Function(out, ll.FunctionType(ret, args),
                                                             name=name)


# ------------------------------------------------------- the process's routines

def routines() -> ll.Module:
    """`rev_kept_take`, `rev_kept_take_raw` (which does not zero), `rev_kept_give`
    (the hooks' targets), `rev_kept_release`
    (frees every kept block, returns their bytes) and `rev_kept_held` over one
    table: KEEP_SLOTS block addresses, then the bytes the blocks hold."""
    out = ll.Module("rev_kept_blocks")
    table = ll.GlobalVariable(out, ll.ArrayType(_POINTER, KEEP_SLOTS + 1), name="rev_kept_table")
    table.initializer = ll.Constant(table.value_type, None)
    table.linkage = "internal"
    _define_take(out, table, "rev_kept_take", zeroed=True)
    _define_take(out, table, "rev_kept_take_raw", zeroed=False)
    _define_give(out, table)
    _define_release(out, table)
    held = ll.Function(out, ll.FunctionType(I64, []), name="rev_kept_held")
    b = ll.IRBuilder(held.append_basic_block("entry"))
    counter = _counter(b, table)
    b.ret(b.load_atomic(counter, "monotonic", 8))
    return out


def _slot(b: ll.IRBuilder, table, j):
    return b.gep(table, [ll.Constant(I64, 0), j if isinstance(j, ll.Value) else
                         ll.Constant(I64, j)])


def _counter(b: ll.IRBuilder, table):
    """The table's word after its slots: the bytes its blocks hold."""
    return b.bitcast(_slot(b, table, KEEP_SLOTS), I64.as_pointer())


def _define_take(out: ll.Module, table, name: str, zeroed: bool) -> None:
    fn = ll.Function(out, _TAKE, name=name)
    size = fn.args[0]
    calloc = _libc(out, "calloc", _POINTER, [I64, I64])
    malloc = _libc(out, "malloc", _POINTER, [I64])
    free = _libc(out, "free", ll.VoidType(), [_POINTER])
    memset = out.declare_intrinsic("llvm.memset", [_POINTER, I64])
    b = ll.IRBuilder(fn.append_basic_block("entry"))
    fresh = fn.append_basic_block("fresh")
    slot = fn.append_basic_block("slot0")
    b.cbranch(b.icmp_unsigned(">=", size, ll.Constant(I64, KEEP_FROM)), slot, fresh)
    for j in range(KEEP_SLOTS):
        b.position_at_end(slot)
        following = fn.append_basic_block(f"slot{j + 1}") if j + 1 < KEEP_SLOTS else fresh
        place = _slot(b, table, j)
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
                if zeroed:
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
    whole = b.add(size, ll.Constant(I64, HEADER))
    block = b.call(calloc, [whole, ll.Constant(I64, 1)]) if zeroed else \
        b.call(malloc, [whole])
    with b.if_then(b.icmp_unsigned("==", block, ll.Constant(_POINTER, None))):
        b.ret(block)
    b.store(size, b.bitcast(block, I64.as_pointer()))
    b.ret(b.gep(block, [ll.Constant(I64, HEADER)]))


def _define_give(out: ll.Module, table) -> None:
    fn = ll.Function(out, _GIVE, name="rev_kept_give")
    free = _libc(out, "free", ll.VoidType(), [_POINTER])
    b = ll.IRBuilder(fn.append_basic_block("entry"))
    block = b.gep(fn.args[0], [ll.Constant(I64, -HEADER)])
    size = b.load(b.bitcast(block, I64.as_pointer()))
    with b.if_then(b.icmp_unsigned("<", size, ll.Constant(I64, KEEP_FROM))):
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
        put = b.cmpxchg(_slot(b, table, j), ll.Constant(_POINTER, None), block, "acq_rel",
                        "monotonic")
        with b.if_then(b.extract_value(put, 1)):
            b.ret_void()
        b.branch(following)
        slot = following
    b.position_at_end(drop)
    b.atomic_rmw("sub", _counter(b, table), size, "monotonic")
    b.call(free, [block])
    b.ret_void()


def _define_release(out: ll.Module, table) -> None:
    fn = ll.Function(out, ll.FunctionType(I64, []), name="rev_kept_release")
    free = _libc(out, "free", ll.VoidType(), [_POINTER])
    b = ll.IRBuilder(fn.append_basic_block("entry"))
    released = b.alloca(I64)
    b.store(ll.Constant(I64, 0), released)
    for j in range(KEEP_SLOTS):
        block = b.atomic_rmw("xchg", _slot(b, table, j), ll.Constant(_POINTER, None),
                             "acq_rel")
        with b.if_then(b.icmp_unsigned("!=", block, ll.Constant(_POINTER, None))):
            size = b.load(b.bitcast(block, I64.as_pointer()))
            b.atomic_rmw("sub", _counter(b, table), size, "monotonic")
            b.call(free, [block])
            b.store(b.add(b.load(released), size), released)
    b.ret(b.load(released))
