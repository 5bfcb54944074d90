"""llsq in JAX: the residuals of all n points at once, the polynomial Σ_j x_j t^j
evaluated by ``jnp.polyval`` (Horner's rule over vectors of n), and ``jax.grad`` of
the objective with respect to x.

Horner's rule is what a JAX user reaches for here: a Vandermonde matrix built with
``jnp.cumprod`` or ``jnp.vander`` made XLA's CPU code about a hundred times slower
(n = 4096, m = 128)."""

from __future__ import annotations

import functools

from ..common import Prepared, UnknownFunction, floats
from ._setup import jax, jnp


def _llsq(x, n: int):
    t = -1.0 + jnp.arange(n, dtype=x.dtype) * 2.0 / (n - 1)
    residual = jnp.sign(t) - jnp.polyval(x[::-1], t)      # polyval wants x_{m-1} first
    return 0.5 * jnp.dot(residual, residual)


@functools.cache
def _functions() -> dict:
    return {"primal": jax.jit(_llsq, static_argnums=1),
            "gradient": jax.jit(jax.grad(_llsq), static_argnums=1)}


def prepare(function: str, input) -> Prepared:
    functions = _functions()
    if function not in functions:
        raise UnknownFunction("llsq", function)
    f, x, n = functions[function], jnp.asarray(floats(input["x"])), int(input["n"])
    f(x, n).block_until_ready()

    def run():
        return f(x, n).block_until_ready()
    output = float if function == "primal" else (lambda g: g.tolist())
    return Prepared(run, output)
