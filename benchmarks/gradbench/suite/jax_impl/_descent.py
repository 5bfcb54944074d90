"""GradBench's gradient descent (particle's and saddle's `multivariate_argmin`):
`argmin`, a ``lax.while_loop`` (not differentiable by ``jax.grad``), and
`argmin_scanned`, a ``lax.scan`` of at most `steps` steps that stop moving when the
descent stops, which ``jax.grad`` and ``jax.jvp`` differentiate."""

from __future__ import annotations

from ._setup import jax, jnp

ETA, TOLERANCE, DOUBLE_AFTER = 1e-5, 1e-5, 10


def _norm(v):
    return jnp.sqrt(jnp.sum(v * v))


def _step(f, grad):
    """One step of the descent on `f`: state (x, f(x), grad(x), eta, i, go)."""
    def step(state):
        x, fx, gx, eta, i, _ = state

        def trial(_):
            moved = x - eta * gx

            def judge(_):
                f_moved = f(moved)
                return jax.lax.cond(
                    f_moved < fx,
                    lambda _: (moved, f_moved, grad(moved), eta, i + 1, True),
                    lambda _: (x, fx, gx, eta / 2, 0, True), None)
            return jax.lax.cond(_norm(x - moved) <= TOLERANCE,
                                lambda _: (x, fx, gx, eta, i, False), judge, None)

        return jax.lax.cond(
            _norm(gx) <= TOLERANCE, lambda _: (x, fx, gx, eta, i, False),
            lambda _: jax.lax.cond(i == DOUBLE_AFTER,
                                   lambda _: (x, fx, gx, 2 * eta, 0, True), trial, None),
            None)
    return step


def _start(f, grad, x):
    return (x, f(x), grad(x), jnp.float64(ETA), jnp.int64(0), jnp.array(True))


def argmin(f, grad, x):
    """Where descent on `f` (gradient `grad`) from `x` stops (suite/rlang_impl/_descent.py
    says how)."""
    return jax.lax.while_loop(lambda s: s[5], _step(f, grad), _start(f, grad, x))[0]


def argmin_scanned(f, grad, x, steps: int):
    """(where the descent stops, whether it had not stopped after `steps` steps)."""
    step = _step(f, grad)

    def scanned(state, _):
        return jax.lax.cond(state[5], step, lambda s: s, state), None

    final, _ = jax.lax.scan(scanned, _start(f, grad, x), None, length=steps)
    return final[0], final[5]
