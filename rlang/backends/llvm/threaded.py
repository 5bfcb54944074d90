"""A planned `@parallel for` in the function that holds it: the call of Python's
thread pool, and the blocks run one after the other (Note [Parallel loops on
threads], rlang/ir/blocks.py).  A mixin of the function emitter
(backends/llvm/emit.py), which provides `builder`, `out`, `ctx`, `slots`,
`functions`, `plans`, `reports_locals` and the allocation helpers.

`run_in_blocks(plan, count, first, stride)` is emitted before the loop's inline
form: it leaves the builder where the inline loop goes and returns the block the
inline loop must branch to when it ends (the blocks have run when control reaches
that block from elsewhere).
"""
from __future__ import annotations

from llvmlite import ir as ll

from ...ir import nodes as ir
from ...ir.blocks import LANED_BLOCK, LIGHT_BLOCK, MAX_BLOCKS, SUMMED_PER_PASS, LoopPlan, private_type
from .. import abi
from .expr import counted_loop
from .types import I32, I64, I8

#: `int32 hook(int64 plan, int64 *ctx, void **outer, int64 first, int64 stride,
#: int64 count, int64 blocks)`: 0 when the blocks ran, 1 to run them here.
HOOK_TYPE = ll.FunctionType(I32, [I64, I64.as_pointer(), I8.as_pointer().as_pointer(),
                                  I64, I64, I64, I64])


