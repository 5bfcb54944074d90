"""gmm in PyTorch: the log posterior written with tensor operations over all
points and components at once; ``jacobian`` is its ``torch.autograd`` gradient in
alpha, mu, q and l."""

from __future__ import annotations

import math

from ..common import Prepared, UnknownFunction, floats
from ._setup import tensor, torch

NAMES = ("alpha", "mu", "q", "l")


def log_posterior(alpha, mu, q, l, x, gamma: float, m: int, lower):
    """`lower` = (rows, cols), where the entries of `l` go in each Q_k."""
    n, d = x.shape
    k = alpha.shape[0]
    sum_q = q.sum(dim=1)
    ltri = torch.zeros((k, d, d), dtype=l.dtype)
    ltri[:, lower[0], lower[1]] = l
    xc = x[:, None, :] - mu[None, :, :]                                  # n, k, d
    qx = torch.exp(q)[None] * xc + torch.einsum("kij,nkj->nki", ltri, xc)
    beta = alpha + sum_q - 0.5 * torch.sum(qx * qx, dim=2)              # n, k
    likelihood = (torch.logsumexp(beta, dim=1).sum()
                  - n * (0.5 * d * math.log(2 * math.pi) + torch.logsumexp(alpha, dim=0)))
    dof = d + m + 1
    constant = k * (dof * d * (math.log(gamma) - 0.5 * math.log(2.0))
                    - torch.special.multigammaln(tensor(0.5 * dof), d))
    frobenius = torch.sum(torch.exp(2 * q)) + torch.sum(l * l)
    return likelihood + constant - 0.5 * gamma * gamma * frobenius + m * sum_q.sum()


def prepare(function: str, input) -> Prepared:
    k, d = int(input["k"]), int(input["d"])
    params = [torch.from_numpy(floats(input[name])) for name in NAMES]
    params[3] = params[3].reshape(k, d * (d - 1) // 2)
    x = torch.from_numpy(floats(input["x"]))
    gamma, m = float(input["gamma"]), int(input["m"])
    cols, rows = torch.triu_indices(d, d, 1)    # column-major lower = row-major upper, transposed
    lower = (rows, cols)
    if function == "objective":
        def run():
            with torch.no_grad():
                return log_posterior(*params, x, gamma, m, lower)

        def output(result):
            return float(result)
    elif function == "jacobian":
        def run():
            leaves = [p.detach().requires_grad_(True) for p in params]
            return torch.autograd.grad(log_posterior(*leaves, x, gamma, m, lower), leaves)

        def output(grads):
            return {name: g.tolist() for name, g in zip(NAMES, grads)}
    else:
        raise UnknownFunction("gmm", function)
    run()
    return Prepared(run, output)
