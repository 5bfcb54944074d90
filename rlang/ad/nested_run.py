"""Derivative statements on the interpreter: `grad f(args) wrt p into t` and `fgrad …`.

`execute_derivative(interp, stmt, env)` runs one derivative statement (ast.Derivative,
docs/nested.md) on the interpreter `interp`, in the direction the statement says
(`~grad` subtracts).  The interpreter's layer cannot import this one; it calls it
through `DERIVATIVE_RUNNERS` (rlang/interp/interpreter.py), which importing this module
fills.

The statement adds to each target ∂L/∂p, L the final value of f's first parameter
when f runs on the arguments, p the parameter the target stands for: "grad" by one
run of f and one of ~f over GVars (reverse mode, rlang/ad/gradient_interpreter.py),
"fgrad" by one run of f over dual numbers per parameter (forward mode).  The
arguments are left as they were: f's run is undone.

Under an outer derivative (Note [Derivatives of derivative statements]):

- outer forward mode (`rlang.jvp`: the arguments are dual numbers) — "grad" runs its
  reverse pass over GVars of dual numbers, so the gradients' tangents are
  H · (the arguments' tangents): forward over reverse.  "fgrad" computes its values
  by forward mode on the values and their tangents by that same forward-over-reverse
  run (the interpreter's dual numbers do not nest; the llvm backend runs forward over
  forward);
- outer reverse mode (the gradient interpreter runs the statement's inverse): the
  targets move back and every float argument's gradient receives
  σ · H[:, wrt] · g_targets (σ the forward statement's sign), one forward-over-reverse
  run (a Hessian-vector product) whatever the inner mode.

Third derivatives (a Hessian of a function with a derivative statement) are refused.

Note [Derivatives of derivative statements]
~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
A derivative statement T += σ·∇_W L(a) is an update whose right-hand side reads only
its arguments a (the checker keeps targets out of them), so, like `y += e`, it is
reversible (its inverse subtracts) and its derivatives are those of e = ∇_W L:
the tangent of T moves by σ·H[W, :]·ȧ and the adjoint rule adds σ·H[:, W]·g_T to
the arguments' gradients, H the Hessian of L over f's float parameters.  Both are
Hessian-vector products, which forward over reverse computes in one run (the
method rlang's Hessians already use and test, docs/ad.md).  Differentiating the
statement's own reverse pass again by reverse mode is not sound here: the gradient
pass frees temporaries whose values it does not claim, so a reverse pass over it
would drop their gradients.  Hence the adjoint rule is this explicit Hessian-vector
product, on the interpreter and in the compiled adjoint transform alike
(rlang/ad/nested_ir.py).
"""
from __future__ import annotations

import numpy as np

from ..dual import Dual
from ..errors import ReversibilityError, RlangTypeError
from ..frontend.printer import format_expr
from ..frontend import ast
from ..gvalue import GVar, value_of
from ..interp.interpreter import DERIVATIVE_RUNNERS, Interpreter
from ..interp import ops
from ..lower.derivatives import target_names
from .gradient_interpreter import GradInterpreter, wrap
from .gvar import backprop


def execute_derivative(interp, stmt: ast.Derivative, env: dict) -> None:
    """Run `stmt` on `interp` (see the module docstring)."""
    fn = interp.functions[stmt.func]
    params = [p.name for p in fn.params]
    wrt = [params.index(name) for name in stmt.wrt]
    refs, values = _arguments(interp, stmt, env)
    _check_values(stmt, fn, values, wrt)
    sign = -1.0 if stmt.inverse else 1.0
    if interp.invcheck:
        _check_targets_apart(interp, stmt, env, params)
    if isinstance(interp, GradInterpreter):
        _adjoint(interp, stmt, env, refs, values, wrt, sign)
        return
    gradients = _first_derivatives(interp, stmt, values, wrt)
    for target, gradient in zip(stmt.targets, gradients):
        ref = interp.evaluator.ref(target, env)
        ref.set(ops.accumulate("+=", ref.get(), sign * gradient, stmt.span, ref))


def _check_targets_apart(interp, stmt, env, params: list) -> None:
    """Two targets that are one element at run time (`g[i]`, `g[j]` with i = j) are
    an error, in the words of the compiled backends' check (lower/derivatives.py)."""
    refs = [interp.evaluator.ref(t, env) for t in stmt.targets]
    names = target_names(params, stmt.wrt)
    count = len(stmt.args)
    for j, second in enumerate(refs):
        for i, first in enumerate(refs[:j]):
            if first.overlaps(second):
                low, high = count + i, count + j
                raise ReversibilityError(
                    f"arguments {low + 1} and {high + 1} of `{stmt.mode} {stmt.func}` "
                    f"(`{format_expr(stmt.targets[i])}` and `{format_expr(stmt.targets[j])}`) "
                    f"are the same memory, and `{names[low]}` is written", stmt.span)


def _arguments(interp, stmt, env) -> tuple:
    """(refs, values): a view argument's ref (None for an expression) and every
    argument's value (a GVar's value on the gradient interpreter)."""
    ev = interp.evaluator
    refs, values = [], []
    for arg in stmt.args:
        root = ast.view_root(arg)
        ref = ev.ref(arg, env) if root is not None and root.id in env and ast.is_view(arg) \
            else None
        refs.append(ref)
        value = ev.eval(arg, env) if ref is None else ref.get()
        values.append(value_of(value))
    return refs, values


