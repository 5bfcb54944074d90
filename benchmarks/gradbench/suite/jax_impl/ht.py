"""ht in JAX: the hand model's vertices posed by theta, vectorised over bones and
vertices (the bone chain unrolled under `jax.jit`); the Jacobian's theta columns
are `jax.jacfwd` of the objective (26 tangents), its us columns `jax.vmap` of
`jax.jacfwd` of each point's error in its own us (a point depends on no other)."""

from __future__ import annotations

import numpy as np

from ..common import Prepared, UnknownFunction
from ..inputs.ht import Hand, jacobian_output, objective_output
from ._setup import jax, jnp

#: theta index -> (bone, angle) it poses: per finger, the first joint's x and y
#: angles, then one angle for each of the next two joints
POSE = [(2 + 4 * f + j, a) for f in range(5) for j, a in ((0, 0), (0, 1), (1, 0), (2, 0))]


def _euler(angles):
    """Rz · Ry · Rx per bone, from angles (B × 3) stored as (x, z, y)."""
    tx, tz, ty = angles[:, 0], angles[:, 1], angles[:, 2]
    cx, sx, cy, sy, cz, sz = (jnp.cos(tx), jnp.sin(tx), jnp.cos(ty), jnp.sin(ty),
                              jnp.cos(tz), jnp.sin(tz))
    return jnp.stack([
        jnp.stack([cz * cy, cz * sy * sx - sz * cx, sz * sx + cz * sy * cx], -1),
        jnp.stack([sz * cy, cz * cx + sz * sy * sx, sz * sy * cx - cz * sx], -1),
        jnp.stack([-sy, cy * sx, cy * cx], -1)], -2)


def _angle_axis(a):
    """The rotation of angle-axis a; the identity below an angle of 1e-4."""
    sq = jnp.dot(a, a)
    small = sq < 1e-8
    angle = jnp.sqrt(jnp.where(small, 1.0, sq))
    x, y, z = a / angle
    s, c = jnp.sin(angle), jnp.cos(angle)
    full = jnp.array([
        [x * x + (1 - x * x) * c, x * y * (1 - c) - z * s, x * z * (1 - c) + y * s],
        [x * y * (1 - c) + z * s, y * y + (1 - y * y) * c, y * z * (1 - c) - x * s],
        [x * z * (1 - c) - y * s, z * y * (1 - c) + x * s, z * z + (1 - z * z) * c]])
    return jnp.where(jnp.sqrt(sq) < 1e-4, jnp.eye(3), full)


def _vertices(theta, base, weights, parents, base_rel, inv_abs, mirrored):
    """The posed vertices (V × 3)."""
    nb = base_rel.shape[0]
    bones, which = zip(*POSE)
    angles = jnp.zeros((nb, 3)).at[np.array(bones), np.array(which)].set(theta[6:26])
    posed = jnp.zeros((nb, 4, 4)).at[:, :3, :3].set(_euler(angles)).at[:, 3, 3].set(1.0)
    relatives = base_rel @ posed
    absolutes = []
    for b in range(nb):
        p = int(parents[b])
        absolutes.append(relatives[b] if p < 0 else absolutes[p] @ relatives[b])
    transforms = (jnp.stack(absolutes) @ inv_abs)[:, :3, :]
    blended = (weights @ transforms.reshape(nb, 12)).reshape(-1, 3, 4)   # Σ_b w_vb T_b
    skinned = jnp.einsum("vij,vj->vi", blended, base)
    if mirrored:
        skinned = skinned.at[:, 0].multiply(-1.0)
    return skinned @ _angle_axis(theta[:3]).T + theta[3:6]


def _triangle_errors(us, points, v0, v1, v2):
    return points - (us[..., :1] * v0 + us[..., 1:] * v1 + (1.0 - us[..., :1] - us[..., 1:]) * v2)


def _functions(hand: Hand):
    """(objective(theta, us), jacobian(theta, us)) of `hand`'s variant, jitted."""
    model = (jnp.asarray(hand.base), jnp.asarray(hand.weights), hand.parents,
             jnp.asarray(hand.base_rel), jnp.asarray(hand.inv_abs), hand.mirrored)
    points = jnp.asarray(hand.points)
    if hand.complicated:
        tri = hand.triangles[hand.corr]

        def objective(theta, us):
            v = _vertices(theta, *model)
            return _triangle_errors(us, points, v[tri[:, 0]], v[tri[:, 1]], v[tri[:, 2]])

        def jacobian(theta, us):
            v = _vertices(theta, *model)
            dus = jax.vmap(jax.jacfwd(_triangle_errors))(
                us, points, v[tri[:, 0]], v[tri[:, 1]], v[tri[:, 2]])
            dtheta = jax.jacfwd(objective)(theta, us)
            return jnp.concatenate([dus, dtheta], axis=2).reshape(-1, 28)
    else:
        corr = hand.corr

        def objective(theta, us):
            return points - _vertices(theta, *model)[corr]

        def jacobian(theta, us):
            return jax.jacfwd(objective)(theta, us).reshape(-1, 26)
    return jax.jit(objective), jax.jit(jacobian)


def prepare(function: str, input) -> Prepared:
    hand = Hand(input)
    objective, jacobian = _functions(hand)
    theta = jnp.asarray(hand.theta)
    us = jnp.asarray(hand.us if hand.complicated else np.zeros((hand.n, 2)))
    if function == "objective":
        f, output = objective, objective_output
    elif function == "jacobian":
        f, output = jacobian, jacobian_output
    else:
        raise UnknownFunction("ht", function)

    def run():
        return f(theta, us).block_until_ready()
    run()
    return Prepared(run, output)
