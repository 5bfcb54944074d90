"""ode: ``primal`` runs ``ode!`` forward from y = 0; ``gradient`` is rlang's
gradient of the last element of y with respect to x."""

from __future__ import annotations

import numpy as np
import rlang

from . import warm_up
from ..common import Prepared, UnknownFunction, floats
from ._load import program


def prepare(function: str, input) -> Prepared:
    ode = program("ode")["ode!"]
    x, s = floats(input["x"]), int(input["s"])
    n = len(x)
    if function == "primal":
        def run():
            return ode(np.zeros(n), x, s)[0]
    elif function == "gradient":
        gradient = rlang.grad(ode, ("y!", n - 1), argnums=1)

        def run():
            return gradient(np.zeros(n), x, s)
    else:
        raise UnknownFunction("ode", function)
    warm_up(run)
    return Prepared(run)
