"""Hessians by forward over reverse (rlang.hessian, `rlang grad … --hessian`; LANGUAGE.md §9).

Every Hessian is compared with two independent references where one exists:

- central finite differences of `rlang.gradient` (`fd_hessian`: column k is
  (∇L(x + h e_k) − ∇L(x − h e_k)) / 2h), which checks the dual-number second pass
  against the (separately tested) first-order pass;
- an analytic Hessian written by hand in NumPy.

Also: symmetry, the ordering of the flattened inputs (float scalars and array
elements in argument order, C order within an array; the loss parameter itself is an
input too), the caller's arguments left as they were, and the shape of the CLI's
text and --json output.  Known problems are xfail(strict=True), explained in
PROBLEMS-hessian.md (the number in each reason is the section there).
"""
from __future__ import annotations

import json
import math
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import rlang

REPO = Path(__file__).resolve().parents[3]
H = 1e-5

# ------------------------------------------------------------------ helpers


def flat_inputs(args) -> list:
    """(position, index or None) of every float input, in rlang.hessian's order."""
    inputs = []
    for position, value in enumerate(args):
        if isinstance(value, np.ndarray) and value.dtype.kind == "f":
            inputs.extend((position, index) for index in np.ndindex(value.shape))
        elif isinstance(value, float):
            inputs.append((position, None))
    return inputs


def flat_gradient(fn, args, loss) -> np.ndarray:
    grads = rlang.gradient(fn, [a.copy() if isinstance(a, np.ndarray) else a for a in args],
                           loss)
    out = []
    for position, index in flat_inputs(args):
        g = grads[position]
        out.append(float(g if index is None else g[index]))
    return np.array(out)


def fd_hessian(fn, args, loss, h: float = H) -> np.ndarray:
    """Central differences of rlang.gradient."""
    inputs = flat_inputs(args)
    columns = []
    for position, index in inputs:
        grads = []
        for delta in (h, -h):
            shifted = [a.copy() if isinstance(a, np.ndarray) else a for a in args]
            if index is None:
                shifted[position] = shifted[position] + delta
            else:
                shifted[position][index] += delta
            grads.append(flat_gradient(fn, shifted, loss))
        columns.append((grads[0] - grads[1]) / (2 * h))
    return np.array(columns).T


def check(fn, args, loss, analytic=None, rtol=1e-6, atol=1e-6, fd_tol=1e-5):
    """rlang.hessian agrees with the FD Hessian (and the analytic one), is symmetric,
    and leaves the arguments as they were."""
    before = [a.copy() if isinstance(a, np.ndarray) else a for a in args]
    hess = rlang.hessian(fn, args, loss)
    for a, b in zip(args, before):
        if isinstance(a, np.ndarray):
            np.testing.assert_array_equal(a, b)
        else:
            assert a == b
    n = len(flat_inputs(args))
    assert hess.shape == (n, n)
    assert hess.dtype == np.float64
    np.testing.assert_allclose(hess, hess.T, rtol=1e-10, atol=1e-10)
    np.testing.assert_allclose(hess, fd_hessian(fn, args, loss), rtol=fd_tol, atol=fd_tol)
    if analytic is not None:
        np.testing.assert_allclose(hess, analytic, rtol=rtol, atol=atol)
    return hess


def embed(inner: np.ndarray, n_before: int, n_total: int) -> np.ndarray:
    """An analytic Hessian over a subset of the inputs, placed in the full matrix
    (the loss parameter itself is an input whose row and column are zero)."""
    out = np.zeros((n_total, n_total))
    k = inner.shape[0]
    out[n_before:n_before + k, n_before:n_before + k] = inner
    return out


# ------------------------------------------------------------------ programs

POLY = rlang.loads("""
function poly(y, x, z)
    y += x ** 3 * z + x * z * z - 2.0 * x * x
end
""")


def test_polynomial():
    x, z = 1.3, -0.7
    inner = np.array([[6 * x * z - 4.0, 3 * x * x + 2 * z],
                      [3 * x * x + 2 * z, 2 * x]])
    check(POLY.poly, (0.0, x, z), "y", embed(inner, 1, 3))


def test_loss_position_and_initial_value_do_not_matter():
    x, z = 0.4, 2.5
    a = rlang.hessian(POLY.poly, (0.0, x, z), "y")
    b = rlang.hessian(POLY.poly, (7.5, x, z), 0)
    np.testing.assert_allclose(a, b, rtol=1e-12, atol=1e-12)
    assert np.all(a[0, :] == 0) and np.all(a[:, 0] == 0)


