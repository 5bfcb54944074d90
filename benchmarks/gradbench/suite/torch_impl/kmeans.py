"""kmeans in PyTorch: ``cost`` from all point-centroid squared distances at once;
``dir`` is J / H, with J = ``torch.func.grad`` of the cost and H its Hessian's
diagonal from one ``torch.func.jvp`` of the gradient along ones (the Hessian is
diagonal, Note [The Hessian's diagonal from one product] in rlang_impl/kmeans.py)."""

from __future__ import annotations

from ..common import Prepared, UnknownFunction, floats
from ._setup import torch


def cost(centroids, points):
    """Σ_i min_j |C_j - P_i|^2, the distances as |P|^2 + |C|^2 - 2 P Cᵀ (one addmm)."""
    norms = (torch.sum(points * points, dim=1)[:, None]
             + torch.sum(centroids * centroids, dim=1)[None, :])
    distances = torch.addmm(norms, points, centroids.T, alpha=-2)
    return torch.sum(torch.amin(distances, dim=1))


def newton_dir(centroids, points):
    gradient = torch.func.grad(cost)
    j, h = torch.func.jvp(lambda c: gradient(c, points), (centroids,),
                          (torch.ones_like(centroids),))
    return j / h


def prepare(function: str, input) -> Prepared:
    centroids = torch.from_numpy(floats(input["centroids"]))
    points = torch.from_numpy(floats(input["points"]))
    if function == "cost":
        def run():
            with torch.no_grad():
                return cost(centroids, points)
        output = float
    elif function == "dir":
        def run():
            return newton_dir(centroids, points)

        def output(result):
            return result.tolist()
    else:
        raise UnknownFunction("kmeans", function)
    run()
    return Prepared(run, output)
