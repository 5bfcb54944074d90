"""ode in PyTorch: s RK4 steps on tensors; ``gradient`` is ``torch.autograd``'s
gradient of the last element of the solution."""

from __future__ import annotations

from ..common import Prepared, UnknownFunction, floats
from ._setup import torch


def _rate(x, y):
    """y' = (x_0, x_1 y_0, x_2 y_1, ...)."""
    return x * torch.cat([torch.ones(1, dtype=y.dtype), y[:-1]])


def _primal(x, s: int):
    h = 2.0 / s
    y = torch.zeros_like(x)
    for _ in range(s):
        k1 = _rate(x, y)
        k2 = _rate(x, y + h * k1 / 2)
        k3 = _rate(x, y + h * k2 / 2)
        k4 = _rate(x, y + h * k3)
        y = y + h * (k1 + 2 * k2 + 2 * k3 + k4) / 6
    return y


def prepare(function: str, input) -> Prepared:
    x, s = torch.from_numpy(floats(input["x"])), int(input["s"])
    if function == "primal":
        def run():
            with torch.no_grad():
                return _primal(x, s)
    elif function == "gradient":
        def run():
            xv = x.detach().requires_grad_(True)
            (gradient,) = torch.autograd.grad(_primal(xv, s)[-1], xv)
            return gradient
    else:
        raise UnknownFunction("ode", function)
    run()
    return Prepared(run)
