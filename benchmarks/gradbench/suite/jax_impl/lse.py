"""lse in JAX: max(x) + log Σ exp(x − max(x)), and ``jax.grad`` of it."""

from __future__ import annotations

from ..common import Prepared, UnknownFunction, floats
from ._setup import jax, jnp


def _lse(x):
    a = jnp.max(x)
    return a + jnp.log(jnp.sum(jnp.exp(x - a)))


_FUNCTIONS = {"primal": jax.jit(_lse), "gradient": jax.jit(jax.grad(_lse))}


def prepare(function: str, input) -> Prepared:
    if function not in _FUNCTIONS:
        raise UnknownFunction("lse", function)
    f, x = _FUNCTIONS[function], jnp.asarray(floats(input["x"]))
    f(x).block_until_ready()

    def run():
        return f(x).block_until_ready()
    output = float if function == "primal" else (lambda g: g.tolist())
    return Prepared(run, output)
