"""Train a small JAX model with a rev layer inside `jax.jit(jax.grad(...))`.

    python examples/jax_layer.py [--steps N] [--seed S]

The model is  prediction = a · tanh(x w) + b,  where `tanh(x w)` is the rev function
`layer!` of examples/layers/tanh_layer.rev wrapped by `rlang.jax.wrap` (its
derivatives are rlang's gradient pass, called from JAX's reverse mode), and the
rest is JAX.  It fits synthetic data made with known parameters by gradient
descent on the mean squared error, and prints the loss before and after and the
parameters found.  docs/interop.md walks through it.
"""
from __future__ import annotations

import argparse
from pathlib import Path

import numpy as np

import jax
import jax.numpy as jnp

import rlang

jax.config.update("jax_enable_x64", True)           # rlang computes in f64

HERE = Path(__file__).resolve().parent
layer = rlang.jax.wrap(rlang.load(HERE / "layers" / "tanh_layer.rev").layer_)


def predict(params, x):
    h, _, _ = layer(jnp.zeros(x.shape[0]), x, params["w"])     # the rev layer
    return params["a"] * h + params["b"]


def loss(params, x, y):
    return jnp.mean((predict(params, x) - y) ** 2)


@jax.jit
def step(params, x, y, rate=0.2):
    value, grads = jax.value_and_grad(loss)(params, x, y)
    return value, jax.tree_util.tree_map(lambda p, g: p - rate * g, params, grads)


def data(seed: int, n: int = 128):
    rng = np.random.default_rng(seed)
    x = rng.normal(size=(n, 3))
    y = 2.0 * np.tanh(x @ np.array([0.5, -1.0, 0.25])) + 0.5 + 0.01 * rng.normal(size=n)
    return jnp.asarray(x), jnp.asarray(y)


def train(steps: int, seed: int) -> tuple:
    x, y = data(seed)
    params = {"w": jnp.array([0.1, 0.1, 0.1]), "a": jnp.array(1.0), "b": jnp.array(0.0)}
    first = float(loss(params, x, y))
    for _ in range(steps):
        _, params = step(params, x, y)
    return first, float(loss(params, x, y)), params


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=500)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    first, last, params = train(args.steps, args.seed)
    print(f"loss before {first:.6f}, after {args.steps} steps {last:.6f}")
    print(f"w = {np.round(np.asarray(params['w']), 3)}, a = {float(params['a']):.3f}, "
          f"b = {float(params['b']):.3f}")


if __name__ == "__main__":
    main()
