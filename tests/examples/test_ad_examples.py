"""Gradients and Hessians of the AD examples (docs/ad-examples.md):

- examples/petersen.rev + examples/petersen_newton.py: the graph-embedding loss of
  the NiLang paper (appendix D.2), its gradient and Hessian, and a short Newton
  training run (loss < 1e-8, l2/l1 = √2);
- examples/exp.rev: exp by Taylor series with arithmetic uncomputing;
- examples/bessel.rev: J_ν(x) by its series with ulog terms;
- examples/qr.rev: Gram–Schmidt QR, gradient against NumPy finite differences.

References are independent of rlang: NumPy re-implementations of the losses, the
math module, 50-digit decimal series, finite differences of NumPy code.
(The stdout of every example's main is checked by test_examples.py.)
"""
from __future__ import annotations

import importlib.util
import math
import time
from decimal import Decimal, getcontext
from pathlib import Path

import numpy as np
import pytest

import rlang

REPO = Path(__file__).resolve().parents[2]
EXAMPLES = REPO / "examples"


def _load_driver():
    spec = importlib.util.spec_from_file_location("petersen_newton",
                                                  EXAMPLES / "petersen_newton.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


DRIVER = _load_driver()
ADJ = DRIVER.petersen_adjacency()


@pytest.fixture(scope="module")
def petersen():
    return rlang.load(str(EXAMPLES / "petersen.rev"))


def numpy_loss(x: np.ndarray, adj: np.ndarray = ADJ) -> float:
    i, j = np.triu_indices(len(x), 1)
    d = np.sqrt(((x[i] - x[j]) ** 2).sum(axis=1))
    c = adj[i, j] == 1
    d1, d2 = d[c], d[~c]
    return float(d1.var() + d2.var() + math.exp(max(d1.mean() - d2.mean() + 0.1, 0.0)) - 1.0)


def numpy_fd_gradient(f, x: np.ndarray, h: float = 1e-6) -> np.ndarray:
    g = np.zeros_like(x)
    for index in np.ndindex(x.shape):
        e = np.zeros_like(x)
        e[index] = h
        g[index] = (f(x + e) - f(x - e)) / (2 * h)
    return g


# ------------------------------------------------------------------ Petersen graph

def test_petersen_graph():
    assert ADJ.sum() == 30 and (ADJ == ADJ.T).all() and (ADJ.sum(axis=0) == 3).all()
    # girth 5: no triangles, no 4-cycles (A² has zero off-diagonal entries on edges
    # and at most 1 elsewhere)
    a2 = ADJ @ ADJ
    assert (a2[ADJ == 1] == 0).all() and (a2[~np.eye(10, dtype=bool)] <= 1).all()


@pytest.mark.parametrize("seed", [0, 1])
def test_petersen_loss_matches_numpy(petersen, seed):
    x = np.random.default_rng(seed).normal(size=(10, 5))
    x0 = x.copy()
    loss, x_out, _ = petersen.petersen_(0.0, x, ADJ)
    assert loss == pytest.approx(numpy_loss(x0), rel=1e-12)
    np.testing.assert_array_equal(x_out, x0)


def test_petersen_penalty_term(petersen):
    # the Kneser embedding of main: only the penalty exp(2 - √2 + 0.1) - 1 is left
    x = np.array([[1.0 if a in s else 0.0 for a in range(5)]
                  for s in [{0, 1}, {2, 3}, {0, 4}, {1, 2}, {3, 4}, {2, 4}, {1, 4}, {1, 3},
                            {0, 3}, {0, 2}]])
    loss = petersen.petersen_(0.0, x, ADJ)[0]
    assert loss == pytest.approx(math.exp(2 - math.sqrt(2) + 0.1) - 1, rel=1e-14)


def test_petersen_gradient(petersen):
    x = np.random.default_rng(2).normal(size=(10, 5))
    grads = rlang.gradient(petersen.petersen_, (0.0, x, ADJ), "loss!")
    assert grads[0] == 1.0 and grads[2] is None
    np.testing.assert_allclose(grads[1], numpy_fd_gradient(numpy_loss, x), rtol=1e-6,
                               atol=1e-8)


def test_petersen_gradient_with_active_penalty(petersen):
    # connected pairs spread, disconnected ones close: m1 - m2 + 0.1 > 0
    x = DRIVER.exact_solution(ADJ) * np.where(np.arange(10) < 5, 1.0, -1.0)[:, None]
    x = x + 0.05 * np.random.default_rng(3).normal(size=x.shape)
    l1, l2 = DRIVER.distance_means(x, ADJ)
    assert l1 - l2 + 0.1 > 0
    grads = rlang.gradient(petersen.petersen_, (0.0, x, ADJ), "loss!")
    np.testing.assert_allclose(grads[1], numpy_fd_gradient(numpy_loss, x), rtol=1e-6,
                               atol=1e-8)


def test_petersen_hessian(petersen):
    x = DRIVER.exact_solution(ADJ) + 0.1 * np.random.default_rng(4).normal(size=(10, 5))
    x0 = x.copy()
    hess = rlang.hessian(petersen.petersen_, (0.0, x, ADJ), "loss!")
    np.testing.assert_array_equal(x, x0)
    assert hess.shape == (51, 51)
    np.testing.assert_allclose(hess, hess.T, atol=1e-10)
    assert np.all(hess[0] == 0)
    # columns against central differences of rlang.gradient (a few of them: each
    # costs two gradient runs)
    h = 1e-5
    for k in (0, 7, 23, 49):
        e = np.zeros(50)
        e[k] = h
        gp = rlang.gradient(petersen.petersen_, (0.0, x + e.reshape(10, 5), ADJ), "loss!")[1]
        gm = rlang.gradient(petersen.petersen_, (0.0, x - e.reshape(10, 5), ADJ), "loss!")[1]
        np.testing.assert_allclose(hess[1:, 1 + k], ((gp - gm) / (2 * h)).ravel(),
                                   rtol=1e-5, atol=1e-6)
    # translation invariance: H times a translation of every vertex is zero
    for axis in range(5):
        t = np.zeros((10, 5))
        t[:, axis] = 1.0
        np.testing.assert_allclose(hess[1:, 1:] @ t.ravel(), 0.0, atol=1e-9)


def test_petersen_newton_short(petersen):
    """A shortened run of examples/petersen_newton.py (the full run, noise 0.1, takes
    7 Newton steps and about 30 s): from a closer start, the loss falls below 1e-8
    and the last steps converge quadratically; the distance ratio is √2."""
    x = DRIVER.exact_solution(ADJ) + 0.02 * np.random.default_rng(7).normal(size=(10, 5))
    t0 = time.perf_counter()
    history = DRIVER.train(x, ADJ, module=petersen, max_iterations=6, log=lambda *a: None)
    elapsed = time.perf_counter() - t0
    assert history[-1] < 1e-8, history
    assert all(b < a for a, b in zip(history, history[1:]))
    # quadratic: the loss is a sum of squares, so sqrt(loss) ~ distance to the
    # solution; the last step squares it (up to a constant)
    r = [math.sqrt(v) for v in history]
    assert r[-1] < 50 * r[-2] ** 2, history   # measured: 14 r[-2]²
    l1, l2 = DRIVER.distance_means(x, ADJ)
    assert l2 / l1 == pytest.approx(math.sqrt(2), rel=1e-6)
    assert elapsed < 60


# ------------------------------------------------------------------ exp

@pytest.fixture(scope="module")
def expmod():
    return rlang.load(str(EXAMPLES / "exp.rev"))


@pytest.mark.parametrize("name,grad_rtol", [("iexp_", 1e-8), ("iexp_ulog_", 1e-12)])
@pytest.mark.parametrize("x", [1.0, -0.5, 0.7, -1.0])
def test_exp_value_and_gradient(expmod, name, grad_rtol, x):
    f = getattr(expmod, name)
    out, x_out = f(0.0, x)
    assert x_out == x
    assert out == pytest.approx(math.exp(x), rel=4e-16)
    grads = rlang.gradient(f, (0.0, x), "out!")
    assert grads[0] == 1.0
    assert grads[1] == pytest.approx(math.exp(x), rel=grad_rtol)
    if name == "iexp_ulog_":
        # (the f64 version is too fragile for finite differences: at x = 1 ± 1e-6
        # its residues blow up, see test_exp_f64_arithmetic_uncompute_is_unstable)
        assert rlang.check_grad(f, (0.0, x), "out!")
    # inverse: ~iexp! takes exp(x) back off
    back = (~f)(out, x)
    assert back[0] == pytest.approx(0.0, abs=1e-15)


@pytest.mark.parametrize("x", [1.6, 3.0, -2.5])
def test_exp_ulog_large_arguments(expmod, x):
    out = expmod.iexp_ulog_(0.0, x)[0]
    assert out == pytest.approx(math.exp(x), rel=1e-14)
    assert rlang.gradient(expmod.iexp_ulog_, (0.0, x), "out!")[1] == \
        pytest.approx(math.exp(x), rel=1e-12)


def test_exp_f64_arithmetic_uncompute_is_unstable_for_large_x(expmod):
    """The paper's f64 arithmetic uncompute multiplies the rounding residues by
    about n/x per pass (documented in exp.rev): at x = 1.6 the loop never reaches
    the tolerance, at x = 0.1 the backward uncompute (t1 = r + t2/x) fails; either
    way the run stops with a clean reversibility error."""
    for x in (0.1, 1.6, 1.000001):
        with pytest.raises(rlang.ReversibilityError):
            expmod.iexp_(0.0, x)


@pytest.mark.parametrize("name, x", [("iexp_", 0.7), ("iexp_ulog_", 0.7), ("iexp_ulog_", -1.3),
                                     ("iexp_ulog_", 3.0)])
def test_exp_hessian(expmod, name, x):
    hess = rlang.hessian(getattr(expmod, name), (0.0, x), "out!")
    np.testing.assert_allclose(hess, [[0.0, 0.0], [0.0, math.exp(x)]], rtol=1e-9)


# ------------------------------------------------------------------ Bessel

def bessel_decimal(nu: int, x: float, terms: int = 60) -> Decimal:
    getcontext().prec = 50
    hx = Decimal(x) / 2
    return sum((-1) ** k * hx ** (2 * k + nu) / (math.factorial(k) * math.factorial(k + nu))
               for k in range(terms))


def bessel_float(nu: int, x: float) -> float:
    if nu < 0:                                  # J_(-n) = (-1)^n J_n
        return (-1) ** nu * bessel_float(-nu, x)
    return sum((-1) ** k * (x / 2) ** (2 * k + nu) / (math.factorial(k) * math.factorial(k + nu))
               for k in range(40))


@pytest.fixture(scope="module")
def bessel():
    return rlang.load(str(EXAMPLES / "bessel.rev"))


@pytest.mark.parametrize("nu,x", [(2, 1.5), (0, 2.0), (1, 0.7), (3, 4.0), (5, 7.5)])
def test_bessel_value(bessel, nu, x):
    out = bessel.besselj_(0.0, nu, x, 30)[0]
    assert out == pytest.approx(float(bessel_decimal(nu, x)), rel=1e-13, abs=1e-15)


def test_bessel_main_value():
    text = (EXAMPLES / "bessel.expected").read_text()
    value = float(text.split("j = ")[1])
    assert value == pytest.approx(float(bessel_decimal(2, 1.5)), rel=4e-16)


@pytest.mark.parametrize("nu,x", [(2, 1.5), (0, 2.0), (1, 0.7), (3, 4.0), (4, 0.3)])
def test_bessel_gradient(bessel, nu, x):
    grads = rlang.gradient(bessel.besselj_, (0.0, nu, x, 30), "out!")
    assert grads[1] is None and grads[3] is None
    expected = (bessel_float(nu - 1, x) - bessel_float(nu + 1, x)) / 2
    assert grads[2] == pytest.approx(expected, rel=1e-10, abs=1e-13)
    assert rlang.check_grad(bessel.besselj_, (0.0, nu, x, 30), "out!")


def test_bessel_inverse(bessel):
    out = bessel.besselj_(0.0, 2, 1.5, 20)[0]
    assert (~bessel.besselj_)(out, 2, 1.5, 20)[0] == pytest.approx(0.0, abs=1e-15)


# ------------------------------------------------------------------ QR

def numpy_gram_schmidt(a: np.ndarray):
    m, n = a.shape
    q, r = np.zeros((m, n)), np.zeros((n, n))
    for j in range(n):
        v = a[:, j].copy()
        for i in range(j):
            r[i, j] = q[:, i] @ a[:, j]
            v -= r[i, j] * q[:, i]
        r[j, j] = np.linalg.norm(v)
        q[:, j] = v / r[j, j]
    return q, r


@pytest.fixture(scope="module")
def qr():
    return rlang.load(str(EXAMPLES / "qr.rev"))


def test_qr_gradient(qr):
    a = np.random.default_rng(11).normal(size=(4, 3))
    q0, r0 = np.zeros((4, 3)), np.zeros((3, 3))
    q, r, _ = qr.qr_(q0.copy(), r0.copy(), a.copy())
    qn, rn = numpy_gram_schmidt(a)
    np.testing.assert_allclose(q, qn, atol=1e-12)
    np.testing.assert_allclose(r, rn, atol=1e-12)
    # L = R[0,0] + Q[1,0] + R[1,2] - Q[3,2]: gradients of views add up
    views = [("R![0, 0]", 1.0), ("Q![1, 0]", 1.0), ("R![1, 2]", 1.0), ("Q![3, 2]", -1.0)]
    total = np.zeros((4, 3))
    for view, sign in views:
        grads = rlang.gradient(qr.qr_, (q0.copy(), r0.copy(), a.copy()), view)
        total += sign * grads[2]
        assert rlang.check_grad(qr.qr_, (q0.copy(), r0.copy(), a.copy()), view)

    def loss(b):
        qb, rb = numpy_gram_schmidt(b)
        return rb[0, 0] + qb[1, 0] + rb[1, 2] - qb[3, 2]
    np.testing.assert_allclose(total, numpy_fd_gradient(loss, a), rtol=1e-6, atol=1e-8)


def test_qr_gradient_of_q_and_r_inputs(qr):
    # Q!, R! are accumulated onto: ∂R[0,0]/∂R_init[0,0] = 1, and Q_init feeds the
    # projections R[i, j] += Q[k, i] A[k, j] (i < j) through the updated Q
    a = np.random.default_rng(12).normal(size=(4, 3))
    grads = rlang.gradient(qr.qr_, (np.zeros((4, 3)), np.zeros((3, 3)), a), "R![0, 0]")
    assert grads[1][0, 0] == 1.0
    np.testing.assert_allclose(grads[2], numpy_fd_gradient(
        lambda b: numpy_gram_schmidt(b)[1][0, 0], a), rtol=1e-6, atol=1e-8)


def test_bessel_hessian(bessel):
    nu, x = 2, 1.5
    hess = rlang.hessian(bessel.besselj_, (0.0, nu, x, 30), "out!")
    expected = (bessel_float(nu - 2, x) - 2 * bessel_float(nu, x) + bessel_float(nu + 2, x)) / 4
    assert hess[1, 1] == pytest.approx(expected, rel=1e-8)
