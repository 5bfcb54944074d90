"""hello: ``square`` runs ``square!`` forward, ``double`` is rlang's gradient of it."""

from __future__ import annotations

import rlang

from . import warm_up
from ..common import Prepared, UnknownFunction
from ._load import program


def prepare(function: str, input) -> Prepared:
    square = program("hello")["square!"]
    x = float(input)
    if function == "square":
        def run():
            return square(0.0, x)[0]
    elif function == "double":
        gradient = rlang.grad(square, "y!", argnums=1)

        def run():
            return gradient(0.0, x)
    else:
        raise UnknownFunction("hello", function)
    warm_up(run)
    return Prepared(run, float)
