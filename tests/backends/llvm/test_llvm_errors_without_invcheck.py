"""invcheck off turns off the reversibility checks only (Note [Checks invcheck does not
turn off], rlang/lower/statements.py): an index out of range, a division by zero, a negative
integer power and ulog subtraction below zero are the interpreter's RlangRuntimeError
on the llvm backend too, with invcheck off and inside `@invcheckoff`.  Before,
compiled code read outside the array or gave a value."""
from __future__ import annotations

import numpy as np
import pytest

import rlang
from gradient_agreement import assert_same_error
from runtime_error_cases import CASES, FORWARD_ONLY, KERNEL_CASES, SOURCE, runtime_errors


@pytest.mark.parametrize("invcheck", [False, True])
@pytest.mark.parametrize("inverse", [False, True])
@pytest.mark.parametrize("name, args", CASES + KERNEL_CASES,
                         ids=[f"{c[0]}{c[1][-1]!r}" for c in CASES + KERNEL_CASES])
def test_llvm_raises_the_interpreters_runtime_errors(name, args, inverse, invcheck):
    expected, got = runtime_errors("llvm", invcheck, name, args, inverse)
    assert_same_error(got, expected)


@pytest.mark.parametrize("invcheck", [False, True])
@pytest.mark.parametrize("name, args", FORWARD_ONLY, ids=[c[0] for c in FORWARD_ONLY])
def test_llvm_raises_the_interpreters_runtime_errors_forward(name, args, invcheck):
    expected, got = runtime_errors("llvm", invcheck, name, args)
    assert_same_error(got, expected)


def test_gradient_without_invcheck_raises_instead_of_reading_outside():
    """The gradient driver skips the forward run with invcheck off where it can (Note
    [Gradients without the forward run]); the pass then makes the bounds check."""
    module = rlang.loads(SOURCE, backend="llvm", invcheck=False)
    interp = rlang.loads(SOURCE, invcheck=False)
    for _ in range(3):                       # the plan is made on the first call
        with pytest.raises(rlang.RlangRuntimeError) as got:
            rlang.gradient(module.load, [0.0, np.ones(3), 3], loss="y")
        with pytest.raises(rlang.RlangRuntimeError) as expected:
            rlang.gradient(interp.load, [0.0, np.ones(3), 3], loss="y")
        assert_same_error(got.value, expected.value)
        grads = rlang.gradient(module.load, [0.0, np.ones(3), 1], loss="y")
        assert np.array_equal(grads[1], [0.0, 1.0, 0.0])


def test_inbounds_is_the_one_way_to_drop_a_bounds_check():
    from rlang.ir import nodes as ir
    from rlang.ir.walk import walk
    from rlang.lower.statements import lower
    from rlang.frontend.loader import loads_unit

    unit = loads_unit(SOURCE)
    for invcheck in (False, True):
        checked = lower(unit, "load", ("f64", ir.ArrayType("f64", 1), "i64"), False, invcheck)
        free = lower(unit, "unchecked", ("f64", ir.ArrayType("f64", 1), "i64"), False, invcheck)
        assert "bounds" in {site.kind for site in checked.sites}
        assert "bounds" not in {site.kind for site in free.sites}
        assert any(isinstance(s, ir.Update) for s in walk(free.functions[free.entry].body))
