"""The derivatives of a lowered specialisation, as IR: the one place they are built.

`derivative_ir(lowered, derivative)` takes `lowered(backward)`, the IR of one
specialisation run forward (`backward=False`) or backward (its inverse, ~f), and
returns `(module, shared)`:

- "grad": the gradient pass, the adjoint transform (adjoint_ir.py) of ~f's IR;
- "tan": the tangent transform (tangent_ir.py) of f's IR, the forward half of a
  compiled Hessian;
- "tan_grad": the tangent transform of the gradient pass, its backward half;
- "grad<W>" (W ≥ 2, e.g. "grad4"): the gradient pass carrying W cotangents at once
  (lanes.py, Note [Gradient lanes]); `lanes.NotLaned` where it cannot;
- "tan<W>" and "tan_grad<W>": "tan" and "tan_grad" carrying W tangents at once, the
  values (and, in "tan_grad", the gradients) computed once: W Hessian columns per
  pass (Note [Hessians in lanes], ad/hessian_lanes.py).

`shared` names the shadow variables the transforms created for the gradients: the
cuda backend updates those atomically (Note [Atomic gradients],
rlang/backends/cuda/emit.py); the llvm backend runs one thread and ignores them.
Backends take the module from here and emit it; they never build derivative IR
themselves.

Note [Gradients nobody reads]
~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
`rlang.jvp(rlang.grad(f, loss, argnums))` reads the gradients at `argnums` and
their tangents only.  kmeans' `dir` (GradBench) wants the centroids', and its pass
also added every point's term to the points' gradient and its tangent: half of
the chain rule, into arrays of n·d.  So the derivative "tan_grad" has a variant
per set of arguments whose gradients nobody reads, "tan_grad-0-2"
(`without_gradients`), which the llvm backend builds as "tan_grad" with those
gradient shadows and their tangents marked `final_unread` too
(`restoration_unread`): the pass that drops restorations nobody reads (Note
[Restoration nobody reads], rlang/ir/prune.py) then drops the updates only they
would see, and keeps any that a wanted gradient reads on the way (the gradient of
an argument f writes is read by the chain rule of f's updates).  The drivers'
general runs and their builtins (ad/compiled.py `_ForwardOverReverse`,
ad/hvp_call.py) use the same variant, so a call's bits do not depend on which of
them made it; the other entries come back None.  The builtin keeps the arrays of
the unwanted gradients of arguments f only reads (and of their tangents) from one
call to the next without zeroing them again (`NativeCall.unread`): the pass adds
to them, if at all, and never reads them.  The cuda backend builds the whole
derivative for such a name.  kmeans' `dir` at k = 10, n = 10^4, d = 8 took
508–556 µs a call, now 410–460 µs (1.80 → 1.43× the manual tool's time in
GradBench's harness; d = 16: 1.53 → 1.23).

`rlang.vmap(rlang.jacrev(f, output, argnums))` does the same with its laned pass
("grad<W>-2", ad/batched.py): the Jacobians of the arguments f only reads that
`argnums` leaves out are not computed, and their lanes share one `np.empty` array
that the pass never reads and, its updates dropped, does not write.  GradBench's ba (p = 899,155) made the Jacobians of e!
and feat too, 58 MB a call: the batched Jacobian took 208–234 ms, now 182–210 ms
(e!'s, the output's, is the seed and stays).
"""
from __future__ import annotations

from dataclasses import replace
from typing import Callable

from ..ir import nodes as ir
from .adjoint_ir import AdjointFunction
from .lanes import laned
from .nested_ir import expansion
from ..errors import RlangTypeError
from .shadow import derive_module, shadowed_name
from .symbols import DERIVATIVES, split_lanes, split_unwanted
from .tangent_ir import TangentFunction



def derivative_ir(lowered: Callable[[bool], ir.Module],
                  derivative: str) -> tuple[ir.Module, frozenset]:
    """(IR module, shadows of gradients) of `derivative` (see the module docstring);
    a derivative whose gradients of some arguments nobody reads is built whole here
    (Note [Gradients nobody reads])."""
    base, lanes = split_lanes(split_unwanted(derivative)[0])
    if base not in DERIVATIVES:
        raise ValueError(f"no derivative {derivative!r}; there are {DERIVATIVES}")
    module, shared, tangents = _unlaned(lowered, base)
    if not lanes:
        return module, shared
    if base == "grad":
        return laned(module, shared, lanes)
    module, laned_tangents = laned(module, tangents, lanes)
    return module, shared | laned_tangents if shared else shared


