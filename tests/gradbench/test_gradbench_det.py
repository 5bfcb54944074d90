"""det beyond the shared test: the interpreter agrees with llvm, the program passes
its reversibility checks and its inverse takes the determinant away again, every
base case of the recursion (ℓ = 1 … 7) against NumPy's determinant and adjugate,
the gradient's row-major order, the baselines' expansion plan, and GradBench's
manual tool's output where it is installed."""


import numpy as np
import pytest

import rlang
from tests.gradbench import suite_path  # noqa: F401
from suite.inputs import det as inputs  # noqa: E402
from suite.rlang_impl._load import program  # noqa: E402
from tests.gradbench.manual import (assert_agrees_with_baselines, assert_agrees_with_manual,
                                     needs_manual, output)  # noqa: E402



def _matrix(ell, seed=5):
    data = inputs.generate(seed=seed, ell=ell)
    return np.array(data["A"]).reshape(ell, ell)


def _det_and_gradient(m, a):
    det = m["det!"]
    return det(0.0, a)[0], rlang.grad(det, "d!", argnums=1)(0.0, a)


@pytest.mark.parametrize("ell", [1, 2, 3, 4])
def test_interpreter_agrees_with_llvm(ell):
    a = _matrix(ell)
    ours = _det_and_gradient(program("det"), a)
    theirs = _det_and_gradient(program("det", backend="interp"), a)
    for x, y in zip(ours, theirs):
        np.testing.assert_allclose(x, y, rtol=1e-13, atol=1e-15)


def test_reversibility_checks_pass_and_the_inverse_subtracts():
    a = _matrix(5)
    m = program("det", invcheck=True)
    d, gradient = _det_and_gradient(m, a)
    unchecked = _det_and_gradient(program("det"), a)[1]
    np.testing.assert_allclose(gradient, unchecked, rtol=1e-13)  # reassociated sums
    back = (~m["det!"])(d, a)[0]
    assert abs(back) < 1e-15


@pytest.mark.parametrize("ell", [1, 2, 3, 4, 5, 6, 7])
def test_the_determinant_and_its_gradient_are_numpys(ell):
    # every base case (ℓ = 1, the 3 x 3 unrolled one) and the recursion above it;
    # the gradient of det A is the adjugate's transpose, det(A) A^-T
    a = _matrix(ell, seed=ell)
    d, gradient = _det_and_gradient(program("det"), a)
    np.testing.assert_allclose(d, np.linalg.det(a), rtol=1e-11)
    np.testing.assert_allclose(gradient, np.linalg.det(a) * np.linalg.inv(a).T,
                               rtol=1e-9, atol=1e-12)


def test_integer_matrices_give_exact_results():
    a = np.array([[2.0, -1.0, 0.0, 3.0], [1.0, 4.0, -2.0, 0.0],
                  [0.0, 1.0, 5.0, -1.0], [3.0, 0.0, 1.0, 2.0]])
    d, gradient = _det_and_gradient(program("det"), a)
    assert d == round(np.linalg.det(a))
    assert np.array_equal(gradient, np.round(np.linalg.det(a) * np.linalg.inv(a).T))


def test_the_gradient_is_row_major_and_has_ell_squared_entries():
    a = np.array([[1.0, 2.0, 0.0], [0.0, 3.0, 4.0], [5.0, 0.0, 6.0]])
    data = {"A": a.ravel().tolist(), "ell": 3}
    gradient = output("rlang", "det", "gradient", data)
    assert isinstance(gradient, list) and len(gradient) == 9
    # ∂ det / ∂ A[0, 1] is the cofactor -(0 · 6 - 4 · 5) = 20; ∂ / ∂ A[1, 0] is -12
    assert gradient[1] == 20.0 and gradient[3] == -12.0
    assert output("rlang", "det", "primal", data) == float(np.round(np.linalg.det(a)))


@pytest.mark.parametrize("ell", [1, 2, 5])
def test_other_sizes_agree_with_the_baselines(ell):
    data = inputs.generate(seed=11, ell=ell)
    assert_agrees_with_baselines("det", data, ("primal", "gradient"))


def test_the_expansion_plan_lists_every_permutation_once_with_its_sign():
    ell = 4
    plan = inputs.expansion_plan(ell)
    assert [take.shape for take, _ in plan] == [(1, 4), (4, 3), (12, 2), (24, 1)]
    paths = [((), 1.0)]                         # (columns chosen, product of signs)
    for take, sign in plan:
        paths = [(path + (int(take[b, j]),), s * sign[b, j])
                 for b, (path, s) in enumerate(paths) for j in range(take.shape[1])]
    perms = [p for p, _ in paths]
    assert sorted(perms) == sorted(set(perms)) and len(perms) == 24
    for perm, s in paths:
        inversions = sum(perm[i] > perm[j] for i in range(ell) for j in range(i + 1, ell))
        assert s == (-1.0) ** inversions


@needs_manual("det")
def test_outputs_match_gradbenchs_manual_tool(tmp_path):
    data = inputs.generate(seed=2, ell=6)
    assert_agrees_with_manual("det", data, ("primal", "gradient"), tmp_path)
