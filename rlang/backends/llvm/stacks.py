"""LLVM IR for stacks (Note [Stacks in the IR], rlang/ir/nodes.py): the stack half of
backends/llvm/emit.py.

A stack is the struct `{i8 *data, i64 length, i64 capacity}` (`STACK_TYPE`; C:
`rev_stack`), its items stored bottom first as array elements of its type are.  A
stack ancilla is such a struct in the function's frame; a stack parameter is a
pointer to the caller's, so a callee's pushes (which may move the buffer) are seen
by the caller.  The buffer is malloc/realloc/free memory: Python fills and frees
the buffers of stack arguments and of `main`'s store (backends/llvm/jit.py).

`StackEmitter` is a mixin of the function emitter (llvm_emit._FunctionEmitter):
the statements `Push` and `Pop`, and the allocation, deallocation and length of
stack variables.  The buffer grows by doubling through one helper per module,
`rev_stack_grow`, which reports a failed realloc (or a size past 2^63 bytes)
instead of writing out of bounds.
"""
from __future__ import annotations

from llvmlite import ir as ll

from ...ir import nodes as ir
from .. import abi
from .expr import counted_loop
from .types import F64, I1, I32, I64, I8, storage_type

STACK_TYPE = ll.LiteralStructType([I8.as_pointer(), I64, I64])
_DATA, _LENGTH, _CAPACITY = 0, 1, 2
#: The capacity of a stack's first buffer (items).
FIRST_CAPACITY = 16


def field(builder, stack, k: int):
    """The pointer to field k (`_DATA`, `_LENGTH`, `_CAPACITY`) of a stack struct."""
    return builder.gep(stack, [ll.Constant(I32, 0), ll.Constant(I32, k)])


