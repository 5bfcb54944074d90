"""Value comparisons of the run-time checks (LANGUAGE.md §6).

fixed values compare exactly (raw bits), ulog values by their logarithms within
`ATOL`.

`check_dealloc(name, value, expected, span)` is the deallocation check;
`values_equal` the equality every check uses: exact for integers and bools,
within `ATOL` (absolute) for floats and complex numbers, element-wise for arrays,
item-wise for stacks; two NaNs count as equal.
"""
from __future__ import annotations

import math

import numpy as np

from ..errors import ReversibilityError
from ..dual import Dual
from ..numbers import Fixed, ULog
from ..values import Stack, scalar_type, summarize

#: Tolerance of float deallocation checks.
ATOL = 1e-8


def check_dealloc(name: str, value, expected, span) -> None:
    """Raise ReversibilityError unless `value` equals `expected` (floats within ATOL)."""
    if not values_equal(value, expected):
        raise ReversibilityError(
            f"deallocation check failed: {name} = {summarize(value)}, expected "
            f"{summarize(expected)}", span)


def values_equal(value, expected, atol: float = ATOL) -> bool:
    """Equality for checks: exact for integers and bools, within `atol` for floats."""
    if isinstance(value, np.ndarray) or isinstance(expected, np.ndarray):
        if not (isinstance(value, np.ndarray) and isinstance(expected, np.ndarray)):
            return False
        if value.shape != expected.shape:
            return False
        if value.dtype == object or expected.dtype == object:     # dual numbers
            return all(values_equal(a, b, atol) for a, b in zip(value.ravel(), expected.ravel()))
        if value.dtype.kind in "fc" or expected.dtype.kind in "fc":
            with np.errstate(invalid="ignore"):     # inf - inf: equal infinities
                return bool(np.all((np.abs(value - expected) <= atol) |
                                   (np.isnan(value) & np.isnan(expected)) |
                                   (value == expected)))
        return bool(np.array_equal(value, expected))
    if isinstance(value, Stack) or isinstance(expected, Stack):
        return isinstance(value, Stack) and isinstance(expected, Stack) and \
            len(value.items) == len(expected.items) and \
            all(values_equal(a, b, atol) for a, b in zip(value.items, expected.items))
    if scalar_type(value) is None or scalar_type(expected) is None:
        return False
    if isinstance(value, bool) != isinstance(expected, bool):
        return False
    if isinstance(value, ULog) and isinstance(expected, ULog):
        return value.log == expected.log or abs(value.log - expected.log) <= atol
    if isinstance(value, Dual) or isinstance(expected, Dual):
        return abs(float(value) - float(expected)) <= atol or float(value) == float(expected)
    if isinstance(value, (Fixed, ULog)) or isinstance(expected, (Fixed, ULog)):
        if type(value) is type(expected):
            return value == expected            # fixed: the raw values, exactly
        value, expected = float(value), float(expected)
    if isinstance(value, (float, complex)) or isinstance(expected, (float, complex)):
        if value == expected:
            return True
        if isinstance(value, float) and isinstance(expected, float) and \
                math.isnan(value) and math.isnan(expected):
            return True
        return abs(value - expected) <= atol
    return value == expected
