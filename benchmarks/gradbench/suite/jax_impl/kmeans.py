"""kmeans in JAX: ``cost`` from all point-centroid squared distances at once;
``dir`` is J / H, with J = ``jax.grad`` of the cost and H its Hessian's diagonal
from one ``jax.jvp`` of the gradient along ones (the Hessian is diagonal,
Note [The Hessian's diagonal from one product] in rlang_impl/kmeans.py)."""

from __future__ import annotations

import numpy as np

from ..common import Prepared, UnknownFunction, floats
from ._setup import jax, jnp


def cost(centroids, points):
    """Σ_i min_j |C_j - P_i|^2, the distances as |P|^2 - 2 P Cᵀ + |C|^2."""
    distances = (jnp.sum(points * points, axis=1)[:, None] - 2 * points @ centroids.T
                 + jnp.sum(centroids * centroids, axis=1)[None, :])
    return jnp.sum(jnp.min(distances, axis=1))


def newton_dir(centroids, points):
    j, h = jax.jvp(lambda c: jax.grad(cost)(c, points), (centroids,),
                   (jnp.ones_like(centroids),))
    return j / h


_FUNCTIONS = {"cost": jax.jit(cost), "dir": jax.jit(newton_dir)}


def prepare(function: str, input) -> Prepared:
    if function not in _FUNCTIONS:
        raise UnknownFunction("kmeans", function)
    f = _FUNCTIONS[function]
    centroids = jnp.asarray(floats(input["centroids"]))
    points = jnp.asarray(floats(input["points"]))

    def run():
        return jax.block_until_ready(f(centroids, points))
    run()
    return Prepared(run, float if function == "cost" else lambda d: np.asarray(d).tolist())
