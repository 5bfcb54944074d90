"""Values that must agree: exactly for integers, bools, strings and fixed point, to a
tolerance for floats (`same_values`)."""
from __future__ import annotations

import math

import numpy as np

RTOL, ATOL = 1e-9, 1e-12


def _close(a: float, b: float) -> bool:
    if math.isnan(a) or math.isnan(b):
        return math.isnan(a) and math.isnan(b)
    if math.isinf(a) or math.isinf(b):
        return a == b
    return abs(a - b) <= ATOL + RTOL * max(abs(a), abs(b))


def same_values(a, b, nan_parts: bool = False) -> bool:
    """Whether two results (nested lists/tuples/dicts of numbers, NumPy arrays, rlang
    values) agree.  With `nan_parts`, a complex part that is nan on one side may be
    anything on the other: the gradient at a non-finite argument, where a product
    0 · inf makes a part nan on one backend that another computes otherwise
    (docs/ad.md, "Number systems")."""
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(same_values(a[k], b[k], nan_parts) for k in a)
    if hasattr(a, "raw") and hasattr(b, "raw"):                  # Fixed, FixedArray
        return np.array_equal(np.asarray(a.raw), np.asarray(b.raw))
    if isinstance(a, np.ndarray) or isinstance(b, np.ndarray):
        a, b = np.asarray(a), np.asarray(b)
        if a.shape != b.shape:
            return False
        return all(same_values(x, y, nan_parts)
                   for x, y in zip(a.ravel().tolist(), b.ravel().tolist()))
    if isinstance(a, (list, tuple)) and isinstance(b, (list, tuple)):
        return len(a) == len(b) and all(same_values(x, y, nan_parts) for x, y in zip(a, b))
    if isinstance(a, bool) or isinstance(b, bool) or isinstance(a, int) and isinstance(b, int):
        return a == b and type(a) is type(b)
    if isinstance(a, complex) or isinstance(b, complex):
        a, b = complex(a), complex(b)
        return all(_close(x, y) or (nan_parts and (math.isnan(x) or math.isnan(y)))
                   for x, y in ((a.real, b.real), (a.imag, b.imag)))
    if isinstance(a, float) or isinstance(b, float):
        return isinstance(a, (int, float)) and isinstance(b, (int, float)) and _close(a, b)
    return a == b
