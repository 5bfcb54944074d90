"""Which arguments carry tangents, found without listing array elements: the
product drivers (`rlang.hvp`, `rlang.jvp`) make no Python step per element of an
argument, so a call costs the compiled run, not O(array size) in Python
(`float_positions` in rlang/ad/dual_runs.py; the compiled driver's `inputs`, the
Hessian's columns, are listed only when `rlang.hessian` asks for them)."""
from __future__ import annotations

import numpy as np
import pytest

import rlang
from rlang.ad import drivers, dual_runs
from rlang.numbers import F32, ulog_array

SOURCE = """
function f!(y!: f64, x: f64[:,:], w: f64[:], k: i64)
    for i = 0:size(x, 0) - 1
        for j = 0:size(x, 1) - 1
            y! += w[j] * x[i, j] * x[i, j] * f64(k)
        end
    end
end
"""

CASES = [   # (arguments, the positions holding a float input)
    ((1.0, np.zeros((3, 2)), np.zeros(2), 4), {0, 1, 2}),
    ((1.0, np.zeros((0, 2)), np.zeros(2), 4), {0, 2}),      # an empty array has no input
    ((np.float64(2.0), [[1.0, 2.0]], (3.0,), True), {0, 1, 2}),     # lists and tuples
    (([1, 2], np.zeros(3, dtype=np.int64), F32(1.5), np.zeros((), dtype=np.float64)), {2, 3}),
    ((1.0, ulog_array([1.0, 2.0]), rlang.ULog.from_value(3.0)), {0}),  # ulog: held constant
]


@pytest.mark.parametrize("args, expected", CASES)
def test_float_positions_are_those_of_the_flat_inputs(args, expected):
    assert dual_runs.float_positions(args) == expected
    assert {p for p, _ in dual_runs.flat_float_inputs(args)} == expected


@pytest.mark.parametrize("backend", ["interp", "llvm"])
def test_hvp_lists_no_elements(backend, monkeypatch):
    if backend == "llvm":
        pytest.importorskip("llvmlite")
    m = rlang.loads(SOURCE, backend=backend)
    x, w = np.arange(6.0).reshape(3, 2), np.array([0.5, 2.0])
    expected = rlang.hvp(m["f!"], (0.0, x, w, 3), (None, np.ones_like(x), None, None), "y!")

    def refused(args):
        raise AssertionError("hvp listed every element of its arguments")
    monkeypatch.setattr(drivers, "flat_float_inputs", refused)
    if backend == "llvm":
        got = rlang.hvp(m["f!"], (0.0, x, w, 3), (None, np.ones_like(x), None, None), "y!")
        # d²y/dx_ij² = 2 k w_j, and the Hessian is diagonal in x
        np.testing.assert_allclose(got[1], np.tile(2 * 3 * w, (3, 1)))
        for a, b in zip(got, expected):
            assert (a is None and b is None) or np.array_equal(a, b)
    else:    # the interpreter's dual run itself builds a Dual per element
        assert dual_runs.float_positions((0.0, x, w, 3)) == {0, 1, 2}


def test_hessian_still_has_every_column():
    pytest.importorskip("llvmlite")
    m = rlang.loads(SOURCE, backend="llvm")
    x, w = np.array([[1.0, 2.0]]), np.array([0.5, 2.0])
    h = rlang.hessian(m["f!"], (0.0, x, w, 3), "y!")
    assert h.shape == (5, 5)
    np.testing.assert_allclose(np.diag(h)[1:3], 2 * 3 * w)
