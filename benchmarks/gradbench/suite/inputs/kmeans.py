"""kmeans' inputs: n points uniform in the unit cube [0, 1)^d, and k centroids.

As the eval's specification asks, every centroid must be the closest one to at
least one point (so that the Hessian's diagonal has no zero): the centroids are
the last k points themselves, each at distance 0 from its own point.
"""

from __future__ import annotations

import numpy as np

SIZES = {
    "small": {"k": 4, "n": 40, "d": 3},
    "default": {"k": 100, "n": 1000, "d": 8},
}


def generate(*, seed: int = 0, k: int, n: int, d: int) -> dict:
    """The input of ``cost`` and ``dir``: ``points`` (n x d), ``centroids`` (k x d)."""
    if not 0 < k <= n:
        raise ValueError(f"kmeans needs 0 < k <= n, not k={k}, n={n}")
    points = np.random.default_rng(seed).random((n, d))
    return {"points": points.tolist(), "centroids": points[n - k:].tolist()}
