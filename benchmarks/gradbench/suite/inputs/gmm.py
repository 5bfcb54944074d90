"""gmm's inputs: a Gaussian mixture's parameters, data points and Wishart prior.

Shapes follow the eval's specification: ``x`` is n points of dimension d drawn
from the standard normal, ``alpha`` (k) and ``q`` (k x d) standard normal, ``mu``
(k x d) uniform on [0, 1), ``l`` (k x d(d-1)/2) standard normal, and the prior's
``m`` (extra degrees of freedom) and ``gamma`` (precision) as given.
"""

from __future__ import annotations

import numpy as np

SIZES = {
    "small": {"d": 3, "k": 4, "n": 12, "m": 0, "gamma": 1.0},
    "default": {"d": 10, "k": 25, "n": 1000, "m": 0, "gamma": 1.0},
}


def generate(*, seed: int = 0, d: int, k: int, n: int, m: int = 0,
             gamma: float = 1.0) -> dict:
    """The input of ``objective`` and ``jacobian`` as a JSON dictionary."""
    rng = np.random.default_rng(seed)
    return {
        "d": d, "k": k, "n": n, "m": m, "gamma": float(gamma),
        "x": rng.standard_normal((n, d)).tolist(),
        "alpha": rng.standard_normal(k).tolist(),
        "mu": rng.random((k, d)).tolist(),
        "q": rng.standard_normal((k, d)).tolist(),
        "l": rng.standard_normal((k, d * (d - 1) // 2)).tolist(),
    }
