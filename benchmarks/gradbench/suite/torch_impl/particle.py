"""particle in PyTorch: the Euler loop is a Python loop; the force is
``torch.func.grad`` ("…r") or two ``torch.func.jvp``s ("…f") of the potential, and
the descent on w takes ``torch.func.grad`` ("r…") or ``torch.func.jvp`` ("f…") of
the loss, which differentiate through the loop."""

from __future__ import annotations

from ..common import Prepared, UnknownFunction
from ._descent import argmin
from ._setup import tensor, torch

DT = 0.1
UNITS = (tensor([1.0, 0.0]), tensor([0.0, 1.0]))


def potential(x, w):
    def inverse_distance(c0, c1):
        return 1.0 / torch.sqrt((x[0] - c0) * (x[0] - c0) + (x[1] - c1) * (x[1] - c1))
    return inverse_distance(10.0, 10.0 - w) + inverse_distance(10.0, 0.0)


def force_by_reverse(x, w):
    return torch.func.grad(potential)(x, w)


def force_by_forward(x, w):
    return torch.stack([torch.func.jvp(lambda x: potential(x, w), (x,), (e,))[1]
                        for e in UNITS])


def trajectory(w, gradient):
    x, v = tensor([0.0, 8.0]), tensor([0.75, 0.0])
    while True:
        g = gradient(x, w)
        moved = x + DT * v
        if not moved[1] > 0.0:
            break
        x, v = moved, v + DT * (-1.0 * g)
    crossing = x[0] + (-x[1] / v[1]) * v[0]
    return crossing * crossing


def prepare(function: str, input) -> Prepared:
    if function not in ("rr", "rf", "fr", "ff"):
        raise UnknownFunction("particle", function)
    gradient = force_by_reverse if function[1] == "r" else force_by_forward

    def loss(w):
        return trajectory(w[0], gradient)

    if function[0] == "r":
        grad = torch.func.grad(loss)
    else:
        def grad(w):
            return torch.func.jvp(loss, (w,), (torch.ones_like(w),))[1].reshape(1)
    w0 = tensor([float(input["w"])])

    def run():
        return argmin(loss, grad, w0)[0]
    run()
    return Prepared(run, float)
