"""The standard library beyond BLAS (LANGUAGE.md §11): std/math.rev, std/stats.rev,
std/sparse.rev and std/bennett.rev, included by name.

For every function: run forward on random inputs against an independent reference
(the math module, NumPy, a quadrature for the Bessel functions, NiLang's recursive
Bennett schedule re-implemented in Python); run the inverse and get the inputs back
(exactly for integers and read-only arrays, within 1e-12 for accumulated floats);
and, where the inputs are floats, compare the gradient from running the inverse
with finite differences (`rlang.check_grad`) and with the analytic derivative.
Sizes are small: the interpreter costs a few microseconds per statement.
"""
from __future__ import annotations

import math

import numpy as np
import pytest

import rlang
from rlang.frontend.loader import STD_DIR

MATH = rlang.loads('include "std/math.rev"\n')
STATS = rlang.loads('include "std/stats.rev"\n')
SPARSE = rlang.loads('include "std/sparse.rev"\n')
BENNETT = rlang.loads('include "std/bennett.rev"\n')

STD_FILES = ["math.rev", "stats.rev", "sparse.rev", "bennett.rev"]


def rng(*seed) -> np.random.Generator:
    return np.random.default_rng(list(seed))


# ------------------------------------------------------------------ every file

@pytest.mark.parametrize("name", STD_FILES + ["blas.rev"])
def test_rlang_check_passes_on_each_std_file(cli, name):
    code, out, err = cli("check", STD_DIR / name)
    assert (code, err) == (0, "") and out.strip().endswith(": ok")


def test_the_std_files_define_the_functions_of_the_spec_and_include_together():
    both = rlang.loads("".join(f'include "std/{name}"\n' for name in STD_FILES + ["blas.rev"]))
    expected = {
        MATH: ("i_exp", "i_power", "i_besselj", "i_sqdistance"),
        STATS: ("i_argmax", "i_mean_sum", "i_var_mean_sum", "i_logsumexp",
                "i_softmax_crossentropy", "i_relu"),
        SPARSE: ("i_sparse_dot", "i_sparse_mul!", "i_sparse_tmul!"),
        BENNETT: ("bennett_sizes!", "bennett_op!", "bennett_slot!"),
    }
    for module, names in expected.items():
        for name in names:
            assert name in module.functions and name in both.functions


# ------------------------------------------------------------------ std/math.rev

EXP_ARGS = [0.1, 0.3, 1.0, 1.2, 1.6, 1.000001, -0.5, 7.9, 8.0, -8.0, 1e-300, -1e-8]


@pytest.mark.parametrize("x", EXP_ARGS + list(rng(1).uniform(-8, 8, 6))
                         + list(rng(2).uniform(-60, 60, 3)))
def test_exp_forward_and_inverse(x):
    out0 = 0.375
    out, x_back = MATH.i_exp(out0, x)
    assert x_back == x
    # a few ulp for |x| <= 8; the power s^q of the range reduction adds about q ulp
    rel = 1e-14 if abs(x) <= 8 else 1e-13
    assert out - out0 == pytest.approx(math.exp(x), rel=rel)
    # out! + e^x − e^x gives back out! up to the rounding of the sum
    assert (~MATH.i_exp)(out, x) == (pytest.approx(out0, abs=1e-12 + 2e-16 * out), x)


@pytest.mark.parametrize("x", [300.0, -300.0, 700.0, -700.0])
def test_exp_of_large_arguments(x):
    out, _ = MATH.i_exp(0.0, x)
    assert out == pytest.approx(math.exp(x), rel=5e-13)
    assert (~MATH.i_exp)(out, x)[0] == 0.0


def test_exp_of_zero_has_value_and_derivative_one():
    assert MATH.i_exp(0.0, 0.0) == (1.0, 0.0)
    assert rlang.gradient(MATH.i_exp, (0.0, 0.0), loss="out!") == (1.0, 1.0)


