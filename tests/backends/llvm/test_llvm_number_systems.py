"""fixed and ulog numbers on the llvm backend agree with the interpreter (issue #5).

Forward, inverse, errors, `@safe` output, gradients: fixed results bit for bit (raw
values), ulog results as logarithms within 1e-12, gradients within 1e-12 relative.
The rounding of fixed `*` and `/` (to nearest, ties to even, in 128-bit integers) is
checked on generated raw values, extremes included.
"""
from __future__ import annotations


import numpy as np
import pytest
from hypothesis import given, settings

import rlang
from number_systems import ARITHMETIC, ARRAYS, COMPLEX, COMPLEX_GRADIENTS, ERROR_CASES, \
    ERRORS, GRADIENT_CASES, GRADIENTS, RAW, Z_VALUES, both, close, run_both, run_main_both, same
from rlang.numbers import Fixed, FixedArray, ULog, ULogArray, fixed_array, ulog_array

FIXED_VALUES = [1.25, -0.3, 7.0, -1e-3, 0.5, 1e5, -2.0 ** 19]


@pytest.mark.parametrize("a", FIXED_VALUES)
@pytest.mark.parametrize("b", [0.75, -3.5, 1e-4, 2.0])
def test_fixed_arithmetic_agrees_exactly(a, b):
    args = [Fixed.from_value(0.5), Fixed.from_value(0.0), Fixed.from_value(0.0),
            Fixed.from_value(a), Fixed.from_value(b), 7]
    expected, got = run_both(ARITHMETIC, "fixed_ops!", args)
    assert [v.raw if isinstance(v, Fixed) else v for v in got] == \
        [v.raw if isinstance(v, Fixed) else v for v in expected]
    back_expected, back = run_both(ARITHMETIC, "fixed_ops!", list(expected), inverse=True)
    assert back == back_expected == tuple(args)


@settings(max_examples=200, deadline=None)
@given(RAW, RAW)
def test_fixed_rounding_of_products_and_quotients(a, b):
    source = """
function f!(p!: fixed, q!: fixed, a: fixed, b: fixed)
    p! += a * b
    if (b != fixed(0), ~)
        q! += a / b
    end
end
"""
    args = [Fixed(0), Fixed(0), Fixed(a), Fixed(b)]
    expected, got = run_both(source, "f!", args)
    assert (got[0].raw, got[1].raw) == (expected[0].raw, expected[1].raw)


@pytest.mark.parametrize("x", [0.5, 1.5, 4.0])
@pytest.mark.parametrize("a, b", [(2.0, 3.0), (3.0, 2.0), (1e-3, 1e3), (1e-300, 1e300),
                                  (7.0, 7.0)])
def test_ulog_arithmetic_agrees(x, a, b):
    args = [ULog.from_value(1.0), ULog.from_value(2.0), x, ULog.from_value(a),
            ULog.from_value(b)]
    if (a + b) - b == 0:            # 1e-300 + 1e300 - 1e300 is 0: `*= 0` is refused
        errors = []
        for backend in ("interp", "llvm"):
            with pytest.raises(rlang.ReversibilityError) as error:
                rlang.loads(ARITHMETIC, backend=backend)["ulog_ops!"](*args)
            errors.append((error.value.message, error.value.span))
        assert errors[0] == errors[1] and "cannot be undone" in errors[0][0]
        return
    expected, got = run_both(ARITHMETIC, "ulog_ops!", args)
    assert all(same(g, e) for g, e in zip(got, expected)), (got, expected)
    back_expected, back = run_both(ARITHMETIC, "ulog_ops!", list(expected), inverse=True)
    assert all(same(g, e) for g, e in zip(back, back_expected))


def test_mixed_conversions_and_builtins():
    args = [0.0, Fixed.from_value(1.75), ULog.from_value(2.5)]
    expected, got = run_both(ARITHMETIC, "mixed!", args)
    assert all(same(g, e) for g, e in zip(got, expected))


def test_arrays_of_fixed_and_ulog():
    (expected, expected_out), (got, got_out) = run_main_both(ARRAYS)
    assert got_out == expected_out
    assert [n for n, _ in got] == [n for n, _ in expected]
    for (name, a), (_, b) in zip(got, expected):
        assert same(a, b), name
    assert isinstance(dict(got)["xs"], FixedArray) and isinstance(dict(got)["ls"], ULogArray)


def test_array_arguments_of_fixed_and_ulog():
    xs, ls = fixed_array([0.5, -1.25, 3.0]), ulog_array([0.0, 2.0, 7.5])
    expected, got = run_both(ARRAYS, "scale!", [np.zeros(3), xs, ls])
    assert all(same(g, e) for g, e in zip(got, expected))


@pytest.mark.parametrize("name, args", ERROR_CASES, ids=lambda c: str(c))
def test_errors_are_the_interpreters(name, args):
    interp, llvm = both(ERRORS)
    errors = []
    for module in (interp, llvm):
        with pytest.raises(rlang.RlangError) as info:
            module[name](*args)
        errors.append(info.value)
    expected, got = errors
    assert type(got) is type(expected)
    assert got.message == expected.message
    assert got.span == expected.span


