"""particle: gradient descent on w of the particle's miss distance, whose Euler
loop takes the gradient of a potential (evals/particle.rev).

The four functions nest two derivatives: the outer one (of the loss with respect
to w, for the descent) is `rlang.grad` (reverse, "r…") or `rlang.jvp` (forward,
"f…") of `trajectory!`; the inner one (the force, inside the Euler loop) is the
rev program's `grad` or `fgrad` statement ("…r" or "…f"), chosen by its
`forward` argument.
"""

from __future__ import annotations

import rlang
from rlang.values import Stack

from . import warm_up
from ..common import Prepared, UnknownFunction
from ._descent import argmin
from ._load import program

#: (outer derivative by reverse mode, inner derivative by forward mode)
MODES = {"rr": (True, False), "rf": (True, True), "fr": (False, False), "ff": (False, True)}


def _arguments(w: float, forward: bool) -> tuple:
    """trajectory!'s arguments: the loss, the path's state and its step count at
    zero, an empty history, w, and the inner mode."""
    return (0.0, 0.0, 0.0, 0.0, 0.0, 0, Stack("f64", []), w, forward)


def prepare(function: str, input) -> Prepared:
    if function not in MODES:
        raise UnknownFunction("particle", function)
    reverse, forward = MODES[function]
    trajectory = program("particle")["trajectory!"]
    w0 = float(input["w"])

    def loss(w: list) -> float:
        return trajectory(*_arguments(w[0], forward))[0]

    if reverse:
        gradient = rlang.grad(trajectory, "loss!", argnums=7)

        def grad(w: list) -> list:
            return [gradient(*_arguments(w[0], forward))]
    else:
        along_w = (0.0,) * 5 + (None, None, 1.0, None)

        def grad(w: list) -> list:
            return [rlang.jvp(trajectory, _arguments(w[0], forward), along_w)[1][0]]

    def run():
        return argmin(loss, grad, [w0])[0]

    warm_up(run)
    return Prepared(run, float)
