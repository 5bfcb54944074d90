"""Programs that fail with a runtime error whatever invcheck says (Note [Checks invcheck
does not turn off], rlang/lower/statements.py), and `runtime_errors`, which runs one on the
interpreter and on a compiled backend: tests/backends/llvm/test_llvm_errors_without_invcheck.py
and tests/backends/cuda/test_cuda_errors_without_invcheck.py."""
from __future__ import annotations

import numpy as np
import pytest

import rlang
from rlang.numbers import Fixed, ULog

SOURCE = """
function load(y: f64, x: f64[:], k: i64)
    y += x[k]
end

function store(x: f64[:], k: i64, v)
    x[k] += v
end

function annotated(y: f64, x: f64[:], k: i64)
    @invcheckoff y += x[k]
end

function nested(y: f64, x: f64[:, :], k: i64)
    for i = 0:size(x, 0) - 1
        y += x[i, k] * 2.0
    end
end

function in_kernel(y: f64[:], x: f64[:], k: i64)
    @parallel for i = 0:length(y) - 1
        y[i] += x[i + k]
    end
end

function calls_load(y: f64, x: f64[:], k: i64)
    load(y, x, k + 1)
end

function divide(y: i64, a: i64, b: i64)
    y += a // b + a % (b + 1)
end

function power(y: i64, a: i64, b: i64)
    y += a ** b
end

function fixed_divide(y: fixed, a: fixed, b: fixed)
    y += a / b
end

function ulog_subtract(y: ulog, a: ulog, b: ulog)
    y *= a - b
end

function ulog_divide(y: ulog, a: ulog, b: ulog)
    y *= a / b
end

function ulog_divide_update(y: ulog, b: ulog)
    y /= b
end

function unchecked(y: f64, x: f64[:], k: i64)
    @inbounds y += x[k - k]
end
"""

CASES = [
    ("load", (0.0, np.ones(3), 3)),
    ("load", (0.0, np.ones(3), -1)),
    ("store", (np.ones(3), 7, 1.0)),
    ("annotated", (0.0, np.ones(3), 5)),
    ("nested", (0.0, np.ones((2, 3)), 3)),
    ("calls_load", (0.0, np.ones(3), 2)),
    ("divide", (0, 1, 0)),
    ("divide", (0, 1, -1)),
    ("power", (0, 2, -1)),
    ("fixed_divide", (Fixed.from_value(0.0), Fixed.from_value(1.0), Fixed.from_value(0.0))),
    ("ulog_subtract", (ULog(0.0), ULog(0.0), ULog(1.0))),
    ("ulog_divide", (ULog(0.0), ULog(0.0), ULog(float("-inf")))),
]

#: Cases whose inverse does not fail (`y /= 0` undone is `y *= 0`).
FORWARD_ONLY = [("ulog_divide_update", (ULog(0.0), ULog(float("-inf"))))]

KERNEL_CASES = [("in_kernel", (np.zeros(4), np.ones(5), 2))]


def copies(args):
    return [a.copy() if isinstance(a, np.ndarray) else a for a in args]


def runtime_errors(backend: str, invcheck: bool, name: str, args, inverse: bool = False) -> tuple:
    """(the interpreter's error, the backend's error) of one call, both of which must be
    RlangRuntimeErrors."""
    raised = []
    for be in ("interp", backend):
        fn = rlang.loads(SOURCE, backend=be, invcheck=invcheck)[name]
        with pytest.raises(rlang.RlangRuntimeError) as caught:
            (~fn if inverse else fn)(*copies(args))
        raised.append(caught.value)
    return tuple(raised)