@pytest.mark.parametrize("name, args, loss", GRADIENT_CASES, ids=[c[0] for c in GRADIENT_CASES])
def test_gradients_agree(name, args, loss):
    interp, llvm = both(GRADIENTS)
    expected = rlang.gradient(interp[name], args(), loss=loss)
    got = rlang.gradient(llvm[name], args(), loss=loss)
    assert len(got) == len(expected)
    for g, e in zip(got, expected):
        if e is None:
            assert g is None
        elif isinstance(e, np.ndarray):
            np.testing.assert_allclose(g, e, rtol=1e-12, atol=1e-300)
        else:
            assert g == pytest.approx(e, rel=1e-12, abs=1e-300)
    assert rlang.check_grad(llvm[name], args(), loss=loss)


@pytest.mark.parametrize("name, args, loss", [c for c in GRADIENT_CASES if "ulog" in c[0]],
                         ids=[c[0] for c in GRADIENT_CASES if "ulog" in c[0]])
def test_hessians_through_ulog_agree(name, args, loss):
    interp, llvm = both(GRADIENTS)
    expected = rlang.hessian(interp[name], args(), loss=loss)
    np.testing.assert_allclose(rlang.hessian(llvm[name], args(), loss=loss), expected,
                               rtol=1e-12, atol=1e-14)


@pytest.mark.parametrize("z, v", Z_VALUES)
def test_complex_arithmetic_agrees(z, v):
    expected, got = run_both(COMPLEX, "arith!", [0.5 - 0.5j, z, v, 1.25])
    assert all(close(g, e) for g, e in zip(got, expected)), (got, expected)


@pytest.mark.parametrize("z", [3.0 + 4.0j, -2.0 + 0.0j, 0.5 - 1.5j, -0.3 - 0.2j, 1.0 + 1e-8j,
                               -4.0 - 0.0j])
def test_complex_functions_agree_with_cmath(z):
    expected, got = run_both(COMPLEX, "functions!", [0j, z])
    assert close(got[0], expected[0]), (got, expected)


def test_complex_instructions_views_and_calls():
    args = [1.0 + 2.0j, -3.0 + 0.5j, np.array([1.0 + 1.0j, 2.0 - 1.0j, 0.0 + 0.0j])]
    expected, got = run_both(COMPLEX, "instructions!", args)
    assert all(close(g, e) for g, e in zip(got, expected))
    back_expected, back = run_both(COMPLEX, "instructions!", list(expected), inverse=True)
    assert all(close(g, e) for g, e in zip(back, back_expected))
    assert close(back[2], args[2])


def test_complex_store_output_and_checks():
    (expected, expected_out), (got, got_out) = run_main_both(COMPLEX)
    assert got_out == expected_out
    assert [n for n, _ in got] == [n for n, _ in expected]
    assert all(close(a, b) for (_, a), (_, b) in zip(got, expected))
    broken = COMPLEX.replace("t → 6.0 + 8.0im", "t → 6.0 + 8.5im")
    errors = []
    for module in both(broken):
        with pytest.raises(rlang.ReversibilityError) as info:
            module.run_main()
        errors.append(info.value)
    assert errors[1].message == errors[0].message and errors[1].span == errors[0].span


@pytest.mark.parametrize("loss", ["w!.re", "w!.im", "w!"])
def test_complex_gradients_agree(loss):
    def args():
        return [0.25 + 0.0j, 1.5 - 0.5j, np.array([0.3 + 0.2j, 2.0 - 1.0j]), 0.75]
    interp, llvm = both(COMPLEX_GRADIENTS)
    expected = rlang.gradient(interp["closs!"], args(), loss=loss)
    got = rlang.gradient(llvm["closs!"], args(), loss=loss)
    for g, e in zip(got, expected):
        if isinstance(e, np.ndarray):
            np.testing.assert_allclose(g, e, rtol=1e-12)
            assert g.dtype == e.dtype
        else:
            assert type(g) is type(e) and close(g, e), (g, e)
    with pytest.raises(rlang.RlangTypeError, match="Hessians through complex"):
        rlang.hessian(llvm["closs!"], args(), loss="w!.re")


@pytest.mark.parametrize("swap", ["SWAP(x, z.im)", "SWAP(z.re, x)"])
def test_gradient_through_a_swap_of_a_float_and_a_complex_field(swap):
    """The interpreter's gradient pass read the part of a GVar (a Python error) when
    one operand of SWAP was a field; a generated program found it.  After the swap
    x holds the old part and the part the old x: each gradient moves across."""
    source = f"function f(x: f64, z: complex)\n    {swap}\n    x += 2.0 * z.re * z.im\nend\n"
    if "im" in swap:        # x' = z.im + 2 z.re x: ∂/∂x = 2 z.re, ∂/∂z = 2x ∂/∂re + 1 ∂/∂im
        expected = (3.0, 1.4 + 1.0j)
    else:                   # x' = z.re + 2 x z.im: ∂/∂x = 2 z.im, ∂/∂z = 1 ∂/∂re + 2x ∂/∂im
        expected = (-5.0, 1.0 + 1.4j)
    for module in both(source):
        grads = rlang.gradient(module.f, [0.7, 1.5 - 2.5j], loss="x")
        assert grads == pytest.approx(expected, rel=1e-12)


@pytest.mark.parametrize("body", ["w! += z ** 2", "w! += asin(z)"])
def test_complex_powers_and_arcsines_compile(body):
    # more of them in test_llvm_constructs.py
    source = f"function f!(w!: complex, z: complex)\n    {body}\nend\n"
    got = rlang.loads(source, backend="llvm")["f!"](0j, 1.0 + 1.0j)
    expected = rlang.loads(source)["f!"](0j, 1.0 + 1.0j)
    assert abs(got[0] - expected[0]) <= 1e-12 * abs(expected[0])
