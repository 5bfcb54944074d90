"""particle in JAX: the Euler loop is a ``lax.scan`` over at most MAX_STEPS steps
that stop moving once the particle would cross the x axis (``jax.grad`` cannot
differentiate a ``lax.while_loop``); the force is ``jax.grad`` ("…r") or two
``jax.jvp``s ("…f") of the potential, and the descent on w (a ``lax.while_loop``,
not differentiated) takes ``jax.grad`` ("r…") or ``jax.jvp`` ("f…") of the loss."""

from __future__ import annotations

from ..common import Prepared, UnknownFunction
from ._descent import argmin
from ._setup import jax, jnp

DT = 0.1
#: The Euler loop's bound (w = 0 takes 352 steps); more is an error.
MAX_STEPS = 1000


def potential(x, w):
    def inverse_distance(c0, c1):
        return 1.0 / jnp.sqrt((x[0] - c0) * (x[0] - c0) + (x[1] - c1) * (x[1] - c1))
    return inverse_distance(10.0, 10.0 - w) + inverse_distance(10.0, 0.0)


def force_by_reverse(x, w):
    return jax.grad(potential)(x, w)


def force_by_forward(x, w):
    return jnp.stack([jax.jvp(lambda x: potential(x, w), (x,), (e,))[1]
                      for e in (jnp.array([1.0, 0.0]), jnp.array([0.0, 1.0]))])


def trajectory(w, gradient):
    """(x₀(t_f)², whether the loop stopped within MAX_STEPS)."""
    def step(state, _):
        x, v, go = state
        g = gradient(x, w)
        moved = x + DT * v
        go = go & (moved[1] > 0.0)
        return (jnp.where(go, moved, x), jnp.where(go, v + DT * (-1.0 * g), v), go), None

    start = (jnp.array([0.0, 8.0]), jnp.array([0.75, 0.0]), jnp.array(True))
    (x, v, go), _ = jax.lax.scan(step, start, None, length=MAX_STEPS)
    crossing = x[0] + (-x[1] / v[1]) * v[0]
    return crossing * crossing, go


def _particle(outer_reverse: bool, inner: str):
    gradient = force_by_reverse if inner == "r" else force_by_forward

    def loss(w):
        return trajectory(w[0], gradient)[0]

    if outer_reverse:
        grad = jax.grad(loss)
    else:
        def grad(w):
            return jax.jvp(loss, (w,), (jnp.ones_like(w),))[1][None]

    def run(w0):
        w = argmin(loss, grad, jnp.array([w0]))[0]
        return w, trajectory(w, gradient)[1]
    return jax.jit(run)


_FUNCTIONS = {name: _particle(name[0] == "r", name[1]) for name in ("rr", "rf", "fr", "ff")}


def prepare(function: str, input) -> Prepared:
    if function not in _FUNCTIONS:
        raise UnknownFunction("particle", function)
    f, w0 = _FUNCTIONS[function], jnp.float64(input["w"])

    def run():
        w, unfinished = jax.block_until_ready(f(w0))
        if bool(unfinished):
            raise RuntimeError(f"the Euler loop did not stop within {MAX_STEPS} steps")
        return w
    run()
    return Prepared(run, float)