TRANSC = rlang.loads("""
function transc(y, x, z)
    y += sin(x) * exp(z) + log(x) * sqrt(z) + cos(x * z) + tanh(z) / x
end
""")


def test_trig_exp_log_sqrt_composition():
    x, z = 0.8, 1.7
    # f = sin x e^z + log x √z + cos(xz) + tanh z / x
    sech2 = 1 / math.cosh(z) ** 2
    fxx = (-math.sin(x) * math.exp(z) - math.sqrt(z) / x ** 2 - z * z * math.cos(x * z)
           + 2 * math.tanh(z) / x ** 3)
    fzz = (math.sin(x) * math.exp(z) - math.log(x) / (4 * z ** 1.5) - x * x * math.cos(x * z)
           - 2 * math.tanh(z) * sech2 / x)
    fxz = (math.cos(x) * math.exp(z) + 1 / (2 * x * math.sqrt(z)) - math.sin(x * z)
           - x * z * math.cos(x * z) - sech2 / x ** 2)
    inner = np.array([[fxx, fxz], [fxz, fzz]])
    check(TRANSC.transc, (0.0, x, z), "y", embed(inner, 1, 3))


ROUTINE = rlang.loads("""
# compute-copy-uncompute through an ancilla, then a loop of ancilla updates
function routine(y, x, z)
    @routine begin
        s ← 0.0
        s += x * x + z
        t ← 0.0
        t += exp(s)
    end
    y += t * x
    ~@routine
end

function looped(y, x, n)
    for i = 1:n
        @routine begin
            p ← 0.0
            p += x ** i
        end
        y += p / i
        ~@routine
    end
end
""")


def test_ancillas_and_routines():
    x, z = 0.6, -0.3
    s = x * x + z
    e = math.exp(s)
    # f = x e^s, s = x² + z
    fxx = e * (2 * x) + e * (2 * x) + x * e * (4 * x * x + 2)
    fxz = e + x * e * 2 * x
    fzz = x * e
    check(ROUTINE.routine, (0.0, x, z), "y", embed(np.array([[fxx, fxz], [fxz, fzz]]), 1, 3))


def test_loop_with_integer_argument():
    x, n = 0.7, 6
    # f = Σ x^i / i, f'' = Σ (i-1) x^(i-2)
    fxx = sum((i - 1) * x ** (i - 2) for i in range(1, n + 1))
    hess = check(ROUTINE.looped, (0.0, x, n), "y", embed(np.array([[fxx]]), 1, 2))
    assert hess.shape == (2, 2)          # the integer n is not an input


BRANCH = rlang.loads("""
function branch(y, x, z)
    if (x > 0.0, ~)
        y += x * x * z
    else
        y += sin(x) * z * z
    end
end

function whileloop(y, x)
    k ← 0
    # y += Σ_{k=1..4} x^(k+1) / k
    while (k < 4, k > 0)
        k += 1
        y += x ** (k + 1) / k
    end
    k → 4
end
""")


@pytest.mark.parametrize("x", [1.1, -0.9])
def test_branches(x):
    z = 0.45
    if x > 0:
        inner = np.array([[2 * z, 2 * x], [2 * x, 0.0]])
    else:
        inner = np.array([[-math.sin(x) * z * z, 2 * z * math.cos(x)],
                          [2 * z * math.cos(x), 2 * math.sin(x)]])
    check(BRANCH.branch, (0.0, x, z), "y", embed(inner, 1, 3))


def test_while_loop():
    x = 0.9
    fxx = sum((k + 1) * x ** (k - 1) for k in range(1, 5))
    check(BRANCH.whileloop, (0.0, x), "y", np.array([[0.0, 0.0], [0.0, fxx]]))


CALLS = rlang.loads("""
function sq!(s!, x)
    s! += x * x
end

function cube!(c!, x)
    @routine begin
        s ← 0.0
        sq!(s, x)
    end
    c! += s * x
    ~@routine
end

function calls(y, x, z)
    @routine begin
        a ← 0.0
        cube!(a, x)
        b ← 0.0
        b += 5.0
        ~sq!(b, z)          # b = 5 - z²
    end
    y += a * b + exp(a) * z
    ~@routine
end
""")


