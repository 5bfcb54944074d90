"""Programs the bridge tests run through JAX and PyTorch, each with the same
function written in the framework's own operations (`reference(xp, *args)`, with
`xp` the array module: `jax.numpy` or `torch`), so gradients and Hessians through
a bridge can be compared with the framework's own to 1e-12.

Each program's rev function takes the loss `y!` first, then float arguments;
`arguments(rng)` gives NumPy float64 values for those (scalars as floats).
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True)
class BridgeProgram:
    name: str
    source: str
    arguments: object          # rng → tuple of the float arguments after y!
    reference: object          # (xp, *arguments) → the loss


def _sum(xp, value):
    return value.sum() if hasattr(value, "sum") else xp.sum(value)


PROGRAMS = [
    BridgeProgram("cubes", """
function f(y!, a, x: f64[:])
    for i = 0:length(x) - 1
        y! += a * x[i] * x[i] * x[i]
    end
end""", lambda rng: (rng.normal(), rng.normal(size=5)),
        lambda xp, a, x: a * _sum(xp, x ** 3)),
    BridgeProgram("sines", """
function f(y!, x: f64[:])
    for i = 0:length(x) - 1
        y! += sin(x[i]) * x[i]
    end
end""", lambda rng: (rng.normal(size=6),),
        lambda xp, x: _sum(xp, xp.sin(x) * x)),
    BridgeProgram("exponentials", """
function f(y!, a, x: f64[:])
    for i = 0:length(x) - 1
        y! += exp(a * x[i]) * cos(x[i])
    end
end""", lambda rng: (0.3 * rng.normal(), rng.normal(size=4)),
        lambda xp, a, x: _sum(xp, xp.exp(a * x) * xp.cos(x))),
    BridgeProgram("matvec_norm", """
function f(y!, A: f64[:, :], x: f64[:])
    for i = 0:size(A, 0) - 1
        for j = 0:size(A, 1) - 1
            for k = 0:size(A, 1) - 1
                y! += A[i, j] * x[j] * A[i, k] * x[k]
            end
        end
    end
end""", lambda rng: (rng.normal(size=(3, 4)), rng.normal(size=4)),
        lambda xp, A, x: _sum(xp, (A @ x) ** 2)),
    BridgeProgram("logs", """
function f(y!, x: f64[:])
    for i = 0:length(x) - 1
        y! += log(1.0 + x[i] * x[i]) * tanh(x[i])
    end
end""", lambda rng: (rng.normal(size=5),),
        lambda xp, x: _sum(xp, xp.log(1.0 + x * x) * xp.tanh(x))),
    BridgeProgram("chain", """
function f(y!, x: f64[:])
    for i = 0:length(x) - 2
        y! += x[i] * x[i + 1] * x[i + 1]
    end
end""", lambda rng: (rng.normal(size=7),),
        lambda xp, x: _sum(xp, x[:-1] * x[1:] ** 2)),
    BridgeProgram("roots", """
function f(y!, a, x: f64[:])
    for i = 0:length(x) - 1
        y! += sqrt(1.0 + x[i] ** 2) / (1.0 + a * a)
    end
end""", lambda rng: (rng.normal(), rng.normal(size=3)),
        lambda xp, a, x: _sum(xp, xp.sqrt(1.0 + x ** 2)) / (1.0 + a * a)),
    BridgeProgram("scalars", """
function f(y!, a, b)
    y! += a * a * b + sin(a * b)
end""", lambda rng: (rng.normal(), rng.normal()),
        lambda xp, a, b: a * a * b + xp.sin(a * b)),
    BridgeProgram("weights", """
function f(y!, w: f64[:], x: f64[:])
    for i = 0:length(x) - 1
        y! += tanh(w[i] * x[i]) * w[i]
    end
end""", lambda rng: (rng.normal(size=4), rng.normal(size=4)),
        lambda xp, w, x: _sum(xp, xp.tanh(w * x) * w)),
]