class ThreadedLoopEmitter:
    def run_in_blocks(self, plan: LoopPlan, count, first, stride):
        """The pool's hook or the blocks in order for the loop of `plan` (count,
        first index and stride already computed); see the module docstring."""
        b = self.builder
        blocks = self._block_count(count, plan)
        dispatch = self.llfn.append_basic_block("blocks.dispatch")
        pool = self.llfn.append_basic_block("blocks.pool")
        here = self.llfn.append_basic_block("blocks.here")
        inline = self.llfn.append_basic_block("blocks.inline")
        done = self.llfn.append_basic_block("blocks.done")
        b.cbranch(b.icmp_unsigned(">=", blocks, ll.Constant(I64, 2)), dispatch, inline)
        b.position_at_end(dispatch)
        hook = b.load(self._parallel_hook())
        threads = b.load(self.ctx_word(abi.CTX_THREADS))
        usable = b.and_(b.icmp_signed(">", threads, ll.Constant(I64, 1)),
                        b.icmp_unsigned("!=", hook, ll.Constant(hook.type, None)))
        b.cbranch(usable, pool, here)
        b.position_at_end(pool)
        pointers = [b.bitcast(self.address(ir.VarPlace(v)), I8.as_pointer())
                    for v in plan.outer]
        status = b.call(self._dispatch_function(len(pointers)),
                        [hook, ll.Constant(I64, plan.number), self.ctx, first, stride,
                         count, blocks] + pointers)
        b.cbranch(b.icmp_signed("==", status, ll.Constant(I32, 0)), done, here)
        b.position_at_end(here)
        if plan.private or not self.reports_locals or plan.laned:
            # (a laned block cannot fail: Note [Iterations in lanes])
            self._blocks_here(plan, count, blocks, first, stride)
            b.branch(done)
        else:           # errors show this frame's variables: the loop runs inline
            b.branch(inline)
        b.position_at_end(inline)
        return done

    def _block_count(self, count, plan: LoopPlan):
        """ir/blocks.py `block_count`, on an unsigned count, and the sums' bound."""
        b = self.builder
        n = b.udiv(count, ll.Constant(I64, LANED_BLOCK)) if plan.laned else count \
            if plan.threaded.heavy else b.udiv(count, ll.Constant(I64, LIGHT_BLOCK))
        n = _least(b, n, ll.Constant(I64, MAX_BLOCKS))
        summed = ll.Constant(I64, 1)
        for var in plan.private:
            if isinstance(var.type, ir.ArrayType):
                summed = b.add(summed, self.expr(ir.Dim(var, None)))
        return _least(b, n, b.udiv(b.mul(count, ll.Constant(I64, SUMMED_PER_PASS)), summed))

    def _block_start(self, k, count, blocks):
        """ir/blocks.py `block_start`."""
        b = self.builder
        share, rest = b.udiv(count, blocks), b.urem(count, blocks)
        return b.add(b.mul(k, share), b.select(b.icmp_unsigned("<", k, rest), k, rest))

    def _blocks_here(self, plan: LoopPlan, count, blocks, first, stride) -> None:
        """Every block in order, each with zeroed private sums added in after it;
        without private sums, all the passes in one call of the block function
        (nothing is summed across passes, so how they are grouped changes no bit,
        and a block call per 16 passes of a laned loop cost a fifth of its time)."""
        b = self.builder
        words = [self.entry_alloca(I64, name) for name in ("first", "stride", "lo", "hi")]
        b.store(first, words[0])
        b.store(stride, words[1])
        if not plan.private:
            b.store(ll.Constant(I64, 0), words[2])
            b.store(count, words[3])
            self._call_outlined(plan.threaded.block,
                                [self.address(ir.VarPlace(v)) for v in plan.outer] + words)
            return
        counter = self.entry_alloca(I64, "block")
        with counted_loop(b, self.llfn, blocks, counter, "block") as k:
            b.store(self._block_start(k, count, blocks), words[2])
            b.store(self._block_start(b.add(k, ll.Constant(I64, 1)), count, blocks), words[3])
            mine = {v: ir.Var(f"{v.name}·block", private_type(v.type))
                    for v in plan.private}
            for target, var in mine.items():
                self._allocate(_zeroed(var, target))
            args = [self.address(ir.VarPlace(mine.get(v, v))) for v in plan.outer]
            self._call_outlined(plan.threaded.block, args + words)
            if plan.threaded.reduce is not None:
                pairs = [self.address(ir.VarPlace(v)) for t, m in mine.items() for v in (t, m)]
                self._call_outlined(plan.threaded.reduce, pairs)
            for var in mine.values():
                self._deallocate(ir.Dealloc(var, None, None))

    def _call_outlined(self, symbol: str, pointers: list) -> None:
        """Call a block or reduction function; its failure is this function's (no
        frame of its own: the failed check's site names the loop's function)."""
        b = self.builder
        callee = self.functions[symbol]
        args = [b.bitcast(p, t) for p, t in zip(pointers, callee.function_type.args[1:])]
        status = b.call(callee, [self.ctx] + args)
        failed = b.icmp_signed("!=", status, ll.Constant(I32, 0))
        with b.if_then(failed, likely=False):
            b.branch(self.error_exit())

    def _parallel_hook(self):
        hook = self.out.globals.get(abi.PARALLEL_HOOK)
        if hook is None:
            hook = ll.GlobalVariable(self.out, HOOK_TYPE.as_pointer(), name=abi.PARALLEL_HOOK)
            hook.initializer = ll.Constant(HOOK_TYPE.as_pointer(), None)
        return hook

    def _dispatch_function(self, count: int):
        """`int32 rev_parallel_<count>(hook, plan, ctx, first, stride, count, blocks,
        i8 *p…)`: the pointers into an array, hook(…, array, …), the array cleared:
        the pointers reach the hook without escaping (Note [Reports do not capture],
        backends/llvm/report.py)."""
        from .report import _NO_CAPTURE

        name = f"rev_parallel_{count}"
        existing = self.out.globals.get(name)
        if existing is not None:
            return existing
        params = [HOOK_TYPE.as_pointer(), I64, I64.as_pointer(), I64, I64, I64, I64] + \
            [I8.as_pointer()] * count
        fn = ll.Function(self.out, ll.FunctionType(I32, params), name=name)
        fn.linkage = "internal"
        for attribute in ("noinline", "nounwind"):
            fn.attributes.add(attribute)
        for pointer in fn.args[7:]:
            pointer.add_attribute(_NO_CAPTURE)
        b = ll.IRBuilder(fn.append_basic_block("entry"))
        array = b.alloca(ll.ArrayType(I8.as_pointer(), max(1, count)))
        slots = [b.gep(array, [ll.Constant(I32, 0), ll.Constant(I32, k)])
                 for k in range(count)]
        for slot, pointer in zip(slots, fn.args[7:]):
            b.store(pointer, slot)
        first_slot = b.gep(array, [ll.Constant(I32, 0), ll.Constant(I32, 0)])
        hook, plan, ctx, first, stride, passes, blocks = fn.args[:7]
        status = b.call(hook, [plan, ctx, first_slot, first, stride, passes, blocks])
        for slot in slots:
            b.store(ll.Constant(I8.as_pointer(), None), slot)
        b.ret(status)
        return fn


def _least(b: ll.IRBuilder, x, y):
    """The unsigned minimum."""
    return b.select(b.icmp_unsigned("<", x, y), x, y)


def _zeroed(var: ir.Var, target: ir.Var) -> ir.Alloc:
    """The allocation of a block's zeroed sums of `target`."""
    if isinstance(target.type, ir.ArrayType):
        return ir.Alloc(var, dims=tuple(ir.Dim(target, axis)
                                        for axis in range(target.type.ndim)))
    zero = ir.Const(0.0, "f64")
    return ir.Alloc(var, ir.ComplexValue(zero, zero) if var.type == "complex" else zero)