def test_calls_and_uncalls():
    x, z = 0.8, 0.6
    a, b = x ** 3, 5 - z * z
    da, dda = 3 * x * x, 6 * x
    # f = a b + e^a z, a = x³, b = 5 − z²
    fxx = dda * b + z * math.exp(a) * (dda + da * da)
    fxz = da * (-2 * z) + math.exp(a) * da
    fzz = a * (-2.0)
    check(CALLS.calls, (0.0, x, z), "y", embed(np.array([[fxx, fxz], [fxz, fzz]]), 1, 3))


ROTH = rlang.loads("""
function rot(y, a, b, θ)
    ROT(a, b, θ)
    y += a * a * b
end

function had(y, a, b)
    HADAMARD(a, b)
    y += a * exp(b)
end
""")


def test_rot():
    a0, b0, t = 0.7, -0.4, 0.3
    args = (0.0, a0, b0, t)
    # the loss is read after the rotation: a, b are outputs, inputs are initial values
    hess = check(ROTH.rot, args, "y")
    # compare with a NumPy FD of the closed form
    def f(v):
        a, b, th = v
        ra = math.cos(th) * a - math.sin(th) * b
        rb = math.sin(th) * a + math.cos(th) * b
        return ra * ra * rb
    v = np.array([a0, b0, t])
    h = 1e-4
    num = np.zeros((3, 3))
    for i in range(3):
        for j in range(3):
            ei, ej = np.eye(3)[i] * h, np.eye(3)[j] * h
            num[i, j] = (f(v + ei + ej) - f(v + ei - ej) - f(v - ei + ej) + f(v - ei - ej)) / (4 * h * h)
    np.testing.assert_allclose(hess[1:, 1:], num, rtol=1e-5, atol=1e-6)


def test_hadamard():
    a0, b0 = 0.3, 0.5
    r = 1 / math.sqrt(2)
    a, b = (a0 + b0) * r, (a0 - b0) * r
    # f = a e^b with a = (a0+b0)/√2, b = (a0−b0)/√2
    faa, fab, fbb = 0.0, math.exp(b), a * math.exp(b)
    J = np.array([[r, r], [r, -r]])            # ∂(a, b)/∂(a0, b0)
    inner = J.T @ np.array([[faa, fab], [fab, fbb]]) @ J
    check(ROTH.had, (0.0, a0, b0), "y", embed(inner, 1, 3))


ARRAYS = rlang.loads("""
function quad(y, xs: f64[:], A: f64[:,:])
    # y = xsᵀ A xs + Σ xs[i]⁴, through an array ancilla Ax = A xs
    n ← length(xs)
    @routine begin
        Ax ← zeros(f64, n)
        for i = 0:n - 1
            for j = 0:n - 1
                Ax[i] += A[i, j] * xs[j]
            end
        end
    end
    for i = 0:n - 1
        y += xs[i] * Ax[i] + xs[i] ** 4
    end
    ~@routine
    n → length(xs)
end

function sqdist(d!, X: f64[:,:])
    # Σ_{i<j} |x_i − x_j|, each distance into an ancilla (compute-copy-uncompute)
    for i = 0:size(X, 0) - 1
        for j = i + 1:size(X, 0) - 1
            @routine begin
                s ← 0.0
                for k = 0:size(X, 1) - 1
                    s += (X[i, k] - X[j, k]) ** 2
                end
                r ← 0.0
                r += sqrt(s)
            end
            d! += r
            ~@routine
        end
    end
end
""")


def test_array_inputs_and_array_ancilla():
    rng = np.random.default_rng(3)
    xs = rng.normal(size=3)
    A = rng.normal(size=(3, 3))
    # y = xᵀAx + Σx⁴: ∂²/∂x² = A + Aᵀ + diag(12 x²); ∂²/∂x∂A[i,j] = δ_ki x_j + x_i δ_kj
    n = 3
    N = 1 + n + n * n
    analytic = np.zeros((N, N))
    analytic[1:1 + n, 1:1 + n] = A + A.T + np.diag(12 * xs ** 2)
    for i in range(n):
        for j in range(n):
            col = 1 + n + i * n + j
            for k in range(n):
                analytic[1 + k, col] = (xs[j] if k == i else 0.0) + (xs[i] if k == j else 0.0)
                analytic[col, 1 + k] = analytic[1 + k, col]
    check(ARRAYS.quad, (0.0, xs, A), "y", analytic, fd_tol=1e-4)


