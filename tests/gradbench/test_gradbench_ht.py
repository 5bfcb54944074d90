"""ht beyond the shared test: the simple variant, the Jacobian's shape and
columns (us first), a mirrored model, and the rev program on the interpreter."""

import numpy as np
import pytest
import rlang

from tests.gradbench import suite_path  # noqa: F401
from suite.common import measure  # noqa: E402
from suite.compare import mismatches  # noqa: E402
from suite.inputs import ht as inputs  # noqa: E402
from suite.inputs.ht import Hand  # noqa: E402
from suite.rlang_impl import ht as rlang_ht  # noqa: E402
from suite.rlang_impl._load import program  # noqa: E402
from suite.jax_impl import ht as jax_ht  # noqa: E402
from suite.torch_impl import ht as torch_ht  # noqa: E402

SMALL = inputs.SIZES["small"]


def _data(complicated=True, seed=3, **changes):
    return inputs.generate(seed=seed, **dict(SMALL, complicated=complicated, **changes))


@pytest.mark.parametrize("complicated", [True, False], ids=["complicated", "simple"])
def test_shapes(complicated):
    data = _data(complicated)
    n = len(data["data"]["correspondences"])
    objective, _ = measure(rlang_ht.prepare("objective", data), 1, 0)
    jacobian, _ = measure(rlang_ht.prepare("jacobian", data), 1, 0)
    assert len(objective) == 3 * n and all(isinstance(v, float) for v in objective)
    assert len(jacobian) == 3 * n
    assert {len(row) for row in jacobian} == {28 if complicated else 26}


@pytest.mark.parametrize("function", ["objective", "jacobian"])
@pytest.mark.parametrize("mirrored", [False, True], ids=["plain", "mirrored"])
def test_simple_variant_agrees_with_the_baselines(function, mirrored):
    data = _data(False)
    data["data"]["model"]["is_mirrored"] = mirrored
    ours, _ = measure(rlang_ht.prepare(function, data), 1, 0)
    for baseline in (jax_ht, torch_ht):
        theirs, _ = measure(baseline.prepare(function, data), 1, 0)
        assert not mismatches(theirs, ours, 1e-10)


def test_us_columns_come_first():
    """Row 3i + j of the complicated Jacobian starts with ∂e_ij/∂u_i: −(V0 − V2, V1 − V2)_j,
    from the objective's own errors at u = (1, 0), (0, 1), (0, 0)."""
    data = _data()
    n = len(data["data"]["correspondences"])
    jacobian = np.array(measure(rlang_ht.prepare("jacobian", data), 1, 0)[0])

    def errors(u):
        moved = dict(data, us=[list(u)] * n)
        return np.array(measure(rlang_ht.prepare("objective", moved), 1, 0)[0])

    at0, at1, at2 = errors((1.0, 0.0)), errors((0.0, 1.0)), errors((0.0, 0.0))
    np.testing.assert_allclose(jacobian[:, 0], at0 - at2, rtol=1e-9, atol=1e-12)
    np.testing.assert_allclose(jacobian[:, 1], at1 - at2, rtol=1e-9, atol=1e-12)


def test_small_angle_axis_is_the_identity():
    data = _data()
    data["theta"][0:3] = [1e-6, 0.0, 0.0]
    for function in ("objective", "jacobian"):
        ours, _ = measure(rlang_ht.prepare(function, data), 1, 0)
        theirs, _ = measure(jax_ht.prepare(function, data), 1, 0)
        assert not mismatches(theirs, ours, 1e-10)


def test_interpreter_agrees_with_llvm():
    hand = Hand(_data(vertices=8, triangles=5, points=2))
    name, args = rlang_ht.arguments(hand)
    compiled, interpreted = program("ht"), program("ht", invcheck=True, backend="interp")
    e = np.zeros((hand.n, 3))
    np.testing.assert_allclose(interpreted[name](e.copy(), *args)[0],
                               compiled[name](e.copy(), *args)[0], rtol=1e-13)
    per_point, axes = rlang_ht.point_arguments(hand)
    one = [a[0] if axis == 0 else a for a, axis in zip(per_point, axes[1:])]
    for f in (interpreted, compiled):
        grads = rlang.grad(f[name], ("e!", (0, 1)), argnums=(1, 2))(np.zeros((1, 3)), *one)
        if f is interpreted:
            expected = grads
        else:
            for a, b in zip(expected, grads):
                np.testing.assert_allclose(a, b, rtol=1e-12, atol=1e-15)


@pytest.mark.parametrize("complicated", [True, False], ids=["complicated", "simple"])
def test_rows_and_columns_agree(complicated):
    """The Jacobian by points (batched gradients) and by columns (forward mode)."""
    hand = Hand(_data(complicated))
    name, _ = rlang_ht.arguments(hand)
    m = program("ht")
    by_points = rlang_ht._point_rows(m, name, hand)()
    by_columns = rlang_ht._columns(m, name, hand)()
    assert by_points.shape == by_columns.shape == (3 * hand.n, 28 if complicated else 26)
    np.testing.assert_allclose(by_points, by_columns, rtol=1e-12, atol=1e-14)


@pytest.mark.parametrize("spoil, message", [
    (lambda d: d.update(theta=d["theta"][:20]), "26"),
    (lambda d: d["data"]["model"].update(parents=[0] + d["data"]["model"]["parents"][1:]),
     "parent"),
    (lambda d: d["data"].update(correspondences=[-1] + d["data"]["correspondences"][1:]),
     "correspondence"),
], ids=["theta", "parents", "correspondences"])
def test_inputs_the_inbounds_code_cannot_take_are_refused(spoil, message):
    """Note [A pose nobody reads is not taken back] (evals/ht.rev): its @inbounds
    indexing relies on the checks of `rlang_impl.ht.checked`."""
    data = _data(False)
    spoil(data)
    with pytest.raises((ValueError, IndexError), match=message):
        rlang_ht.prepare("objective", data)
