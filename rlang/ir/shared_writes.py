"""Which arrays a checked `@parallel for` must track for shared writes: the analysis
both compiled backends use (Note [Shared writes in compiled parallel loops],
rlang/backends/llvm/parallel.py; the cuda form is in rlang/backends/cuda/emit.py).

`written_places(module, stmt)` gives the places a statement writes (for a call, the
arguments of the parameters the callee may write).  `tracked_arrays(module, loop)`
gives, in a fixed order, the arrays from outside a checked parallel loop whose
elements its passes claim: every array written at an element place that carries a
claim of this loop, except those written only at elements whose index along some
axis is the loop's index itself (`y[i]`, `m[i, j]` in the loop over i), which two
passes cannot share.  An empty list: the loop needs no owner buffer at all.
"""
from __future__ import annotations

from . import nodes as ir
from .walk import defined_vars, stmt_places, walk


def written_places(module: ir.Module, stmt) -> list:
    """The places `stmt` writes (a call: the arguments of parameters the callee may
    write)."""
    if isinstance(stmt, ir.Call):
        written = module.functions[stmt.callee].written
        return [arg for k, arg in enumerate(stmt.args) if k in written]
    return stmt_places(stmt)


def tracked_arrays(module: ir.Module, loop: ir.For) -> list:
    """The arrays `loop` needs an owner buffer for (see the module docstring)."""
    if not loop.parallel or loop.site is None:
        return []
    inner = defined_vars(loop.body)
    tracked: dict = {}              # Var → the index tuples it is written at
    for stmt in walk(loop.body):
        for place in written_places(module, stmt):
            if isinstance(place, ir.ElemPlace) and place.var not in inner and \
                    any(site == loop.site for site, _ in place.claims):
                tracked.setdefault(place.var, set()).add(place.indices)
    index = ir.Read(loop.var)
    return [var for var, written in tracked.items()
            if not any(all(indices[axis] == index for indices in written)
                       for axis in range(var.type.ndim))]
