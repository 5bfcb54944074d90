"""hello in PyTorch: ``square`` is x * x, ``double`` is its ``torch.autograd`` gradient."""

from __future__ import annotations

from ..common import Prepared, UnknownFunction
from ._setup import torch


def prepare(function: str, input) -> Prepared:
    x = torch.tensor(float(input), dtype=torch.float64)
    if function == "square":
        def run():
            return x * x
    elif function == "double":
        def run():
            xv = x.detach().requires_grad_(True)
            (gradient,) = torch.autograd.grad(xv * xv, xv)
            return gradient
    else:
        raise UnknownFunction("hello", function)
    run()
    return Prepared(run, float)
