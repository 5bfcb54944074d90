"""The derivatives of a wrapped rev function as JAX primitives, for the JAX bridge
(rlang/bridges/jax.py): linear maps that JAX evaluates, transposes, differentiates
once more and batches, each evaluation one rlang run.

Note [Outputs in both modes]
~~~~~~~~~~~~~~~~~~~~~~~~~~~~
Let f map its arguments x to its outputs (their final values), J be its Jacobian
and Hᵢ the Hessian of output element i.  Three primitives, each linear in its last
group of arguments, are the only operations on derivatives the bridge emits:

- `rlang_tangent(x, t)` = J t: rlang's tangent code (`rlang.jvp`);
- `rlang_cotangent(x, c)` = Jᵀ c: the gradient pass from f's outputs seeded with c
  (the foreign-function runner's, or `rlang.vjp`'s pull-back);
- `rlang_second(x, c, v)` = Σᵢ cᵢ Hᵢ v: one forward-over-reverse run whose gradient
  pass is seeded with c (`drivers.vjp_tangent`); with a loss L, `rlang_second(x, v)`
  = ∇²L v (`rlang.hvp`).

Their rules close the set under one more derivative:

- transposes: J t and Jᵀ c are each other's; Σ cᵢ Hᵢ v is symmetric in v (every Hᵢ
  is), so its transpose in v is itself, and in c it is D²f[w, v] (below);
- JVPs: d(Jᵀ c) = Jᵀ dc + Σ cᵢ Hᵢ dx and d(J t) = J dt + D²f[dx, t], where
  D²f[a, b]ᵢ = ⟨Σⱼ (eᵢ)ⱼ Hⱼ a, b⟩ takes one seeded run per output element
  (`lax.map`: forward over forward is the slow composition);
- batching: `lax.map` over the items, one rlang run each.

So jvp, grad, vjp, jacfwd, jacrev and vmap, and any two of them composed
(`jax.hessian` is jacfwd of jacrev), are rlang's derivatives.  `rlang_second` has
no derivative: a third derivative is JAX's error "Differentiation rule for
'rlang_second' not implemented".
"""
from __future__ import annotations

import functools

import numpy as np

import jax
import jax.numpy as jnp
from jax.extend.core import Primitive
from jax.interpreters import ad, batching, mlir

from ..ad.symbols import shadow_type
from .jax_calls import (callback, differentiable, directions, float_dtype, float_spec,
                        float_zeros, host, runner)

tangent_p = Primitive("rlang_tangent")
cotangent_p = Primitive("rlang_cotangent")
second_p = Primitive("rlang_second")


def tangent(f, primals, tangents) -> list:
    """J t (one float array per argument of `f`)."""
    return tangent_p.bind(*primals, *_floats(tangents, primals), function=f)


def cotangent(f, primals, cotangents) -> list:
    """Jᵀ c (one float array per argument of `f`)."""
    return cotangent_p.bind(*primals, *_floats(cotangents, primals), function=f)


def second(f, primals, cotangents, vector, loss=None) -> list:
    """Σᵢ cᵢ Hᵢ v, or with `loss` (then `cotangents` is None) ∇²L v."""
    seeds = [] if loss is not None else _floats(cotangents, primals)
    return second_p.bind(*primals, *seeds, *_floats(vector, primals), function=f, loss=loss)


def _floats(values, primals) -> list:
    """`values` for a linear slot: float zeros where a value is JAX's symbolic zero or
    its primal has no derivative (integers, bools)."""
    return [float_zeros(p) if type(v) is ad.Zero or not differentiable(p) else v
            for v, p in zip(values, primals)]


def _nonzero(values, primals) -> bool:
    return any(type(v) is not ad.Zero and differentiable(p) for v, p in zip(values, primals))


def _groups(primitive, loss=None) -> int:
    return 3 if primitive is second_p and loss is None else 2


def _split(args, primitive, loss=None):
    """(x, the middle group or None, the linear group) of a primitive's arguments."""
    n = len(args) // _groups(primitive, loss)
    return args[:n], (args[n:2 * n] if _groups(primitive, loss) == 3 else None), args[-n:]


# ----------------------------------------------------------------- evaluation

def _tangent_on_host(f, n, *args):
    from ..ad.drivers import jvp

    primals = args[:n]
    return jvp(f, host(primals), directions(primals, args[n:]))[1]


def _pull_on_host(f, n, *args):
    from ..ad.drivers import vjp

    primals = args[:n]
    _, pull = vjp(f, *host(primals))
    return pull(directions(primals, args[n:]))


def _second_on_host(f, loss, n, *args):
    from ..ad.drivers import hvp, vjp_tangent

    primals, vector = args[:n], directions(args[:n], args[-n:])
    if loss is None:
        return vjp_tangent(f, host(primals), directions(primals, args[n:2 * n]), vector)[1]
    return hvp(f, host(primals), vector, loss)


def _tangent_impl(*args, function):
    n = len(args) // 2
    return _callback_of(functools.partial(_tangent_on_host, function, n), args, n)


def _cotangent_impl(*args, function):
    n = len(args) // 2
    primals, seeds = args[:n], args[n:]
    found = runner(function, primals)
    if found is None:
        return _callback_of(functools.partial(_pull_on_host, function, n), args, n)
    outputs = found.forward(*primals)
    shadows = iter(found.gradient_pass(
        *outputs, *[s for s, t in zip(seeds, found.types) if shadow_type(t) is not None])[n:])
    return [next(shadows) if shadow_type(t) is not None else float_zeros(p)
            for t, p in zip(found.types, primals)]


