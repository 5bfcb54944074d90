"""Gradient passes whose first updates of a derivative's zero ancillas are stores
(Note [Updates onto zeros], rlang/ir/onto_zeros.py): the pass marks what it should
in real gradient passes, and the gradients stay the interpreter's, for `+=` and
`-=`, f32 arrays, reverse loops after a written element and reads of the zeros
before they are written."""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

import rlang
from rlang.ad.derivatives import complete
from rlang.backends.llvm.backend import build_derivative
from rlang.ir import nodes as ir
from rlang.ir.passes import run_passes
from rlang.ir.walk import walk
from rlang.lower.argument_types import type_of_value

from gradient_agreement import assert_same_gradients

#: logistic! (the benchmarks' ancilla-array recurrence) is in workloads.rev
WORKLOADS = Path(__file__).resolve().parents[3] / "benchmarks" / "llvm" / "workloads.rev"
SOURCE = f"""
include "{WORKLOADS}"

# a running difference kept in an ancilla, subtracted from the loss
function differences!(y!: f64, x: f64[:])
    @routine begin
        d ← zeros(f64, length(x))
        for i = 1:length(x) - 1
            d[i] -= x[i - 1] * x[i]
            d[i] += d[i - 1] * 0.5
        end
    end
    for i = 0:length(x) - 1
        y! -= d[i] * d[i]
    end
    ~@routine
end

function narrow!(y!: f32, x: f32[:])
    @routine begin
        t ← zeros(f32, length(x))
        for i = 0:length(x) - 1
            t[i] += x[i] * x[i]
        end
    end
    for i = 0:length(x) - 1
        y! += t[i] * x[i]
    end
    ~@routine
end
"""

CASES = [
    ("logistic!", [0.0, 2.5, 0.3, 40], ("out!",)),
    ("logistic!", [0.0, 3.9, 0.0, 12], ("out!",)),          # zero gradients throughout
    ("differences!", [0.0, np.array([0.5, -1.5, 2.0, 0.0, -0.25])], ("y!",)),
    ("narrow!", [np.float32(0.0), np.array([0.5, -1.5, 2.0], dtype=np.float32)], ("y!",)),
]


def _marked(name: str, args: list) -> list:
    """The names of the targets of the updates the gradient pass of `name` marks."""
    m = rlang.loads(SOURCE, backend="llvm")
    types = tuple(type_of_value(v) for v in args)
    module, _ = build_derivative(m.unit, name, types, False, False, "grad")
    module = run_passes(complete(module))
    return [s.target.var.name for s in walk(module.functions[module.entry].body)
            if isinstance(s, ir.Update) and s.onto_zero]


def test_the_recurrences_gradient_writes_each_element_of_its_gradient_once():
    marked = _marked("logistic!", [0.0, 2.5, 0.3, 40])
    assert marked.count("s·grad") == 2       # s·grad[n] before the loop, s·grad[i - 1] in it


def test_a_subtracted_difference_is_marked_too():
    assert "d·grad" in _marked("differences!", CASES[2][1])


@pytest.mark.parametrize("invcheck", [True, False])
@pytest.mark.parametrize("name, args, loss", CASES)
def test_gradients_are_the_interpreters(name, args, loss, invcheck):
    interp = rlang.loads(SOURCE, invcheck=invcheck)
    llvm = rlang.loads(SOURCE, backend="llvm", invcheck=invcheck)
    copy = lambda: [a.copy() if isinstance(a, np.ndarray) else a for a in args]  # noqa: E731
    expected = rlang.gradient(interp[name], copy(), loss[0])
    rtol = 1e-5 if name == "narrow!" else 1e-12
    for _ in range(2):
        assert_same_gradients(rlang.gradient(llvm[name], copy(), loss[0]), expected, name,
                              rtol=rtol)
