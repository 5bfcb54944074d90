"""`for` ranges wider than 2^63 (issue #23 item 8): `stop - start` overflows i64 there.
The forward loop counts its values exactly on every backend, and the inverse of a
loop with a non-unit step (whose start is `a + s * ((b - a) // s)`, Note [Loop
inversion]) visits the same values backward instead of evaluating that expression."""
from __future__ import annotations

import pytest

import rlang

SOURCE = """
function f(a: i64, b: i64, s: i64, n: i64, t: i64)
    for i = a:s:b
        n += 1
        t += i % 1000 + 1
    end
end
"""
I64_MIN, I64_MAX = -(1 << 63), (1 << 63) - 1
RANGES = [(I64_MIN, I64_MAX, 1 << 62), (I64_MIN, I64_MAX, I64_MAX), (I64_MAX, I64_MIN, -(1 << 62)),
          (I64_MIN + 5, I64_MAX - 1, (1 << 62) + 1), (I64_MAX, I64_MIN, I64_MIN), (0, 10, 3),
          (10, 0, -3), (5, 4, 2), (I64_MIN, I64_MIN, 5), (I64_MIN, I64_MAX - 7, 1 << 61)]


def _visits(a, b, s):
    values = list(range(a, b + 1, s) if s > 0 else range(a, b - 1, s))
    return len(values), sum(i % 1000 + 1 for i in values)


@pytest.mark.parametrize("backend", ["interp", "llvm"])
@pytest.mark.parametrize("a, b, s", RANGES)
def test_a_wide_range_runs_forward_and_backward_exactly(backend, a, b, s):
    m = rlang.loads(SOURCE, backend=backend)
    count, total = _visits(a, b, s)
    out = m.f(a, b, s, 0, 0)
    assert out[3:] == (count, total)
    assert (~m.f)(*out) == (a, b, s, 0, 0)
    # and the inverse run first, on its own: it visits the values from the last one
    assert (~m.f)(a, b, s, count, total) == (a, b, s, 0, 0)


COUNTED = """
function g(xs: f64[:], a: i64, b: i64)
    for i = a:b
        xs[i - a] += 1.0
    end
end

function k(ys: f64[:, :], a: i64, b: i64)
    @parallel for j = 0:1
        for i = a:b
            ys[j, i - a] += 1.0
        end
    end
end
"""


@pytest.mark.parametrize("backend", ["interp", "llvm", "cuda"])
@pytest.mark.parametrize("a, b", [(0, I64_MAX), (I64_MIN, I64_MAX), (-1, I64_MAX)])
def test_a_loop_of_2_to_the_63_passes_or_more_runs(backend, a, b):
    """`0:typemax(i64)` has 2^63 values: that count, read as a signed i64, was
    negative, and the compiled loop ran no pass (the fuzzer's seed 4001 case 20448).
    Here each loop runs until its index leaves the array."""
    import numpy as np

    if backend == "cuda":
        pytest.importorskip("numba")
    m = rlang.loads(COUNTED, backend=backend)
    with pytest.raises(rlang.RlangRuntimeError, match="index 3 is out of bounds"):
        m.g(np.zeros(3), a, b)
    if backend != "interp":         # the inner loop of a kernel (cuda: device code)
        with pytest.raises(rlang.RlangRuntimeError, match="index 3 is out of bounds"):
            m.k(np.zeros((2, 3)), a, b)
