"""gmm: ``objective`` runs ``gmm_objective!`` forward from 0; ``jacobian`` is
rlang's gradient of it with respect to alpha, mu, q and l."""

from __future__ import annotations

import rlang

from . import warm_up
from ..common import Prepared, UnknownFunction, floats
from ._load import program

#: the independent variables, by their position among gmm_objective!'s parameters
INDEPENDENT = {"alpha": 1, "mu": 2, "q": 3, "l": 4}


def prepare(function: str, input) -> Prepared:
    m = program("gmm")
    objective = m["gmm_objective!"]
    args = (0.0, floats(input["alpha"]), floats(input["mu"]), floats(input["q"]),
            _lower(input), floats(input["x"]),
            float(input["gamma"]), int(input["m"]))
    if function == "objective":
        def run():
            return objective(*args)[0]

        def output(result):
            return float(result)
    elif function == "jacobian":
        gradient = rlang.grad(objective, "err!", argnums=tuple(INDEPENDENT.values()))

        def run():
            return gradient(*args)

        def output(result):
            return {name: g.tolist() for name, g in zip(INDEPENDENT, result)}
    else:
        raise UnknownFunction("gmm", function)
    warm_up(run)
    return Prepared(run, output)


def _lower(input):
    """``l`` as a k x d(d-1)/2 array (also for d = 1, where its rows are empty)."""
    d = int(input["d"])
    return floats(input["l"]).reshape(int(input["k"]), d * (d - 1) // 2)
