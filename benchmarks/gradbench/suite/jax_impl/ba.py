"""ba in JAX: the errors are one observation's function `jax.vmap`ped over all of
them; the Jacobian's nonzeros are `jax.vmap(jax.jacrev(...))` of it, laid out in
ADBench's CSR order by `inputs.ba.Observations.csr` (as the rlang tool does)."""

from __future__ import annotations

import numpy as np

from ..common import Prepared, UnknownFunction
from ..inputs.ba import Observations, csr_output, objective_output
from ._setup import jax, jnp


def _rotate(r, x):
    """x rotated by the Rodrigues vector r (first order x + r × x at r = 0)."""
    sq = jnp.dot(r, r)
    nonzero = sq != 0.0
    th = jnp.sqrt(jnp.where(nonzero, sq, 1.0))
    c, s = jnp.cos(th), jnp.sin(th)
    axis = r / th
    full = x * c + jnp.cross(axis, x) * s + axis * (jnp.dot(axis, x) * (1.0 - c))
    return jnp.where(nonzero, full, x + jnp.cross(r, x))


def _reproj(par, feat):
    """The weighted reprojection error (2) of one observation, whose camera, point
    and weight are `par` (15)."""
    cam, x, w = par[0:11], par[11:14], par[14]
    p = _rotate(cam[0:3], x - cam[3:6])
    uv = p[:2] / p[2]
    rr = jnp.dot(uv, uv)
    dist = 1.0 + cam[9] * rr + cam[10] * rr * rr
    return w * (uv * dist * cam[6] + cam[7:9] - feat)


def _weight_error(w):
    return 1.0 - w * w


_objective = jax.jit(lambda params, w, feats: (
    jax.vmap(_reproj)(params, feats), _weight_error(w)))
_blocks = jax.jit(lambda params, w, feats: (
    jax.vmap(jax.jacrev(_reproj))(params, feats), jax.vmap(jax.grad(_weight_error))(w)))


def prepare(function: str, input) -> Prepared:
    obs = Observations.from_input(input)
    args = tuple(jnp.asarray(a) for a in (obs.params_seen, obs.w, obs.feats))
    if function == "objective":
        def run():
            return jax.block_until_ready(_objective(*args))
        output = objective_output
    elif function == "jacobian":
        def run():
            blocks, dweights = jax.block_until_ready(_blocks(*args))
            return obs.csr(np.asarray(blocks), np.asarray(dweights))
        output = csr_output
    else:
        raise UnknownFunction("ba", function)
    run()
    return Prepared(run, output)