@pytest.mark.parametrize("x", [1.6, -0.5, 0.1, 3.7, -5.2, 12.5])
def test_exp_gradient(x):
    grad = rlang.gradient(MATH.i_exp, (0.0, x), loss="out!")
    assert grad[0] == 1.0 and grad[1] == pytest.approx(math.exp(x), rel=1e-12)
    assert rlang.check_grad(MATH.i_exp, (0.0, x), loss="out!")


POWER_CASES = ([(1.5, 10), (-2.0, 5), (-2.0, 4), (0.7, -3), (-1.3, -3), (2.0, 0), (-3.0, 1)]
               + [(float(x), int(n)) for x, n in zip(rng(3).uniform(-2, 2, 6),
                                                       rng(4).integers(-5, 9, 6))])


@pytest.mark.parametrize("x, n", POWER_CASES)
def test_power_forward_inverse_and_gradient(x, n):
    out0 = -0.25
    out, x_back, n_back = MATH.i_power(out0, x, n)
    assert (x_back, n_back) == (x, n)
    assert out - out0 == pytest.approx(x ** n, rel=1e-13, abs=1e-15)
    assert (~MATH.i_power)(out, x, n) == (pytest.approx(out0, abs=1e-12), x, n)
    grad = rlang.gradient(MATH.i_power, (out0, x, n), loss="out!")
    assert grad[0] == 1.0 and grad[2] is None
    assert grad[1] == pytest.approx(n * x ** (n - 1), rel=1e-12, abs=1e-15)
    assert rlang.check_grad(MATH.i_power, (out0, x, n), loss="out!", rtol=1e-6)


@pytest.mark.parametrize("n, value, derivative", [(0, 1.0, 0.0), (1, 0.0, 1.0),
                                                  (2, 0.0, 0.0), (5, 0.0, 0.0)])
def test_power_of_zero(n, value, derivative):
    assert MATH.i_power(0.0, 0.0, n) == (value, 0.0, n)
    assert rlang.gradient(MATH.i_power, (0.0, 0.0, n), loss="out!")[1] == derivative


def test_zero_to_a_negative_power_is_a_clean_error():
    with pytest.raises(rlang.RlangRuntimeError, match="0 to a negative power"):
        MATH.i_power(0.0, 0.0, -2)


def bessel_j(nu: int, x: float, points: int = 400) -> float:
    """J_ν(x) = (1/π) ∫_0^π cos(ντ − x sin τ) dτ by the trapezoid rule, which converges
    geometrically for this smooth periodic integrand (independent of the series)."""
    if nu < 0:
        return (-1) ** nu * bessel_j(-nu, x, points)
    tau = np.linspace(0.0, np.pi, points + 1)
    f = np.cos(nu * tau - x * np.sin(tau))
    return float((f.sum() - 0.5 * (f[0] + f[-1])) / points)


BESSEL_CASES = ([(2, 1.5), (0, 0.3), (1, -2.5), (3, -4.0), (0, 8.0), (4, 6.5), (7, 3.0)]
                + [(int(nu), float(x)) for nu, x in zip(rng(5).integers(0, 5, 5),
                                                          rng(6).uniform(-8, 8, 5))])


@pytest.mark.parametrize("nu, x", BESSEL_CASES)
def test_besselj_forward_inverse_and_gradient(nu, x):
    out0 = 0.5
    out, nu_back, x_back = MATH.i_besselj(out0, nu, x)
    assert (nu_back, x_back) == (nu, x)
    assert out - out0 == pytest.approx(bessel_j(nu, x), abs=1e-12)
    assert (~MATH.i_besselj)(out, nu, x) == (pytest.approx(out0, abs=1e-12), nu, x)
    grad = rlang.gradient(MATH.i_besselj, (out0, nu, x), loss="out!")
    assert grad[:2] == (1.0, None)
    assert grad[2] == pytest.approx((bessel_j(nu - 1, x) - bessel_j(nu + 1, x)) / 2, abs=1e-12)
    assert rlang.check_grad(MATH.i_besselj, (out0, nu, x), loss="out!", rtol=1e-6)


