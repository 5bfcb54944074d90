"""The derivative drivers leave the caller's arrays as they were, bit for bit
(docs/api.md "Gradients"; Note [The caller's arrays] in rlang/ad/callers_arrays.py).

`x += y * z` then `x -= y * z` does not give x back exactly in floating point, so a
backward run restores the inputs only up to rounding; these programs are chosen so
that it does not (found by the fuzzer, issue #23 item 7)."""
from __future__ import annotations

import numpy as np
import pytest

import rlang

SOURCE = """
function f(a: f64[:], y: f64)
    for i = 0:length(a) - 1
        a[i] += 1.0 / 3.0 + 0.1
    end
    y += a[0] * a[1]
end
"""
START = np.array([-0.975575, 0.7, 1.0 / 7.0, 1e-17])


def _changes_in_a_round_trip(backend) -> bool:
    m = rlang.loads(SOURCE, backend=backend)
    a, y = START.copy(), 0.0
    a, y = m.f(a, y)
    a, y = (~m.f)(a, y)
    return not np.array_equal(a, START)


@pytest.mark.parametrize("backend", ["interp", "llvm"])
@pytest.mark.parametrize("driver", ["gradient", "hessian", "check_grad"])
def test_a_derivative_gives_the_array_back_bit_for_bit(backend, driver):
    assert _changes_in_a_round_trip(backend), "the program no longer rounds: pick another"
    m = rlang.loads(SOURCE, backend=backend)
    a = START.copy()
    call = getattr(rlang, driver)
    kwargs = {"rtol": 1.0, "atol": 1.0} if driver == "check_grad" else {}
    call(m.f, [a, 0.0], loss="y", **kwargs)
    assert a.tobytes() == START.tobytes()


@pytest.mark.parametrize("backend", ["interp", "llvm"])
def test_a_jacobian_gives_the_array_back_bit_for_bit(backend):
    m = rlang.loads(SOURCE, backend=backend)
    a = START.copy()
    rlang.jacobian(m.f, [a, 0.0])
    assert a.tobytes() == START.tobytes()


@pytest.mark.parametrize("backend", ["interp", "llvm"])
def test_an_array_is_given_back_when_the_gradient_fails(backend):
    m = rlang.loads("""
        function g(a: f64[:], y: f64)
            a[1] += 5.0
            y += a[1]
            @safe assert(y < 1.0, "y too big")
        end
    """, backend=backend)
    a = np.array([1.0, 2.0])
    with pytest.raises(rlang.RlangError):
        rlang.gradient(m.g, [a, 0.0], loss="y")
    assert a.tolist() == [1.0, 2.0]
