"""lstm: ``objective`` runs ``lstm_objective!`` forward; ``jacobian`` is rlang's
gradient of its loss with respect to main_params and extra_params, each flattened
row by row, concatenated."""

from __future__ import annotations

import numpy as np
import rlang

from . import warm_up
from ..common import Prepared, UnknownFunction, floats
from ._load import program

_ARRAYS = ("main_params", "extra_params", "state", "sequence")


def prepare(function: str, input) -> Prepared:
    objective = program("lstm")["lstm_objective!"]
    args = tuple(floats(input[name]) for name in _ARRAYS)
    if function == "objective":
        def run():
            return objective(0.0, *args)[0]
        output = float
    elif function == "jacobian":
        gradient = rlang.grad(objective, "loss!", argnums=(1, 2))

        def run():
            return gradient(0.0, *args)

        def output(result):
            return np.concatenate([result[0].ravel(), result[1].ravel()]).tolist()
    else:
        raise UnknownFunction("lstm", function)
    warm_up(run)
    return Prepared(run, output)
