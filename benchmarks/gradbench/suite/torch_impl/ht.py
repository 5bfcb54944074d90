"""ht in PyTorch: the hand model's vertices posed by theta, vectorised over bones
and vertices; the Jacobian's theta columns are `torch.func.jacfwd` of the
objective (26 tangents), its us columns ``vmap(jacfwd(...))`` of each point's
error in its own us (a point depends on no other)."""

from __future__ import annotations

import numpy as np

from ..common import Prepared, UnknownFunction
from ..inputs.ht import Hand, jacobian_output, objective_output
from ._setup import torch

from torch.func import jacfwd, vmap  # noqa: E402

#: theta index -> (bone, angle) it poses: per finger, the first joint's x and y
#: angles, then one angle for each of the next two joints
POSE = [(2 + 4 * f + j, a) for f in range(5) for j, a in ((0, 0), (0, 1), (1, 0), (2, 0))]


def _euler(angles):
    """Rz · Ry · Rx per bone, from angles (B × 3) stored as (x, z, y)."""
    tx, tz, ty = angles[:, 0], angles[:, 1], angles[:, 2]
    cx, sx, cy, sy, cz, sz = (torch.cos(tx), torch.sin(tx), torch.cos(ty), torch.sin(ty),
                              torch.cos(tz), torch.sin(tz))
    return torch.stack([
        torch.stack([cz * cy, cz * sy * sx - sz * cx, sz * sx + cz * sy * cx], -1),
        torch.stack([sz * cy, cz * cx + sz * sy * sx, sz * sy * cx - cz * sx], -1),
        torch.stack([-sy, cy * sx, cy * cx], -1)], -2)


def _angle_axis(a):
    """The rotation of angle-axis a; the identity below an angle of 1e-4."""
    sq = torch.dot(a, a)
    small = sq < 1e-8
    angle = torch.sqrt(torch.where(small, torch.ones_like(sq), sq))
    x, y, z = a / angle
    s, c = torch.sin(angle), torch.cos(angle)
    full = torch.stack([
        torch.stack([x * x + (1 - x * x) * c, x * y * (1 - c) - z * s, x * z * (1 - c) + y * s]),
        torch.stack([x * y * (1 - c) + z * s, y * y + (1 - y * y) * c, y * z * (1 - c) - x * s]),
        torch.stack([x * z * (1 - c) - y * s, z * y * (1 - c) + x * s, z * z + (1 - z * z) * c])])
    return torch.where(torch.sqrt(sq) < 1e-4, torch.eye(3, dtype=a.dtype), full)


def _vertices(theta, base, weights, parents, base_rel, inv_abs, mirrored):
    """The posed vertices (V × 3)."""
    nb = base_rel.shape[0]
    bones, which = (list(t) for t in zip(*POSE))
    angles = torch.zeros((nb, 3), dtype=theta.dtype)
    angles = angles.index_put((torch.tensor(bones), torch.tensor(which)), theta[6:26])
    posed = torch.zeros((nb, 4, 4), dtype=theta.dtype)
    posed[:, 3, 3] = 1.0
    posed = torch.cat([torch.cat([_euler(angles), posed[:, :3, 3:]], 2), posed[:, 3:, :]], 1)
    relatives = base_rel @ posed
    absolutes = []
    for b in range(nb):
        p = int(parents[b])
        absolutes.append(relatives[b] if p < 0 else absolutes[p] @ relatives[b])
    transforms = (torch.stack(absolutes) @ inv_abs)[:, :3, :]
    blended = (weights @ transforms.reshape(nb, 12)).reshape(-1, 3, 4)   # Σ_b w_vb T_b
    skinned = torch.einsum("vij,vj->vi", blended, base)
    if mirrored:
        skinned = skinned * torch.tensor([-1.0, 1.0, 1.0], dtype=skinned.dtype)
    return skinned @ _angle_axis(theta[:3]).T + theta[3:6]


def _triangle_errors(us, points, v0, v1, v2):
    return points - (us[..., :1] * v0 + us[..., 1:] * v1 + (1.0 - us[..., :1] - us[..., 1:]) * v2)


def _functions(hand: Hand):
    """(objective(theta, us), jacobian(theta, us)) of `hand`'s variant."""
    t = torch.from_numpy
    model = (t(hand.base), t(hand.weights), hand.parents, t(hand.base_rel),
             t(hand.inv_abs), hand.mirrored)
    points = t(hand.points)
    if hand.complicated:
        tri = torch.from_numpy(hand.triangles[hand.corr])

        def objective(theta, us):
            v = _vertices(theta, *model)
            return _triangle_errors(us, points, v[tri[:, 0]], v[tri[:, 1]], v[tri[:, 2]])

        def jacobian(theta, us):
            with torch.no_grad():
                v = _vertices(theta, *model)
            dus = vmap(jacfwd(_triangle_errors))(
                us, points, v[tri[:, 0]], v[tri[:, 1]], v[tri[:, 2]])
            dtheta = jacfwd(objective)(theta, us)
            return torch.cat([dus, dtheta], dim=2).reshape(-1, 28)
    else:
        corr = torch.from_numpy(hand.corr)

        def objective(theta, us):
            return points - _vertices(theta, *model)[corr]

        def jacobian(theta, us):
            return jacfwd(objective)(theta, us).reshape(-1, 26)
    return objective, jacobian


def prepare(function: str, input) -> Prepared:
    hand = Hand(input)
    objective, jacobian = _functions(hand)
    theta = torch.from_numpy(hand.theta)
    us = torch.from_numpy(hand.us if hand.complicated else np.zeros((hand.n, 2)))
    if function == "objective":
        def run():
            with torch.no_grad():
                return objective(theta, us).numpy()
        output = objective_output
    elif function == "jacobian":
        def run():
            return jacobian(theta, us).numpy()
        output = jacobian_output
    else:
        raise UnknownFunction("ht", function)
    run()
    return Prepared(run, output)