def test_distances_matrix_input():
    rng = np.random.default_rng(5)
    X = rng.normal(size=(3, 2))
    hess = check(ARRAYS.sqdist, (0.0, X), "d!")

    def f(v):
        Y = v.reshape(3, 2)
        return sum(np.linalg.norm(Y[i] - Y[j]) for i in range(3) for j in range(i + 1, 3))
    v = X.ravel()
    h = 1e-4
    num = np.zeros((6, 6))
    E = np.eye(6) * h
    for i in range(6):
        for j in range(6):
            num[i, j] = (f(v + E[i] + E[j]) - f(v + E[i] - E[j]) - f(v - E[i] + E[j])
                         + f(v - E[i] - E[j])) / (4 * h * h)
    np.testing.assert_allclose(hess[1:, 1:], num, rtol=1e-5, atol=1e-5)


def test_array_loss_element():
    m = rlang.loads("""
    function squares!(ys!: f64[:], x)
        for i = 0:length(ys!) - 1
            ys![i] += x ** (i + 1)
        end
    end
    """)
    ys = np.zeros(3)
    x = 1.5
    hess = rlang.hessian(m.squares_, (ys, x), ("ys!", 2))
    # inputs: ys[0..2], x; ∂²(ys[2] + x³)/∂x² = 6x
    expected = np.zeros((4, 4))
    expected[3, 3] = 6 * x
    np.testing.assert_allclose(hess, expected, rtol=1e-12)
    np.testing.assert_array_equal(ys, np.zeros(3))
    np.testing.assert_allclose(rlang.hessian(m.squares_, (ys, x), "ys![1]")[3, 3], 2.0)


def test_inverse_function():
    m = rlang.loads("""
    function f(y, x)
        y += x * x * x
    end
    """)
    # (~f)(y, x): y_out = y − x³, Hessian of y_out is −6x in x
    hess = rlang.hessian(~m.f, (0.0, 2.0), "y")
    np.testing.assert_allclose(hess, [[0.0, 0.0], [0.0, -12.0]], rtol=1e-12)


def test_hessian_of_builtin_edge_functions():
    m = rlang.loads("""
    function f(y, x, z)
        y += atan(x, z) + hypot(x, z) + x ** 2.5 + abs(z) * x + log1p(x * z) + expm1(z)
    end
    """)
    check(m.f, (0.0, 0.7, 1.3), "y", fd_tol=2e-5)


# ------------------------------------------------------------------ number systems

def test_fixed_inputs_are_not_hessian_inputs():
    """Gradients w.r.t. fixed inputs are floats, but rlang.hessian differentiates only
    float inputs: a fixed argument is held constant (documented behaviour of
    `dual_runs.flat_float_inputs`)."""
    m = rlang.loads("""
    function f(y, x, c: fixed)
        y += x * x * f64(c)
    end
    """)
    c = rlang.Fixed.from_value(1.5)
    hess = rlang.hessian(m.f, (0.0, 2.0, c), "y")
    np.testing.assert_allclose(hess, [[0.0, 0.0], [0.0, 3.0]], rtol=1e-12)


@pytest.mark.xfail(strict=True, raises=rlang.RlangTypeError,
                   reason="PROBLEMS-hessian.md §3: a tangent reaching fixed(x) is refused "
                   "(it used to be dropped, silently wrong where it mattered)")
def test_fixed_loss():
    m = rlang.loads("""
    function f(y: fixed, x)
        y += fixed(x * x * x)
    end
    """)
    hess = rlang.hessian(m.f, (rlang.Fixed.from_value(0.0), 0.5), "y")
    np.testing.assert_allclose(hess, [[3.0]], rtol=1e-6)


@pytest.mark.xfail(strict=True, reason="PROBLEMS-hessian.md §1: complex(re, im) of a float input "
                   "is a type error in the dual-number forward run")
def test_complex_intermediate_real_loss():
    m = rlang.loads("""
    function f(y, x)
        @routine begin
            z ← 0.0 + 0.0im
            z += exp(complex(0.0, x)) * x
        end
        y += z.re * z.im
        ~@routine
    end
    """)
    x = 0.8
    # y = x² cos x sin x = x² sin(2x)/2
    fxx = math.sin(2 * x) + 4 * x * math.cos(2 * x) - 2 * x * x * math.sin(2 * x)
    check(m.f, (0.0, x), "y", np.array([[0.0, 0.0], [0.0, fxx]]))


