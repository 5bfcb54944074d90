"""ode in JAX: s RK4 steps in a ``lax.fori_loop``; ``gradient`` is ``jax.grad``
of the last element of the solution."""

from __future__ import annotations

from ..common import Prepared, UnknownFunction, floats
from ._setup import jax, jnp


def _rate(x, y):
    """y' = (x_0, x_1 y_0, x_2 y_1, ...)."""
    return x * jnp.concatenate([jnp.ones(1, y.dtype), y[:-1]])


def _primal(x, s):
    h = 2.0 / s

    def step(_, y):
        k1 = _rate(x, y)
        k2 = _rate(x, y + h * k1 / 2)
        k3 = _rate(x, y + h * k2 / 2)
        k4 = _rate(x, y + h * k3)
        return y + h * (k1 + 2 * k2 + 2 * k3 + k4) / 6

    return jax.lax.fori_loop(0, s, step, jnp.zeros_like(x))


# s is static: with known bounds fori_loop is a scan, which jax.grad reverses
_FUNCTIONS = {
    "primal": jax.jit(_primal, static_argnums=1),
    "gradient": jax.jit(jax.grad(lambda x, s: _primal(x, s)[-1]), static_argnums=1),
}


def prepare(function: str, input) -> Prepared:
    if function not in _FUNCTIONS:
        raise UnknownFunction("ode", function)
    f, x, s = _FUNCTIONS[function], jnp.asarray(floats(input["x"])), int(input["s"])
    f(x, s).block_until_ready()

    def run():
        return f(x, s).block_until_ready()
    return Prepared(run)