@pytest.mark.parametrize("nu, value, derivative", [(0, 1.0, 0.0), (1, 0.0, 0.5),
                                                   (2, 0.0, 0.0), (3, 0.0, 0.0)])
def test_besselj_at_zero(nu, value, derivative):
    assert MATH.i_besselj(0.0, nu, 0.0) == (value, nu, 0.0)
    assert rlang.gradient(MATH.i_besselj, (0.0, nu, 0.0), loss="out!")[2] == derivative


def test_besselj_of_negative_order_is_a_clean_error():
    with pytest.raises(rlang.RlangRuntimeError, match="order"):
        MATH.i_besselj(0.0, -1, 1.0)


@pytest.mark.parametrize("n", [0, 1, 4, 9])
def test_sqdistance(n):
    r = rng(7, n)
    x, y, out0 = r.normal(size=n), r.normal(size=n), float(r.normal())
    x0, y0 = x.copy(), y.copy()
    out, xs, ys = MATH.i_sqdistance(out0, x, y)
    assert xs is x and ys is y
    assert out == pytest.approx(out0 + ((x0 - y0) ** 2).sum(), rel=1e-13, abs=1e-13)
    assert (~MATH.i_sqdistance)(out, x, y)[0] == pytest.approx(out0, abs=1e-12)
    assert np.array_equal(x, x0) and np.array_equal(y, y0)
    grad = rlang.gradient(MATH.i_sqdistance, (out0, x, y), loss="out!")
    np.testing.assert_allclose(grad[1], 2 * (x0 - y0), rtol=1e-13, atol=1e-15)
    np.testing.assert_allclose(grad[2], -2 * (x0 - y0), rtol=1e-13, atol=1e-15)
    assert rlang.check_grad(MATH.i_sqdistance, (out0, x, y), loss="out!")


def test_sqdistance_of_vectors_of_different_lengths_is_a_clean_error():
    with pytest.raises(rlang.RlangRuntimeError, match="assertion failed"):
        MATH.i_sqdistance(0.0, np.zeros(2), np.zeros(3))


def test_math_from_a_program():
    store = dict(rlang.loads("""
        include "std/math.rev"
        function main()
            e ← 0.0
            i_exp(e, 1.0)
            p ← 0.0
            i_power(p, 2.0, 10)
            d ← 0.0
            i_sqdistance(d, [1.0, 2.0], [4.0, 6.0])
        end
    """).run_main())
    assert store["e"] == pytest.approx(math.e, rel=1e-15)
    assert store["p"] == pytest.approx(1024.0, rel=1e-14) and store["d"] == 25.0


# ------------------------------------------------------------------ std/stats.rev

@pytest.mark.parametrize("x, expected", [([3.0], 0), ([1.0, 5.0, 5.0, -2.0], 1),
                                         ([-1.0, -3.0], 0), ([0.0, 0.5, 2.0], 2)])
def test_argmax_takes_the_first_maximum(x, expected):
    x = np.array(x)
    imax, xs = STATS.i_argmax(0, x)
    assert imax == expected == int(np.argmax(x)) and xs is x
    assert (~STATS.i_argmax)(imax, x)[0] == 0


@pytest.mark.parametrize("n", [1, 2, 7])
def test_mean_sum(n):
    r = rng(8, n)
    x = r.normal(size=n)
    x0 = x.copy()
    out, total, _ = STATS.i_mean_sum(0.0, 0.0, x)
    assert out == pytest.approx(x0.mean(), rel=1e-13, abs=1e-15)
    assert total == pytest.approx(x0.sum(), rel=1e-13, abs=1e-15)
    back = (~STATS.i_mean_sum)(out, total, x)
    assert back[:2] == (pytest.approx(0.0, abs=1e-12), pytest.approx(0.0, abs=1e-12))
    assert np.array_equal(x, x0)
    grad = rlang.gradient(STATS.i_mean_sum, (0.0, 0.0, x), loss="out!")
    np.testing.assert_allclose(grad[2], np.full(n, 1.0 / n), rtol=1e-13)
    assert grad[:2] == (1.0, pytest.approx(1.0 / n, rel=1e-15))
    assert rlang.check_grad(STATS.i_mean_sum, (0.0, 0.0, x), loss="out!")