@pytest.mark.xfail(strict=True, reason="PROBLEMS-hessian.md §2: Hessians through complex field "
                   "views are silently wrong")
@pytest.mark.parametrize("body", ["z.re += cos(x) * x\n        z.im += sin(x) * x",
                                  "z.re += x\n        z.im += x"])
def test_complex_field_views(body):
    m = rlang.loads(f"""
    function f(y, x)
        @routine begin
            z ← 0.0 + 0.0im
            {body}
        end
        y += z.re * z.im
        ~@routine
    end
    """)
    check(m.f, (0.0, 0.8), "y")


def test_complex_fields_same_program_with_floats():
    """The float twin of test_complex_field_views: right."""
    m = rlang.loads("""
    function f(y, x)
        @routine begin
            a ← 0.0
            b ← 0.0
            a += cos(x) * x
            b += sin(x) * x
        end
        y += a * b
        ~@routine
    end
    """)
    x = 0.8
    fxx = math.sin(2 * x) + 4 * x * math.cos(2 * x) - 2 * x * x * math.sin(2 * x)
    check(m.f, (0.0, x), "y", np.array([[0.0, 0.0], [0.0, fxx]]))


def test_complex_inputs_are_held_constant():
    m = rlang.loads("""
    function f(y, x, w: complex)
        y += x * x * w.re
    end
    """)
    hess = rlang.hessian(m.f, (0.0, 1.0, 2.0 + 1.0j), "y")
    np.testing.assert_allclose(hess, [[0.0, 0.0], [0.0, 4.0]], rtol=1e-12)


def test_ulog_intermediate():
    m = rlang.loads("""
    function f(y, x)
        @routine begin
            l ← one(ulog)
            l *= ulog(x)
            l *= ulog(x)
            l *= ulog(x)
        end
        y += f64(l)
        ~@routine
    end
    """)
    x = 1.3
    check(m.f, (0.0, x), "y", np.array([[0.0, 0.0], [0.0, 6 * x]]), rtol=1e-8)


def test_stack_push_pop():
    m = rlang.loads("""
    function f(y, x)
        s ← stack(f64)
        t ← 0.0
        t += x * x
        PUSH(s, t)
        t += sin(x)
        y += t * x
        t -= sin(x)
        POP(s, t)
        y += t * t
        t -= x * x
        t → 0.0
        s → stack(f64)
    end
    """)
    x = 0.9
    # y = x sin x + x⁴
    fxx = 2 * math.cos(x) - x * math.sin(x) + 12 * x * x
    check(m.f, (0.0, x), "y", np.array([[0.0, 0.0], [0.0, fxx]]))


# ------------------------------------------------------------------ command line

GRAD_SRC = """
function f(y, x, zs: f64[:])
    y += x * x * zs[0] + sin(zs[1])
end
"""


def run_grad(tmp_path, *extra):
    path = tmp_path / "h.rev"
    path.write_text(GRAD_SRC)
    env = dict(os.environ, PYTHONIOENCODING="utf-8")
    return subprocess.run([sys.executable, "-m", "rlang.cli", "grad", str(path), "f", "0.0", "1.5",
                           "[2.0, 0.5]", "--loss", "y", "--hessian", *extra],
                          cwd=REPO, env=env, capture_output=True, text=True, timeout=120)


def expected_cli_hessian():
    x, z0, z1 = 1.5, 2.0, 0.5
    e = np.zeros((4, 4))
    e[1, 1] = 2 * z0
    e[1, 2] = e[2, 1] = 2 * x
    e[3, 3] = -math.sin(z1)
    return e


def test_cli_hessian_text(tmp_path):
    proc = run_grad(tmp_path)
    assert proc.returncode == 0, proc.stderr
    lines = proc.stdout.splitlines()
    assert [line.split(" = ")[0] for line in lines] == ["y", "x", "zs", "hessian"]
    assert lines[0] == "y = 1.0"
    assert lines[1] == "x = 6.0"
    hess = np.array(json.loads(lines[3].split(" = ", 1)[1]))
    np.testing.assert_allclose(hess, expected_cli_hessian(), rtol=1e-12, atol=1e-15)


def test_cli_hessian_json(tmp_path):
    proc = run_grad(tmp_path, "--json")
    assert proc.returncode == 0, proc.stderr
    data = json.loads(proc.stdout.splitlines()[-1])
    assert list(data) == ["y", "x", "zs", "hessian"]
    assert data["x"] == 6.0
    assert np.shape(data["hessian"]) == (4, 4)
    np.testing.assert_allclose(np.array(data["hessian"]), expected_cli_hessian(),
                               rtol=1e-12, atol=1e-15)