def _unlaned(lowered, derivative: str) -> tuple:
    """(module, shadows of gradients, shadows of tangents) of "grad", "tan" or
    "tan_grad"."""
    if derivative == "tan":
        tangents: set = set()
        return derive_module(lowered(False), recording(TangentFunction, tangents)), \
            frozenset(), frozenset(tangents)
    gradients: set = set()
    module = derive_module(lowered(True), recording(AdjointFunction, gradients))
    if derivative == "grad":
        return module, frozenset(gradients), frozenset()
    tangents, of_gradients = set(), set()
    module = derive_module(module, recording(TangentFunction, tangents, None, of_gradients,
                                             gradients))
    return module, frozenset(gradients | of_gradients), frozenset(tangents)


def restoration_unread(module: ir.Module, shared: frozenset,
                       unwanted: frozenset = frozenset()) -> ir.Module:
    """A gradient pass (`derivative_ir`'s "grad" or "grad<W>" module), or the tangent
    of one ("tan_grad", "tan_grad<W>"), whose entry function's parameters other than
    `shared` and ulog ones — primal values and their tangents — are `final_unread`: run
    from Python, whose drivers read only the gradients and their tangents (Note
    [Restoration nobody reads], rlang/ir/prune.py).  `shared`: the module's gradient
    shadows (and their tangents); those of the arguments at `unwanted` positions are
    unread too (Note [Gradients nobody reads])."""
    entry = module.functions[module.entry]
    names = {entry.params[k].name for k in unwanted if k < len(entry.params)}
    unread = frozenset(p for p in entry.params if (
        p not in shared or shadowed_name(p) in names) and "ulog" not in
        (p.type, getattr(p.type, "elem", None)))
    functions = dict(module.functions)
    functions[module.entry] = replace(entry, final_unread=unread)
    return replace(module, functions=functions)


def recording(transform, found: set, of: set | None = None, found_of: set | None = None,
              of_these: set | None = None):
    """`transform` noting the shadows it creates in `found` (only those of the
    variables in `of`, when given), and those of the variables in `of_these` in
    `found_of` too (when given)."""

    class Recording(transform):
        def function(self):
            out = super().function()
            found.update(s for v, s in self.shadows.items() if of is None or v in of)
            if found_of is not None:
                found_of.update(s for v, s in self.shadows.items() if v in of_these)
            return out

    return Recording


def with_gradient_passes(module: ir.Module) -> tuple[ir.Module, frozenset]:
    """`module` (the specialisations an ahead-of-time compile emits, lowered
    together) with the gradient pass of each function that has no store of its own
    (`main` has one, and no gradient), and the shadows of gradients (as
    `derivative_ir`'s).  `module` is updated and returned."""
    plain = ir.Module("", {s: f for s, f in module.functions.items() if not f.results},
                      module.sites)
    shared: set = set()
    module.functions.update(derive_module(plain, recording(AdjointFunction, shared)).functions)
    return module, frozenset(shared)


def complete(module: ir.Module) -> ir.Module:
    """`module` with the bodies of its derivative functions and the derived functions
    they call (see the module docstring); the same module, updated in place."""
    for symbol, fn in list(module.functions.items()):
        if fn.derivative is not None and not fn.body and not fn.derivative.hvp:
            module.functions[symbol] = replace(fn, body=tuple(expansion(fn)))
    pending = [fn for fn in module.functions.values()]
    while pending:
        fn = pending.pop()
        for callee in _callees(fn.body):
            if callee not in module.functions:
                found = _derived(module, callee)
                module.functions[callee] = found
                pending.append(found)
    return module


def _callees(body) -> list:
    from ..ir.walk import walk

    return [stmt.callee for stmt in walk(body) if isinstance(stmt, ir.Call)]


def _derived(module: ir.Module, symbol: str) -> ir.Function:
    """The function `symbol`: from the library, or derived from one there."""
    fn = module.library.get(symbol) or module.functions.get(symbol)
    if fn is None:
        for transform in (AdjointFunction, TangentFunction):
            prefix = f"rev_{transform.kind}_"
            if symbol.startswith(prefix):
                inner = _derived(module, "rev_" + symbol[len(prefix):])
                if inner.derivative is not None and not inner.body:
                    inner = replace(inner, body=tuple(expansion(inner)))
                derivation = transform(inner)
                derivation.sites = module.sites
                fn = derivation.function()
                break
        else:
            raise RlangTypeError(f"internal: no function `{symbol}` to derive from")
        module.library[symbol] = fn
    return fn if fn.helper or fn.derivative is not None else replace(fn, helper=True)
