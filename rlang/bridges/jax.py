"""`rlang.jax.wrap(f, loss=None)`: a rev function as a JAX function (LANGUAGE.md §13).

Note [The JAX bridge]
~~~~~~~~~~~~~~~~~~~~~
A wrapped function runs rlang's compiled code inside XLA through `jax.ffi`
(rlang/bridges/jax_ffi.py, Note [Foreign function handlers]) where the types allow
(`_runner`), and otherwise the compiled code or the interpreter on the host through
`jax.pure_callback`; either way it works under `jax.jit`, and its derivatives are
rlang's.  Through the FFI the loss's gradient is the forward call and the gradient
pass in the graph, seeded by JAX (`compiled_gradient`).

- With `loss`, the wrapped function returns the loss view's final value, and it is
  a `jax.custom_jvp` function whose tangent is ⟨∇L, t⟩ with ∇L from a second
  function, `gradient`, itself a `custom_jvp` function whose tangent is the
  Hessian-vector product `rlang.hvp` (forward over reverse).  JAX's reverse mode
  transposes the linear map t ↦ ⟨∇L, t⟩, so `jax.grad` gives ∇L (one rlang gradient
  run); `jax.hessian` (forward over reverse) reaches `gradient`'s tangent rule, so
  each of its columns is one rlang Hessian-vector product.
- Without `loss`, the wrapped function returns every output of `f` (its arguments'
  final values, as a tuple) and is a `jax.custom_jvp` function whose tangent is a
  linear primitive JAX can transpose (Note [Outputs in both modes]): forward mode
  is rlang's tangent code, reverse mode rlang's gradient pass.
- Float values cross as f64 (rlang computes in f64) and come back in the dtype JAX
  gave (float32 unless `jax_enable_x64` is on); integers and bools are passed as
  they are and have no derivative (`float0` tangents, as JAX uses for integers).
- `jax.vmap` runs the callback once per batch item (`vmap_method="sequential"`).
"""
from __future__ import annotations

import functools

import numpy as np

import jax
import jax.numpy as jnp
from jax.extend.core import Primitive
from jax.interpreters import ad, batching, mlir

from ..ad.shadow import shadow_type
from ..errors import RlangTypeError


def wrap(f, loss=None):
    """A JAX function with the arguments of `f` (an `api.Function`: `m.f` or `~m.f`),
    returning `f`'s outputs as a tuple of arrays, or with `loss` the loss view's
    value (see Note [The JAX bridge])."""
    if not (hasattr(f, "module") and hasattr(f, "positional")):
        raise RlangTypeError(f"rlang.jax.wrap takes a function of a loaded program "
                             f"(`module.f` or `~module.f`), got {type(f).__name__}")
    return _loss_function(f, loss) if loss is not None else _outputs_function(f)


def _host(values) -> list:
    """Arguments as rlang takes them: floats as f64 (arrays and scalars), the rest as
    they are; 0-d arrays as scalars."""
    out = []
    for value in values:
        array = np.asarray(value)
        if array.dtype.kind == "f":
            array = array.astype(np.float64)
        out.append(array.item() if array.ndim == 0 else array)
    return out


def _like(value, template):
    """An rlang result as an array of `template`'s shape and dtype."""
    if value is None:
        return np.zeros(np.shape(template), dtype=_dtype(template))
    return np.asarray(value, dtype=_dtype(template)).reshape(np.shape(template))


def _dtype(template):
    dtype = jnp.result_type(template)
    return dtype if jnp.issubdtype(dtype, jnp.inexact) else jnp.result_type(float)


def _spec(template):
    return jax.ShapeDtypeStruct(np.shape(template), _dtype(template))


def _callback(fn, specs, *args):
    return jax.pure_callback(fn, specs, *args, vmap_method="sequential")


def _differentiable(template) -> bool:
    return jnp.issubdtype(jnp.result_type(template), jnp.inexact)


