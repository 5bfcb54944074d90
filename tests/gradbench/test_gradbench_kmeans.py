"""kmeans beyond the shared test: the interpreter agrees with llvm, the program
passes its reversibility checks, the Hessian really is diagonal (so one
Hessian-vector product along ones is its diagonal), other sizes and shapes, and
GradBench's manual tool's output where it is installed."""


import numpy as np
import pytest

import rlang
from tests.gradbench import suite_path  # noqa: F401
from suite import tool_module  # noqa: E402
from suite.common import measure  # noqa: E402
from suite.compare import mismatches  # noqa: E402
from suite.inputs import kmeans as inputs  # noqa: E402
from suite.rlang_impl._load import program  # noqa: E402
from tests.gradbench.manual import manual_output, needs_manual  # noqa: E402

TINY = {"k": 2, "n": 6, "d": 2}


def _arrays(size, seed=3):
    data = inputs.generate(seed=seed, **size)
    return np.array(data["points"]), np.array(data["centroids"])


def _cost_j_h(m, points, centroids):
    cost = m["cost!"]
    value = cost(0.0, points, centroids)[0]
    j = rlang.grad(cost, "cost!", argnums=2)(0.0, points, centroids)
    h = rlang.hvp(cost, (0.0, points, centroids), (None, None, np.ones_like(centroids)),
                  "cost!")[2]
    return value, j, h


def test_interpreter_agrees_with_llvm():
    points, centroids = _arrays(TINY)
    ours = _cost_j_h(program("kmeans"), points, centroids)
    theirs = _cost_j_h(program("kmeans", backend="interp"), points, centroids)
    for a, b in zip(ours, theirs):
        np.testing.assert_allclose(a, b, rtol=1e-13, atol=1e-13)


@pytest.mark.parametrize("size", [TINY, {"k": 100, "n": 200, "d": 8}, {"k": 7, "n": 30, "d": 3},
                                  {"k": 15, "n": 37, "d": 5}, {"k": 16, "n": 20, "d": 2}])
def test_the_nearest_centroids_as_an_output_keep_the_cost_and_its_derivatives(size):
    # Notes [Centroids in lanes], [Points in lanes for few centroids] (k < 16) and [The
    # nearest centroids as an output] (evals/kmeans.rev):
    # cost!'s bits, its derivatives' bits, and the first nearest centroid of each point
    points, centroids = _arrays(size)
    small = size["k"] * size["n"] * size["d"] <= 1000
    expected_nearest = np.argmin(((points[:, None] - centroids[None]) ** 2).sum(axis=2), axis=1)
    for backend in ("llvm", "interp") if small else ("llvm",):
        m = program("kmeans", backend=backend)
        value, j, h = _cost_j_h(m, points, centroids)
        function = m["cost_nearest!"]
        zeros = np.zeros(len(points), dtype=np.int64)
        got_value, nearest = function(0.0, zeros.copy(), points, centroids)[:2]
        assert got_value == value
        np.testing.assert_array_equal(nearest, expected_nearest)
        gradient = rlang.grad(function, "cost!", argnums=3)
        got_j, got_h = rlang.jvp(gradient, (0.0, zeros.copy(), points, centroids),
                                 (None, None, None, np.ones_like(centroids)))
        np.testing.assert_array_equal(got_j, j)
        np.testing.assert_array_equal(got_h, h)
    checked = program("kmeans", invcheck=True)["cost_nearest!"]
    assert checked(0.0, np.zeros(len(points), dtype=np.int64), points, centroids)[0] == value


@pytest.mark.parametrize("k", [5, 40])
def test_ties_go_to_the_first_centroid(k):
    """Centroids repeated (and points on the repeated ones): every point's nearest
    centroid is the first of its equals, in the lanes' search (k < 16) and the
    search per point alike, as cost!'s chain of prefix argmins has it."""
    points, centroids = _arrays({"k": k, "n": 53, "d": 3}, seed=5)
    centroids[k - 1] = centroids[1]
    centroids[k - 2] = centroids[0]
    points[::4] = centroids[1]
    distances = ((points[:, None] - centroids[None]) ** 2).sum(axis=2)
    expected = np.argmin(distances, axis=1)
    m = program("kmeans")
    value, nearest = m["cost_nearest!"](0.0, np.zeros(len(points), dtype=np.int64),
                                        points, centroids)[:2]
    np.testing.assert_array_equal(nearest, expected)
    assert set(nearest.tolist()).isdisjoint({k - 1, k - 2})
    assert value == m["cost!"](0.0, points, centroids)[0]