def _is_float(value) -> bool:
    return type(value) in (float, Dual) or isinstance(value, np.floating)


def _check_values(stmt, fn, values: list, wrt: list) -> None:
    """Scalar arguments; a float loss and float parameters to differentiate by."""
    what = f"`{stmt.mode} {stmt.func}`"
    for k, value in enumerate(values):
        if isinstance(value, (np.ndarray, list)) or not np.isscalar(value) and \
                type(value) is not Dual:
            raise RlangTypeError(f"{what} takes scalar arguments; argument "
                                 f"`{fn.params[k].name}` is not one (arrays are not "
                                 "supported yet)", stmt.span)
        if isinstance(value, (complex, np.complexfloating)) or type(value).__name__ in (
                "ULog", "Fixed", "F32"):
            raise RlangTypeError(f"{what} differentiates f64 values; argument "
                                 f"`{fn.params[k].name}` is {type(value).__name__}",
                                 stmt.span)
    for k in [0] + wrt:
        if not _is_float(values[k]):
            role = "the loss" if k == 0 else "a parameter to differentiate by"
            raise RlangTypeError(f"{what}: `{fn.params[k].name}` is {role} and must be an "
                                 f"f64 value, got {type(values[k]).__name__}", stmt.span)


def _first_derivatives(interp, stmt, values: list, wrt: list) -> list:
    """∂L/∂(parameter k) for k in `wrt`, by the statement's mode; dual numbers where
    the arguments are (an outer forward run)."""
    dual = any(type(v) is Dual for v in values)
    if stmt.mode == "grad":
        grads = inner_gradient(interp, stmt.func, values)
        return [grads[k] for k in wrt]
    plain = [v.a if type(v) is Dual else v for v in values]
    firsts = [inner_tangent(interp, stmt.func, plain, k) for k in wrt]
    if not dual:
        return firsts
    grads = inner_gradient(interp, stmt.func, values)       # tangents: forward over reverse
    return [Dual(first, grads[k].b if type(grads[k]) is Dual else 0.0)
            for first, k in zip(firsts, wrt)]


def _adjoint(interp, stmt, env, refs, values, wrt, sign) -> None:
    """The executed statement on the gradient interpreter: the targets move by
    `sign`·∇ and each float argument's gradient receives −sign·H[:, wrt]·g_targets
    (Note [Derivatives of derivative statements])."""
    if any(type(v) is Dual for v in values):
        raise RlangTypeError(f"third derivatives are not supported: a Hessian of a function "
                             f"with `{stmt.mode} {stmt.func}`", stmt.span)
    target_refs = [interp.evaluator.ref(t, env) for t in stmt.targets]
    seeds = [interp.grad_of(ref) for ref in target_refs]
    gradients = _first_derivatives(interp, stmt, values, wrt)
    for ref, gradient in zip(target_refs, gradients):
        interp.set_value(ref, ops.accumulate("+=", interp.value(ref), sign * gradient,
                                             stmt.span, ref))
    direction = [0.0] * len(values)
    for k, seed in zip(wrt, seeds):
        direction[k] = -sign * float(seed)
    if not any(direction):
        return
    duals = [Dual(v, d) if _is_float(v) else v for v, d in zip(values, direction)]
    grads = inner_gradient(interp, stmt.func, duals)
    for k, (ref, arg) in enumerate(zip(refs, stmt.args)):
        moved = grads[k].b if type(grads[k]) is Dual else 0.0
        if moved == 0.0 or not _is_float(values[k]):
            continue
        if ref is None:
            backprop(interp.evaluator, arg, env, moved, interp)
        else:
            interp.add_gradient(ref, moved)


def inner_gradient(interp, name: str, values: list) -> list:
    """The gradient of the final value of `name`'s first parameter with respect to
    each argument's initial value (None for non-floats): `name` forward, then its
    inverse over GVars seeded 1 at the loss.  Dual arguments give dual gradients
    (forward over reverse)."""
    forward = Interpreter(interp.unit, invcheck=interp.invcheck, sandbox=interp.sandbox)
    outputs = forward.call(name, list(values))
    engine = GradInterpreter(interp.unit, invcheck=interp.invcheck, sandbox=interp.sandbox)
    wrapped = [wrap(v) for v in outputs]
    wrapped[0] = GVar(value_of(wrapped[0]), 1.0)
    final = engine.run(name, wrapped, backward=True)
    return [v.g if type(v) is GVar else None for v in final]


def inner_tangent(interp, name: str, values: list, k: int) -> float:
    """∂L/∂(argument k) by forward mode: `name` run once on dual numbers whose tangent
    is 1 at argument k."""
    duals = [Dual(v, 1.0 if j == k else 0.0) if _is_float(v) else v
             for j, v in enumerate(values)]
    forward = Interpreter(interp.unit, invcheck=interp.invcheck, sandbox=interp.sandbox)
    loss = forward.call(name, duals)[0]
    return loss.b if type(loss) is Dual else 0.0


DERIVATIVE_RUNNERS["run"] = execute_derivative
