"""ode beyond the shared test: the interpreter agrees with llvm, the program
passes its reversibility checks and its inverse goes back to zeros, edge sizes
(n = 1 to 5, s = 1) agree with the PyTorch baseline, the outputs have n entries,
and GradBench's manual tool's primal where it is installed."""


import numpy as np
import pytest

import rlang
from tests.gradbench import suite_path  # noqa: F401
from suite.compare import mismatches  # noqa: E402
from suite.inputs import ode as inputs  # noqa: E402
from suite.rlang_impl._load import program  # noqa: E402
from tests.gradbench.manual import manual_output, needs_manual, output  # noqa: E402



def _primal_and_gradient(m, x, s):
    n = len(x)
    ode = m["ode!"]
    y = ode(np.zeros(n), x, s)[0]
    g = rlang.grad(ode, ("y!", n - 1), argnums=1)(np.zeros(n), x, s)
    return y, g


def test_interpreter_agrees_with_llvm():
    x = np.array(inputs.generate(seed=4, n=6, s=2)["x"])
    ours = _primal_and_gradient(program("ode"), x, 2)
    theirs = _primal_and_gradient(program("ode", backend="interp"), x, 2)
    for a, b in zip(ours, theirs):
        np.testing.assert_allclose(a, b, rtol=1e-13, atol=1e-15)


def test_reversibility_checks_pass_and_the_inverse_gives_zeros_back():
    size = inputs.SIZES["small"]
    x = np.array(inputs.generate(seed=5, **size)["x"])
    checked = _primal_and_gradient(program("ode", invcheck=True), x, size["s"])
    for a, b in zip(checked, _primal_and_gradient(program("ode"), x, size["s"])):
        np.testing.assert_array_equal(a, b)
    m = program("ode", invcheck=True)
    y = m["ode!"](np.zeros(len(x)), x, size["s"])[0]
    back = (~m["ode!"])(y, x, size["s"])[0]
    np.testing.assert_allclose(back, 0.0, atol=1e-15)


@pytest.mark.parametrize("n,s", [(1, 1), (2, 1), (4, 2), (5, 1), (9, 7)])
def test_edge_sizes_agree_with_pytorch_and_have_n_entries(n, s):
    data = inputs.generate(seed=n, n=n, s=s)
    for function in ("primal", "gradient"):
        ours = output("rlang", "ode", function, data)
        assert isinstance(ours, list) and len(ours) == n
        assert all(isinstance(v, float) for v in ours)
        found = mismatches(output("pytorch", "ode", function, data), ours, 1e-10)
        assert not found, found[:5]


def test_the_gradient_matches_central_differences():
    size = inputs.SIZES["small"]
    x = np.array(inputs.generate(seed=6, **size)["x"])
    assert rlang.check_grad(program("ode")["ode!"], (np.zeros(len(x)), x, size["s"]),
                            loss=("y!", len(x) - 1))


@needs_manual("ode")
def test_primal_agrees_with_gradbench_manual(tmp_path):
    # the manual tool's gradient is the exact solution's, not RK4's: only the primal compares
    data = inputs.generate(seed=7, n=12, s=3)
    expected = manual_output("ode", "primal", data, tmp_path)
    assert not mismatches(expected, output("rlang", "ode", "primal", data), 1e-12)
