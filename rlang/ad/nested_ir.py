"""Derivative functions in the IR: the compiled side of `grad`/`fgrad` statements.

The lowering (rlang/lower/derivatives.py) turns `grad f(args) wrt p into t` into a
call of a derivative function D(args…, targets…) with an empty body and an
`ir.DerivativeOf`.  This module gives D its meaning, in the IR forms that rlang's AD
already has (docs/nested.md):

- `complete(module)` (rlang/ad/derivatives.py, which has both transforms) fills in
  each plain D's body (`expansion`) and adds to the module every derived function
  that a body calls and the module lacks, deriving it from `module.library` (the
  functions a derived module came from) by its symbol: `rev_tan_grad_inv_f__f64` is
  the tangent transform of the adjoint transform of `rev_inv_f__f64`.  Such
  functions are `helper`s: derive_module does not derive them as a whole module is
  derived; a derived body that calls a derivative of one gets it from there.  The
  llvm emitter completes every module it emits.
- The body of "grad" D: zero gradients (1 at the loss), f, then f's gradient pass
  (`rev_grad_inv_f…`, rlang/ad/adjoint_ir.py), then each target ±= its gradient.
- The body of "fgrad" D, for each parameter p by which it differentiates: tangents
  1 at p, f's tangent version (`rev_tan_f…`), the target ±= the loss's tangent, then
  ~f to restore the arguments.
- The tangent transform of D is the tangent transform of that body (nothing
  special): for "grad" it calls the tangent of the gradient pass (forward over
  reverse, as compiled Hessians do), for "fgrad" the tangent of f's tangent version
  (forward over forward).
- The adjoint transform of D is `hvp_body`: the values as in D, and the arguments'
  gradients += σ·H[:, wrt]·g_targets by forward over reverse, one call of f's tangent
  version and one of the tangent of its gradient pass (Note [Derivatives of
  derivative statements], rlang/ad/nested_run.py).  It is marked `hvp`: a tangent
  of it (a third derivative) is refused.
"""
from __future__ import annotations

from ..errors import RlangTypeError
from ..ir import nodes as ir
from .symbolic import FLOATS
from .symbols import GRAD, TAN, derived_symbol


def _float_positions(fn: ir.Function, count: int) -> list:
    return [k for k in range(count) if fn.params[k].type in FLOATS]


def expansion(fn: ir.Function) -> list:
    """The plain body of the derivative function `fn`."""
    d = fn.derivative
    count = len(fn.params) - len(d.wrt)
    args = [ir.VarPlace(v) for v in fn.params[:count]]
    targets = [ir.VarPlace(v) for v in fn.params[count:]]
    floats = _float_positions(fn, count)
    op = "+=" if d.sign > 0 else "-="
    out = []
    if d.mode == "grad":
        grads = {k: ir.Var(f"{fn.params[k].name}·g", "f64") for k in floats}
        out += [ir.Alloc(grads[k], ir.Const(1.0 if k == 0 else 0.0, "f64")) for k in floats]
        out.append(ir.Call(d.forward, tuple(args), d.site))
        out.append(ir.Call(derived_symbol(GRAD, d.inverse), tuple(args) + tuple(
            ir.VarPlace(grads[k]) for k in floats), d.site))
        out += [ir.Update(t, op, ir.Read(grads[k])) for t, k in zip(targets, d.wrt)]
        out += [ir.Dealloc(grads[k], None, None) for k in reversed(floats)]
        return out
    for target, by in zip(targets, d.wrt):
        tangents = {k: ir.Var(f"{fn.params[k].name}·d{by}", "f64") for k in floats}
        out += [ir.Alloc(tangents[k], ir.Const(1.0 if k == by else 0.0, "f64"))
                for k in floats]
        out.append(ir.Call(derived_symbol(TAN, d.forward), tuple(args) + tuple(
            ir.VarPlace(tangents[k]) for k in floats), d.site))
        out.append(ir.Update(target, op, ir.Read(tangents[0])))
        out.append(ir.Call(d.inverse, tuple(args), d.site))
        out += [ir.Dealloc(tangents[k], None, None) for k in reversed(floats)]
    return out


def hvp_body(transform) -> list:
    """The body of the adjoint transform (`transform`, an AdjointFunction) of a
    derivative function: its values, then the Hessian-vector product into the
    arguments' gradients."""
    fn = transform.fn
    d = fn.derivative
    count = len(fn.params) - len(d.wrt)
    args = tuple(ir.VarPlace(v) for v in fn.params[:count])
    floats = _float_positions(fn, count)
    sigma = -d.sign                     # the sign of the forward statement
    out = list(expansion(fn))
    seeds = dict(zip(d.wrt, fn.params[count:]))
    tangent, grad, moved = {}, {}, {}
    for k in floats:
        tangent[k] = ir.Var(f"{fn.params[k].name}·v", "f64")
        grad[k] = ir.Var(f"{fn.params[k].name}·hg", "f64")
        moved[k] = ir.Var(f"{fn.params[k].name}·hv", "f64")
        seed = transform.shadow(seeds[k]) if k in seeds else None
        direction = ir.Const(0.0, "f64") if seed is None else \
            ir.Binary("*", ir.Const(sigma, "f64"), ir.Read(seed), "f64")
        out += [ir.Alloc(tangent[k], direction),
                ir.Alloc(grad[k], ir.Const(1.0 if k == 0 else 0.0, "f64")),
                ir.Alloc(moved[k], ir.Const(0.0, "f64"))]
    places = lambda table: tuple(ir.VarPlace(table[k]) for k in floats)     # noqa: E731
    out.append(ir.Call(derived_symbol(TAN, d.forward), args + places(tangent), d.site))
    out.append(ir.Call(derived_symbol(TAN, derived_symbol(GRAD, d.inverse)),
                       args + places(grad) + places(tangent) + places(moved), d.site))
    for k in floats:
        gradient = transform.shadow(fn.params[k])
        out.append(ir.Update(ir.VarPlace(gradient), "+=", ir.Read(moved[k])))
    for k in reversed(floats):
        out += [ir.Dealloc(moved[k], None, None), ir.Dealloc(grad[k], None, None),
                ir.Dealloc(tangent[k], None, None)]
    return out


def refuse_third(fn: ir.Function) -> None:
    """A tangent of the adjoint of a derivative function would be a third derivative."""
    if fn.derivative is not None and fn.derivative.hvp:
        raise RlangTypeError(f"third derivatives are not supported: a Hessian of a function "
                             f"with `{fn.name}`", fn.span)
