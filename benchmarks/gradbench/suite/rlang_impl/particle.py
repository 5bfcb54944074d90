"""particle: gradient descent on w of the particle's miss distance, whose Euler
loop takes the gradient of a potential (evals/particle.rev).

The four functions nest two derivatives: the outer one (of the loss with respect
to w, for the descent) is `rlang.grad` (reverse, "r…") or `rlang.jvp` (forward,
"f…") of `particle_loss!`; the inner one (the force, inside the Euler loop) is the
rev program's `grad` or `fgrad` statement ("…r" or "…f"), chosen by its
`forward` argument.  `particle_loss!` keeps trajectory!'s path and history to
itself (compute, copy, uncompute), so each call passes and returns numbers only.
"""

from __future__ import annotations

import rlang

from . import warm_up
from ..common import Prepared, UnknownFunction
from ._descent import argmin
from ._load import program

#: (outer derivative by reverse mode, inner derivative by forward mode)
MODES = {"rr": (True, False), "rf": (True, True), "fr": (False, False), "ff": (False, True)}


def _arguments(w: float, forward: bool) -> tuple:
    """particle_loss!'s arguments: the loss at zero, w (a Python float, not the
    descent's NumPy scalar, which the general call would convert on every call),
    and the inner mode (1: forward)."""
    return (0.0, float(w), 1 if forward else 0)


def prepare(function: str, input) -> Prepared:
    if function not in MODES:
        raise UnknownFunction("particle", function)
    reverse, forward = MODES[function]
    particle_loss = program("particle")["particle_loss!"]
    w0 = float(input["w"])

    def loss(w: list) -> float:
        return particle_loss(*_arguments(w[0], forward))[0]

    if reverse:
        gradient = rlang.grad(particle_loss, "loss!", argnums=1)

        def grad(w: list) -> list:
            return [gradient(*_arguments(w[0], forward))]
    else:
        along_w = (0.0, 1.0, None)

        def grad(w: list) -> list:
            return [rlang.jvp(particle_loss, _arguments(w[0], forward), along_w)[1][0]]

    def run():
        return argmin(loss, grad, [w0])[0]

    warm_up(run)
    return Prepared(run, float)
