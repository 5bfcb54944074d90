"""GradBench's gradient descent (the `multivariate_argmin` of particle and saddle),
one algorithm for every tool's vectors (NumPy arrays, PyTorch tensors).

The solver is not differentiated (the evals differentiate what it minimises); a
tool passes its own vector type and norm.
"""

from __future__ import annotations

#: The first step size, the tolerance on the gradient's norm and on the step's
#: length, and the number of accepted steps after which the step size doubles.
ETA, TOLERANCE, DOUBLE_AFTER = 1e-5, 1e-5, 10


def argmin(f, grad, x, norm):
    """The x where descent on `f` (gradient `grad`) from `x` stops: a step is taken
    when it lowers f (after DOUBLE_AFTER of them the step size doubles), and halves
    the step size otherwise; it stops when the gradient or the step is shorter than
    TOLERANCE.  `x` and what `grad` returns support `-` and scaling; `norm` measures
    them."""
    fx, gx, eta, i = f(x), grad(x), ETA, 0
    while norm(gx) > TOLERANCE:
        if i == DOUBLE_AFTER:
            eta, i = 2 * eta, 0
            continue
        moved = x - eta * gx
        if norm(x - moved) <= TOLERANCE:
            break
        f_moved = f(moved)
        if f_moved < fx:
            x, fx, gx, i = moved, f_moved, grad(moved), i + 1
        else:
            eta, i = eta / 2, 0
    return x
