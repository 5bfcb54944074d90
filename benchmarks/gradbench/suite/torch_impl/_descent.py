"""GradBench's gradient descent (particle's and saddle's `multivariate_argmin`) over
1-D tensors, as a Python loop: PyTorch differentiates it when it runs inside a
`torch.func` transform (data-dependent branches included), and runs it plainly
otherwise."""

from __future__ import annotations

from ._setup import torch

ETA, TOLERANCE, DOUBLE_AFTER = 1e-5, 1e-5, 10


def _norm(v):
    return torch.sqrt(torch.sum(v * v))


def argmin(f, grad, x):
    """Where descent on `f` (gradient `grad`) from `x` stops (suite/rlang_impl/_descent.py
    says how)."""
    fx, gx, eta, i = f(x), grad(x), ETA, 0
    while _norm(gx) > TOLERANCE:
        if i == DOUBLE_AFTER:
            eta, i = 2 * eta, 0
            continue
        moved = x - eta * gx
        if _norm(x - moved) <= TOLERANCE:
            break
        f_moved = f(moved)
        if f_moved < fx:
            x, fx, gx, i = moved, f_moved, grad(moved), i + 1
        else:
            eta, i = eta / 2, 0
    return x
