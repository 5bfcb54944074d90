"""The shared-write check of `@parallel for` in generated cuda code: the claims
of `FunctionWriter` (rlang/backends/cuda/emit.py), its inner loops' trackers, and
the owner buffers a launch passes.

Note [Shared writes on the GPU]
~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
With invcheck on, the interpreter reports the first element, in the order it runs
the passes, that a second pass of a `@parallel for` writes, naming the pass that wrote it first (Note [Shared writes in compiled
parallel loops], rlang/backends/llvm/parallel.py, which says which writes are claims
and which arrays are tracked: rlang/ir/shared_writes.py).  Threads racing on one
element do not give that order, so a kernel finds *whether* passes share a write,
and the exact report comes from running the launch again in one thread:

- each tracked array of the kernel's loop gets an owner buffer, one i64 per element
  filled with 2^63 - 1; a pass n claims an element by `cuda.atomic.min(owner, e,
  n)`.  If the word was neither untouched nor n, two passes wrote the element: of
  the writes to it in time order, the first by a pass other than the first writer
  sees that writer's number, so every shared element is seen by some thread.  The
  thread sets the error buffer's ERR_SHARED word and fails;
- after the launch, a set ERR_SHARED makes the host put back the arrays the kernel
  writes (copied on the device before the launch, only for loops with owner
  buffers), reset the buffers and run the kernel again on one thread, which takes
  the passes in the loop's order: the atomic minimum is then the first writer, and
  the first failure is the interpreter's, shared write or any other check;
- a `@parallel for` nested in the kernel's body runs in one thread per pass of the
  outer loop.  Its tracked arrays get owner buffers of two words per element: the
  number of the inner loop's run (a counter of the thread, `_loops`) and its pass
  + 1, read and written without atomics: an element of such an array is written by
  one pass of the outer loop only (the array is tracked by the outer loop, whose
  shared writes send the launch to the one-thread run, or indexed by the outer
  index), so by one thread.  A `@parallel for` in a function a kernel calls tracks
  nothing: the callee's arrays are the caller's, which the checker does not let
  an iteration write whole (rlang/frontend/check.py `_write`), or ancillas, which
  kernels do not allocate;
- the cost, with invcheck on only: an atomic minimum per claimed write, 8 bytes per
  element of each tracked array (16 for inner loops) and a device copy of the
  written arrays per launch.  Loops writing only at their own index (`y[i]`) have
  none of it.
"""
from __future__ import annotations

from dataclasses import dataclass

from ...ir import nodes as ir
from .scalar import ERR_SHARED

#: The word of an owner buffer no pass has claimed (Note [Shared writes on the GPU]).
UNCLAIMED = 2 ** 63 - 1


@dataclass
class Tracker:
    """A checked parallel loop running in a kernel: the owner buffer's name of each
    array it tracks, the text of its first index and step, of its pass number (the
    kernel's loop: `_n`; an inner loop: the pass + 1) and of the pass's index; for an
    inner loop, the name of the number of its run."""

    owners: dict
    first: str
    stride: str
    word: str
    index: str
    run: str | None = None


class SharedWriteWriter:
    """The claims of a FunctionWriter (Note [Shared writes on the GPU])."""

    def claim(self, place, indices) -> None:
        """The element `place` (indices evaluated) is about to be written: claim it
        for the passes of the tracking loops around it, outermost first (Note
        [Shared writes on the GPU])."""
        if not isinstance(place, ir.ElemPlace):
            return
        for loop, site in place.claims:
            tracker = self.trackers.get(loop)
            owner = tracker.owners.get(place.var) if tracker is not None else None
            if owner is None:
                continue
            array, offset = self.name(place.var), indices[0]
            for k in range(1, len(indices)):        # C order (bounds checked already)
                offset = f"({offset}) * {array}.shape[{k}] + {indices[k]}"
            element, word = self.fresh("e"), self.fresh("w")
            self.emit(f"{element} = {offset}")
            if tracker.run is None:
                self.emit(f"{word} = cuda.atomic.min({owner}, {element}, _n)")
                shared = f"{word} != {UNCLAIMED} and {word} != _n"
                writer = f"{tracker.first} + {word} * {tracker.stride}"
            else:
                self.emit(f"{word} = {owner}[2 * {element} + 1]")
                shared = f"{owner}[2 * {element}] == {tracker.run} and {word} != {tracker.word}"
                writer = f"{tracker.first} + ({word} - 1) * {tracker.stride}"
            self.emit(f"if {shared}:")
            self.level += 1
            self.emit(f"err[{ERR_SHARED}] = 1")
            self.fail(site, [writer, tracker.index])
            self.level -= 1
            if tracker.run is not None:
                self.emit(f"{owner}[2 * {element}] = {tracker.run}")
                self.emit(f"{owner}[2 * {element} + 1] = {tracker.word}")

    def inner_tracker(self, stmt: ir.For, first: str, stride: str, n: str):
        """A checked `@parallel for` inside a kernel that tracks arrays: its run's
        number, counted (Note [Shared writes on the GPU]); None for other loops."""
        owners = {var: name for (site, var), name in getattr(self, "inner_owners", {}).items()
                  if site == stmt.site and stmt.parallel}
        if not owners:
            return None
        run = self.fresh("run")
        self.emit("_loops += 1")
        self.emit(f"{run} = _loops")
        tracker = self.trackers[stmt.site] = Tracker(
            owners, first, stride, f"({n} + 1)", f"({first} + {n} * {stride})", run)
        return tracker

    def owner_buffers(self, plan) -> tuple:
        """Before a launch: the names of its owner buffers, made, and the `tracked`
        argument of `launch` (rlang/backends/cuda/launches.py): the positions of the
        arrays the kernel writes and of the buffers, which a one-thread run resets
        ("" when the kernel has no buffer; the boxes of scalar sums start again at
        zero in the run's own buffers)."""
        owners = [(var, 1, UNCLAIMED) for var in plan.owners] + \
            [(var, 2, 0) for _, var in plan.inner_owners]
        buffers = [self.fresh("own") for _ in owners]
        for buffer, (var, words, fill) in zip(buffers, owners):
            self.emit(f"{buffer} = owner_buffer({self.name(var)}, {words}, {fill})")
        if not buffers:
            return buffers, ""
        written = [3 + k for k, v in enumerate(plan.arrays) if v in plan.written_arrays]
        first_owner = 3 + len(plan.arrays) + len(plan.scalars)
        refill = [(first_owner + k, fill) for k, (_, _, fill) in enumerate(owners)]
        return buffers, f", ({written!r}, {refill!r})"