def _second_impl(*args, function, loss):
    n = len(args) // _groups(second_p, loss)
    return _callback_of(functools.partial(_second_on_host, function, loss, n), args, n)


def _callback_of(fn, args, n):
    """`fn` on the host, giving one float array per primal (the first `n` args)."""
    return list(callback(fn, tuple(float_spec(a) for a in args[:n]), *args))


# ----------------------------------------------------------------- rules

def _abstract(primitive):
    def rule(*args, **params):
        primals = _split(args, primitive, params.get("loss"))[0]
        return [jax.core.ShapedArray(np.shape(a), float_dtype(a)) for a in primals]
    return rule


def _tangent_transpose(cts, *args, function):
    primals, _, linear = _split(args, tangent_p)
    pulled = cotangent(function, primals, cts)
    return [None] * len(primals) + _where_undefined(pulled, linear)


def _cotangent_transpose(cts, *args, function):
    primals, _, linear = _split(args, cotangent_p)
    pushed = tangent(function, primals, cts)
    return [None] * len(primals) + _where_undefined(pushed, linear)


def _second_transpose(cts, *args, function, loss):
    primals, seeds, vector = _split(args, second_p, loss)
    out = [None] * len(args)
    if any(ad.is_undefined_primal(v) for v in vector):          # symmetric in v
        moved = second(function, primals, seeds, cts, loss)
        out[-len(primals):] = _where_undefined(moved, vector)
    if seeds is not None and any(ad.is_undefined_primal(c) for c in seeds):
        along = second_directional(function, primals, _floats(cts, primals), vector)
        out[len(primals):2 * len(primals)] = _where_undefined(along, seeds)
    return out


def _where_undefined(values, linear) -> list:
    return [v if ad.is_undefined_primal(slot) else None for v, slot in zip(values, linear)]


def _tangent_jvp(primals_in, tangents_in, *, function):
    primals, _, linear = _split(primals_in, tangent_p)
    d_primals, _, d_linear = _split(tangents_in, tangent_p)
    out = tangent_p.bind(*primals_in, function=function)
    terms = []
    if _nonzero(d_linear, primals):
        terms.append(tangent(function, primals, d_linear))
    if _nonzero(d_primals, primals):
        terms.append(second_directional(function, primals, _floats(d_primals, primals),
                                        linear))
    return out, _summed(terms, primals)


def _cotangent_jvp(primals_in, tangents_in, *, function):
    primals, _, seeds = _split(primals_in, cotangent_p)
    d_primals, _, d_seeds = _split(tangents_in, cotangent_p)
    out = cotangent_p.bind(*primals_in, function=function)
    terms = []
    if _nonzero(d_seeds, primals):
        terms.append(cotangent(function, primals, d_seeds))
    if _nonzero(d_primals, primals):
        terms.append(second(function, primals, seeds, d_primals))
    return out, _summed(terms, primals)


def _summed(terms: list, primals) -> list:
    if not terms:
        return [float_zeros(p) for p in primals]
    return [functools.reduce(lambda a, b: a + b, parts) for parts in zip(*terms)]


def second_directional(f, primals, a, b) -> list:
    """D²f[a, b]: for each output element i, ⟨Σⱼ (eᵢ)ⱼ Hⱼ a, b⟩, one `rlang_second`
    run per output element (Note [Outputs in both modes]); shaped like the
    arguments, zeros for those without a derivative."""
    floats = [k for k, p in enumerate(primals) if differentiable(p)]
    sizes = [int(np.size(primals[k])) for k in floats]
    total = sum(sizes)
    out = [float_zeros(p) for p in primals]
    if total == 0:
        return out
    bounds = np.cumsum(sizes)[:-1].tolist()

    def element(i):
        flat = jnp.zeros(total, jnp.float64 if jax.config.jax_enable_x64 else jnp.float32)
        seeds = [float_zeros(p) for p in primals]
        for k, piece in zip(floats, jnp.split(flat.at[i].set(1.0), bounds)):
            seeds[k] = piece.reshape(np.shape(primals[k])).astype(float_dtype(primals[k]))
        moved = second(f, primals, seeds, a)
        return sum(jnp.sum(moved[k] * b[k]) for k in floats)

    values = jax.lax.map(element, jnp.arange(total))
    for k, piece in zip(floats, jnp.split(values, bounds)):
        out[k] = piece.reshape(np.shape(primals[k])).astype(float_dtype(primals[k]))
    return out


def _batched(primitive):
    """The batching rule of `primitive`: its items one by one (`lax.map`)."""
    def rule(args, dims, **params):
        size = next(a.shape[d] for a, d in zip(args, dims) if d is not None)
        moved = [jnp.broadcast_to(a, (size,) + np.shape(a)) if d is None else
                 jnp.moveaxis(a, d, 0) for a, d in zip(args, dims)]
        outputs = jax.lax.map(lambda items: tuple(primitive.bind(*items, **params)), moved)
        return list(outputs), [0] * len(outputs)
    return rule


for _primitive, _impl, _transpose, _jvp in (
        (tangent_p, _tangent_impl, _tangent_transpose, _tangent_jvp),
        (cotangent_p, _cotangent_impl, _cotangent_transpose, _cotangent_jvp),
        (second_p, _second_impl, _second_transpose, None)):
    _primitive.multiple_results = True
    _primitive.def_impl(_impl)
    _primitive.def_abstract_eval(_abstract(_primitive))
    mlir.register_lowering(_primitive, mlir.lower_fun(_impl, multiple_results=True))
    ad.primitive_transposes[_primitive] = _transpose
    batching.primitive_batchers[_primitive] = _batched(_primitive)
    if _jvp is not None:
        ad.primitive_jvps[_primitive] = _jvp
