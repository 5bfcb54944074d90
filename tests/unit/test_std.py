"""The standard library's std/blas.rev (LANGUAGE.md §11), included by name, against
NumPy on random data; every function run forward and then backward gives back its
inputs.
"""
from __future__ import annotations

import numpy as np
import pytest

import rlang

BLAS = rlang.loads('include "std/blas.rev"\n')
SHAPES = [(1, 1, 1), (3, 2, 4), (5, 7, 1), (8, 8, 8), (2, 9, 3)]


def rng(seed) -> np.random.Generator:
    return np.random.default_rng(seed)


def test_blas_defines_the_functions_of_the_spec():
    for name in ("i_sum", "i_dot", "i_norm2", "i_axpy!", "i_mul!", "i_matmul!", "i_affine!"):
        assert name in BLAS.functions


@pytest.mark.parametrize("n", [0, 1, 5, 17])
def test_sums_dots_and_norms(n):
    r = rng(n)
    x, y = r.normal(size=n), r.normal(size=n)
    out0 = float(r.normal())
    x0, y0 = x.copy(), y.copy()

    out, xs = BLAS.i_sum(out0, x)
    assert out == pytest.approx(out0 + x.sum(), rel=1e-12, abs=1e-12) and xs is x
    assert (~BLAS.i_sum)(out, x)[0] == pytest.approx(out0, abs=1e-12)

    out, _, _ = BLAS.i_dot(out0, x, y)
    assert out == pytest.approx(out0 + x @ y, rel=1e-12, abs=1e-12)
    assert (~BLAS.i_dot)(out, x, y)[0] == pytest.approx(out0, abs=1e-12)

    out, _ = BLAS.i_norm2(out0, x)
    assert out == pytest.approx(out0 + x @ x, rel=1e-12, abs=1e-12)
    assert (~BLAS.i_norm2)(out, x)[0] == pytest.approx(out0, abs=1e-12)

    assert np.array_equal(x, x0) and np.array_equal(y, y0)


@pytest.mark.parametrize("n", [0, 1, 6, 31])
def test_axpy(n):
    r = rng(100 + n)
    y, x, a = r.normal(size=n), r.normal(size=n), float(r.normal())
    y0, x0 = y.copy(), x.copy()
    result = BLAS.i_axpy_(y, a, x)
    assert result[0] is y and result[1] == a
    np.testing.assert_allclose(y, y0 + a * x0, rtol=1e-13, atol=1e-13)
    (~BLAS["i_axpy!"])(y, a, x)
    np.testing.assert_allclose(y, y0, rtol=0, atol=1e-13)
    assert np.array_equal(x, x0)


@pytest.mark.parametrize("m, n, _", SHAPES)
def test_matrix_vector_product(m, n, _):
    r = rng((m, n))
    a, x, y = r.normal(size=(m, n)), r.normal(size=n), r.normal(size=m)
    a0, x0, y0 = a.copy(), x.copy(), y.copy()
    result = BLAS.i_mul_(y, a, x)
    assert result[0] is y
    np.testing.assert_allclose(y, y0 + a0 @ x0, rtol=1e-12, atol=1e-12)
    (~BLAS.i_mul_)(y, a, x)
    np.testing.assert_allclose(y, y0, rtol=0, atol=1e-12)
    assert np.array_equal(a, a0) and np.array_equal(x, x0)


@pytest.mark.parametrize("m, k, n", SHAPES)
def test_matrix_matrix_product(m, k, n):
    r = rng((m, k, n))
    a, b, c = r.normal(size=(m, k)), r.normal(size=(k, n)), r.normal(size=(m, n))
    a0, b0, c0 = a.copy(), b.copy(), c.copy()
    result = BLAS["i_matmul!"](c, a, b)
    assert result[0] is c
    np.testing.assert_allclose(c, c0 + a0 @ b0, rtol=1e-12, atol=1e-12)
    (~BLAS["i_matmul!"])(c, a, b)
    np.testing.assert_allclose(c, c0, rtol=0, atol=1e-12)
    assert np.array_equal(a, a0) and np.array_equal(b, b0)


@pytest.mark.parametrize("m, n, _", SHAPES)
def test_affine(m, n, _):
    r = rng((7, m, n))
    w, b, x, y = r.normal(size=(m, n)), r.normal(size=m), r.normal(size=n), r.normal(size=m)
    w0, b0, x0, y0 = w.copy(), b.copy(), x.copy(), y.copy()
    BLAS.i_affine_(y, w, b, x)
    np.testing.assert_allclose(y, y0 + w0 @ x0 + b0, rtol=1e-12, atol=1e-12)
    (~BLAS.i_affine_)(y, w, b, x)
    np.testing.assert_allclose(y, y0, rtol=0, atol=1e-12)
    for now, before in ((w, w0), (b, b0), (x, x0)):
        assert np.array_equal(now, before)


@pytest.mark.parametrize("call", [
    lambda: BLAS.i_dot(0.0, np.zeros(2), np.zeros(3)),
    lambda: BLAS.i_axpy_(np.zeros(2), 1.0, np.zeros(3)),
    lambda: BLAS.i_mul_(np.zeros(2), np.zeros((3, 2)), np.zeros(2)),
    lambda: BLAS.i_matmul_(np.zeros((2, 2)), np.zeros((2, 3)), np.zeros((2, 2))),
    lambda: BLAS.i_affine_(np.zeros(2), np.zeros((2, 2)), np.zeros(3), np.zeros(2)),
])
def test_shape_mismatches_are_clean_errors(call):
    with pytest.raises(rlang.RlangRuntimeError, match="assertion failed"):
        call()


def test_blas_widens_arrays_it_reads_and_takes_only_f64_arrays_it_writes():
    # LANGUAGE.md §13: an integer array the function only reads is converted
    assert BLAS.i_sum(0.0, np.arange(3))[0] == 3.0
    with pytest.raises(rlang.RlangTypeError, match="f64"):
        BLAS["i_axpy!"](np.arange(3), 2.0, np.ones(3))


def test_blas_from_a_program(tmp_path, write_rev):
    path = write_rev(tmp_path, "user.rev", """
        include "std/blas.rev"
        function main()
            a ← [[1.0, 2.0], [3.0, 4.0]]
            x ← [1.0, -1.0]
            y ← zeros(f64, 2)
            i_mul!(y, a, x)
            n ← 0.0
            i_norm2(n, y)
        end
    """)
    store = dict(rlang.load(path).run_main())
    assert store["y"].tolist() == [-1.0, -1.0]
    assert store["n"] == 2.0
