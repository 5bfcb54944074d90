"""Every derivative driver refuses a written array passed twice (LANGUAGE.md §5) with
invcheck on, on the interpreter as on the compiled backend: the forward-over-reverse
drivers run on dual copies of the arguments, so the interpreter checks the caller's
arguments before it makes them (`_dual_interpreter`, rlang/ad/drivers.py)."""
from __future__ import annotations

import numpy as np
import pytest

import rlang

SOURCE = """
function element(z: f64[:], x: f64[:])
    for i = 0:length(x) - 1
        z[1] += x[i] * x[(i + 1) % length(x)] * z[0]
    end
end
"""
SHARED = np.array([1.5, 0.5, 0.25])
DRIVERS = {
    "grad": lambda f, a: rlang.grad(f, argnums=1, loss="z[1]")(*a),
    "hvp": lambda f, a: rlang.hvp(f, a, (None, np.ones(3)), loss="z[1]"),
    "hessian": lambda f, a: rlang.hessian(f, a, "z[1]"),
    "hessian_diag": lambda f, a: rlang.hessian_diag(f, a, loss="z[1]"),
    "jvp": lambda f, a: rlang.jvp(f, a, (None, np.ones(3))),
}


@pytest.mark.parametrize("backend", ["interp", "llvm"])
@pytest.mark.parametrize("driver", sorted(DRIVERS))
def test_a_written_array_passed_twice_is_refused(backend, driver):
    module = rlang.loads(SOURCE, backend=backend)
    before = SHARED.copy()
    with pytest.raises(rlang.RlangError, match="arguments 1 and 2 of `element` are the "
                                               "same memory, and `z` is written"):
        DRIVERS[driver](module.element, (SHARED, SHARED))
    assert np.array_equal(SHARED, before)


@pytest.mark.parametrize("backend", ["interp", "llvm"])
def test_a_hessian_with_no_float_input_still_refuses_it(backend):
    module = rlang.loads(SOURCE + "function counted(z: f64[:], x: f64[:], k: i64)\n"
                         "    element(z, x)\n    k += 1\nend\n", backend=backend)
    with pytest.raises(rlang.RlangError, match="arguments 1 and 2 of `counted` are the "
                                               "same memory, and `z` is written"):
        rlang.hessian(module.counted, (SHARED, SHARED, 3), "z[1]", argnums=2)
    z, x = SHARED.copy(), np.array([0.3, -1.2, 0.8])
    assert rlang.hessian(module.counted, (z, x, 3), "z[1]", argnums=2).shape == (0, 0)


@pytest.mark.parametrize("driver", sorted(DRIVERS))
def test_apart_arrays_give_the_interpreter_s_derivatives(driver):
    args = (np.array([1.5, 0.5, 0.25]), np.array([0.3, -1.2, 0.8]))
    found = [DRIVERS[driver](rlang.loads(SOURCE, backend=b).element, args)
             for b in ("interp", "llvm")]
    flat = [np.concatenate([np.ravel(np.asarray(v, dtype=float)) for v in _leaves(f)])
            for f in found]
    np.testing.assert_allclose(flat[1], flat[0], rtol=1e-12, atol=1e-14)


def _leaves(value) -> list:
    if isinstance(value, (tuple, list)):
        return [leaf for item in value for leaf in _leaves(item)]
    return [] if value is None else [value]
