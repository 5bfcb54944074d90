"""hello in JAX: ``square`` is x * x, ``double`` is ``jax.grad`` of it."""

from __future__ import annotations

from ..common import Prepared, UnknownFunction
from ._setup import jax, jnp


def _square(x):
    return x * x


_FUNCTIONS = {"square": jax.jit(_square), "double": jax.jit(jax.grad(_square))}


def prepare(function: str, input) -> Prepared:
    if function not in _FUNCTIONS:
        raise UnknownFunction("hello", function)
    f, x = _FUNCTIONS[function], jnp.float64(input)
    f(x).block_until_ready()

    def run():
        return f(x).block_until_ready()
    return Prepared(run, float)
