"""The shared-write check of `@parallel for` in compiled code (LANGUAGE.md §6).

`SharedWriteEmitter` is a part of the llvm function emitter: `start_tracking` before
a checked parallel loop, `begin_iteration` at the top of each pass, `claim(place)`
just before an element is written, `values_before_call(call)` and
`claim_call_arguments(call, values)` around a call, and `stop_tracking` after the
loop.

Note [Shared writes in compiled parallel loops]
~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
With invcheck on, the interpreter records for each array element written by a
`@parallel for` the iteration that wrote it first, and raises a ReversibilityError
at the loop's span when another iteration writes it (rlang/interp/loops.py
`_WriteTracker`; the writes of called functions count, through the evaluator's write
log).  Compiled code makes the same check, and nothing of it with invcheck off:

- The lowering (rlang/lower/parallel.py) gives every element place written inside
  a checked parallel loop `claims`: per enclosing checked loop that the array comes
  from outside of, the loop's site and a `parallel_write` site (the loop's span,
  its index's name, the view as written: the interpreter's message).  An array
  made inside an iteration is that iteration's own and is not tracked, as the
  interpreter keys its record by the array object.
- Before the loop, each array it claims gets an owner buffer: one zeroed i64 per
  element (calloc, freed after the loop and on its error exits, like an array
  ancilla).  An element written in pass n (0-based) holds n + 1.  A write where the
  word is neither 0 nor n + 1 fails with the first writer's index (recomputed from
  the word) and the current one; nested parallel loops are checked outermost first,
  as the interpreter's chained write logs are.
- The claim is made where the interpreter logs the write: just before the store of
  an update, an instruction (each place in order), PUSH (the place becomes zero) and
  POP; for a call, after it returns, for the element arguments of the parameters
  the callee may write (the interpreter's copy-out, in parameter order; where one
  fails, it and the written arguments after it get their values from before the
  call back, as the interpreter had not copied them out yet).
- Writes inside called functions: a callee reaches a caller's array through an
  element argument, claimed at the copy-out as above, or through the whole array,
  which the checker refuses inside `@parallel for` on every backend ("`a` is written
  by every iteration of a `@parallel for`", rlang/frontend/check.py `_write`), as it
  refuses stacks and scalars from outside the loop.  So every write the interpreter
  logs is claimed, without instrumenting callees.
- Gradients: `rlang.gradient` runs f forward first (checked as above), and the
  gradient pass's IR keeps the loop's site and the claims of the primal places (the
  shadow places are new, without claims: gradients shared between iterations are
  sums), so it checks what the interpreter's backward run checks.
- An array written only at elements whose index along one axis is the loop's
  index itself (`y[i]`, `m[i, j]` in the loop over i) cannot be written by two
  iterations (the index is constant in a pass: the checker refuses writing it), so
  it gets no buffer and its writes no claim: the common loop costs nothing.
- Other arrays cost one load, compare and store per write, and the buffers' memory
  (8 bytes per element), only with invcheck on.
"""
from __future__ import annotations

from dataclasses import dataclass

from llvmlite import ir as ll

from ...ir import nodes as ir
from ...ir.shared_writes import tracked_arrays, written_places
from .types import I64


@dataclass
class _Tracking:
    """One running checked parallel loop: the owner buffer Var of each array it
    tracks, and (once its pass began) the pass's word and index."""

    owners: dict
    first: object               # the index of pass 0, and the step between passes
    stride: object
    word: object = None         # this pass's number + 1
    index: object = None


class SharedWriteEmitter:
    """See Note [Shared writes in compiled parallel loops]."""

    def start_tracking(self, stmt: ir.For, first, stride) -> _Tracking | None:
        """Allocate the owner buffers of a checked parallel loop (None: not one)."""
        if not stmt.parallel or stmt.site is None:
            return None
        owners = {}
        for var in tracked_arrays(self.module, stmt):       # ir/shared_writes.py
            owner = ir.Var(f"{var.name}·writers", ir.ArrayType("i64", 1, unit_stride=True))
            self._allocate(ir.Alloc(owner, dims=(ir.Dim(var, None),)))
            owners[var] = owner
        tracking = _Tracking(owners, first, stride)
        self.tracking[stmt.site] = tracking
        return tracking

    def begin_iteration(self, tracking: _Tracking | None, number, index) -> None:
        """Pass `number` (0-based) of the loop, with index value `index`, begins."""
        if tracking is not None:
            tracking.word = self.builder.add(number, ll.Constant(I64, 1))
            tracking.index = index

    def stop_tracking(self, stmt: ir.For, tracking: _Tracking | None) -> None:
        if tracking is None:
            return
        del self.tracking[stmt.site]
        for owner in tracking.owners.values():
            self._deallocate(ir.Dealloc(owner, None, None))

    def claim(self, place, restore=None) -> None:
        """The element `place` is about to be written by the running passes;
        `restore()`, if given, is emitted where the claim fails."""
        if not isinstance(place, ir.ElemPlace):
            return
        for loop, site in place.claims:
            owner = self._owner(loop, place.var)
            if owner is not None:
                self._claim_element(self.tracking[loop], owner, place, site, restore)

    def _owner(self, loop: int, var: ir.Var):
        tracking = self.tracking.get(loop)
        return tracking.owners.get(var) if tracking is not None else None

    def values_before_call(self, stmt: ir.Call) -> list | None:
        """Before a call that writes claimed elements: (pointer, value) of each scalar
        argument the callee may write, in order (None: no claim to make).  Compiled
        callees write their scalar parameters back as they return; the interpreter
        copies them out one by one, logging each write first, so where a claim fails
        the element and the arguments after it still hold these values."""
        written = self._written_places(stmt)
        if not any(isinstance(p, ir.ElemPlace) and
                   any(self._owner(loop, p.var) is not None for loop, _ in p.claims)
                   for p in written):
            return None
        pointers = [self.address(p) for p in written if isinstance(p.type, str)]
        return [(pointer, self.builder.load(pointer)) for pointer in pointers]

    def claim_call_arguments(self, stmt: ir.Call, before: list | None) -> None:
        """After the call: claim its written element arguments in order."""
        if before is None:
            return
        scalars = [p for p in self._written_places(stmt) if isinstance(p.type, str)]
        for k, place in enumerate(scalars):
            def restore(k=k):
                for pointer, value in before[k:]:
                    self.builder.store(value, pointer)
            self.claim(place, restore)

    def _written_places(self, stmt) -> list:
        return written_places(self.module, stmt)

    def _claim_element(self, tracking: _Tracking, owner: ir.Var, place, site: int,
                       restore) -> None:
        b = self.builder
        _, shape, _ = self.array_parts(place.var)
        offset = ll.Constant(I64, 0)
        for index, extent in zip(place.indices, shape):     # C order (checked already)
            offset = b.add(b.mul(offset, extent), self.expr(ir.unchecked(index)))
        words, _, _ = self.array_parts(owner)
        pointer = b.gep(words, [offset])
        word = b.load(pointer)
        zero, one = ll.Constant(I64, 0), ll.Constant(I64, 1)
        taken = b.and_(b.icmp_unsigned("!=", word, zero),
                       b.icmp_unsigned("!=", word, tracking.word))
        writer = b.add(tracking.first, b.mul(b.sub(word, one), tracking.stride))
        self.fail_if(taken, site, [writer, tracking.index], record=restore)
        b.store(tracking.word, pointer)
