"""Which parameters a function only reads or only adds to: when its gradient needs
no forward run.

Note [Gradients without the forward run]
~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
`rlang.gradient` runs f forward, then the gradient pass: ~f over gradient-carrying
values, started from f's outputs, which recomputes every value the chain rule needs
(rlang/ad/drivers.py).  The pass reads the outputs of f only through the values they
restore.  A parameter that f never writes has the same value out as in; and a
parameter that f only adds to (`err! += …`, `y![r] += …`, through calls too) and
never reads is never read by ~f either: ~f only subtracts from it, and nothing's
gradient depends on its value.  When every parameter is one of the two (the usual
shape of an objective: read-only data and parameters, an accumulated loss), the
pass started from f's *inputs* computes the same gradients as from its outputs,
and the forward run is not needed: it was a third of GMM's gradient.

`accumulate_only(module)` says whether that holds for the lowered IR of f (and
everything it calls), and which parameters are added to.  The compiled driver
(rlang/ad/compiled.py) then skips the forward run, runs the pass on copies of
the added-to arrays (so the caller's arrays are left as they were) and, where the
pass fails, does the whole gradient again the usual way, so that an error is the
interpreter's, raised by the forward run.  It does so only with invcheck off: then
every check the forward run makes (bounds, integer division, domains, depth) is
made again by the pass on the same values, so a forward run that would fail makes
the pass fail too.  A function that prints is never skipped (its output would be
missing).
"""
from __future__ import annotations

from . import nodes as ir
from .walk import stmt_exprs, walk

_NONE, _READ, _ADDED, _OTHER = "none", "read", "added", "other"


def accumulate_only(module: ir.Module):
    """The positions of the entry's parameters that it only adds to, when every other
    parameter is only read (or unused) and nothing prints; else None."""
    if any(isinstance(s, ir.Print) for fn in module.functions.values()
           for s in walk(fn.body)):
        return None
    uses = _Uses(module)
    modes = [uses.mode(module.entry, k)
             for k in range(len(module.functions[module.entry].params))]
    if _OTHER in modes:
        return None
    return frozenset(k for k, mode in enumerate(modes) if mode == _ADDED)


class _Uses:
    """How each function uses each of its parameters: not at all, only reads it, only
    adds to it (`+=`, `-=`; never reading it), or otherwise."""

    def __init__(self, module: ir.Module):
        self.module = module
        self.modes: dict = {}

    def mode(self, symbol: str, k: int) -> str:
        key = (symbol, k)
        if key not in self.modes:
            self.modes[key] = _OTHER        # a recursive use: assume the worst
            self.modes[key] = self._mode(self.module.functions[symbol], k)
        return self.modes[key]

    def _mode(self, fn: ir.Function, k: int) -> str:
        var = fn.params[k]
        read = added = False
        for stmt in walk(fn.body):
            if any(_reads(e, var) for e in stmt_exprs(stmt)):
                read = True
            if isinstance(stmt, ir.Update):
                indices = getattr(stmt.target, "indices", ())
                read |= any(_reads(i, var) for i in indices)
                if stmt.target.var is var:
                    if stmt.op not in ("+=", "-="):
                        return _OTHER
                    added = True
            elif isinstance(stmt, ir.Call):
                for j, arg in enumerate(stmt.args):
                    read |= any(_reads(i, var) for i in getattr(arg, "indices", ()))
                    if arg.var is var:
                        use = self.mode(stmt.callee, j)
                        if use == _OTHER:
                            return _OTHER
                        read |= use == _READ
                        added |= use == _ADDED
            elif isinstance(stmt, (ir.Instr, ir.Push, ir.Pop)):
                places = stmt.places if isinstance(stmt, ir.Instr) else (stmt.place,)
                if any(p.var is var for p in places) or getattr(stmt, "stack", None) is var:
                    return _OTHER
                read |= any(_reads(i, var) for p in places for i in getattr(p, "indices", ()))
        if read and added:
            return _OTHER
        return _ADDED if added else _READ if read else _NONE


def _reads(e, var) -> bool:
    """Whether an expression reads the value of `var` (its extents do not count)."""
    if isinstance(e, (ir.Read, ir.Load)) and e.var is var:
        return True
    if isinstance(e, ir.ComplexValue):
        return _reads(e.re, var) or _reads(e.im, var)
    return any(_reads(x, var) for x in ir.operands(e))
