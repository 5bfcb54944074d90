"""`rlang.jacobian` on a compiled backend: one forward run, then the rows W at a time
by gradient passes with lanes (Note [Gradient lanes], rlang/ad/lanes.py).

`compiled_jacobian(functions, name, args, inverse, inputs, outputs)` returns the
Jacobian as `drivers.jacobian` builds it (one row per output scalar, one column per
input scalar, arrays in C order), or None where the laned pass does not apply
(outputs that are not plain floats, a pass that cannot carry lanes): the caller then
takes one gradient per row, as before.
"""
from __future__ import annotations

import numpy as np

from .compiled import GradientPlan
from .lanes import NotLaned, lane_arguments
from .symbols import without_gradients

#: Cotangents per pass: rows taken together.  Each lane repeats the gradient
#: statements; the values are computed once per pass.
LANES = 4


def compiled_jacobian(functions, name: str, args: list, inverse: bool, inputs: list,
                      outputs: list):
    """See the module docstring; `inputs` and `outputs` are parameter positions."""
    copies = [a.copy() if isinstance(a, np.ndarray) else a for a in args]
    if not all(plain_float(copies[k]) for k in outputs):
        return None
    values = functions.call(name, copies, inverse)
    rows = [(k, index) for k in outputs
            for index in (np.ndindex(np.shape(values[k])) if np.ndim(values[k]) else [None])]
    lanes, plan = laned_plan(functions, name, values, inverse, len(rows))
    if plan is None:
        return None
    native, symbol = plan.native, plan.symbol
    found = []
    for start in range(0, len(rows), lanes):
        group = rows[start:start + lanes]
        gradients = [plan.zero_gradients(values) for _ in range(lanes)]
        for lane, (k, index) in enumerate(group):
            if index is None:
                gradients[lane][k] = type(gradients[lane][k])(1.0)
            else:
                gradients[lane][k][index] = 1.0
        here = [v.copy() if isinstance(v, np.ndarray) else v for v in values]
        new = functions.run(native, symbol, here + lane_arguments(gradients))
        at = len(values)
        for k in range(len(values)):
            if gradients[0][k] is None:
                continue
            for lane in range(lanes):
                if not isinstance(gradients[lane][k], np.ndarray):
                    gradients[lane][k] = new[at]
                at += 1
        for lane in range(len(group)):
            found.append(np.concatenate([np.ravel(np.real(
                gradients[lane][k] if gradients[lane][k] is not None
                else np.zeros(np.size(values[k])))) for k in inputs]))
    return np.array(found)


def laned_plan(functions, name: str, values: list, inverse: bool, rows: int,
               unwanted=()) -> tuple:
    """(lanes, the GradientPlan of the gradient pass carrying that many cotangents
    for `rows` rows), the plan None where such a pass does not apply (it computes a
    value from a gradient; gradients that are not plain floats and arrays).
    `unwanted`: positions whose gradients nobody reads (Note [Gradients nobody
    reads], ad/derivatives.py)."""
    lanes = max(2, min(LANES, rows))
    try:
        plan = GradientPlan(functions, name, values, None, inverse,
                            without_gradients(f"grad{lanes}", unwanted))
    except NotLaned:
        return lanes, None
    if not plan.plain or plan.log_space or plan.on_device:
        return lanes, None
    return lanes, plan


def plain_float(value) -> bool:
    """A float scalar or a float64 NumPy array (not fixed, ulog or complex)."""
    if isinstance(value, np.ndarray):
        return type(value) is np.ndarray and value.dtype == np.float64
    return isinstance(value, float)
