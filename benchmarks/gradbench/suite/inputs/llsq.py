"""llsq's inputs: the coefficients x (m of them, uniform in [0, 1)) and the number
n of points t_i, as GradBench's eval draws them."""

from __future__ import annotations

import numpy as np

#: "default" is GradBench's n = 4096 with its m = 128
SIZES = {"small": {"n": 32, "m": 8}, "default": {"n": 4096, "m": 128}}


def generate(*, seed: int = 0, n: int, m: int) -> dict:
    """``{"x": m floats in [0, 1), "n": n}``; n ≥ 2 (t_i divides by n − 1)."""
    if n < 2 or m < 1:
        raise ValueError(f"llsq needs n >= 2 and m >= 1, not n={n}, m={m}")
    rng = np.random.default_rng(seed)
    return {"x": rng.random(m).tolist(), "n": int(n)}
