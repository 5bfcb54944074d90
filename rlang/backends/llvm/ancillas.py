"""Compiled array ancillas: where they live (the stack or the heap), their copies,
the checks of their deallocation, and their freeing on an error exit (a mixin of
the function emitter in backends/llvm/emit.py, which provides `builder`, `llfn`,
`results`, `recursive`, `runtime`, `entry_alloca`, `fail_if`, `ctx_word`, `module`,
`fn`, `slots`, `free_stack`, `emit_body` and the expression helpers, and sets
`stack_arrays`, `on_stack` and `exits` to empty)."""
from __future__ import annotations

from llvmlite import ir as ll

from ...ir import nodes as ir
from .. import abi
from .expr import counted_loop, loop_hints
from .kept_block_code import block_functions, raw_block_take
from .types import F64, I1, I32, I64, I8, local_name


# Note [Small array ancillas]
# ~~~~~~~~~~~~~~~~~~~~~~~~~~~
# A function that allocates its array ancillas per call or per loop pass (GMM's
# `gmm_point!` allocates three for each data point) spent a third of its time in
# calloc and free.  An array ancilla that the same statement list allocates and
# deallocates (a function body or a loop body: a scope, Note [Scopes] in
# rlang/frontend/check.py, which every ancilla leaves deallocated) is therefore placed on the
# stack when its size, known at run time, is at most SMALL_ARRAY_BYTES: a dynamic
# alloca, zeroed by a loop of 8-byte stores (Note [Zeroing without memset]).  A
# loop body that does so saves the stack pointer at the start of each pass and
# restores it at the end, so a loop of any length uses the stack of one pass; the deallocation frees only heap memory (an i1 slot says
# which it was).  Larger arrays, ancillas allocated in nested statements (`if`
# branches), `main`'s store (handed to Python) and every ancilla of a recursive
# function (whose depth only the depth limit bounds) come from the heap (Note
# [Large ancillas kept between calls], backends/llvm/kept_blocks.py).

# Note [Zeroing without memset]
# ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
# An ancilla's first update reads the zero it was just given (`ms[k] +=
# max(ms[k - 1], v[k])`, `qx[k, j] += …`): an 8-byte load from memory that the
# zeroing wrote a moment before.  Such a load is forwarded from the store only if
# that store was one the load can be served from; otherwise it waits until the
# store reaches the cache.  glibc's memset writes fewer than 64 bytes with one
# masked AVX-512 store, which never forwards: with memset, the first updates of
# GMM's small ancillas stalled on every data point, a fifth of the forward time at
# d = 2 (GMM d = 2, K = 5: 167 → 149 µs without it; d = 10 with invcheck on 3.18 →
# 2.92 ms).  A vectorised zeroing loop did the same where its 32-byte stores fell
# badly: the d = 10 forward with invcheck on but unchecked routines ran 1.62 or
# 1.30 ms depending on where the stack put `qx`.  Stack ancillas are therefore
# zeroed by a loop of 8-byte stores that is neither vectorised nor interleaved
# (loop metadata), and LLVM's loop idiom recognition, which would turn it back
# into a memset, is off for our modules (backends/llvm/jit.py).  Heap ancillas come zeroed
# from calloc.

#: Array ancillas up to this many bytes live on the stack (Note [Small array ancillas]).
SMALL_ARRAY_BYTES = 4096




