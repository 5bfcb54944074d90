"""gmm in JAX: the log posterior written with array operations over all points
and components at once; ``jacobian`` is ``jax.grad`` of it in alpha, mu, q, l."""

from __future__ import annotations

import numpy as np

from ..common import Prepared, UnknownFunction, floats
from ._setup import jax, jnp

NAMES = ("alpha", "mu", "q", "l")


def _lower_triangle(l, d: int):
    """The k x d x d matrices with the strict lower triangle filled column by
    column from `l` (k x d(d-1)/2)."""
    cols, rows = np.triu_indices(d, 1)    # column-major lower = row-major upper, transposed
    return jnp.zeros((l.shape[0], d, d), l.dtype).at[:, rows, cols].set(l)


def log_posterior(alpha, mu, q, l, x, gamma, m):
    n, d = x.shape
    k = alpha.shape[0]
    sum_q = q.sum(axis=1)
    xc = x[:, None, :] - mu[None, :, :]                                  # n, k, d
    qx = jnp.exp(q)[None] * xc + jnp.einsum("kij,nkj->nki", _lower_triangle(l, d), xc)
    beta = alpha + sum_q - 0.5 * jnp.sum(qx * qx, axis=2)               # n, k
    logsumexp = jax.scipy.special.logsumexp
    likelihood = (jnp.sum(logsumexp(beta, axis=1))
                  - n * (0.5 * d * jnp.log(2 * jnp.pi) + logsumexp(alpha)))
    dof = d + m + 1
    frobenius = jnp.sum(jnp.exp(2 * q)) + jnp.sum(l * l)
    prior = (k * (dof * d * (jnp.log(gamma) - 0.5 * jnp.log(2.0))
                  - jax.scipy.special.multigammaln(0.5 * dof, d))
             - 0.5 * gamma * gamma * frobenius + m * jnp.sum(sum_q))
    return likelihood + prior


_FUNCTIONS = {"objective": jax.jit(log_posterior),
              "jacobian": jax.jit(jax.grad(log_posterior, argnums=(0, 1, 2, 3)))}


def prepare(function: str, input) -> Prepared:
    if function not in _FUNCTIONS:
        raise UnknownFunction("gmm", function)
    k, d = int(input["k"]), int(input["d"])
    l = floats(input["l"]).reshape(k, d * (d - 1) // 2)
    args = (jnp.asarray(floats(input["alpha"])), jnp.asarray(floats(input["mu"])),
            jnp.asarray(floats(input["q"])), jnp.asarray(l), jnp.asarray(floats(input["x"])),
            jnp.float64(input["gamma"]), jnp.float64(input["m"]))
    f = _FUNCTIONS[function]

    def run():
        return jax.block_until_ready(f(*args))
    run()
    if function == "objective":
        return Prepared(run, float)
    return Prepared(run, lambda grads: {name: np.asarray(g).tolist()
                                        for name, g in zip(NAMES, grads)})
