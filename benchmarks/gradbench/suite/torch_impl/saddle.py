"""saddle in PyTorch: the inner argmax over y is a Python loop of descent steps on
−f whose gradient is ``torch.func.grad`` ("…r") or two ``torch.func.jvp``s ("…f");
the descent on x takes ``torch.func.grad`` ("r…") or two ``torch.func.jvp``s ("f…")
of max_y f(x, y), which differentiate through the inner loop.  The final argmax at
the x found uses the outer mode."""

from __future__ import annotations

from ..common import Prepared, UnknownFunction
from ._descent import argmin
from ._setup import tensor, torch

UNITS = (tensor([1.0, 0.0]), tensor([0.0, 1.0]))


def cost(x, y):
    return (x[0] * x[0] + x[1] * x[1]) - (y[0] * y[0] + y[1] * y[1])


def gradient_by(mode: str, f):
    if mode == "r":
        return torch.func.grad(f)
    return lambda v: torch.stack([torch.func.jvp(f, (v,), (e,))[1] for e in UNITS])


def prepare(function: str, input) -> Prepared:
    if function not in ("rr", "rf", "fr", "ff"):
        raise UnknownFunction("saddle", function)
    outer, inner = function
    start = tensor([float(v) for v in input["start"]])

    def r1_cost(x):
        def negated(y):
            return -cost(x, y)
        return cost(x, argmin(negated, gradient_by(inner, negated), start))

    def run():
        r1 = argmin(r1_cost, gradient_by(outer, r1_cost), start)

        def negated(y):
            return -cost(r1, y)
        r2 = argmin(negated, gradient_by(outer, negated), start)
        return torch.cat([r1, r2])
    run()
    return Prepared(run, lambda points: [float(v) for v in points])