class StackEmitter:
    """Stack statements; mixed into the function emitter (which provides `builder`,
    `slots`, `address`, `fail_if`, `runtime`, `ctx_word`, `out`, …)."""

    # --------------------------------------------------------------- helpers
    def stack_items(self, stack, elem: str):
        """The data pointer of a stack struct, typed to its items."""
        raw = self.builder.load(field(self.builder, stack, _DATA))
        return self.builder.bitcast(raw, storage_type(elem).as_pointer())

    def stack_length(self, var: ir.Var):
        return self.builder.load(field(self.builder, self.slots[var], _LENGTH))

    def free_stack(self, stack) -> None:
        """Free a stack's buffer (free(NULL) does nothing)."""
        self.builder.call(self.runtime("free", ll.VoidType(), [I8.as_pointer()]),
                          [self.builder.load(field(self.builder, stack, _DATA))])

    def stack_for_print(self, var: ir.Var) -> list:
        """A stack for the print hook: its data pointer (passed uncaptured, Note
        [Reports do not capture]) and its length as the bits of a double
        (llvm_errors.print_line reads the items)."""
        b = self.builder
        stack = self.slots[var]
        data = b.bitcast(b.load(field(b, stack, _DATA)), I8.as_pointer())
        return [data, b.bitcast(b.load(field(b, stack, _LENGTH)), F64)]

    def zero_item(self, elem: str):
        """zero(T) in storage form."""
        return self.to_storage_constant({"ulog": float("-inf"), "complex": 0j}.get(elem, 0),
                                        elem)

    # ------------------------------------------------------------ statements
    def alloc_stack(self, stmt: ir.Alloc) -> None:
        """An empty stack, or (`value` the Read of a stack) a copy of that stack."""
        var = stmt.var
        slot = self.results.get(var) or self.entry_alloca(STACK_TYPE, var.name)
        self.slots[var] = slot
        b = self.builder
        b.store(ll.Constant(I8.as_pointer(), None), field(b, slot, _DATA))
        b.store(ll.Constant(I64, 0), field(b, slot, _LENGTH))
        b.store(ll.Constant(I64, 0), field(b, slot, _CAPACITY))
        if stmt.value is not None:
            self.copy_stack(var, self.slots[stmt.value.var])

    def copy_stack(self, var: ir.Var, source) -> None:
        """Fill the empty stack `var` with the items of the stack struct `source`."""
        b = self.builder
        slot, size = self.slots[var], abi.ITEM_BYTES[var.type.elem]
        length = b.load(field(b, source, _LENGTH))
        with b.if_then(b.icmp_signed(">", length, ll.Constant(I64, 0))):
            status = b.call(self.grow_function(), [slot, ll.Constant(I64, size), length])
            self.fail_if(b.trunc(status, I1), self.module.add_site(ir.Site(
                "stack_memory", None, self.fn.name, self.fn.inverse, (var.name,))), [length])
            memcpy = self.runtime("memcpy", I8.as_pointer(), [I8.as_pointer(), I8.as_pointer(),
                                                              I64])
            b.call(memcpy, [b.load(field(b, slot, _DATA)), b.load(field(b, source, _DATA)),
                            b.mul(length, ll.Constant(I64, size))])
            b.store(length, field(b, slot, _LENGTH))

    def dealloc_stack(self, stmt: ir.Dealloc) -> None:
        """With a site, the stack must be empty (`value` None) or equal the stack
        `value` reads, item by item; the failure records both lengths and the first
        items of both (llvm_errors shows them as the interpreter does)."""
        b = self.builder
        stack, elem = self.slots[stmt.var], stmt.var.type.elem
        if stmt.site is not None:
            length = b.load(field(b, stack, _LENGTH))
            other = None if stmt.value is None else self.slots[stmt.value.var]
            other_length = ll.Constant(I64, 0) if other is None else \
                b.load(field(b, other, _LENGTH))

            def record_items():
                self.record_stack_items(stack, length, elem, abi.CTX_ITEMS)
                if other is not None:
                    self.record_stack_items(other, other_length, elem, abi.CTX_EXPECTED_ITEMS)

            differs = b.icmp_signed("!=", length, other_length)
            if other is not None:
                differs = b.or_(differs, self.stacks_differ(stack, other, length, elem))
            self.fail_if(differs, stmt.site, [length, other_length], record=record_items)
        self.free_stack(stack)

    def record_stack_items(self, stack, length, elem: str, word: int) -> None:
        """Copy the first items (at most abi.STACK_ITEMS) of a stack into the error
        record from ctx word `word` on."""
        b = self.builder
        shown = b.select(b.icmp_unsigned("<", length, ll.Constant(I64, abi.STACK_ITEMS)),
                         length, ll.Constant(I64, abi.STACK_ITEMS))
        memcpy = self.runtime("memcpy", I8.as_pointer(), [I8.as_pointer(), I8.as_pointer(), I64])
        target = b.bitcast(self.ctx_word(word), I8.as_pointer())
        b.call(memcpy, [target, b.load(field(b, stack, _DATA)),
                        b.mul(shown, ll.Constant(I64, abi.ITEM_BYTES[elem]))])

    def stacks_differ(self, stack, other, length, elem: str):
        """Whether two stacks (of at least `length` items each, or of different
        lengths, which the caller tests first) differ in one of their first `length`
        items by the check equality (`values_differ`)."""
        b = self.builder
        found = self.entry_alloca(I1, "stack.differs")
        b.store(ll.Constant(I1, 0), found)
        items, other_items = self.stack_items(stack, elem), self.stack_items(other, elem)
        other_length = b.load(field(b, other, _LENGTH))
        common = b.select(b.icmp_signed("<", length, other_length), length, other_length)
        with counted_loop(b, self.llfn, common, self.entry_alloca(I64, "i"), "stack.cmp") as i:
            x = self.from_storage(b.load(b.gep(items, [i])), elem)
            y = self.from_storage(b.load(b.gep(other_items, [i])), elem)
            b.store(b.or_(b.load(found), self.values_differ(x, y, elem)), found)
        return b.load(found)

    def _push(self, stmt: ir.Push) -> None:
        b = self.builder
        stack, elem = self.slots[stmt.stack], stmt.stack.type.elem
        pointer = self.address(stmt.place)
        length = b.load(field(b, stack, _LENGTH))
        full = b.icmp_signed("==", length, b.load(field(b, stack, _CAPACITY)))
        with b.if_then(full, likely=False):
            status = b.call(self.grow_function(), [stack, ll.Constant(I64, abi.ITEM_BYTES[elem]),
                                                     ll.Constant(I64, 0)])
            self.fail_if(b.trunc(status, I1), stmt.memory_site, [length])
        b.store(b.load(pointer), b.gep(self.stack_items(stack, elem), [length]))
        b.store(b.add(length, ll.Constant(I64, 1)), field(b, stack, _LENGTH))
        self.claim(stmt.place)          # Note [Shared writes in compiled parallel loops]
        b.store(self.zero_item(elem), pointer)

    def _pop(self, stmt: ir.Pop) -> None:
        b = self.builder
        stack, elem = self.slots[stmt.stack], stmt.stack.type.elem
        pointer = self.address(stmt.place)
        length = b.load(field(b, stack, _LENGTH))
        self.fail_if(b.icmp_signed("==", length, ll.Constant(I64, 0)), stmt.empty_site, [])
        if stmt.zero_site is not None:
            old = b.load(pointer)
            self.fail_if(self.nonzero_item(old, elem), stmt.zero_site,
                         self.item_for_report(old, elem))
        top = b.sub(length, ll.Constant(I64, 1))
        item = b.load(b.gep(self.stack_items(stack, elem), [top]))
        b.store(top, field(b, stack, _LENGTH))
        self.claim(stmt.place)          # the item is off the stack, as in the interpreter
        b.store(item, pointer)

    def nonzero_item(self, item, elem: str):
        """`item != zero(T)` exactly, as the interpreter compares (a NaN is not zero,
        -0.0 is)."""
        b = self.builder
        if elem == "complex":
            parts = [b.extract_value(item, k) for k in (0, 1)]
            return b.or_(*(b.fcmp_unordered("!=", p, ll.Constant(F64, 0.0)) for p in parts))
        t = ir.representation(elem)
        if t in ("f32", "f64"):
            zero = float("-inf") if elem == "ulog" else 0.0
            return b.fcmp_unordered("!=", item, ll.Constant(item.type, zero))
        return b.icmp_unsigned("!=", item, ll.Constant(item.type, 0))

    def item_for_report(self, item, elem: str) -> list:
        """A stored item as the values of an error record (a complex: two doubles)."""
        if elem == "complex":
            return [self.builder.extract_value(item, k) for k in (0, 1)]
        return [self.value_for_report(self.from_storage(item, elem), elem)]

    # ------------------------------------------------------------ the helper
    def grow_function(self):
        """`i8 rev_stack_grow(rev_stack *s, i64 item_bytes, i64 at_least)`: double the
        capacity (at least FIRST_CAPACITY items, and at least `at_least`); 1 when the
        memory cannot be had."""
        name = "rev_stack_grow"
        existing = self.out.globals.get(name)
        if existing is not None:
            return existing
        fn = ll.Function(self.out, ll.FunctionType(I8, [STACK_TYPE.as_pointer(), I64, I64]),
                         name=name)
        fn.linkage = "internal"
        stack, size, at_least = fn.args
        b = ll.IRBuilder(fn.append_basic_block("entry"))
        capacity = b.load(field(b, stack, _CAPACITY))
        doubled = b.select(b.icmp_signed("==", capacity, ll.Constant(I64, 0)),
                           ll.Constant(I64, FIRST_CAPACITY), b.shl(capacity, ll.Constant(I64, 1)))
        doubled = b.select(b.icmp_signed("<", doubled, at_least), at_least, doubled)
        limit = b.udiv(ll.Constant(I64, (1 << 63) - 1), size)
        fail = fn.append_basic_block("fail")
        grow = fn.append_basic_block("grow")
        b.cbranch(b.icmp_unsigned(">", doubled, limit), fail, grow)
        b.position_at_end(fail)
        b.ret(ll.Constant(I8, 1))
        b.position_at_end(grow)
        realloc = self.runtime("realloc", I8.as_pointer(), [I8.as_pointer(), I64])
        data = b.call(realloc, [b.load(field(b, stack, _DATA)), b.mul(doubled, size)])
        done = fn.append_basic_block("done")
        b.cbranch(b.icmp_unsigned("==", data, ll.Constant(I8.as_pointer(), None)), fail, done)
        b.position_at_end(done)
        b.store(data, field(b, stack, _DATA))
        b.store(doubled, field(b, stack, _CAPACITY))
        b.ret(ll.Constant(I8, 0))
        return fn