def test_reversibility_checks_pass():
    points, centroids = _arrays(inputs.SIZES["small"])
    checked = _cost_j_h(program("kmeans", invcheck=True), points, centroids)
    for a, b in zip(checked, _cost_j_h(program("kmeans"), points, centroids)):
        np.testing.assert_array_equal(a, b)


def test_the_hessian_is_diagonal_and_hvp_along_ones_is_its_diagonal():
    # Note [The Hessian's diagonal from one product] (suite/rlang_impl/kmeans.py)
    points, centroids = _arrays(TINY)
    m = program("kmeans")
    full = rlang.hessian(m["cost!"], (0.0, points, centroids), "cost!", argnums=2)
    np.testing.assert_array_equal(full, np.diag(np.diag(full)))
    h = _cost_j_h(m, points, centroids)[2]
    np.testing.assert_array_equal(h.ravel(), np.diag(full))
    # 2 x the number of points nearest each centroid
    nearest = np.argmin(((points[:, None] - centroids[None]) ** 2).sum(axis=2), axis=1)
    counts = np.bincount(nearest, minlength=len(centroids))
    np.testing.assert_array_equal(h, np.repeat(2.0 * counts, points.shape[1]).reshape(h.shape))


def test_a_tie_goes_to_the_first_centroid():
    points = np.array([[0.0], [2.0], [1.0], [5.0]])         # 1.0 is as far from 0 as from 2
    centroids = np.array([[0.0], [2.0]])
    _, j, h = _cost_j_h(program("kmeans"), points, centroids)
    np.testing.assert_array_equal(h, [[4.0], [4.0]])          # {0, 1} and {2, 5}
    np.testing.assert_array_equal(j, [[-2.0], [-6.0]])


@pytest.mark.parametrize("size", [{"k": 1, "n": 5, "d": 3}, {"k": 3, "n": 3, "d": 1},
                                  {"k": 5, "n": 50, "d": 4}])
def test_other_sizes_agree_with_the_baselines(size):
    data = inputs.generate(seed=7, **size)
    for function in ("cost", "dir"):
        ours = measure(tool_module("rlang", "kmeans").prepare(function, data), 1, 0)[0]
        for baseline in ("jax", "pytorch"):
            theirs = measure(tool_module(baseline, "kmeans").prepare(function, data), 1, 0)[0]
            assert not mismatches(theirs, ours, 1e-10), (function, baseline)


def test_output_shapes():
    data = inputs.generate(seed=1, **inputs.SIZES["small"])
    module = tool_module("rlang", "kmeans")
    cost = measure(module.prepare("cost", data), 1, 0)[0]
    assert type(cost) is float
    direction = measure(module.prepare("dir", data), 1, 0)[0]
    assert len(direction) == len(data["centroids"])
    assert all(len(row) == len(data["points"][0]) and all(type(v) is float for v in row)
               for row in direction)


def test_unknown_function():
    from suite.common import UnknownFunction
    with pytest.raises(UnknownFunction):
        tool_module("rlang", "kmeans").prepare("objective", inputs.generate(**TINY))


@needs_manual("kmeans")
@pytest.mark.parametrize("function", ["cost", "dir"])
def test_agrees_with_gradbenchs_manual_tool(function, tmp_path):
    data = inputs.generate(seed=1, **inputs.SIZES["small"])
    theirs = manual_output("kmeans", function, data, tmp_path)
    ours = measure(tool_module("rlang", "kmeans").prepare(function, data), 1, 0)[0]
    assert not mismatches(theirs, ours, 1e-12)
