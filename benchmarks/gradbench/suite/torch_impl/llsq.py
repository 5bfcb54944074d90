"""llsq in PyTorch: the objective over all n points at once (a Vandermonde matrix of
the t_i by a cumulative product), and its ``torch.autograd`` gradient."""

from __future__ import annotations

from ..common import Prepared, UnknownFunction, floats
from ._setup import torch


def _llsq(x, n: int):
    t = -1.0 + torch.arange(n, dtype=x.dtype) * 2.0 / (n - 1)
    columns = torch.cat([torch.ones((n, 1), dtype=x.dtype),
                         t[:, None].expand(n, x.shape[0] - 1)], dim=1)
    powers = torch.cumprod(columns, dim=1)                  # powers[i, j] = t_i^j
    residual = torch.sign(t) - powers @ x
    return 0.5 * torch.dot(residual, residual)


def prepare(function: str, input) -> Prepared:
    x, n = torch.from_numpy(floats(input["x"])), int(input["n"])
    if function == "primal":
        def run():
            return _llsq(x, n)
        output = float
    elif function == "gradient":
        def run():
            xv = x.detach().requires_grad_(True)
            (gradient,) = torch.autograd.grad(_llsq(xv, n), xv)
            return gradient

        def output(result):
            return result.tolist()
    else:
        raise UnknownFunction("llsq", function)
    run()
    return Prepared(run, output)
