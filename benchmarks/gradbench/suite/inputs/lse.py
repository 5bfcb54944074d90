"""lse's inputs: a vector x of n floats uniform in [0, 1), as GradBench's eval
draws it."""

from __future__ import annotations

import numpy as np

#: "default" is one of GradBench's sizes (it runs n = 2500 · 2^k up to 1 280 000)
SIZES = {"small": {"n": 100}, "default": {"n": 160000}}


def generate(*, seed: int = 0, n: int) -> dict:
    """``{"x": n floats in [0, 1)}``; n ≥ 1."""
    if n < 1:
        raise ValueError(f"lse needs n >= 1, not {n}")
    rng = np.random.default_rng(seed)
    return {"x": rng.random(n).tolist()}