@pytest.mark.parametrize("n", [2, 3, 8])
def test_var_mean_sum(n):
    r = rng(9, n)
    x = r.normal(loc=1.5, size=n)
    x0 = x.copy()
    var, varsum, mean, total, _ = STATS.i_var_mean_sum(0.0, 0.0, 0.0, 0.0, x)
    assert var == pytest.approx(np.var(x0, ddof=1), rel=1e-13)
    assert varsum == pytest.approx(((x0 - x0.mean()) ** 2).sum(), rel=1e-13)
    assert mean == pytest.approx(x0.mean(), rel=1e-13)
    assert total == pytest.approx(x0.sum(), rel=1e-13)
    back = (~STATS.i_var_mean_sum)(var, varsum, mean, total, x)
    assert all(value == pytest.approx(0.0, abs=1e-12) for value in back[:4])
    assert np.array_equal(x, x0)
    grad = rlang.gradient(STATS.i_var_mean_sum, (0.0, 0.0, 0.0, 0.0, x), loss="var!")
    np.testing.assert_allclose(grad[4], 2 * (x0 - x0.mean()) / (n - 1), rtol=1e-12, atol=1e-14)
    assert rlang.check_grad(STATS.i_var_mean_sum, (0.0, 0.0, 0.0, 0.0, x), loss="var!")


@pytest.mark.parametrize("call, message", [
    (lambda: STATS.i_mean_sum(0.0, 0.0, np.zeros(0)), "empty"),
    (lambda: STATS.i_var_mean_sum(0.0, 0.0, 0.0, 0.0, np.zeros(1)), "two elements"),
    (lambda: STATS.i_logsumexp(0.0, np.zeros(0)), "empty"),
    (lambda: STATS.i_softmax_crossentropy(np.zeros(2), np.zeros(3), 0, 0.0, 0.0, 0.0),
     "differ in length"),
    (lambda: STATS.i_softmax_crossentropy(np.zeros(2), np.zeros(2), 1, 0.0, 0.0, 0.0),
     "imax! must be 0"),
])
def test_stats_refuse_bad_inputs_cleanly(call, message):
    with pytest.raises(rlang.RlangRuntimeError, match=message):
        call()


def logsumexp(x: np.ndarray) -> float:
    m = x.max()
    return float(m + np.log(np.exp(x - m).sum()))


@pytest.mark.parametrize("n, scale", [(1, 1.0), (4, 1.0), (9, 3.0), (5, 400.0)])
def test_logsumexp(n, scale):
    r = rng(10, n)
    x = r.normal(size=n) * scale
    x0, out0 = x.copy(), float(r.normal())
    out, _ = STATS.i_logsumexp(out0, x)
    assert out - out0 == pytest.approx(logsumexp(x0), rel=1e-13, abs=1e-13)   # no overflow
    assert (~STATS.i_logsumexp)(out, x)[0] == pytest.approx(out0, abs=1e-12)
    assert np.array_equal(x, x0)
    grad = rlang.gradient(STATS.i_logsumexp, (out0, x), loss="out!")
    np.testing.assert_allclose(grad[1], np.exp(x0 - logsumexp(x0)), rtol=1e-12, atol=1e-15)
    if scale < 100:
        assert rlang.check_grad(STATS.i_logsumexp, (out0, x), loss="out!")