class AncillaEmitter:
    def array_data(self, stmt: ir.Alloc, count, size, site: int, dims=()):
        """The memory of the array `stmt` allocates: on the stack or from the heap
        (Note [Small array ancillas]), zeroed unless nothing reads its zeros (Note
        [Arrays written before they are read], rlang/ir/first_writes.py)."""
        zeroed = not stmt.written_first
        if stmt.var in self.stack_arrays:
            return self._allocate_small_or_heap(stmt.var, count, size, site, dims, zeroed)
        return self._allocate_heap(stmt.var, count, size, site, dims, zeroed)

    def _allocate_heap(self, var: ir.Var, count, size, site: int, dims=(), zeroed=True):
        """Zeroed memory from the heap (not zeroed without `zeroed`: Note [Arrays
        written before they are read], rlang/ir/first_writes.py): through
        rev_block_take (Note [Large ancillas kept between calls]), or from calloc
        for main's store, which Python frees; failing to get it is an error of the
        program, reported at `site` (with the extents `dims` recorded, for its
        message)."""
        b = self.builder
        if var in self.results:
            data = b.call(self.runtime("calloc", I8.as_pointer(), [I64, I64]),
                          [count, ll.Constant(I64, abi.ITEM_BYTES[var.type.elem])])
        else:
            take = block_functions(self.out)[0] if zeroed else raw_block_take(self.out)
            data = b.call(take, [size])
        failed = b.icmp_unsigned("==", data, ll.Constant(I8.as_pointer(), None))
        self.fail_if(b.and_(failed, b.icmp_signed(">", size, ll.Constant(I64, 0))), site,
                     [size], record=self.shape_recorder(dims))
        return data

    def shape_recorder(self, dims):
        """A `record` for fail_if that stores the extents `dims` in the error record's
        shape words (None for none; the first abi.ARRAY_DIMS of more)."""
        def record():
            for axis, d in enumerate(dims[:abi.ARRAY_DIMS]):
                self.builder.store(d, self.ctx_word(abi.CTX_SHAPE + axis))
        return record if dims else None

    def _allocate_small_or_heap(self, var: ir.Var, count, size, site: int, dims=(),
                                zeroed=True):
        """Zeroed memory (unless not `zeroed`) on the stack when `size` is at most
        SMALL_ARRAY_BYTES, from the heap otherwise; which one is remembered for the
        deallocation (Note [Small array ancillas])."""
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
        words = b.udiv(b.add(size, ll.Constant(I64, 7)), ll.Constant(I64, 8))
        local = b.alloca(I64, size=words, name=local_name(var.name) + ".data")
        local.align = 16
        if zeroed:
            zeroing = counted_loop(b, self.llfn, words, self.entry_alloca(I64, "i"), "zero")
            with zeroing as i:      # Note [Zeroing without memset]: 8-byte stores
                b.store(ll.Constant(I64, 0), b.gep(local, [i]))
            zeroing.back_edge.set_metadata("llvm.loop", loop_hints(
                self.out, vectorize_width=1, interleave_count=1))
        local = b.bitcast(local, I8.as_pointer())
        stack_block = b.block
        b.branch(done)
        b.position_at_end(heap_block)
        heap = self._allocate_heap(var, count, size, site, dims, zeroed)
        heap_end = b.block
        b.branch(done)
        b.position_at_end(done)
        data = b.phi(I8.as_pointer())
        data.add_incoming(local, stack_block)
        data.add_incoming(heap, heap_end)
        return data

    def _free_array(self, var: ir.Var, data) -> None:
        b = self.builder
        free = self.runtime("free", ll.VoidType(), [I8.as_pointer()]) \
            if var in self.results else block_functions(self.out)[1]
        pointer = b.bitcast(data, I8.as_pointer())
        if var not in self.on_stack:
            b.call(free, [pointer])
            return
        with b.if_then(b.not_(b.load(self.on_stack[var]))):
            b.call(free, [pointer])

    def release_owned(self, owned: tuple):
        """The block that frees the buffers of `owned` ((ancilla, ids of its slot and
        of its on-stack flag): the stacks and arrays allocated and not yet
        deallocated, oldest first; on an error exit the call raises and nothing
        reads them), newest first, and returns 1.  It frees the newest and goes on
        to the block for the rest, so scopes that own the same oldest ancillas
        share their frees."""
        block = self.exits.get(("free", owned))
        if block is not None:
            return block
        block = self.exits[("free", owned)] = self.llfn.append_basic_block(
            "error.free" if owned else "error.return")
        with self.builder.goto_block(block):
            if not owned:
                self.builder.ret(ll.Constant(I32, 1))
                return block
            var = owned[-1][0]
            if isinstance(var.type, ir.StackType):
                self.free_stack(self.slots[var])
            else:
                zero = ll.Constant(I32, 0)
                self._free_array(var, self.builder.load(
                    self.builder.gep(self.slots[var], [zero, zero])))
            self.builder.branch(self.release_owned(owned[:-1]))
        return block

    def emit_scope(self, stmts) -> None:
        """Emit a loop body (a scope, Note [Scopes] in rlang/frontend/check.py): its small
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

    def _dealloc_array(self, stmt: ir.Dealloc) -> None:
        var = stmt.var
        data, shape, _ = self.array_parts(var)
        if stmt.site is not None:
            count = ll.Constant(I64, 1)
            for extent in shape:
                count = self.builder.mul(count, extent)
            zeros_shape = [self.expr(d) for d in stmt.shape]    # `a → zeros(T, n…)`
            if isinstance(stmt.value, ir.Read):
                nonzero = self.count_mismatches(var, stmt.value.var)
            else:
                expected = zeros_shape if stmt.shape else \
                    [ll.Constant(I64, n) for n in stmt.value.shape] \
                    if isinstance(stmt.value, ir.ConstArray) else shape
                nonzero = self.count_with_shape(shape, expected, lambda: (
                    self._count_differences(stmt, data, count)))
            against = self.module.sites[stmt.site].detail[2]

            def record_both():      # what the message shows (llvm_errors._dealloc_array)
                self.record_array_items(var, abi.CTX_ITEMS, abi.CTX_SHAPE)
                if against == "array":
                    self.record_array_items(stmt.value.var, abi.CTX_EXPECTED_ITEMS,
                                            abi.CTX_EXPECTED_SHAPE)
                for axis, d in enumerate(zeros_shape):
                    self.builder.store(d, self.ctx_word(abi.CTX_EXPECTED_SHAPE + axis))
            record = record_both if against != "literal" and \
                max(var.type.ndim, len(stmt.shape)) <= abi.ARRAY_DIMS else None
            self.fail_if(self.builder.icmp_signed("!=", nonzero, ll.Constant(I64, 0)),
                         stmt.site, [nonzero, ll.Constant(I64, int(record is not None))],
                         record=record)
        self._free_array(var, data)

    def record_array_items(self, var: ir.Var, word: int, shape_word: int) -> None:
        """Copy an array's extents into the error record from ctx word `shape_word` on,
        and its first elements in C order (at most abi.STACK_ITEMS) from `word` on."""
        b = self.builder
        data, shape, strides = self.array_parts(var)
        size = ll.Constant(I64, 1)
        for axis, extent in enumerate(shape):
            b.store(extent, self.ctx_word(shape_word + axis))
            size = b.mul(size, extent)
        shown = b.select(b.icmp_unsigned("<", size, ll.Constant(I64, abi.STACK_ITEMS)),
                         size, ll.Constant(I64, abi.STACK_ITEMS))
        items = b.bitcast(self.ctx_word(word), data.type)
        with counted_loop(b, self.llfn, shown, self.entry_alloca(I64, "i"), "record") as i:
            offset, rest = ll.Constant(I64, 0), i
            for axis in reversed(range(len(shape))):       # the C-order index i unravelled
                index = b.urem(rest, shape[axis])
                rest = b.udiv(rest, shape[axis])
                offset = b.add(offset, b.mul(index, strides[axis]))
            b.store(b.load(b.gep(data, [offset])), b.gep(items, [i]))

    def _count_differences(self, stmt: ir.Dealloc, data, count):
        """How many of the `count` elements at `data` differ from the ConstArray
        `stmt.value`, or (no value) are not zero."""
        var, b = stmt.var, self.builder
        if isinstance(stmt.value, ir.ConstArray):
            return b.call(self.mismatch_count_function(var.type.elem),
                          [data, self.constant_data(stmt.value), count])
        if var.type.elem == "complex":     # all zero: both parts of every one
            return b.call(self.nonzero_count_function("f64"), [
                b.bitcast(data, F64.as_pointer()), b.mul(count, ll.Constant(I64, 2))])
        return b.call(self.nonzero_count_function(var.type.elem), [data, count])

    def count_with_shape(self, shape, expected, count_same):
        """`count_same()` (emitted code: a count of differing elements) where the
        extents `shape` are `expected`, else 1: arrays of different shapes differ."""
        b = self.builder
        if len(shape) != len(expected):
            return ll.Constant(I64, 1)
        same_shape = ll.Constant(I1, 1)
        for n, m in zip(shape, expected):
            same_shape = b.and_(same_shape, b.icmp_signed("==", n, m))
        count = self.entry_alloca(I64, "differences")
        with b.if_else(same_shape) as (then, otherwise):
            with then:
                b.store(count_same(), count)
            with otherwise:
                b.store(ll.Constant(I64, 1), count)
        return b.load(count)

    def count_mismatches(self, var: ir.Var, other: ir.Var):
        """How many elements of two arrays of one type differ (the check equality);
        arrays of different shapes count as all different."""
        b = self.builder
        _, shape, _ = self.array_parts(var)
        _, other_shape, _ = self.array_parts(other)

        def count_same():
            count = self.entry_alloca(I64, "mismatches")
            b.store(ll.Constant(I64, 0), count)

            def add_mismatch(pointer, other_pointer):
                x = self.from_storage(b.load(pointer), var.type.elem)
                y = self.from_storage(b.load(other_pointer), var.type.elem)
                differs = self.values_differ(x, y, var.type.elem)
                b.store(b.add(b.load(count), b.zext(differs, I64)), count)

            self.over_elements(var, other, add_mismatch)
            return b.load(count)
        return self.count_with_shape(shape, other_shape, count_same)

    def copy_elements(self, var: ir.Var, source: ir.Var) -> None:
        """Copy every element of `source` into the array `var` of the same shape."""
        self.over_elements(var, source, lambda to, source_pointer: self.builder.store(
            self.builder.load(source_pointer), to))

    def over_elements(self, var: ir.Var, other: ir.Var, visit) -> None:
        """Nested loops over every index of `var`'s shape, calling `visit(pointer,
        other_pointer)` with the element pointers of `var` and `other` there."""
        b = self.builder
        data, shape, strides = self.array_parts(var)
        other_data, _, other_strides = self.array_parts(other)

        def level(axis, offset, other_offset):
            if axis == len(shape):
                visit(b.gep(data, [offset]), b.gep(other_data, [other_offset]))
                return
            with counted_loop(b, self.llfn, shape[axis], self.entry_alloca(I64, "i"),
                              "each") as i:
                level(axis + 1, b.add(offset, b.mul(i, strides[axis])),
                      b.add(other_offset, b.mul(i, other_strides[axis])))

        level(0, ll.Constant(I64, 0), ll.Constant(I64, 0))
