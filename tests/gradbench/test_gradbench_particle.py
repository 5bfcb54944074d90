"""particle beyond the shared test: GradBench's expected output at w = 0 for the
four nesting orders (and JAX's), the outer derivative on the interpreter and on
llvm, with the reversibility checks on, against finite differences; the inner mode
really is the statement the program runs."""

import pytest

import rlang
from rlang.values import Stack
from tests.gradbench import suite_path  # noqa: F401
from suite import tool_module  # noqa: E402
from suite.common import UnknownFunction, measure  # noqa: E402
from suite.compare import mismatches  # noqa: E402
from suite.inputs import particle as inputs  # noqa: E402
from suite.rlang_impl._load import program  # noqa: E402

FUNCTIONS = ("rr", "rf", "fr", "ff")
EXPECTED = 0.2071918746486116          # GradBench's particle eval, w = 0


def _arguments(w, forward):
    return (0.0, 0.0, 0.0, 0.0, 0.0, 0, Stack("f64", []), w, forward)


@pytest.mark.parametrize("function", FUNCTIONS)
def test_gradbenchs_output_at_w_0(function):
    data = inputs.generate(**inputs.SIZES["default"])
    ours = measure(tool_module("rlang", "particle").prepare(function, data), 1, 0)[0]
    assert not mismatches(EXPECTED, ours, 1e-12)


@pytest.mark.parametrize("function", ["rr", "ff"])
def test_jax_agrees_at_w_0(function):
    data = inputs.generate(**inputs.SIZES["default"])
    ours = measure(tool_module("rlang", "particle").prepare(function, data), 1, 0)[0]
    theirs = measure(tool_module("jax", "particle").prepare(function, data), 1, 0)[0]
    assert not mismatches(theirs, ours, 1e-10)


@pytest.mark.parametrize("forward", [False, True], ids=["inner-grad", "inner-fgrad"])
def test_outer_derivatives_agree_across_backends_and_with_finite_differences(forward):
    w, h = 0.1, 1e-6
    checked = program("particle", invcheck=True)["trajectory!"]
    interp = program("particle", invcheck=True, backend="interp")["trajectory!"]
    loss = [checked(*_arguments(w + d, forward))[0] for d in (h, -h)]
    expected = (loss[0] - loss[1]) / (2 * h)
    along_w = (0.0,) * 5 + (None, None, 1.0, None)
    found = []
    for trajectory in (checked, interp):
        found.append(rlang.grad(trajectory, "loss!", argnums=7)(*_arguments(w, forward)))
        found.append(rlang.jvp(trajectory, _arguments(w, forward), along_w)[1][0])
    for value in found:
        assert value == pytest.approx(expected, rel=1e-6)
        assert value == pytest.approx(found[0], rel=1e-12)


def test_the_inner_mode_is_the_programs_statement():
    choice = program("particle").unit.functions["grad_potential"].body[0]
    by_forward, by_reverse = choice.branches[0].body[0], choice.orelse[0]
    assert (by_forward.mode, by_reverse.mode) == ("fgrad", "grad")
    assert by_forward.func == by_reverse.func == "potential"


def test_unknown_function():
    with pytest.raises(UnknownFunction):
        tool_module("rlang", "particle").prepare("r", inputs.generate())
