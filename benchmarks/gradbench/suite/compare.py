"""Comparing two tools' JSON outputs, field by field.

The measure is GradBench's (ADBench's): two numbers x and y differ by
``|x - y| / max(|x| + |y|, 1)``, relative for large values and absolute below 1.
GradBench accepts 1e-4; the suite's tests hold rlang to 1e-10 against JAX and
PyTorch.
"""

from __future__ import annotations

import math
from typing import Any


def difference(x: float, y: float) -> float:
    """``|x - y| / max(|x| + |y|, 1)``; infinite if exactly one is NaN."""
    if math.isnan(x) or math.isnan(y):
        return 0.0 if math.isnan(x) and math.isnan(y) else math.inf
    return abs(x - y) / max(abs(x) + abs(y), 1.0)


def mismatches(expected: Any, actual: Any, tolerance: float, path: str = "") -> list[str]:
    """Where `actual` differs from `expected` by more than `tolerance`, one line each."""
    here = path or "output"
    if isinstance(expected, bool) or isinstance(actual, bool):
        return [] if expected == actual else [f"{here}: {actual!r} is not {expected!r}"]
    if isinstance(expected, (int, float)) and isinstance(actual, (int, float)):
        d = difference(float(expected), float(actual))
        return [] if d <= tolerance else [f"{here}: {actual!r} differs from {expected!r} by {d:.3g}"]
    if isinstance(expected, dict) and isinstance(actual, dict):
        if set(expected) != set(actual):
            return [f"{here}: keys {sorted(actual)} are not {sorted(expected)}"]
        return [line for key in expected
                for line in mismatches(expected[key], actual[key], tolerance, f"{here}.{key}")]
    if isinstance(expected, list) and isinstance(actual, list):
        if len(expected) != len(actual):
            return [f"{here}: length {len(actual)} is not {len(expected)}"]
        return [line for i, (e, a) in enumerate(zip(expected, actual))
                for line in mismatches(e, a, tolerance, f"{here}[{i}]")]
    return [f"{here}: {type(actual).__name__} is not {type(expected).__name__}"]
