"""`rlang.jax.wrap(f, loss=None)`: a rev function as a JAX function (LANGUAGE.md §13).

Note [The JAX bridge]
~~~~~~~~~~~~~~~~~~~~~
A wrapped function runs rlang's compiled code inside XLA through `jax.ffi`
(rlang/bridges/jax_ffi.py, Note [Foreign function handlers]) where the types allow
(`jax_calls.runner`), and otherwise the compiled code or the interpreter on the host through
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

from ..ad.symbols import shadow_type
from ..errors import RlangTypeError
from .jax_calls import (callback, constant_loss, differentiable, float_spec, float_zeros,
                        host, runner)
from .jax_primitives import second, tangent


def wrap(f, loss=None):
    """A JAX function with the arguments of `f` (an `api.Function`: `m.f` or `~m.f`),
    returning `f`'s outputs as a tuple of arrays, or with `loss` the loss view's
    value (see Note [The JAX bridge])."""
    if not (hasattr(f, "module") and hasattr(f, "positional")):
        raise RlangTypeError(f"rlang.jax.wrap takes a function of a loaded program "
                             f"(`module.f` or `~module.f`), got {type(f).__name__}")
    return _loss_function(f, loss) if loss is not None else _outputs_function(f)


def _zero_tangent(template):
    if differentiable(template):
        return jnp.zeros(np.shape(template), jnp.result_type(template))
    return np.zeros(np.shape(template), dtype=jax.dtypes.float0)


def _loss_function(f, loss):
    from ..ad.drivers import gradient, loss_value

    def value_on_host(*args):
        return float(np.real(loss_value(f, host(args), loss))),

    def gradient_on_host(*args):
        return gradient(f, host(args), loss)

    where = constant_loss(f, loss)

    def compiled_gradient(found, args):
        """∇L by the runner's forward and gradient pass (Note [The JAX bridge])."""
        outputs = found.forward(*args)
        seeds = []
        for k, t in enumerate(found.types):
            if shadow_type(t) is None:
                continue
            seed = jnp.zeros(np.shape(args[k]), jnp.float64)
            if k == where[0]:
                seed = seed.at[where[1]].set(1.0) if where[1] is not None else seed + 1.0
            seeds.append(seed)
        shadows = iter(found.gradient_pass(*outputs, *seeds)[len(args):])
        return tuple(next(shadows) if shadow_type(t) is not None else float_zeros(a)
                     for t, a in zip(found.types, args))

    @jax.custom_jvp
    def gradient_of(*args):
        found = runner(f, args, where)
        if found is not None:
            return compiled_gradient(found, args)
        return callback(gradient_on_host, tuple(float_spec(a) for a in args), *args)

    @gradient_of.defjvp
    def gradient_tangent(primals, tangents):
        products = second(f, primals, None, tangents, loss)    # ∇²L t: rlang.hvp
        return gradient_of(*primals), tuple(products)

    @jax.custom_jvp
    def loss_of(*args):
        dtype = _result_dtype(args)         # as traced: weak Python floats included
        found = runner(f, args, where)
        if found is not None:
            value = found.forward(*args)[where[0]]
            return (value if where[1] is None else value[where[1]]).astype(dtype)
        return callback(value_on_host, (jax.ShapeDtypeStruct((), dtype),), *args)[0]

    @loss_of.defjvp
    def loss_tangent(primals, tangents):
        value = loss_of(*primals)
        grads = gradient_of(*primals)
        along = sum((jnp.sum(g * t) for g, t, p in zip(grads, tangents, primals)
                     if differentiable(p)), jnp.zeros((), value.dtype))
        return value, along.astype(value.dtype)

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
    called_with(f, host(stand_ins), "jax.wrap")
    return args


def _result_dtype(args):
    floats = [jnp.result_type(a) for a in args if differentiable(a)]
    return jnp.result_type(*floats) if floats else jnp.result_type(float)


def _outputs_function(f):
    def wrapped(*args, **kwargs):
        return _outputs_of(f, *_checked(f, f.positional(args, kwargs)))

    wrapped.__name__ = f"jax({f.name})"
    return wrapped


def _same_specs(args):
    return tuple(jax.ShapeDtypeStruct(np.shape(a), jnp.result_type(a)) for a in args)


def _call_on_host(f, *args):
    return f(*host(args))


@functools.partial(jax.custom_jvp, nondiff_argnums=(0,))
def _outputs_of(f, *args):
    """Every output of `f` (Note [The JAX bridge]: outputs mode)."""
    found = runner(f, args)
    if found is not None:
        return tuple(found.forward(*args))
    return callback(functools.partial(_call_on_host, f), _same_specs(args), *args)


@_outputs_of.defjvp
def _outputs_tangents(f, primals, tangents):
    outputs = _outputs_of(f, *primals)
    moved = tangent(f, primals, tangents)       # Note [Outputs in both modes]
    return outputs, tuple(t.astype(jnp.result_type(p)) if differentiable(p) else
                          _zero_tangent(p) for t, p in zip(moved, primals))
