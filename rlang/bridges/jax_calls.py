"""How the JAX bridge calls rlang: values across the boundary, and the choice of
path (rlang/bridges/jax.py, rlang/bridges/jax_primitives.py).

A call goes through the foreign-function runner (rlang/bridges/jax_ffi.py) where
`runner` finds one, and otherwise through `jax.pure_callback` (`callback`) with
the host values `host` makes; results come back as `like` shapes them.
"""
from __future__ import annotations

import numpy as np

import jax
import jax.numpy as jnp


def host(values) -> list:
    """Arguments as rlang takes them: floats as f64 (arrays and scalars), the rest as
    they are; 0-d arrays as scalars."""
    out = []
    for value in values:
        array = np.asarray(value)
        if array.dtype.kind == "f":
            array = array.astype(np.float64)
        out.append(array.item() if array.ndim == 0 else array)
    return out


def directions(primals, values) -> list:
    """`values` (tangents, cotangents: one per primal) as rlang's drivers take them:
    f64 arrays, numbers for scalars, None where the primal has no derivative."""
    out = []
    for primal, value in zip(primals, values):
        if not differentiable(primal):
            out.append(None)
            continue
        array = np.asarray(value, dtype=np.float64)
        out.append(array.item() if array.ndim == 0 else array)
    return out


def float_dtype(template):
    """The dtype of `template`'s derivatives: its own for floats, JAX's default float
    for the rest."""
    dtype = jnp.result_type(template)
    return dtype if jnp.issubdtype(dtype, jnp.inexact) else jnp.result_type(float)


def float_spec(template):
    return jax.ShapeDtypeStruct(np.shape(template), float_dtype(template))


def float_zeros(template):
    """Zeros of `template`'s shape in the float dtype its gradient has."""
    return jnp.zeros(np.shape(template), float_dtype(template))


def differentiable(template) -> bool:
    return jnp.issubdtype(jnp.result_type(template), jnp.inexact)


def callback(fn, specs, *args):
    """`fn(*args)` on the host (`jax.pure_callback`, item by item under `vmap`); its
    results (arrays, numbers, None for zeros: one per spec) come back with the
    shapes and dtypes of `specs`, fixed where the call is traced (the callback runs
    on XLA's threads, which do not see a `jax.enable_x64` block)."""
    def converted(*values):
        return tuple(np.zeros(spec.shape, spec.dtype) if result is None else
                     np.asarray(result, dtype=spec.dtype).reshape(spec.shape)
                     for result, spec in zip(fn(*values), specs))

    return jax.pure_callback(converted, specs, *args, vmap_method="sequential")


def runner(f, args, where=(None, None)):
    """The foreign-function runner of `f` for arguments shaped and typed as `args`
    (rlang/bridges/jax_ffi.py), or None: then the calls go through pure_callback.
    A loss (`where`, as `constant_loss` gives it) must be a constant view for the
    runner to serve it."""
    if where is None:
        return None
    from .jax_ffi import ffi_runner

    stand_ins = [np.zeros(np.shape(a), dtype=jnp.result_type(a)) for a in args]
    found = ffi_runner(f, stand_ins)
    position, index = where
    if found is None or position is None:
        return found
    t, shape = found.types[position], np.shape(args[position])
    if index is None:                   # an f64 scalar, or an element inside its array
        return found if t == "f64" else None
    fits = getattr(t, "elem", None) == "f64" and len(index) == len(shape) and \
        all(0 <= i < n for i, n in zip(index, shape))
    return found if fits else None


def constant_loss(f, loss):
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
