"""lse: ``primal`` runs ``lse!`` (evals/lse.rev) on x; ``gradient`` is rlang's
gradient of it with respect to x."""

from __future__ import annotations

import rlang

from . import warm_up
from ..common import Prepared, UnknownFunction, floats
from ._load import program


def prepare(function: str, input) -> Prepared:
    lse = program("lse")["lse!"]
    x = floats(input["x"])
    x.setflags(write=False)   # only read: rlang.grad need not keep a copy of it
    if function == "primal":
        def run():
            return lse(0.0, x)[0]
        output = float
    elif function == "gradient":
        gradient = rlang.grad(lse, "out!", argnums=1)

        def run():
            return gradient(0.0, x)

        def output(result):
            return result.tolist()
    else:
        raise UnknownFunction("lse", function)
    warm_up(run)
    return Prepared(run, output)