@pytest.mark.parametrize("n", [1, 3, 6])
def test_softmax_crossentropy(n):
    r = rng(11, n)
    x, p = r.normal(size=n) * 2, r.random(n)
    p /= p.sum()
    x0, p0 = x.copy(), p.copy()
    result = STATS.i_softmax_crossentropy(x, p, 0, 0.0, 0.0, 0.0)
    xs, ps, imax, xmax, z, out = result
    assert xs is x and ps is p
    softmax = np.exp(x0 - logsumexp(x0))
    assert imax == int(np.argmax(x0)) and xmax == x0.max()
    assert z == pytest.approx(np.exp(x0 - x0.max()).sum(), rel=1e-13)
    assert out == pytest.approx(-(p0 * np.log(softmax)).sum(), rel=1e-13, abs=1e-14)
    back = (~STATS.i_softmax_crossentropy)(*result)
    assert back[2] == 0 and back[3] == 0.0
    assert back[4] == pytest.approx(0.0, abs=1e-12) and back[5] == pytest.approx(0.0, abs=1e-12)
    assert np.array_equal(x, x0) and np.array_equal(p, p0)
    grad = rlang.gradient(STATS.i_softmax_crossentropy, (x, p, 0, 0.0, 0.0, 0.0), loss="out!")
    np.testing.assert_allclose(grad[0], softmax * p0.sum() - p0, rtol=1e-12, atol=1e-14)
    np.testing.assert_allclose(grad[1], -np.log(softmax), rtol=1e-12, atol=1e-14)
    assert rlang.check_grad(STATS.i_softmax_crossentropy, (x, p, 0, 0.0, 0.0, 0.0),
                            loss="out!")


@pytest.mark.parametrize("x", [2.5, -1.0, 0.0, 1e-300])
def test_relu(x):
    out, x_back = STATS.i_relu(0.75, x)
    assert x_back == x and out == 0.75 + max(x, 0.0)
    assert (~STATS.i_relu)(out, x) == (0.75, x)
    assert rlang.gradient(STATS.i_relu, (0.75, x), loss="out!") == (1.0, 1.0 if x > 0 else 0.0)
    if abs(x) > 1e-3:                        # finite differences must not cross the kink
        assert rlang.check_grad(STATS.i_relu, (0.75, x), loss="out!")


def test_relu_is_generic():
    q = rlang.Fixed.from_value
    assert STATS.i_relu(q(0.5), q(1.25)) == (q(1.75), q(1.25))
    assert STATS.i_relu(q(0.5), q(-1.0)) == (q(0.5), q(-1.0))
    assert STATS.i_relu(rlang.F32(0.5), rlang.F32(0.25)) == (0.75, 0.25)


# ------------------------------------------------------------------ std/sparse.rev