def _float_zeros(template):
    """Zeros of `template`'s shape in the float dtype its gradient has."""
    return jnp.zeros(np.shape(template), _dtype(template))


def _zero_tangent(template):
    if _differentiable(template):
        return jnp.zeros(np.shape(template), jnp.result_type(template))
    return np.zeros(np.shape(template), dtype=jax.dtypes.float0)


def _loss_function(f, loss):
    from ..ad.drivers import gradient, hvp, loss_value

    def value_on_host(dtype, *args):
        value = loss_value(f, _host(args), loss)
        return np.asarray(float(np.real(value)), dtype=dtype)

    def gradient_on_host(*args):
        grads = gradient(f, _host(args), loss)
        return tuple(_like(g, a) for g, a in zip(grads, args))

    def hvp_on_host(*args):
        n = len(args) // 2
        primal, tangent = args[:n], args[n:]
        vector = [np.asarray(t, dtype=np.float64) if _differentiable(p) else None
                  for p, t in zip(primal, tangent)]
        vector = [v.item() if v is not None and v.ndim == 0 else v for v in vector]
        products = hvp(f, _host(primal), vector, loss)
        return tuple(_like(h, a) for h, a in zip(products, primal))

    where = _constant_loss(f, loss)

    def compiled_gradient(runner, args):
        """∇L by the runner's forward and gradient pass (Note [The JAX bridge])."""
        outputs = runner.forward(*args)
        seeds = []
        for k, t in enumerate(runner.types):
            if shadow_type(t) is None:
                continue
            seed = jnp.zeros(np.shape(args[k]), jnp.float64)
            if k == where[0]:
                seed = seed.at[where[1]].set(1.0) if where[1] is not None else seed + 1.0
            seeds.append(seed)
        shadows = iter(runner.gradient_pass(*outputs, *seeds)[len(args):])
        return tuple(next(shadows) if shadow_type(t) is not None else _float_zeros(a)
                     for t, a in zip(runner.types, args))

    @jax.custom_jvp
    def gradient_of(*args):
        runner = _runner(f, args, where)
        if runner is not None:
            return compiled_gradient(runner, args)
        return _callback(gradient_on_host, tuple(_spec(a) for a in args), *args)

    @gradient_of.defjvp
    def gradient_tangent(primals, tangents):
        tangents = tuple(t if _differentiable(p) else _float_zeros(p)
                         for p, t in zip(primals, tangents))
        grads = gradient_of(*primals)
        products = _callback(hvp_on_host, tuple(_spec(a) for a in primals),
                             *primals, *tangents)
        return grads, tuple(h if _differentiable(p) else _float_zeros(p)
                            for h, p in zip(products, primals))     # (grads are floats)

    @jax.custom_jvp
    def loss_of(*args):
        dtype = _result_dtype(args)         # as traced: weak Python floats included
        runner = _runner(f, args, where)
        if runner is not None:
            value = runner.forward(*args)[where[0]]
            return (value if where[1] is None else value[where[1]]).astype(dtype)
        return _callback(functools.partial(value_on_host, dtype),
                         jax.ShapeDtypeStruct((), dtype), *args)

    @loss_of.defjvp
    def loss_tangent(primals, tangents):
        value = loss_of(*primals)
        grads = gradient_of(*primals)
        tangent = sum((jnp.sum(g * t) for g, t, p in zip(grads, tangents, primals)
                       if _differentiable(p)), jnp.zeros((), value.dtype))
        return value, tangent.astype(value.dtype)

    def wrapped(*args, **kwargs):
        return loss_of(*_checked(f, f.positional(args, kwargs)))

    wrapped.__name__ = f"jax({f.name})"
    return wrapped


