"""saddle beyond the shared test: GradBench's expected output at the start (1, 1)
for the four nesting orders (and JAX's), the outer derivative of max_y f(x, y) on
the interpreter and on llvm, with the reversibility checks on, against finite
differences, where the inner descent runs many steps."""

import pytest

import rlang
from rlang.values import Stack
from tests.gradbench import suite_path  # noqa: F401
from suite import tool_module  # noqa: E402
from suite.common import UnknownFunction, measure  # noqa: E402
from suite.compare import mismatches  # noqa: E402
from suite.inputs import saddle as inputs  # noqa: E402
from suite.rlang_impl._load import program  # noqa: E402

FUNCTIONS = ("rr", "rf", "fr", "ff")
EXPECTED = [8.246324826140356e-06] * 4      # GradBench's saddle eval, start (1, 1)


def _arguments(x, start, forward):
    return (0.0, 0.0, 0.0, 0, Stack("f64", []), Stack("i64", []), x[0], x[1],
            start[0], start[1], forward)


@pytest.mark.parametrize("function", FUNCTIONS)
def test_gradbenchs_output_at_the_start_1_1(function):
    data = inputs.generate(**inputs.SIZES["default"])
    ours = measure(tool_module("rlang", "saddle").prepare(function, data), 1, 0)[0]
    assert not mismatches(EXPECTED, ours, 1e-12)


@pytest.mark.parametrize("function", ["rf", "fr"])
def test_jax_agrees_at_the_start_1_1(function):
    data = inputs.generate(**inputs.SIZES["default"])
    ours = measure(tool_module("rlang", "saddle").prepare(function, data), 1, 0)[0]
    theirs = measure(tool_module("jax", "saddle").prepare(function, data), 1, 0)[0]
    assert not mismatches(theirs, ours, 1e-10)


@pytest.mark.parametrize("forward", [False, True], ids=["inner-grad", "inner-fgrad"])
def test_outer_derivatives_agree_across_backends_and_with_finite_differences(forward):
    x, start, h = (0.7, -0.4), (1.0, 0.8), 1e-6
    checked = program("saddle", invcheck=True)["max_cost!"]
    interp = program("saddle", invcheck=True, backend="interp")["max_cost!"]
    steps = checked(*_arguments(x, start, forward))[3]
    assert steps > 100                          # the inner descent is long
    expected = []
    for k in range(2):
        up, down = list(x), list(x)
        up[k] += h
        down[k] -= h
        expected.append((checked(*_arguments(up, start, forward))[0] -
                         checked(*_arguments(down, start, forward))[0]) / (2 * h))
    for max_cost in (checked, interp):
        reverse = rlang.grad(max_cost, "max!", argnums=(6, 7))(*_arguments(x, start, forward))
        assert list(reverse) == pytest.approx(expected, rel=1e-6)
        for k in range(2):
            direction = [0.0] * 4 + [None, None] + [0.0] * 4 + [None]
            direction[6 + k] = 1.0
            tangent = rlang.jvp(max_cost, _arguments(x, start, forward), tuple(direction))[1][0]
            assert tangent == pytest.approx(reverse[k], rel=1e-12)


def test_unknown_function():
    with pytest.raises(UnknownFunction):
        tool_module("rlang", "saddle").prepare("r", inputs.generate())
