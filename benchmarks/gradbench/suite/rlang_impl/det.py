"""det: ``primal`` runs ``det!`` (expansion by minors, evals/det.rev) on the ℓ × ℓ
matrix; ``gradient`` is rlang's gradient of it with respect to the matrix, returned
as GradBench asks: the ℓ² partial derivatives in row-major order."""

from __future__ import annotations

import numpy as np
import rlang

from . import warm_up
from ..common import Prepared, UnknownFunction, floats
from ._load import program


def matrix(input) -> np.ndarray:
    """The input's row-major ``A`` as an (ℓ, ℓ) float64 array."""
    ell = int(input["ell"])
    return floats(input["A"]).reshape(ell, ell)


def prepare(function: str, input) -> Prepared:
    det = program("det")["det!"]
    a = matrix(input)
    a.setflags(write=False)   # only read: rlang.grad need not keep a copy of it
    if function == "primal":
        def run():
            return det(0.0, a)[0]
        output = float
    elif function == "gradient":
        gradient = rlang.grad(det, "d!", argnums=1)

        def run():
            return gradient(0.0, a)

        def output(result):
            return result.ravel().tolist()
    else:
        raise UnknownFunction("det", function)
    warm_up(run)
    return Prepared(run, output)
