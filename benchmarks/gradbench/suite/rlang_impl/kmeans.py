"""kmeans: ``cost`` runs ``cost_nearest!`` forward (``cost!``'s sums, the search in
another loop order and the nearest centroids' indices kept as an output:
evals/kmeans.rev, Notes [Centroids in lanes] and [The nearest centroids as an
output]); ``dir`` is J / H, with J rlang's gradient of ``cost_nearest!`` and H the
diagonal of its Hessian from one Hessian-vector product.

Note [The Hessian's diagonal from one product]
~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
``rlang.hessian_diag`` reads the diagonal off the full Hessian, one forward-over-
reverse run per centroid coordinate (k·d runs).  kmeans needs none of that: away
from ties the cost is a sum over points of |C_a(i) - P_i|^2, a sum of squares
(c_jl - p_il)^2 each of which depends on one coordinate c_jl alone, so every mixed
second derivative ∂²cost/∂c_jl∂c_j'l' with (j, l) ≠ (j', l') is zero: the Hessian is
diagonal.  For a diagonal H, H·1 = diag(H) exactly (each row has one nonzero), so one
``rlang.hvp`` with a vector of ones on the centroids (no direction on the points)
is the whole diagonal, 2·(the number of points nearest each centroid).
``rlang.jvp`` of ``rlang.grad`` gives J and H·1 from the same run.  The eval
guarantees every centroid is nearest to some point, so no entry is zero.  (At an
exact tie the cost is not twice differentiable; AD takes the first centroid's
branch, as the eval's reference does.)
"""

from __future__ import annotations

import numpy as np
import rlang

from . import warm_up
from ..common import Prepared, UnknownFunction, floats
from ._load import program


def prepare(function: str, input) -> Prepared:
    m = program("kmeans")
    points, centroids = floats(input["points"]), floats(input["centroids"])
    cost = m["cost_nearest!"]           # cost! += the cost, nearest! += the indices
    n = len(points)
    if function == "cost":
        def run():
            return cost(0.0, np.zeros(n, dtype=np.int64), points, centroids)[0]
        output = float
    elif function == "dir":
        jacobian = rlang.grad(cost, "cost!", argnums=3)
        ones = (None, None, None, np.ones_like(centroids))  # Note [The Hessian's diagonal …]
        newton_dir = m["newton_dir!"]

        def run():
            # J and H·1 from one forward-over-reverse run (rlang.jvp of rlang.grad)
            nearest = np.zeros(n, dtype=np.int64)
            j, h = rlang.jvp(jacobian, (0.0, nearest, points, centroids), ones)
            return newton_dir(np.zeros_like(centroids), j, h)[0]
        output = np.ndarray.tolist
    else:
        raise UnknownFunction("kmeans", function)
    warm_up(run)
    return Prepared(run, output)