def to_csc(dense: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(colptr, rowval, nzval) of a dense matrix, 0-based, rows sorted."""
    rows, cols = np.nonzero(dense.T)          # column-major order of the entries
    colptr = np.zeros(dense.shape[1] + 1, dtype=np.int64)
    np.add.at(colptr, rows + 1, 1)
    return np.cumsum(colptr), cols.astype(np.int64), dense.T[rows, cols].astype(np.float64)


def random_sparse(r: np.random.Generator, m: int, n: int, density: float) -> np.ndarray:
    return r.normal(size=(m, n)) * (r.random((m, n)) < density)


SPARSE_SHAPES = [(1, 1, 1.0), (3, 2, 0.5), (4, 5, 0.4), (6, 3, 0.6), (5, 4, 0.0), (7, 8, 0.25)]


@pytest.mark.parametrize("m, n, density", SPARSE_SHAPES)
def test_sparse_dot(m, n, density):
    r = rng(12, m, n)
    a, b = random_sparse(r, m, n, density), random_sparse(r, m, n, density)
    a[0, 0] = b[0, 0] = 1.5                  # at least one shared entry
    ca, cb = to_csc(a), to_csc(b)
    saved = [v.copy() for v in ca + cb]
    result = SPARSE.i_sparse_dot(0.25, m, n, *ca, *cb)
    assert result[0] == pytest.approx(0.25 + (a * b).sum(), rel=1e-13, abs=1e-13)
    back = (~SPARSE.i_sparse_dot)(*result)
    assert back[0] == pytest.approx(0.25, abs=1e-12) and back[1:3] == (m, n)
    assert all(np.array_equal(now, before) for now, before in zip(ca + cb, saved))
    grad = rlang.gradient(SPARSE.i_sparse_dot, (0.0, m, n, *ca, *cb), loss="r!")
    np.testing.assert_allclose(grad[5], b[ca[1], np.repeat(np.arange(n), np.diff(ca[0]))])
    np.testing.assert_allclose(grad[8], a[cb[1], np.repeat(np.arange(n), np.diff(cb[0]))])
    if len(ca[2]) + len(cb[2]) <= 8:         # finite differences cost two runs per entry
        assert rlang.check_grad(SPARSE.i_sparse_dot, (0.0, m, n, *ca, *cb), loss="r!")


@pytest.mark.parametrize("m, n, density", SPARSE_SHAPES)
def test_sparse_matrix_vector_products(m, n, density):
    r = rng(13, m, n)
    a = random_sparse(r, m, n, density)
    ca = to_csc(a)
    saved = [v.copy() for v in ca]
    x, y = r.normal(size=n), r.normal(size=m)
    x0, y0 = x.copy(), y.copy()
    result = SPARSE.i_sparse_mul_(y, m, n, *ca, x)
    assert result[0] is y
    np.testing.assert_allclose(y, y0 + a @ x0, rtol=1e-13, atol=1e-13)
    (~SPARSE.i_sparse_mul_)(y, m, n, *ca, x)
    np.testing.assert_allclose(y, y0, rtol=0, atol=1e-12)

    xt, yt = r.normal(size=m), r.normal(size=n)
    yt0 = yt.copy()
    SPARSE["i_sparse_tmul!"](yt, m, n, *ca, xt)
    np.testing.assert_allclose(yt, yt0 + a.T @ xt, rtol=1e-13, atol=1e-13)
    (~SPARSE["i_sparse_tmul!"])(yt, m, n, *ca, xt)
    np.testing.assert_allclose(yt, yt0, rtol=0, atol=1e-12)
    assert np.array_equal(x, x0)
    assert all(np.array_equal(now, before) for now, before in zip(ca, saved))

    grad = rlang.gradient(SPARSE.i_sparse_mul_, (y, m, n, *ca, x), loss=("y!", m - 1))
    np.testing.assert_allclose(grad[6], a[m - 1], rtol=1e-13)
    if m * n <= 20:
        assert rlang.check_grad(SPARSE.i_sparse_mul_, (y, m, n, *ca, x), loss=("y!", 0))


@pytest.mark.parametrize("call", [
    lambda: SPARSE.i_sparse_dot(0.0, 2, 2, np.array([0, 1]), np.array([0]), np.ones(1),
                                np.array([0, 0, 1]), np.array([1]), np.ones(1)),
    lambda: SPARSE.i_sparse_mul_(np.zeros(3), 2, 2, np.array([0, 1, 1]), np.array([0]),
                                 np.ones(1), np.zeros(2)),
    lambda: SPARSE.i_sparse_tmul_(np.zeros(2), 2, 2, np.array([0, 1, 2]), np.array([0]),
                                  np.ones(1), np.zeros(2)),
])
def test_sparse_shape_mismatches_are_clean_errors(call):
    with pytest.raises(rlang.RlangRuntimeError, match="assertion failed"):
        call()


def test_the_sparse_example_agrees_with_the_library(repo):
    example = dict(rlang.load(str(repo / "examples" / "sparse_dot.rev")).run_main())
    args = [example[name] for name in ("acolptr", "arowval", "anzval",
                                       "bcolptr", "browval", "bnzval")]
    assert SPARSE.i_sparse_dot(0.0, 4, 5, *args)[0] == example["r"] == 4.5


# ------------------------------------------------------------------ std/bennett.rev

def nilang_schedule(k: int, base: int, length: int, inverse: bool = False) -> list:
    """The (direction, step) operations of NiLang's recursive `bennett` (paper,
    listing 12), as a list: the reference the decoder must reproduce."""
    if length == 1:
        return [(-1 if inverse else 1, base)]
    n = length // k
    runs = ([(base + n * j, False) for j in range(k)]
            + [(base + n * j, True) for j in range(k - 2, -1, -1)])
    if inverse:
        runs = [(start, not inv) for start, inv in reversed(runs)]
    return [op for start, inv in runs for op in nilang_schedule(k, start, n, inv)]


@pytest.mark.parametrize("k, levels", [(2, 0), (2, 1), (2, 3), (3, 2), (4, 2), (2, 4)])
def test_bennett_schedule_is_nilangs(k, levels):
    expected = nilang_schedule(k, 0, k ** levels)
    assert BENNETT.bennett_sizes_(0, 0, k, levels)[:2] == (len(expected), levels * (k - 1) + 2)
    assert len(expected) == (2 * k - 1) ** levels
    for t, op in enumerate(expected):
        result = BENNETT.bennett_op_(0, 0, t, k, levels)
        assert result == (*op, t, k, levels)
        assert (~BENNETT.bennett_op_)(*result) == (0, 0, t, k, levels)


@pytest.mark.parametrize("k, levels", [(2, 3), (3, 2), (4, 2), (3, 3)])
def test_bennett_slots_never_collide_and_peak_at_bennetts_bound(k, levels):
    slots = [BENNETT.bennett_slot_(0, s, k, levels)[0] for s in range(k ** levels + 1)]
    assert slots[0] == 0 and slots[-1] == levels * (k - 1) + 1
    assert (~BENNETT.bennett_slot_)(slots[-1], k ** levels, k, levels)[0] == 0
    live, peak = {0}, 1
    for direction, step in nilang_schedule(k, 0, k ** levels):
        if direction == 1:
            assert step in live and step + 1 not in live
            assert slots[step + 1] not in {slots[s] for s in live}
            live.add(step + 1)
        else:
            assert {step, step + 1} <= live
            live.remove(step + 1)
        peak = max(peak, len(live))
    assert live == {0, k ** levels} and peak == levels * (k - 1) + 2


BENNETT_USER = """
include "std/bennett.rev"

