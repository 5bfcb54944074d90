"""lstm beyond the shared test: the interpreter agrees with llvm, the program
passes its reversibility checks, other shapes (one layer, one step, three
layers) agree with the PyTorch baseline, the jacobian has 8lb + 3b entries in
GradBench's order, the generator's inputs have the eval's shapes, and GradBench's
manual tool's outputs where it is installed."""


import numpy as np
import pytest

import rlang
from tests.gradbench import suite_path  # noqa: F401
from suite.compare import mismatches  # noqa: E402
from suite.inputs import lstm as inputs  # noqa: E402
from suite.rlang_impl._load import program  # noqa: E402
from tests.gradbench.manual import manual_output, needs_manual, output  # noqa: E402

_ARRAYS = ("main_params", "extra_params", "state", "sequence")


def _args(data):
    return tuple(np.array(data[name]) for name in _ARRAYS)


def _loss_and_gradient(m, args):
    objective = m["lstm_objective!"]
    loss = objective(0.0, *args)[0]
    gradient = rlang.grad(objective, "loss!", argnums=(1, 2))(0.0, *args)
    return (loss, *gradient)


def test_generated_inputs_have_the_evals_shapes():
    data = inputs.generate(seed=2, l=3, c=20)
    b = len(data["extra_params"][0])
    assert b == 14  # the apostrophe U+2019 needs 14 bits, as in GradBench's text
    assert np.shape(data["main_params"]) == (6, 4 * b)
    assert np.shape(data["extra_params"]) == (3, b)
    assert np.shape(data["state"]) == (6, b)
    assert np.shape(data["sequence"]) == (20, b)
    assert set(np.unique(data["sequence"])) <= {0.0, 1.0}
    assert inputs.bit_rows("A", 8) == [[0.0, 1.0, 0.0, 0.0, 0.0, 0.0, 0.0, 1.0]]


def test_interpreter_agrees_with_llvm():
    args = _args(inputs.generate(seed=4, l=2, c=4))
    ours = _loss_and_gradient(program("lstm"), args)
    theirs = _loss_and_gradient(program("lstm", backend="interp"), args)
    for a, b in zip(ours, theirs):
        np.testing.assert_allclose(a, b, rtol=1e-12, atol=1e-15)


def test_reversibility_checks_pass():
    args = _args(inputs.generate(seed=5, **inputs.SIZES["small"]))
    checked = _loss_and_gradient(program("lstm", invcheck=True), args)
    for a, b in zip(checked, _loss_and_gradient(program("lstm"), args)):
        np.testing.assert_array_equal(a, b)


@pytest.mark.parametrize("l,c", [(1, 2), (1, 5), (3, 4)])
def test_other_shapes_agree_with_pytorch(l, c):
    data = inputs.generate(seed=l * 10 + c, l=l, c=c)
    b = len(data["extra_params"][0])
    jacobian = output("rlang", "lstm", "jacobian", data)
    assert len(jacobian) == 8 * l * b + 3 * b
    for function in ("objective", "jacobian"):
        found = mismatches(output("pytorch", "lstm", function, data), output("rlang", "lstm", function, data),
                           1e-10)
        assert not found, found[:5]


def test_the_jacobian_is_main_params_then_extra_params_row_by_row():
    data = inputs.generate(seed=6, l=1, c=3)
    args = _args(data)
    g_main, g_extra = rlang.grad(program("lstm")["lstm_objective!"], "loss!",
                                 argnums=(1, 2))(0.0, *args)
    flat = output("rlang", "lstm", "jacobian", data)
    np.testing.assert_array_equal(flat, np.concatenate([g_main.ravel(), g_extra.ravel()]))
    assert rlang.check_grad(program("lstm")["lstm_objective!"], (0.0, *args), loss="loss!")


@needs_manual("lstm")
@pytest.mark.parametrize("function", ["objective", "jacobian"])
def test_agrees_with_gradbench_manual(tmp_path, function):
    data = inputs.generate(seed=7, l=2, c=6)
    expected = manual_output("lstm", function, data, tmp_path)
    assert not mismatches(expected, output("rlang", "lstm", function, data), 1e-10)
