"""ba's inputs: one camera, point, weight and feature, repeated (GradBench's ``BAInput``).

GradBench reads ADBench's data files, each of which holds n, m, p and a single
camera, point, weight and feature that the tool repeats: camera i mod n and point
i mod m make observation i.  This generator draws its own such values, of the
same magnitudes as those files: a rotation of about one radian, a camera centre
some tens of units from the origin, a focal length of a few hundred pixels, a
principal point and radial distortion near zero, a point a few units from the
origin, a weight in (0, 1) and a feature of a few hundred pixels.
"""

from __future__ import annotations

import functools

import numpy as np

#: "default" is GradBench's ba1 (ADBench's ba1_n49_m7776_p31843).
SIZES = {"small": {"n": 3, "m": 5, "p": 11}, "default": {"n": 49, "m": 7776, "p": 31843}}


def generate(*, seed: int = 0, n: int, m: int, p: int) -> dict:
    """The ``BAInput`` of `n` cameras, `m` points and `p` observations."""
    rng = np.random.default_rng(seed)
    rotation = rng.uniform(-1.2, 1.2, 3)
    centre = rng.uniform(20.0, 60.0, 3)
    focal = rng.uniform(300.0, 500.0, 1)
    principal = rng.uniform(-10.0, 10.0, 2)
    distortion = rng.uniform(0.0, 0.1, 2) * np.array([1.0, 0.05])
    cam = np.concatenate([rotation, centre, focal, principal, distortion])
    return {
        "n": int(n), "m": int(m), "p": int(p),
        "cam": cam.tolist(),
        "x": rng.uniform(0.0, 8.0, 3).tolist(),
        "w": float(rng.uniform(0.1, 1.0)),
        "feat": rng.uniform(200.0, 900.0, 2).tolist(),
    }


# The input's meaning and the output's layout, the same for every tool.

class Observations:
    """The p observations of a ``BAInput``, repeated as the eval defines: observation
    i sees camera i mod n and point i mod m, with weight w and feature feat.

    `params_seen` (p × 15) holds each observation's parameters, its camera (11),
    point (3) and weight, in the order of its Jacobian row's columns (gathered once,
    as input conversion); `w` (p) and `feats` (p × 2)."""

    def __init__(self, n: int, m: int, p: int, cam, x, w: float, feat):
        self.n, self.m, self.p = n, m, p
        self.cams = np.ascontiguousarray(np.tile(np.asarray(cam, dtype=np.float64), (n, 1)))
        self.points = np.ascontiguousarray(np.tile(np.asarray(x, dtype=np.float64), (m, 1)))
        self.w = np.full(p, float(w))
        self.feats = np.ascontiguousarray(np.tile(np.asarray(feat, dtype=np.float64), (p, 1)))
        index = np.arange(p)
        self.cam_of, self.point_of = index % n, index % m
        self.params_seen = np.ascontiguousarray(np.concatenate(
            [self.cams[self.cam_of], self.points[self.point_of], self.w[:, None]], axis=1))

    @classmethod
    def from_input(cls, input: dict) -> "Observations":
        return cls(int(input["n"]), int(input["m"]), int(input["p"]), input["cam"],
                   input["x"], input["w"], input["feat"])

    def csr(self, blocks, dweights) -> tuple:
        """ADBench's CSR Jacobian ``(rows, cols, vals)`` from each observation's 2 × 15
        block (`blocks`, p × 2 × 15: its two error rows' derivatives with respect to
        `params_seen`, which is the row's column order) and each weight error's
        derivative (`dweights`, p): rows 2i and 2i + 1 are observation i's, row
        2p + i weight i's.  `rows` and `cols` are the input's (which camera and
        point each observation sees), the same arrays every call; `vals` is new, one
        copy of the two parts (written part by part into a strided view of the
        blocks, as three parameter groups, it took 122–500 ms of ba12's Jacobian;
        one contiguous copy 76–81 ms)."""
        rows, cols = self.csr_structure
        vals = np.concatenate((np.asarray(blocks).reshape(-1), np.asarray(dweights)))
        return rows, cols, vals

    @functools.cached_property
    def csr_structure(self) -> tuple:
        """``(rows, cols)`` of `csr`: they depend on the observations only, so every
        tool computes them once per input, as input conversion (10 of a 43 ms
        Jacobian of ba1's size were these index arrays)."""
        n, m, p = self.n, self.m, self.p
        weight_cols = 11 * n + 3 * m + np.arange(p)
        cols = np.empty(31 * p, dtype=np.int64)
        block_cols = cols[:30 * p].reshape(p, 2, 15)
        block_cols[:, :, :11] = (11 * self.cam_of)[:, None, None] + np.arange(11)
        block_cols[:, :, 11:14] = (11 * n + 3 * self.point_of)[:, None, None] + np.arange(3)
        block_cols[:, :, 14] = weight_cols[:, None]
        cols[30 * p:] = weight_cols
        rows = np.empty(3 * p + 1, dtype=np.int64)
        rows[:2 * p + 1] = np.arange(0, 30 * p + 1, 15)
        rows[2 * p + 1:] = np.arange(30 * p + 1, 31 * p + 1)
        rows.setflags(write=False)
        cols.setflags(write=False)
        return rows, cols


def objective_output(result) -> dict:
    """The manual tool's objective JSON from ``(reproj_err (p × 2), w_err (p))``: the
    first observation's errors and how many there are (the eval undoes the
    repetition)."""
    reproj, werr = (np.asarray(r) for r in result)
    return {"reproj_error": {"elements": [float(v) for v in reproj[0]],
                             "repeated": int(reproj.shape[0])},
            "w_err": {"element": float(werr[0]), "repeated": int(werr.shape[0])}}


def csr_output(result) -> dict:
    """The manual tool's Jacobian JSON from ``(rows, cols, vals)``: of each list its
    first 30 entries and its last."""
    def cut(values):
        values = np.asarray(values)
        return np.concatenate([values[:30], values[-1:]]).tolist()
    rows, cols, vals = result
    return {"rows": cut(rows), "cols": cut(cols), "vals": cut(vals)}
