"""lse in PyTorch: max(x) + log Σ exp(x − max(x)), and its ``torch.autograd``
gradient."""

from __future__ import annotations

from ..common import Prepared, UnknownFunction, floats
from ._setup import torch


def _lse(x):
    a = torch.max(x)
    return a + torch.log(torch.sum(torch.exp(x - a)))


def prepare(function: str, input) -> Prepared:
    x = torch.from_numpy(floats(input["x"]))
    if function == "primal":
        def run():
            return _lse(x)
        output = float
    elif function == "gradient":
        def run():
            xv = x.detach().requires_grad_(True)
            (gradient,) = torch.autograd.grad(_lse(xv), xv)
            return gradient

        def output(result):
            return result.tolist()
    else:
        raise UnknownFunction("lse", function)
    run()
    return Prepared(run, output)
