"""Gradient descent as GradBench's particle and saddle evals define it (their
`multivariate_argmin`), over lists of floats, for the rlang tool's drivers.

The solver itself is not differentiated (the evals differentiate what it
minimises), so it is plain Python; each step calls rlang for a value and a
gradient.  The baselines (suite/jax_impl, suite/torch_impl) carry their own copy
in their frameworks' terms.
"""

from __future__ import annotations

import math
from typing import Callable, Sequence

#: The solver's constants: the first step size, the tolerance on the gradient's
#: norm and on the step's length, and the number of accepted steps after which
#: the step size doubles.
ETA = 1e-5
TOLERANCE = 1e-5
DOUBLE_AFTER = 10


def _norm(v: Sequence[float]) -> float:
    total = 0.0
    for a in v:
        total += a * a
    return math.sqrt(total)


def argmin(f: Callable[[list], float], grad: Callable[[list], list], x: list) -> list:
    """The x where descent on `f` (gradient `grad`) from `x` stops: a step is
    taken when it lowers f (after DOUBLE_AFTER of them the step size doubles), and
    halves the step size otherwise; it stops when the gradient or the step is
    shorter than TOLERANCE."""
    fx, gx, eta, i = f(x), grad(x), ETA, 0
    while _norm(gx) > TOLERANCE:
        if i == DOUBLE_AFTER:
            eta, i = 2 * eta, 0
            continue
        moved = [a - eta * g for a, g in zip(x, gx)]
        if _norm([a - b for a, b in zip(x, moved)]) <= TOLERANCE:
            break
        f_moved = f(moved)
        if f_moved < fx:
            x, fx, gx, i = moved, f_moved, grad(moved), i + 1
        else:
            eta, i = eta / 2, 0
    return x
