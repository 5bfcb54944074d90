"""det in JAX: the determinant by expansion of minors, one vectorised level of the
expansion tree at a time (Note [Expansion by minors, vectorised], inputs/det.py),
and ``jax.grad`` of it."""

from __future__ import annotations

import functools

from ..common import Prepared, UnknownFunction, floats
from ..inputs.det import expansion_plan
from ._setup import jax, jnp


@functools.cache
def _functions(ell: int) -> dict:
    """The jitted ``primal`` and ``gradient`` for ℓ × ℓ matrices."""
    plan = [(jnp.asarray(take), jnp.asarray(sign)) for take, sign in expansion_plan(ell)]

    def det(a):
        coef = jnp.ones((1, 1), dtype=a.dtype)
        for k, (take, sign) in enumerate(plan):
            coef = coef.reshape(-1, 1) * (sign * a[k, take])
        return jnp.sum(coef)

    return {"primal": jax.jit(det), "gradient": jax.jit(jax.grad(det))}


def prepare(function: str, input) -> Prepared:
    ell = int(input["ell"])
    functions = _functions(ell)
    if function not in functions:
        raise UnknownFunction("det", function)
    f, a = functions[function], jnp.asarray(floats(input["A"]).reshape(ell, ell))
    f(a).block_until_ready()

    def run():
        return f(a).block_until_ready()
    output = float if function == "primal" else (lambda g: g.ravel().tolist())
    return Prepared(run, output)
