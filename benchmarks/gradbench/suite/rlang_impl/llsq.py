"""llsq: ``primal`` runs ``llsq!`` (evals/llsq.rev) on x and n; ``gradient`` is
rlang's gradient of it with respect to x."""

from __future__ import annotations

import rlang

from . import warm_up
from ..common import Prepared, UnknownFunction, floats
from ._load import program


def prepare(function: str, input) -> Prepared:
    llsq = program("llsq")["llsq!"]
    x, n = floats(input["x"]), int(input["n"])
    x.setflags(write=False)   # only read: rlang.grad need not keep a copy of it
    if function == "primal":
        def run():
            return llsq(0.0, x, n)[0]
        output = float
    elif function == "gradient":
        gradient = rlang.grad(llsq, "y!", argnums=1)

        def run():
            return gradient(0.0, x, n)

        def output(result):
            return result.tolist()
    else:
        raise UnknownFunction("llsq", function)
    warm_up(run)
    return Prepared(run, output)
