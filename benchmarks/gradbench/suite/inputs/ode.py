"""ode's inputs: ``x`` of n numbers uniform in [0, 1) and the step count ``s``.

GradBench's eval draws x with NumPy's uniform generator and runs every n with
s = 1, 10 and 100 (its defaults: n = 1000, 10000, 100000)."""

import numpy as np

SIZES = {"small": {"n": 8, "s": 3}, "default": {"n": 10000, "s": 10}}


def generate(*, seed: int = 0, n: int, s: int) -> dict:
    """The input ``{"x": [n floats in [0, 1)], "s": s}``."""
    rng = np.random.default_rng(seed)
    return {"x": rng.random(n).tolist(), "s": int(s)}
