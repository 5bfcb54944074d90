"""lstm in JAX: the layers of one step vectorised over the b units, the steps a
``lax.scan``; ``jacobian`` is ``jax.grad`` with respect to both parameter arrays."""

from __future__ import annotations

import numpy as np

from ..common import Prepared, UnknownFunction, floats
from ._setup import jax, jnp


def _step(main_params, extra_params):
    """The scan body: (hidden[l, b], cell[l, b]) and one (x_t, x_{t+1}) pair ->
    the new state and the step's sum_i x_{t+1, i} (p_i - log(2 + sum_k exp p_k))."""
    l = main_params.shape[0] // 2
    weight = main_params[0::2].reshape(l, 4, -1)
    bias = main_params[1::2].reshape(l, 4, -1)

    def step(carry, xs):
        hidden, cell = carry
        x, gold = xs
        inp = x * extra_params[0]
        new_hidden, new_cell = [], []
        for j in range(l):
            w, b = weight[j], bias[j]
            forget = jax.nn.sigmoid(inp * w[0] + b[0])
            ingate = jax.nn.sigmoid(hidden[j] * w[1] + b[1])
            outgate = jax.nn.sigmoid(inp * w[2] + b[2])
            change = jnp.tanh(hidden[j] * w[3] + b[3])
            c = cell[j] * forget + ingate * change
            inp = outgate * jnp.tanh(c)
            new_hidden.append(inp)
            new_cell.append(c)
        pred = inp * extra_params[1] + extra_params[2]
        term = jnp.sum(gold * (pred - jnp.log(2.0 + jnp.sum(jnp.exp(pred)))))
        return (jnp.stack(new_hidden), jnp.stack(new_cell)), term

    return step


def _objective(main_params, extra_params, state, sequence):
    carry = (state[0::2], state[1::2])
    _, terms = jax.lax.scan(_step(main_params, extra_params), carry,
                            (sequence[:-1], sequence[1:]))
    return -jnp.sum(terms) / ((sequence.shape[0] - 1) * sequence.shape[1])


_FUNCTIONS = {
    "objective": jax.jit(_objective),
    "jacobian": jax.jit(jax.grad(_objective, argnums=(0, 1))),
}
_ARRAYS = ("main_params", "extra_params", "state", "sequence")


def _flat(result):
    if isinstance(result, tuple):
        return np.concatenate([np.asarray(part).ravel() for part in result]).tolist()
    return float(result)


def prepare(function: str, input) -> Prepared:
    if function not in _FUNCTIONS:
        raise UnknownFunction("lstm", function)
    f = _FUNCTIONS[function]
    args = tuple(jnp.asarray(floats(input[name])) for name in _ARRAYS)
    jax.block_until_ready(f(*args))

    def run():
        return jax.block_until_ready(f(*args))
    return Prepared(run, _flat)
