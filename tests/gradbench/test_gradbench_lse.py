"""lse beyond the shared test: the interpreter agrees with llvm, the program passes
its reversibility checks and its inverse takes the value away again, the value and
gradient against NumPy (softmax) on inputs that stress the maximum (ties, sorted
input, one element, large and negative values), output shapes, and GradBench's
manual tool's output where it is installed."""


import numpy as np
import pytest

import rlang
from tests.gradbench import suite_path  # noqa: F401
from suite.inputs import lse as inputs  # noqa: E402
from suite.rlang_impl._load import program  # noqa: E402
from tests.gradbench.manual import (assert_agrees_with_baselines, assert_agrees_with_manual,
                                     needs_manual, output)  # noqa: E402



def _value_and_gradient(m, x):
    lse = m["lse!"]
    return lse(0.0, x)[0], rlang.grad(lse, "out!", argnums=1)(0.0, x)


def _numpy(x):
    a = np.max(x)
    value = a + np.log(np.sum(np.exp(x - a)))
    return value, np.exp(x - value)


CASES = {
    "one element": [3.5],
    "ties for the maximum": [1.0, 4.0, 2.0, 4.0, 4.0, -1.0],
    "ascending": list(np.linspace(-3.0, 3.0, 50)),          # every element is a record
    "descending": list(np.linspace(3.0, -3.0, 50)),
    "large": [1000.0, 999.0, 998.5],                        # exp(x) alone overflows
    "negative": [-700.0, -750.0, -720.0],
}


@pytest.mark.parametrize("name", CASES)
def test_value_and_gradient_are_numpys(name):
    x = np.array(CASES[name])
    value, gradient = _value_and_gradient(program("lse"), x)
    expected_value, softmax = _numpy(x)
    np.testing.assert_allclose(value, expected_value, rtol=1e-14)
    np.testing.assert_allclose(gradient, softmax, rtol=1e-12, atol=1e-15)
    assert abs(np.sum(gradient) - 1.0) < 1e-13


@pytest.mark.parametrize("name", ["ties for the maximum", "ascending", "one element"])
def test_interpreter_agrees_with_llvm(name):
    x = np.array(CASES[name])
    ours = _value_and_gradient(program("lse"), x)
    theirs = _value_and_gradient(program("lse", backend="interp"), x)
    for a, b in zip(ours, theirs):
        np.testing.assert_allclose(a, b, rtol=1e-13, atol=1e-16)


def test_reversibility_checks_pass_and_the_inverse_subtracts():
    x = np.array(inputs.generate(seed=4, **inputs.SIZES["small"])["x"])
    m = program("lse", invcheck=True)
    value, gradient = _value_and_gradient(m, x)
    unchecked = _value_and_gradient(program("lse"), x)[1]
    np.testing.assert_allclose(gradient, unchecked, rtol=1e-13)  # reassociated sums
    assert (~m["lse!"])(value, x)[0] == 0.0


def test_output_shapes():
    data = inputs.generate(seed=0, n=7)
    assert isinstance(output("rlang", "lse", "primal", data), float)
    gradient = output("rlang", "lse", "gradient", data)
    assert isinstance(gradient, list) and len(gradient) == 7
    assert all(isinstance(g, float) for g in gradient)


@pytest.mark.parametrize("n", [1, 2, 1000])
def test_other_sizes_agree_with_the_baselines(n):
    data = inputs.generate(seed=9, n=n)
    assert_agrees_with_baselines("lse", data, ("primal", "gradient"))


@needs_manual("lse")
def test_outputs_match_gradbenchs_manual_tool(tmp_path):
    data = inputs.generate(seed=2, n=500)
    assert_agrees_with_manual("lse", data, ("primal", "gradient"), tmp_path)
