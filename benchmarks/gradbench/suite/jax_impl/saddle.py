"""saddle in JAX: the inner argmax over y is a bounded ``lax.scan`` of descent steps
on −f (``jax.grad`` cannot differentiate a ``lax.while_loop``) whose gradient is
``jax.grad`` ("…r") or two ``jax.jvp``s ("…f"); the descent on x (a
``lax.while_loop``, not differentiated) takes ``jax.grad`` ("r…") or two
``jax.jvp``s ("f…") of max_y f(x, y).  The final argmax at the x found uses the
outer mode."""

from __future__ import annotations

from ..common import Prepared, UnknownFunction
from ._descent import argmin, argmin_scanned
from ._setup import jax, jnp

#: The inner descent's bound (the start (1, 1) takes about 170 steps); more is an error.
MAX_STEPS = 1000
UNITS = (jnp.array([1.0, 0.0]), jnp.array([0.0, 1.0]))


def cost(x, y):
    return (x[0] * x[0] + x[1] * x[1]) - (y[0] * y[0] + y[1] * y[1])


def gradient_by(mode: str, f):
    if mode == "r":
        return jax.grad(f)
    return lambda v: jnp.stack([jax.jvp(f, (v,), (e,))[1] for e in UNITS])


def _saddle(outer: str, inner: str):
    def max_cost(x, start):
        def negated(y):
            return -cost(x, y)
        y, unfinished = argmin_scanned(negated, gradient_by(inner, negated), start, MAX_STEPS)
        return cost(x, y), unfinished

    def run(start):
        def r1_cost(x):
            return max_cost(x, start)[0]
        r1 = argmin(r1_cost, gradient_by(outer, r1_cost), start)

        def negated(y):
            return -cost(r1, y)
        r2 = argmin(negated, gradient_by(outer, negated), start)
        return jnp.concatenate([r1, r2]), max_cost(r1, start)[1]
    return jax.jit(run)


_FUNCTIONS = {name: _saddle(name[0], name[1]) for name in ("rr", "rf", "fr", "ff")}


def prepare(function: str, input) -> Prepared:
    if function not in _FUNCTIONS:
        raise UnknownFunction("saddle", function)
    f, start = _FUNCTIONS[function], jnp.array([float(v) for v in input["start"]])

    def run():
        points, unfinished = jax.block_until_ready(f(start))
        if bool(unfinished):
            raise RuntimeError(f"the inner descent did not stop within {MAX_STEPS} steps")
        return points
    run()
    return Prepared(run, lambda points: [float(v) for v in points])
