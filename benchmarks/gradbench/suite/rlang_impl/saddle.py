"""saddle: min over x of max over y of f(x, y), both by gradient descent from the
start point (evals/saddle.rev).

The four functions nest two derivatives: the outer one (of max_y f(x, y) with
respect to x, for the descent on x) is `rlang.grad` (reverse, "r…") or one
`rlang.jvp` per coordinate (forward, "f…") of `saddle_max!`; the inner one (the
gradient of the inner descent on y) is the rev program's `grad` or `fgrad`
statement ("…r" or "…f"), chosen by its `forward` argument.  `saddle_max!` keeps
the inner descent's history to itself (compute, copy, uncompute), so each call
passes and returns numbers only.  The final argmax over y at the x found (not
nested) uses the outer mode's statement.
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

#: saddle_max!'s positions of x₀ and x₁
X = (1, 2)


def _arguments(x: list, start: list, forward: bool) -> tuple:
    """saddle_max!'s arguments: the maximum at zero, x, the start and the inner
    mode (1: forward); Python floats, not the descent's NumPy scalars (which the
    general call would convert on every call, Note [Calls without ctypes])."""
    return (0.0, float(x[0]), float(x[1]), start[0], start[1], 1 if forward else 0)


def prepare(function: str, input) -> Prepared:
    if function not in MODES:
        raise UnknownFunction("saddle", function)
    reverse, forward = MODES[function]
    m = program("saddle")
    saddle_max, argmax = m["saddle_max!"], m["argmax!"]
    start = [float(v) for v in input["start"]]

    def r1_cost(x: list) -> float:
        return saddle_max(*_arguments(x, start, forward))[0]

    if reverse:
        gradient = rlang.grad(saddle_max, "max!", argnums=X)

        def r1_grad(x: list) -> list:
            return list(gradient(*_arguments(x, start, forward)))
    else:
        directions = [tuple(1.0 if k == j else (None if k == 5 else 0.0)
                            for k in range(6)) for j in X]

        def r1_grad(x: list) -> list:
            args = _arguments(x, start, forward)
            return [rlang.jvp(saddle_max, args, d)[1][0] for d in directions]

    def run():
        r1 = argmin(r1_cost, r1_grad, start)
        y = argmax(start[0], start[1], 0, Stack("f64", []), Stack("i64", []), r1[0], r1[1],
                   not reverse)
        return [r1[0], r1[1], y[0], y[1]]

    warm_up(run)
    return Prepared(run, lambda result: [float(v) for v in result])
