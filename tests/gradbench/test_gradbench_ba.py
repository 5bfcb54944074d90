"""ba beyond the shared test: the CSR Jacobian's structure, the output shapes the
manual tool prints, a second size, and the rev program on the interpreter."""

import numpy as np
import pytest
import rlang

from tests.gradbench import suite_path  # noqa: F401
from suite.common import measure  # noqa: E402
from suite.compare import mismatches  # noqa: E402
from suite.inputs import ba as inputs  # noqa: E402
from suite.inputs.ba import Observations  # noqa: E402
from suite.rlang_impl import ba as rlang_ba  # noqa: E402
from suite.rlang_impl._load import program  # noqa: E402
from suite.jax_impl import ba as jax_ba  # noqa: E402

SIZE = {"n": 2, "m": 3, "p": 12}   # p ≥ 10: the manual tool prints 30 rows entries


def _data(seed=2, **size):
    return inputs.generate(seed=seed, **(size or SIZE))


def test_objective_output_shape():
    output, _ = measure(rlang_ba.prepare("objective", _data()), 1, 0)
    assert set(output) == {"reproj_error", "w_err"}
    assert output["reproj_error"]["repeated"] == SIZE["p"]
    assert len(output["reproj_error"]["elements"]) == 2
    assert output["w_err"]["repeated"] == SIZE["p"]
    assert isinstance(output["w_err"]["element"], float)


def test_jacobian_is_adbench_csr():
    """The full CSR matrix: 2 rows of 15 per observation then one per weight, the
    columns of its camera, point and weight, and the values of a dense Jacobian
    read off the same rows."""
    data = _data()
    prepared = rlang_ba.prepare("jacobian", data)
    rows, cols, vals = prepared.run()
    n, m, p = SIZE["n"], SIZE["m"], SIZE["p"]
    assert len(rows) == 3 * p + 1 and rows[-1] == len(cols) == len(vals) == 31 * p
    assert np.all(np.diff(rows[:2 * p + 1]) == 15) and np.all(np.diff(rows[2 * p:]) == 1)
    for i in range(p):
        camera = list(range(11 * (i % n), 11 * (i % n) + 11))
        point = list(range(11 * n + 3 * (i % m), 11 * n + 3 * (i % m) + 3))
        for r in range(2):
            assert list(cols[rows[2 * i + r]:rows[2 * i + r + 1]]) == camera + point + [
                11 * n + 3 * m + i]
        assert cols[rows[2 * p + i]] == 11 * n + 3 * m + i
    output = prepared.output((rows, cols, vals))
    assert {k: len(v) for k, v in output.items()} == {"rows": 31, "cols": 31, "vals": 31}
    # against a dense Jacobian of the whole objective, by rlang on one observation
    obs = Observations.from_input(data)
    dense = np.zeros((3 * p, 11 * n + 3 * m + p))
    for r in range(3 * p):
        dense[r, cols[rows[r]:rows[r + 1]]] = vals[rows[r]:rows[r + 1]]
    m_ = program("ba")
    for i in (0, p - 1):
        block = rlang.jacobian(m_["reproj!"], (np.zeros(2), obs.params_seen[i], obs.feats[i]),
                               inputs=["par"], outputs="e!")
        np.testing.assert_allclose(dense[2 * i:2 * i + 2, cols[rows[2 * i]:rows[2 * i + 1]]],
                                   block, rtol=1e-12)


@pytest.mark.parametrize("function", ["objective", "jacobian"])
def test_another_size_agrees_with_jax(function):
    data = _data(seed=5, n=4, m=9, p=40)
    ours, _ = measure(rlang_ba.prepare(function, data), 1, 0)
    theirs, _ = measure(jax_ba.prepare(function, data), 1, 0)
    assert not mismatches(theirs, ours, 1e-10)


def test_zero_rotation_takes_the_first_order_branch():
    """A zero Rodrigues vector: x + r × x, with its derivative in r (the cross product)."""
    data = _data()
    data["cam"][0:3] = [0.0, 0.0, 0.0]
    ours, _ = measure(rlang_ba.prepare("jacobian", data), 1, 0)
    theirs, _ = measure(jax_ba.prepare("jacobian", data), 1, 0)
    assert not mismatches(theirs, ours, 1e-10)


def test_interpreter_agrees_with_llvm():
    obs = Observations.from_input(_data())
    args = (np.zeros(2), obs.params_seen[1], obs.feats[1])
    compiled, interpreted = program("ba"), program("ba", invcheck=True, backend="interp")
    np.testing.assert_allclose(interpreted["reproj!"](*[np.copy(a) for a in args])[0],
                               compiled["reproj!"](*[np.copy(a) for a in args])[0], rtol=1e-14)
    for row in ("e![0]", "e![1]"):
        ours = rlang.grad(interpreted["reproj!"], row, argnums=1)(*args)
        theirs = rlang.grad(compiled["reproj!"], row, argnums=1)(*args)
        np.testing.assert_allclose(ours, theirs, rtol=1e-12)
