"""Where compiled array ancillas live: the stack or the heap (a mixin of the
function emitter in llvm_emit.py, which provides `builder`, `llfn`, `results`,
`recursive`, `runtime`, `entry_alloca`, `fail_if`, `module`, `fn` and
`emit_body`, and sets `stack_arrays` and `on_stack` to empty)."""
from __future__ import annotations

from llvmlite import ir as ll

from .. import ir
from . import abi
from .llvm_expr import I1, I8, I64


# Note [Small array ancillas]
# ~~~~~~~~~~~~~~~~~~~~~~~~~~~
# A function that allocates its array ancillas per call or per loop pass (GMM's
# `gmm_point!` allocates three for each data point) spent a third of its time in
# calloc and free.  An array ancilla that the same statement list allocates and
# deallocates (a function body or a loop body: a scope, Note [Scopes] in
# rlang/check.py, which every ancilla leaves deallocated) is therefore placed on the
# stack when its size, known at run time, is at most SMALL_ARRAY_BYTES: a dynamic
# alloca, zeroed with memset.  A loop body that does so saves the stack pointer at
# the start of each pass and restores it at the end, so a loop of any length uses
# the stack of one pass; the deallocation frees only heap memory (an i1 slot says
# which it was).  Larger arrays, ancillas allocated in nested statements (`if`
# branches), `main`'s store (handed to Python) and every ancilla of a recursive
# function (whose depth only the depth limit bounds) come from calloc as before.

#: Array ancillas up to this many bytes live on the stack (Note [Small array ancillas]).
SMALL_ARRAY_BYTES = 4096




class AncillaEmitter:
    def _allocate_heap(self, var: ir.Var, count, size):
        """Zeroed memory from calloc; failing to get it is an error of the program."""
        data = self.builder.call(self.runtime("calloc", I8.as_pointer(), [I64, I64]),
                                 [count, ll.Constant(I64, abi.ITEM_BYTES[var.type.elem])])
        failed = self.builder.icmp_unsigned("==", data, ll.Constant(I8.as_pointer(), None))
        self.fail_if(self.builder.and_(failed, self.builder.icmp_signed(
            ">", size, ll.Constant(I64, 0))), self.module.add_site(ir.Site(
                "zeros_memory", None, self.fn.name, self.fn.inverse, (var.name,))), [size])
        return data

    def _allocate_small_or_heap(self, var: ir.Var, count, size):
        """Zeroed memory on the stack when `size` is at most SMALL_ARRAY_BYTES, from
        the heap otherwise; which one is remembered for the deallocation (Note [Small
        array ancillas])."""
        b = self.builder
        small = b.icmp_unsigned("<=", size, ll.Constant(I64, SMALL_ARRAY_BYTES))
        on_stack = self.entry_alloca(I1, var.name + ".on_stack")
        b.store(small, on_stack)
        self.on_stack[var] = on_stack
        stack_block = self.llfn.append_basic_block("alloc.stack")
        heap_block = self.llfn.append_basic_block("alloc.heap")
        done = self.llfn.append_basic_block("alloc.done")
        b.cbranch(small, stack_block, heap_block)
        b.position_at_end(stack_block)
        local = b.alloca(I8, size=size, name=ir.c_identifier(var.name) + ".data")
        local.align = 16
        b.call(self.runtime("llvm.memset.p0i8.i64", ll.VoidType(),
                            [I8.as_pointer(), I8, I64, I1]),
               [local, ll.Constant(I8, 0), size, ll.Constant(I1, 0)])
        b.branch(done)
        b.position_at_end(heap_block)
        heap = self._allocate_heap(var, count, size)
        heap_end = b.block
        b.branch(done)
        b.position_at_end(done)
        data = b.phi(I8.as_pointer())
        data.add_incoming(local, stack_block)
        data.add_incoming(heap, heap_end)
        return data

    def _free_array(self, var: ir.Var, data) -> None:
        b = self.builder
        free = self.runtime("free", ll.VoidType(), [I8.as_pointer()])
        pointer = b.bitcast(data, I8.as_pointer())
        if var not in self.on_stack:
            b.call(free, [pointer])
            return
        with b.if_then(b.not_(b.load(self.on_stack[var]))):
            b.call(free, [pointer])

    def emit_scope(self, stmts) -> None:
        """Emit a loop body (a scope, Note [Scopes] in rlang/check.py): its small
        array ancillas live on the stack, given back at the end of each pass."""
        small = self.small_array_candidates(stmts)
        if not small:
            self.emit_body(stmts)
            return
        self.stack_arrays |= small
        saved = self.builder.call(self.runtime("llvm.stacksave", I8.as_pointer(), []), [])
        self.emit_body(stmts)
        self.builder.call(self.runtime("llvm.stackrestore", ll.VoidType(), [I8.as_pointer()]),
                          [saved])

    def small_array_candidates(self, stmts) -> set:
        """The array ancillas that `stmts` allocates and deallocates itself (not in
        nested statements), outside recursive functions and `main`'s store."""
        if self.recursive:
            return set()
        allocated = {s.var for s in stmts if isinstance(s, ir.Alloc)
                     and isinstance(s.var.type, ir.ArrayType) and s.var not in self.results}
        return allocated & {s.var for s in stmts if isinstance(s, ir.Dealloc)}

