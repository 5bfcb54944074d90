"""Pairs of entry-point calls repeated in native code: a Hessian's column groups
without a return to Python between them (Note [Hessian groups in one call]).

`prepared(native, symbol, values, max_depth)` packs one call of an entry point once
(`PreparedCall`: its function's address, context and argument pointers, and the
address of each scalar argument's storage), and `run_groups(plan)` runs the loop
below over two prepared calls, as `plan` (a `GroupPlan`) lays out the memory:

    for start = 0, lanes, 2·lanes, … < n:
        copy every `restore` triple (destination, source, bytes)
        zero every `zero` pair (address, bytes)
        for lane l < min(lanes, n − start): store 1.0 at seeds[l·n + start + l]
        status = forward(ctx, args);  if status: stop
        copy every `between` triple;  store 1.0 at `loss`
        status = backward(ctx, args); if status: stop
        for lane l, for i < n: hessian[i·n + start + l] = load gathers[l·n + i]

It returns 0, or the status of the call that failed; the caller then runs the
groups again one call at a time, which raises that call's error as usual.

Note [Hessian groups in one call]
~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
A laned Hessian (Note [Hessians in lanes], ad/hessian_lanes.py) of the 10 × 10
graph embedding is 13 groups, each two native calls of 15 and 30 µs.  Driven from
Python, each group also made its shadows, packed both calls and read the columns
back: about 40 µs a group, half the Hessian's time.  Every one of those steps is a
copy, a zeroing, a store of 1.0 or a gather at addresses that stay the same from
group to group, so they are worked out once, as address tables, and a small
routine compiled once per process does the rest.  It knows nothing of the function
differentiated: only of entry points (rlang/backends/abi.py) and of memory.
"""
from __future__ import annotations

import ctypes
import threading
from dataclasses import dataclass

import llvmlite.binding as llvm
import llvmlite.ir as lir
import numpy as np

from .jit import target_machine

_LOCK = threading.Lock()
_RUNNER: list = []      # [engine, ctypes function], made on first use


@dataclass
class PreparedCall:
    """One call of an entry point, packed: run it with `function(ctx, args)`."""

    function: int           # the entry point's address
    ctx: int
    args: int
    keep: tuple             # the packed buffer and the values, kept alive

    def storage(self, position: int) -> int:
        """The address of the storage of the scalar argument at `position`."""
        return ctypes.c_uint64.from_address(self.args + 8 * position).value


def prepared(native, symbol: str, values: list, max_depth: int) -> PreparedCall:
    """`values` packed for a call of `symbol` of the NativeModule `native`."""
    function, layout = native.entry_of(symbol)
    buffer = layout.pack(values, max_depth, native.threads())
    return PreparedCall(ctypes.cast(function, ctypes.c_void_p).value, layout.ctx(buffer),
                        layout.args(buffer), (buffer, list(values), function))


@dataclass
class GroupPlan:
    """The memory of `run_groups`' loop (see the module docstring); every table is
    an int64 NumPy array of addresses (and byte counts)."""

    forward: PreparedCall
    backward: PreparedCall
    n: int
    lanes: int
    restore: np.ndarray     # (k, 3): destination, source, bytes
    zero: np.ndarray        # (k, 2): address, bytes
    seeds: np.ndarray       # (lanes · n,)
    between: np.ndarray     # (k, 3)
    loss: int
    gathers: np.ndarray     # (lanes · n,)
    hessian: np.ndarray     # (n, n) float64, C order


def run_groups(plan: GroupPlan) -> int:
    """Run the loop; 0, or the status of the call that failed."""
    tables = [np.ascontiguousarray(t, dtype=np.int64) for t in
              (plan.restore, plan.zero, plan.seeds, plan.between, plan.gathers)]
    restore, zero, seeds, between, gathers = tables
    words = np.array([plan.forward.function, plan.forward.ctx, plan.forward.args,
                      plan.backward.function, plan.backward.ctx, plan.backward.args,
                      plan.n, plan.lanes, restore.ctypes.data, len(restore),
                      zero.ctypes.data, len(zero), seeds.ctypes.data,
                      between.ctypes.data, len(between), plan.loss, gathers.ctypes.data,
                      plan.hessian.ctypes.data], dtype=np.int64)
    return _runner()(words.ctypes.data)


def _runner():
    with _LOCK:
        if not _RUNNER:
            machine = target_machine()
            module = llvm.parse_assembly(str(_routine()))
            module.verify()
            engine = llvm.create_mcjit_compiler(module, machine)
            engine.finalize_object()
            address = engine.get_function_address("rev_run_groups")
            _RUNNER[:] = [engine, ctypes.CFUNCTYPE(ctypes.c_int32, ctypes.c_void_p)(address)]
        return _RUNNER[1]


# the words of the plan `run_groups` passes
(_FORWARD, _FORWARD_CTX, _FORWARD_ARGS, _BACKWARD, _BACKWARD_CTX, _BACKWARD_ARGS, _N,
 _LANES, _RESTORE, _RESTORES, _ZERO, _ZEROS, _SEEDS, _BETWEEN, _BETWEENS, _LOSS,
 _GATHERS, _HESSIAN) = range(18)