def test_hessian_through_neg():
    """NEG of a float takes the dual numbers of the Hessian run."""
    m = rlang.loads("function f(y, x)\n    NEG(x)\n    y += x * x * x\nend\n")
    h = rlang.hessian(m.f, (0.0, 1.3), "y")
    assert np.allclose(h, [[0.0, 0.0], [0.0, -6 * 1.3]], rtol=1e-12)


@pytest.mark.parametrize("conversion", ["f32", "fixed"])
def test_hessian_through_a_lossy_conversion_is_refused(conversion):
    """A tangent reaching f32/fixed would be dropped: refused, never wrong (ulog
    carries it: tests/unit/ad/test_hessian_ulog.py)."""
    m = rlang.loads(f"function f(y, x)\n    y += f64({conversion}(x)) * x\nend\n")
    with pytest.raises(rlang.RlangTypeError, match="not supported yet"):
        rlang.hessian(m.f, (0.0, 1.3), "y")


def test_a_seed_that_is_zero_with_a_nonzero_tangent_is_not_skipped():
    # at b = 0 the seed into sin(r) is q = 0, but its tangent is not: skipping it
    # (comparing only the value part of the dual number) lost half of ∂²/∂b²
    m = rlang.loads("""
function h0(p, q, r)
    p += q * sin(r) + r * 0.5
end
function f(a, b)
    h0(a, b, b)
    b += 1.0
    b -= 1.0
end
""")
    hessian = rlang.hessian(m.f, (0.0, 0.0), loss="a")
    assert hessian.tolist() == [[0.0, 0.0], [0.0, 2.0]]     # d²(b sin b)/db² = 2 at 0


LITERALS = """
function scalars(y, a, b)
    t ← [a, b * 2.0]
    y += t[0] * t[1] * t[1]
    t → [a, b * 2.0]
end

function rows(y, a: f64[:], b)
    t ← [a, [b, b * 2.0]]
    y += t[1, 1] * t[0, 1] * t[0, 0]
    t → [a, [b, b * 2.0]]
end
"""


def test_array_literals_of_variables():
    """The interpreter's Hessian run holds dual numbers in a literal of variables (it
    refused them: "an array literal cannot hold an f64"), and sends dual seeds back
    into the literal's elements and rows; the llvm backend agrees."""
    interp = rlang.loads(LITERALS, backend="interp")
    a, b = 0.5, 0.7                               # y = a (2b)^2
    analytic = np.array([[0.0, 8 * b], [8 * b, 8 * a]])
    check(interp.scalars, [0.0, a, b], "y", embed(analytic, 1, 3))
    x = np.array([0.5, 1.5])                      # y = 2b x1 x0
    check(interp.rows, [0.0, x, 0.25], "y")
    llvm = rlang.loads(LITERALS, backend="llvm")
    np.testing.assert_allclose(rlang.hessian(llvm.scalars, [0.0, a, b], "y"),
                               rlang.hessian(interp.scalars, [0.0, a, b], "y"), rtol=1e-12)


F32_SOURCE = """
function square(y: f32, x: f32)
    y += x * x * f32(2.0)
end

function converted(y, x)
    t ← f32(x)
    y += f64(t * t)
    t → f32(x)
end
"""


@pytest.mark.parametrize("name, args", [
    ("square", [rlang.F32(0.0), rlang.F32(0.7)]),
    ("square", [np.float32(0.0), np.float32(0.7)]),
    ("converted", [0.0, 0.5]),
])
def test_interpreter_refuses_hessians_through_f32_values(name, args):
    """Its dual numbers are f64: an f32 value dropped the tangent (a zero Hessian, or
    an empty one for NumPy f32 scalars).  Now refused; the llvm backend computes it."""
    interp = rlang.loads(F32_SOURCE, backend="interp")
    with pytest.raises(rlang.RlangTypeError, match="Hessians through f32 values"):
        rlang.hessian(interp[name], args, "y")
    if name == "square":
        llvm = rlang.loads(F32_SOURCE, backend="llvm")
        np.testing.assert_allclose(rlang.hessian(llvm[name], args, "y"),
                                   [[0.0, 0.0], [0.0, 4.0]], rtol=1e-6)
