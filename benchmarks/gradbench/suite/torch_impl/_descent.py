"""GradBench's gradient descent (suite/descent.py) over 1-D tensors, as a Python
loop: PyTorch differentiates it when it runs inside a `torch.func` transform
(data-dependent branches included), and runs it plainly otherwise."""

from __future__ import annotations

from .. import descent
from ._setup import torch


def _norm(v):
    return torch.sqrt(torch.sum(v * v))


def argmin(f, grad, x):
    """Where descent on `f` (gradient `grad`) from the tensor `x` stops."""
    return descent.argmin(f, grad, x, _norm)