_I64, _I32, _I8 = lir.IntType(64), lir.IntType(32), lir.IntType(8)
_F64 = lir.DoubleType()


def _routine() -> lir.Module:
    """The LLVM IR of `int32 rev_run_groups(int64 *plan)`."""
    module = lir.Module("rev_groups")
    module.triple = llvm.get_process_triple()
    i8p = _I8.as_pointer()
    memcpy = module.declare_intrinsic("llvm.memcpy", [i8p, i8p, _I64])
    memset = module.declare_intrinsic("llvm.memset", [i8p, _I64])
    entry_type = lir.FunctionType(_I32, [i8p, i8p]).as_pointer()
    fn = lir.Function(module, lir.FunctionType(_I32, [_I64.as_pointer()]), "rev_run_groups")
    b = lir.IRBuilder(fn.append_basic_block("entry"))
    plan = fn.args[0]

    def word(k):
        return b.load(b.gep(plan, [lir.Constant(_I64, k)]))

    def table(k):
        return b.inttoptr(word(k), _I64.as_pointer())

    def at(pointer, index):
        return b.load(b.gep(pointer, [index]))

    n, lanes = word(_N), word(_LANES)
    restore, zero, seeds = table(_RESTORE), table(_ZERO), table(_SEEDS)
    between, gathers = table(_BETWEEN), table(_GATHERS)
    hessian = b.inttoptr(word(_HESSIAN), _F64.as_pointer())
    one = lir.Constant(_F64, 1.0)
    counters = [b.alloca(_I64) for _ in range(3)]

    def loop(counter, count, body):
        """for counter = 0 … count − 1: body(index)."""
        b.store(lir.Constant(_I64, 0), counter)
        test = fn.append_basic_block()
        inside = fn.append_basic_block()
        done = fn.append_basic_block()
        b.branch(test)
        b.position_at_end(test)
        index = b.load(counter)
        b.cbranch(b.icmp_signed("<", index, count), inside, done)
        b.position_at_end(inside)
        body(index)
        b.store(b.add(b.load(counter), lir.Constant(_I64, 1)), counter)
        b.branch(test)
        b.position_at_end(done)

    def copies(pointer, count):
        def one_copy(k):
            base = b.mul(k, lir.Constant(_I64, 3))
            parts = [at(pointer, b.add(base, lir.Constant(_I64, j))) for j in range(3)]
            b.call(memcpy, [b.inttoptr(parts[0], i8p), b.inttoptr(parts[1], i8p), parts[2],
                            lir.Constant(lir.IntType(1), 0)])
        loop(counters[1], count, one_copy)

    def call(function, ctx, args, failed):
        status = b.call(b.inttoptr(word(function), entry_type),
                        [b.inttoptr(word(ctx), i8p), b.inttoptr(word(args), i8p)])
        ok = fn.append_basic_block()
        b.cbranch(b.icmp_signed("!=", status, lir.Constant(_I32, 0)), failed(status), ok)
        b.position_at_end(ok)

    def failed(status):
        block = fn.append_basic_block()
        here = b.block
        b.position_at_end(block)
        b.ret(status)
        b.position_at_end(here)
        return block

    start = b.alloca(_I64)
    b.store(lir.Constant(_I64, 0), start)
    test, group, done = (fn.append_basic_block() for _ in range(3))
    b.branch(test)
    b.position_at_end(test)
    b.cbranch(b.icmp_signed("<", b.load(start), n), group, done)
    b.position_at_end(group)
    first = b.load(start)
    left = b.sub(n, first)
    count = b.select(b.icmp_signed("<", left, lanes), left, lanes)
    copies(restore, word(_RESTORES))

    def one_zero(k):
        base = b.mul(k, lir.Constant(_I64, 2))
        address = at(zero, base)
        size = at(zero, b.add(base, lir.Constant(_I64, 1)))
        b.call(memset, [b.inttoptr(address, i8p), lir.Constant(_I8, 0), size,
                        lir.Constant(lir.IntType(1), 0)])
    loop(counters[1], word(_ZEROS), one_zero)

    def seed(lane):
        address = at(seeds, b.add(b.mul(lane, n), b.add(first, lane)))
        b.store(one, b.inttoptr(address, _F64.as_pointer()))
    loop(counters[0], count, seed)
    call(_FORWARD, _FORWARD_CTX, _FORWARD_ARGS, failed)
    copies(between, word(_BETWEENS))
    b.store(one, b.inttoptr(word(_LOSS), _F64.as_pointer()))
    call(_BACKWARD, _BACKWARD_CTX, _BACKWARD_ARGS, failed)

    def gather(lane):
        def row(i):
            address = at(gathers, b.add(b.mul(lane, n), i))
            value = b.load(b.inttoptr(address, _F64.as_pointer()))
            b.store(value, b.gep(hessian, [b.add(b.mul(i, n), b.add(first, lane))]))
        loop(counters[2], n, row)
    loop(counters[0], count, gather)
    b.store(b.add(first, lanes), start)
    b.branch(test)
    b.position_at_end(done)
    b.ret(lir.Constant(_I32, 0))
    return module