# state[dst, :] += f_at(state[src, :]), a non-linear map that differs per step
function step!(state: f64[:,:], src: i64, dst: i64, at: i64)
    for i = 0:size(state, 1) - 1
        state[dst, i] += sin(state[src, i]) + 0.5 * state[src, (i + 1) % size(state, 1)] + 0.01 * at
    end
end

# the compact store: levels·(k − 1) + 2 rows (the template of std/bennett.rev)
function run_bennett!(state: f64[:,:], k: i64, levels: i64)
    for t = 0:(2 * k - 1) ** levels - 1
        @routine begin
            @zeros i64 dir at src dst
            bennett_op!(dir, at, t, k, levels)
            bennett_slot!(src, at, k, levels)
            bennett_slot!(dst, at + 1, k, levels)
        end
        if (dir == 1, ~)
            step!(state, src, dst, at)
        else
            ~step!(state, src, dst, at)
        end
        ~@routine
    end
end

# all N + 1 states: row t holds state t
function run_bennett_full!(state: f64[:,:], k: i64, levels: i64)
    for t = 0:(2 * k - 1) ** levels - 1
        @routine begin
            @zeros i64 dir at
            bennett_op!(dir, at, t, k, levels)
        end
        if (dir == 1, ~)
            step!(state, at, at + 1, at)
        else
            ~step!(state, at, at + 1, at)
        end
        ~@routine
    end
