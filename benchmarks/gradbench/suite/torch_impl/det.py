"""det in PyTorch: the determinant by expansion of minors, one vectorised level of
the expansion tree at a time (Note [Expansion by minors, vectorised],
inputs/det.py), and its ``torch.autograd`` gradient."""

from __future__ import annotations

from ..common import Prepared, UnknownFunction, floats
from ..inputs.det import expansion_plan
from ._setup import torch


def _det(a, plan):
    coef = torch.ones((1, 1), dtype=a.dtype)
    for k, (take, sign) in enumerate(plan):
        coef = coef.reshape(-1, 1) * (sign * a[k, take])
    return coef.sum()


def prepare(function: str, input) -> Prepared:
    ell = int(input["ell"])
    plan = [(torch.from_numpy(take), torch.from_numpy(sign))
            for take, sign in expansion_plan(ell)]
    a = torch.from_numpy(floats(input["A"]).reshape(ell, ell))
    if function == "primal":
        def run():
            return _det(a, plan)
        output = float
    elif function == "gradient":
        def run():
            av = a.detach().requires_grad_(True)
            (gradient,) = torch.autograd.grad(_det(av, plan), av)
            return gradient

        def output(result):
            return result.ravel().tolist()
    else:
        raise UnknownFunction("det", function)
    run()
    return Prepared(run, output)