def _checked(f, args) -> list:
    """`args`, once the interpreter's rules say `f` takes values of their shapes and
    dtypes: a wrong count, rank or type is its RlangTypeError now, where the call is
    written, not an error inside XLA when the computation runs."""
    from ..ad.drivers import called_with

    stand_ins = [np.zeros(np.shape(a), dtype=jnp.result_type(a)) for a in args]
    called_with(f, _host(stand_ins), "jax.wrap")
    return args


def _runner(f, args, where=(None, None)):
    """The foreign-function runner of `f` for arguments shaped and typed as `args`
    (rlang/bridges/jax_ffi.py), or None: then the calls go through pure_callback.
    A loss (`where`) must be a constant view for the runner to serve it."""
    if where is None:
        return None
    from .jax_ffi import ffi_runner

    stand_ins = [np.zeros(np.shape(a), dtype=jnp.result_type(a)) for a in args]
    runner = ffi_runner(f, stand_ins)
    position, index = where
    if runner is None or position is None:
        return runner
    t, shape = runner.types[position], np.shape(args[position])
    if index is None:                   # an f64 scalar, or an element inside its array
        return runner if t == "f64" else None
    fits = getattr(t, "elem", None) == "f64" and len(index) == len(shape) and \
        all(0 <= i < n for i, n in zip(index, shape))
    return runner if fits else None


def _constant_loss(f, loss):
    """(position, index or None) of a loss that is a parameter or a constant element
    of one, or None (a field, or an index that depends on the arguments)."""
    from ..ad.loss import resolve_loss
    from ..frontend import ast

    view = resolve_loss(f.module.unit.functions[f.name], loss)
    position = f.params.index(ast.view_root(view).id)
    if isinstance(view, ast.Name):
        return position, None
    if isinstance(view, ast.Index) and isinstance(view.base, ast.Name) and \
            all(isinstance(i, ast.IntLit) for i in view.indices):
        return position, tuple(i.value for i in view.indices)
    return None


def _result_dtype(args):
    floats = [jnp.result_type(a) for a in args if _differentiable(a)]
    return jnp.result_type(*floats) if floats else jnp.result_type(float)


def _outputs_function(f):
    def wrapped(*args, **kwargs):
        return _outputs_of(f, *_checked(f, f.positional(args, kwargs)))

    wrapped.__name__ = f"jax({f.name})"
    return wrapped


def _same_specs(args):
    return tuple(jax.ShapeDtypeStruct(np.shape(a), jnp.result_type(a)) for a in args)


def _call_on_host(f, *args):
    outputs = f(*_host(args))
    return tuple(np.asarray(o, dtype=jnp.result_type(a)).reshape(np.shape(a))
                 for o, a in zip(outputs, args))


@functools.partial(jax.custom_jvp, nondiff_argnums=(0,))
def _outputs_of(f, *args):
    """Every output of `f` (Note [The JAX bridge]: outputs mode)."""
    runner = _runner(f, args)
    if runner is not None:
        return tuple(runner.forward(*args))
    return _callback(functools.partial(_call_on_host, f), _same_specs(args), *args)


@_outputs_of.defjvp
def _outputs_tangents(f, primals, tangents):
    outputs = _outputs_of(f, *primals)
    tangents = [t if _differentiable(p) else jnp.zeros(np.shape(p), jnp.result_type(p))
                for t, p in zip(tangents, primals)]
    moved = _tangent_p.bind(*primals, *tangents, function=f)
    return outputs, tuple(t if _differentiable(p) else _zero_tangent(p)
                          for t, p in zip(moved, primals))


# Note [Outputs in both modes]
# ~~~~~~~~~~~~~~~~~~~~~~~~~~~~
# Without a loss, the derivative of f's outputs is the linear map t ↦ J t, bound as
# the primitive `rlang_tangent` (its arguments: the primals, then the tangents).
# Forward mode evaluates it with `rlang.jvp` (rlang's tangent code).  Reverse mode
# never evaluates it: JAX transposes it, and the transpose, c ↦ Jᵀ c, is rlang's
# gradient pass from f's outputs seeded with c (the foreign-function runner's, or
# `rlang.vjp`'s pull-back on the host).  Under `jax.vmap` the primitive maps its
# items one by one (`lax.map`).  So jvp, grad, vjp, jacfwd, jacrev and vmap all
# compose; second derivatives of the outputs go through a `loss` instead (the
# primitive has no derivative of its own).