end
"""


def iterate(s0: np.ndarray, steps: int) -> np.ndarray:
    x = s0.copy()
    for at in range(steps):
        x = np.sin(x) + 0.5 * np.roll(x, -1) + 0.01 * at
    return x


@pytest.mark.parametrize("k, levels, compact", [(2, 3, True), (3, 2, True), (2, 3, False),
                                                (4, 1, True)])
def test_bennett_driver_runs_a_user_step_both_ways(k, levels, compact):
    user = rlang.loads(BENNETT_USER)
    run = user.run_bennett_ if compact else user.run_bennett_full_
    rows = levels * (k - 1) + 2 if compact else k ** levels + 1
    s0 = rng(14, k, levels).normal(size=3)
    state = np.zeros((rows, 3))
    state[0] = s0
    run(state, k, levels)
    np.testing.assert_allclose(state[-1], iterate(s0, k ** levels), rtol=1e-14, atol=1e-14)
    assert np.array_equal(state[0], s0) and not state[1:-1].any()     # only 2 states left
    (~run)(state, k, levels)
    assert np.array_equal(state[0], s0) and not state[1:].any()        # bit for bit


def test_bennett_driver_gradient():
    user = rlang.loads(BENNETT_USER)
    k, levels = 2, 2
    state = np.zeros((levels * (k - 1) + 2, 2))
    state[0] = [0.3, -0.7]
    last = levels * (k - 1) + 1
    grad = rlang.gradient(user.run_bennett_, (state, k, levels), loss=("state", (last, 0)))
    h, e = 1e-6, np.array([1.0, 0.0])
    numeric = [(iterate(state[0] + h * d, 4)[0] - iterate(state[0] - h * d, 4)[0]) / (2 * h)
               for d in (e, e[::-1])]
    np.testing.assert_allclose(grad[0][0], numeric, rtol=1e-7, atol=1e-9)
    assert rlang.check_grad(user.run_bennett_, (state, k, levels), loss=("state", (last, 0)))


@pytest.mark.parametrize("call, message", [
    (lambda: BENNETT.bennett_op_(0, 0, 9, 2, 2), "t out of range"),
    (lambda: BENNETT.bennett_op_(0, 0, 0, 1, 2), "k >= 2"),
    (lambda: BENNETT.bennett_slot_(0, 5, 2, 2), "s out of range"),
    (lambda: BENNETT.bennett_sizes_(0, 0, 2, -1), "levels >= 0"),
])
def test_bennett_refuses_bad_arguments_cleanly(call, message):
    with pytest.raises(rlang.RlangRuntimeError, match=message):
        call()


# ------------------------------------------------------------------ docs/std.md

def test_the_examples_of_docs_std_run_as_documented(repo):
    import re

    text = (repo / "docs" / "std.md").read_text(encoding="utf-8")
    blocks = [b for b in re.findall(r"```rev\n(.*?)```", text, re.S) if "function main" in b]
    stores = [dict(rlang.loads(block).run_main()) for block in blocks]
    assert len(stores) == 4
    maths, stats, sparse, bennett = stores
    assert maths["e"] == pytest.approx(math.e, rel=1e-15) and maths["d"] == 25.0
    assert maths["p"] == pytest.approx(-3.375, rel=1e-15)
    assert maths["j"] == pytest.approx(bessel_j(2, 1.5), abs=1e-15)
    x = np.array([1.0, 3.0, 2.0])
    assert (stats["var"], stats["varsum"], stats["mean"], stats["sum"]) == (1.0, 2.0, 2.0, 6.0)
    assert stats["lse"] == pytest.approx(logsumexp(x), rel=1e-15)
    assert stats["imax"] == 1 and stats["xmax"] == 3.0
    assert stats["loss"] == pytest.approx(logsumexp(x) - 3.0, rel=1e-14) and stats["r"] == 0.0
    assert sparse["y"].tolist() == [1.0, 20.0, 3.0] and sparse["r"] == 14.0
    assert bennett["state"][:, 0].tolist() == [1.0] + [0.0] * 6 + [65536.0]
