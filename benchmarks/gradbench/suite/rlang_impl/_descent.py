"""GradBench's gradient descent (suite/descent.py) over lists of floats, for the
rlang tool's drivers: each step calls rlang for a value and a gradient."""

from __future__ import annotations

import math
from typing import Callable, Sequence

import numpy as np

from .. import descent


def _norm(v: Sequence[float]) -> float:
    total = 0.0
    for a in v:
        total += a * a
    return math.sqrt(total)


def argmin(f: Callable[[list], float], grad: Callable[[list], list], x: list) -> list:
    """Where descent on `f` (gradient `grad`, a list) from the list `x` stops."""
    found = descent.argmin(f, lambda v: np.asarray(grad(v), dtype=np.float64),
                           np.asarray(x, dtype=np.float64), _norm)
    return [float(a) for a in found]