_tangent_p = Primitive("rlang_tangent")
_tangent_p.multiple_results = True


def _tangent_on_host(f, n, *args):
    from ..ad.drivers import jvp

    primals, tangents = args[:n], args[n:]
    directions = [np.asarray(t, dtype=np.float64) if _differentiable(p) else None
                  for p, t in zip(primals, tangents)]
    directions = [d.item() if d is not None and d.ndim == 0 else d for d in directions]
    _, moved = jvp(f, _host(primals), directions)
    return tuple(np.zeros(np.shape(p), jnp.result_type(p)) if t is None else
                 np.asarray(t, dtype=jnp.result_type(p)).reshape(np.shape(p))
                 for t, p in zip(moved, primals))


def _tangent_impl(*args, function):
    n = len(args) // 2
    return _callback(functools.partial(_tangent_on_host, function, n),
                     _same_specs(args[:n]), *args)


def _tangent_transpose(cotangents, *args, function):
    n = len(args) // 2
    primals, linear = args[:n], args[n:]
    cotangents = [_float_zeros(p) if type(c) is ad.Zero or not _differentiable(p) else c
                  for c, p in zip(cotangents, primals)]
    grads = _pull_back(function, primals, cotangents)
    return [None] * n + [g if ad.is_undefined_primal(t) and _differentiable(p) else None
                         for g, t, p in zip(grads, linear, primals)]


def _pull_back(f, primals, cotangents) -> list:
    """Jᵀ c: the gradient pass from f's outputs, seeded with the cotangents."""
    runner = _runner(f, primals)
    if runner is not None:
        outputs = runner.forward(*primals)
        seeds = [c for c, t in zip(cotangents, runner.types) if shadow_type(t) is not None]
        shadows = iter(runner.gradient_pass(*outputs, *seeds)[len(primals):])
        return [next(shadows) if shadow_type(t) is not None else None for t in runner.types]
    return list(_callback(functools.partial(_pull_on_host, f),
                          tuple(_spec(p) for p in primals), *primals, *cotangents))


def _pull_on_host(f, *args):
    from ..ad.drivers import vjp

    n = len(args) // 2
    primal, cotangents = args[:n], args[n:]
    _, pull = vjp(f, *_host(primal))
    seeds = [np.asarray(c, dtype=np.float64) if _differentiable(p) else None
             for p, c in zip(primal, cotangents)]
    seeds = [s.item() if s is not None and s.ndim == 0 else s for s in seeds]
    return tuple(_like(g, a) for g, a in zip(pull(seeds), primal))


def _tangent_batched(args, dims, function):
    size = next(a.shape[d] for a, d in zip(args, dims) if d is not None)
    moved = [jnp.broadcast_to(a, (size,) + np.shape(a)) if d is None else jnp.moveaxis(a, d, 0)
             for a, d in zip(args, dims)]
    outputs = jax.lax.map(lambda items: tuple(_tangent_p.bind(*items, function=function)),
                          moved)
    return list(outputs), [0] * (len(args) // 2)


_tangent_p.def_impl(_tangent_impl)
_tangent_p.def_abstract_eval(lambda *args, function: [
    jax.core.ShapedArray(np.shape(a), jnp.result_type(a)) for a in args[:len(args) // 2]])
mlir.register_lowering(_tangent_p, mlir.lower_fun(_tangent_impl, multiple_results=True))
ad.primitive_transposes[_tangent_p] = _tangent_transpose
batching.primitive_batchers[_tangent_p] = _tangent_batched
