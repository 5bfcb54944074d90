"""ht's inputs: a synthetic hand model and measured points (GradBench's ``HTInput``).

GradBench reads ADBench's hand model (22 bones: the wrist, four bones per finger,
the forearm; 544 vertices in the small model, 10,000 in the big one; 1,084
triangles) and point files.  This generator builds a hand of the same structure
and magnitudes: the same bone tree, base relative transforms that are rotations
with finger-sized offsets (a few centimetres), inverse base absolute transforms
consistent with them, vertices near the bones with one to four nonzero skinning
weights summing to one, random triangles, and points near a posed hand.
``us`` are barycentric coordinates (u0, u1 ≥ 0, u0 + u1 ≤ 1) in the complicated
variant and empty in the simple one, where correspondences name vertices, not
triangles.
"""

from __future__ import annotations

import copy

import numpy as np

#: "default" is GradBench's default: the big model (10,000 vertices), complicated,
#: hand1 (100 points).
SIZES = {
    "small": {"vertices": 24, "triangles": 30, "points": 6, "complicated": True},
    "default": {"vertices": 10000, "triangles": 1084, "points": 100, "complicated": True},
}

FINGERS = ("thumb", "index", "middle", "ring", "pinky")


def bone_tree() -> tuple[list[str], list[int]]:
    """ADBench's hand skeleton: bone names and parents (-1 for the root)."""
    names, parents = ["wrist"], [-1]
    for finger in FINGERS:
        for joint in range(1, 5):
            parents.append(0 if joint == 1 else len(names) - 1)
            names.append(f"{finger}{joint}")
    return names + ["forearm"], parents + [0]


def _rotation(rng, scale: float) -> np.ndarray:
    """A random rotation matrix of angle up to about `scale` radians."""
    axis = rng.normal(size=3)
    axis /= np.linalg.norm(axis)
    angle = rng.uniform(-scale, scale)
    k = np.array([[0, -axis[2], axis[1]], [axis[2], 0, -axis[0]], [-axis[1], axis[0], 0]])
    return np.eye(3) + np.sin(angle) * k + (1 - np.cos(angle)) * k @ k


def generate(*, seed: int = 0, vertices: int, triangles: int, points: int,
             complicated: bool = True) -> dict:
    """An ``HTInput``: the model, `points` correspondences and points, theta, us."""
    rng = np.random.default_rng(seed)
    names, parents = bone_tree()
    nb = len(names)
    relatives = np.zeros((nb, 4, 4))
    absolutes = np.zeros((nb, 4, 4))
    for b in range(nb):
        relatives[b, :3, :3] = _rotation(rng, 0.8)
        relatives[b, :3, 3] = rng.normal(0.0, 0.03, 3)
        relatives[b, 3, 3] = 1.0
        absolutes[b] = relatives[b] if parents[b] < 0 else absolutes[parents[b]] @ relatives[b]
    inverse_absolutes = np.linalg.inv(absolutes)
    near = rng.integers(0, nb, vertices)
    base = np.ones((vertices, 4))
    base[:, :3] = absolutes[near, :3, 3] + rng.normal(0.0, 0.01, (vertices, 3))
    weights = np.zeros((vertices, nb))
    for v in range(vertices):
        count = int(rng.integers(1, 5))
        bones = np.unique(np.concatenate([[near[v]], rng.integers(0, nb, count - 1)]))
        share = rng.uniform(0.1, 1.0, len(bones))
        weights[v, bones] = share / share.sum()
    tris = np.array([rng.choice(vertices, 3, replace=False) for _ in range(triangles)])
    theta = np.concatenate([rng.uniform(-0.5, 0.5, 3), [0.0, 1.0, -1.7] + rng.normal(0, 0.1, 3),
                            rng.uniform(-0.6, 0.6, 20)])
    if complicated:
        correspondences = rng.integers(0, triangles, points)
        u = rng.uniform(0.0, 1.0, (points, 2))
        flip = u.sum(axis=1) > 1.0
        u[flip] = 1.0 - u[flip]
        us = u.tolist()
    else:
        correspondences = rng.integers(0, vertices, points)
        us = []
    measured = theta[3:6] + rng.normal(0.0, 0.05, (points, 3))
    model = {
        "bone_count": nb,
        "bone_names": names,
        "parents": parents,
        "base_relatives": relatives.tolist(),
        "inverse_base_absolutes": inverse_absolutes.tolist(),
        "base_positions": base.tolist(),
        "weights": weights.tolist(),
        "triangles": tris.tolist(),
        "is_mirrored": False,
    }
    return {"theta": theta.tolist(),
            "data": {"model": model, "correspondences": correspondences.tolist(),
                     "points": measured.tolist()},
            "us": us}


class Hand:
    """An ``HTInput`` as arrays, the same for every tool.

    `theta` (26), `us` (N × 2, or None in the simple variant), `points` (N × 3),
    `corr` (N), `triangles` (T × 3), `base` (V × 4, homogeneous), `weights`
    (V × B), `parents` (B), `base_rel` and `inv_abs` (B × 4 × 4, row-major as
    given), `mirrored` (0 or 1).  `point_base` and `point_weights` hold each
    point's own vertices (its triangle's three, or its one vertex): N × k × 4 and
    N × k × B, gathered once, as input conversion."""

    def __init__(self, input: dict):
        data, model = input["data"], input["data"]["model"]
        f = lambda v: np.ascontiguousarray(np.asarray(v, dtype=np.float64))  # noqa: E731
        i = lambda v: np.ascontiguousarray(np.asarray(v, dtype=np.int64))  # noqa: E731
        self.theta = f(input["theta"])
        self.points = f(data["points"]).reshape(-1, 3)
        self.corr = i(data["correspondences"])
        us = np.asarray(input.get("us") or [], dtype=np.float64)
        self.complicated = us.size > 0
        self.us = f(us).reshape(-1, 2) if self.complicated else None
        self.triangles = i(model["triangles"]).reshape(-1, 3)
        self.base = f(model["base_positions"])
        self.weights = f(model["weights"])
        self.parents = i(model["parents"])
        self.base_rel = f(model["base_relatives"])
        self.inv_abs = f(model["inverse_base_absolutes"])
        self.mirrored = int(bool(model["is_mirrored"]))
        own = self.triangles[self.corr] if self.complicated else self.corr[:, None]
        self.point_base = np.ascontiguousarray(self.base[own])
        self.point_weights = np.ascontiguousarray(self.weights[own])

    def subset(self, k: int) -> "Hand":
        """The same hand with its first `k` points only."""
        few = copy.copy(self)
        for name in ("points", "corr", "us", "point_base", "point_weights"):
            value = getattr(self, name)
            setattr(few, name, None if value is None else value[:k])
        return few

    @property
    def n(self) -> int:
        """The number of points (the Jacobian has 3N rows)."""
        return len(self.corr)


def jacobian_output(result) -> list:
    """The manual tool's Jacobian JSON: the 3N × (2 + 26) (or 3N × 26) matrix as rows."""
    return np.asarray(result).tolist()


def objective_output(result) -> list:
    """The manual tool's objective JSON: the 3N errors, point by point."""
    return np.ravel(np.asarray(result)).tolist()
