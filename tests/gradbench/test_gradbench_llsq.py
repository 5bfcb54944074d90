"""llsq beyond the shared test: the interpreter agrees with llvm, the program passes
its reversibility checks and its inverse takes the value away again, value and
gradient against NumPy's least-squares residual for n that fill the lanes of a
block exactly, leave a partial last block, or are the smallest allowed (Note
[Points in lanes], evals/llsq.rev), output shapes, and GradBench's manual tool's
output where it is installed."""


import numpy as np
import pytest

import rlang
from tests.gradbench import suite_path  # noqa: F401
from suite.inputs import llsq as inputs  # noqa: E402
from suite.rlang_impl._load import program  # noqa: E402
from tests.gradbench.manual import (assert_agrees_with_baselines, assert_agrees_with_manual,
                                     needs_manual, output)  # noqa: E402



def _value_and_gradient(m, x, n):
    llsq = m["llsq!"]
    return llsq(0.0, x, n)[0], rlang.grad(llsq, "y!", argnums=1)(0.0, x, n)


def _numpy(x, n):
    """The objective and its gradient from the Vandermonde matrix V: r = s − V x,
    y = |r|² / 2 and ∇y = −Vᵀ r (an independent oracle)."""
    t = -1.0 + np.arange(n) * 2.0 / (n - 1)
    v = t[:, None] ** np.arange(len(x))
    r = np.sign(t) - v @ x
    return 0.5 * r @ r, -(v.T @ r)


@pytest.mark.parametrize("n,m", [(2, 1), (2, 3), (15, 4), (16, 4), (17, 4), (33, 1), (100, 9)])
def test_value_and_gradient_are_numpys(n, m):
    x = np.array(inputs.generate(seed=n + m, n=n, m=m)["x"])
    value, gradient = _value_and_gradient(program("llsq"), x, n)
    expected_value, expected_gradient = _numpy(x, n)
    np.testing.assert_allclose(value, expected_value, rtol=1e-12)
    np.testing.assert_allclose(gradient, expected_gradient, rtol=1e-11,
                               atol=1e-12 * np.abs(expected_gradient).max())


@pytest.mark.parametrize("n,m", [(5, 3), (17, 2)])
def test_interpreter_agrees_with_llvm(n, m):
    x = np.array(inputs.generate(seed=1, n=n, m=m)["x"])
    ours = _value_and_gradient(program("llsq"), x, n)
    theirs = _value_and_gradient(program("llsq", backend="interp"), x, n)
    for a, b in zip(ours, theirs):
        np.testing.assert_allclose(a, b, rtol=1e-13)


def test_reversibility_checks_pass_and_the_inverse_subtracts():
    data = inputs.generate(seed=4, **inputs.SIZES["small"])
    x, n = np.array(data["x"]), data["n"]
    m = program("llsq", invcheck=True)
    value, gradient = _value_and_gradient(m, x, n)
    unchecked = _value_and_gradient(program("llsq"), x, n)[1]
    np.testing.assert_allclose(gradient, unchecked, rtol=1e-13)  # reassociated sums
    assert abs((~m["llsq!"])(value, x, n)[0]) < 1e-12 * value


def test_output_shapes():
    data = inputs.generate(seed=0, n=20, m=5)
    assert isinstance(output("rlang", "llsq", "primal", data), float)
    gradient = output("rlang", "llsq", "gradient", data)
    assert isinstance(gradient, list) and len(gradient) == 5
    assert all(isinstance(g, float) for g in gradient)


@pytest.mark.parametrize("n,m", [(2, 1), (100, 20)])
def test_other_sizes_agree_with_the_baselines(n, m):
    data = inputs.generate(seed=9, n=n, m=m)
    assert_agrees_with_baselines("llsq", data, ("primal", "gradient"))


@needs_manual("llsq")
def test_outputs_match_gradbenchs_manual_tool(tmp_path):
    data = inputs.generate(seed=2, n=300, m=16)
    assert_agrees_with_manual("llsq", data, ("primal", "gradient"), tmp_path)
