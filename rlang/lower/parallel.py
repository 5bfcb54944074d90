"""The shared-write check of `@parallel for` in the lowering: the parallel half of
rlang/lower/statements.py (Note [Shared writes in compiled parallel loops],
rlang/backends/llvm/parallel.py).

While a checked parallel loop's body is lowered, `ParallelLoops` knows the loops
around the statement being lowered (outermost first), each with the variables that
were in scope when it started; `claims(fl, view, var)` gives the
`ir.ElemPlace.claims` of an element `view` of `var`: one (loop site, shared-write
site) pair per enclosing checked parallel loop that `var` comes from outside of (an
array made inside an iteration is that iteration's own, as the interpreter keys its
record by the array object).
"""
from __future__ import annotations

from dataclasses import dataclass

from ..frontend import ast
from ..ir import nodes as ir


@dataclass
class _Loop:
    site: int                       # the loop's `For.site`
    var: str                        # its index's name
    span: object
    outer: frozenset                # the ir.Vars in scope when it started


class ParallelLoops:
    """The checked `@parallel for` loops around the statement being lowered."""

    def __init__(self):
        self.loops: list[_Loop] = []

    def enter(self, site: int, var: str, span, scope: dict) -> _Loop:
        loop = _Loop(site, var, span, frozenset(scope.values()))
        self.loops.append(loop)
        return loop

    def leave(self, loop: _Loop) -> None:
        self.loops.remove(loop)

    def claims(self, fl, view: ast.Index, var: ir.Var) -> tuple:
        """The claims of an element `view` of `var` (see the module docstring); the
        shared-write site reports the interpreter's error: the loop's span, its
        index's name and the view as written."""
        if not self.loops:
            return ()
        from ..frontend.printer import format_expr

        text = format_expr(view)
        return tuple((loop.site, fl.error_site("parallel_write", loop.span, (loop.var, text)))
                     for loop in self.loops if var in loop.outer)
