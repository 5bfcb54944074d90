"""The IR passes: one named list, run in one order by both emitters.

`run_passes(module)` is what the llvm emitter (backends/llvm/emit.py) and the cuda
emitter (backends/cuda/emit.py) do to a lowered or derived module before they
generate code.  Each pass is a pure function `ir.Module → ir.Module` that returns
the same object when it changes nothing; each keeps the results, the checks that
can fire and the order of effects of the module (the interpreter's semantics), and
is explained by the Note it names.

The order matters: known zeros are dropped first, which leaves more statements
whose only effect is on ancillas freed unchecked for the dead-code pass; the seed
guards are placed on the statements that remain, which turns the seed branches
into selects where it can; the conditional updates that remain of one element in
a loop are then summed in scalars; updates onto zeros are marked, in
straight-line code the branches no longer hide; then the arrays whose zeros no
one reads, once the dead uncomputation that read them is gone; last, the
recurrences written onto such zeros are carried in scalars.

`ir/outputs.py` (`accumulate_only`) is an analysis, not a pass: the compiled AD
driver asks it whether a gradient can skip the forward run.
"""
from __future__ import annotations

from typing import Callable

from ..records import record
from . import nodes as ir
from .guards import selects_outside_gathers
from .invariant_sums import sum_invariant_updates
from .carried_values import carry_recurrences
from .first_writes import mark_first_writes
from .onto_zeros import mark_updates_onto_zeros
from .prune import prune_module
from .unread_stores import skip_unread_stores
from .zeros import drop_zero_updates


@record
class Pass:
    name: str
    run: Callable[[ir.Module], ir.Module]
    note: str           # where its rationale is written


#: The passes, in the order they run.
PASSES: tuple[Pass, ...] = (
    Pass("zeros", drop_zero_updates, "Note [Known zeros], rlang/ir/zeros.py"),
    Pass("prune", prune_module, "Note [Dead uncomputation], rlang/ir/prune.py"),
    Pass("guards", selects_outside_gathers, "Note [Zero seeds], rlang/ir/guards.py"),
    Pass("invariant sums", sum_invariant_updates,
         "Note [Invariant sums in registers], rlang/ir/invariant_sums.py"),
    Pass("onto zeros", mark_updates_onto_zeros,
         "Note [Updates onto zeros], rlang/ir/onto_zeros.py"),
    Pass("first writes", mark_first_writes,
         "Note [Arrays written before they are read], rlang/ir/first_writes.py"),
    Pass("carried values", carry_recurrences,
         "Note [Recurrences carried in registers], rlang/ir/carried_values.py"),
    Pass("unread stores", skip_unread_stores,
         "Note [Stores nobody reads], rlang/ir/unread_stores.py"),
)


def run_passes(module: ir.Module, passes: tuple[Pass, ...] = PASSES) -> ir.Module:
    """`module` after every pass of `passes`, in order."""
    for step in passes:
        module = step.run(module)
    return module
