"""`rlang.jacrev(f, output, argnums=None)` (rlang/transforms.py): the Jacobian of one
output parameter per argument, shaped as JAX's `jacrev` shapes it, and under
`rlang.vmap` with the batch axis in front; on llvm, one batched forward run and a
batched laned gradient pass per LANES rows (Note [Batched Jacobians],
rlang/ad/batched.py), equal bit for bit to the items taken one by one."""
from __future__ import annotations

import numpy as np
import pytest

import rlang
from rlang.ad.jacobian_rows import LANES

SOURCE = """
function rot!(y!: f64[:], a, x: f64[:], n: i64)
    @routine begin
        c ← 0.0
        s ← 0.0
        c += cos(a)
        s += sin(a)
    end
    if a > 0.0
        y![0] += c * x[0] - s * x[1] + n
        y![1] += s * x[0] + c * x[1]
    else
        y![0] += x[0] * x[1] * a
        y![1] += exp(x[1]) * a
    end
    y![2] += a * a * x[2]
    ~@routine
end

function wide!(y!: f64[:], x: f64[:])
    for i = 0:length(y!) - 1
        y![i] += x[i % length(x)] * x[(i + 1) % length(x)] * (i + 1)
    end
end

function scalar!(y!, a)
    y! += a * a * a
end

function spin(z: complex, a)
    z += a * a
end

# t! is written, and y!'s Jacobian with respect to x goes through t!'s gradient
function flow!(y!: f64[:], t!: f64[:], x: f64[:])
    t![0] += x[0] * x[1]
    y![0] += t![0] * t![0]
    y![1] += x[1] * t![1]
end
"""

BACKENDS = ["interp", "llvm"]


@pytest.fixture(params=BACKENDS)
def m(request):
    return rlang.loads(SOURCE, backend=request.param)


def _rot_args(rng, a=None):
    return (np.zeros(3), rng.normal() if a is None else a, rng.normal(size=3), 2)


def test_shapes_follow_the_output_then_the_argument(m):
    y, a, x, n = _rot_args(np.random.default_rng(0), a=0.4)
    dy, da, dx, dn = rlang.jacrev(m.rot_, "y!")(y, a, x, n)
    assert dy.shape == (3, 3) and da.shape == (3,) and dx.shape == (3, 3) and dn is None
    np.testing.assert_array_equal(dy, np.eye(3))            # y! += …: the identity
    c, s = np.cos(a), np.sin(a)
    np.testing.assert_allclose(dx, [[c, -s, 0.0], [s, c, 0.0], [0.0, 0.0, a * a]],
                               rtol=1e-15)
    np.testing.assert_allclose(da, [-s * x[0] - c * x[1], c * x[0] - s * x[1],
                                    2 * a * x[2]], rtol=1e-14)
    assert np.array_equal(y, np.zeros(3))                   # the caller's arrays kept


def test_it_is_rlang_jacobian_split_by_argument(m):
    args = _rot_args(np.random.default_rng(1), a=-0.7)
    matrix = rlang.jacobian(m.rot_, args, inputs=["y!", "a", "x"], outputs="y!")
    dy, da, dx, _ = rlang.jacrev(m.rot_, 0)(*args)
    np.testing.assert_array_equal(np.concatenate([dy, da[:, None], dx], axis=1), matrix)


def test_argnums_picks_as_grad_does(m):
    args = _rot_args(np.random.default_rng(2))
    every = rlang.jacrev(m.rot_, "y!")(*args)
    da = rlang.jacrev(m.rot_, "y!", argnums=1)(*args)
    dx, da2 = rlang.jacrev(m.rot_, "y!", argnums=(2, -3))(*args)
    np.testing.assert_array_equal(da, every[1])
    np.testing.assert_array_equal(dx, every[2])
    np.testing.assert_array_equal(da2, every[1])
    by_name = rlang.jacrev(m.rot_, "y!", argnums=2)(y_=args[0], a=args[1], x=args[2], n=2)
    np.testing.assert_array_equal(by_name, every[2])


def test_a_scalar_of_a_scalar_is_a_float(m):
    dy, da = rlang.jacrev(m.scalar_, "y!")(0.0, 2.0)
    assert dy == 1.0 and da == 12.0 and isinstance(da, float)


@pytest.mark.parametrize("axes", [0, (0, 0, None, None)])
def test_vmap_of_jacrev_is_the_items_one_by_one(m, axes):
    rng = np.random.default_rng(3)
    count = 7
    ys, a, xs = np.zeros((count, 3)), rng.normal(size=count), rng.normal(size=(count, 3))
    x0 = xs[0]
    batch = (ys, a, xs if axes == 0 else x0, np.full(count, 2) if axes == 0 else 2)
    got = rlang.vmap(rlang.jacrev(m.rot_, "y!"), in_axes=axes)(*batch)
    jac = rlang.jacrev(m.rot_, "y!")
    items = [jac(np.zeros(3), a[k], xs[k] if axes == 0 else x0, 2) for k in range(count)]
    assert got[3] is None
    for j in range(3):
        expected = np.stack([np.asarray(item[j]) for item in items])
        assert got[j].shape == (count,) + expected.shape[1:]
        np.testing.assert_array_equal(got[j], expected)
    np.testing.assert_array_equal(ys, 0.0)                  # the caller's batches kept
    np.testing.assert_array_equal(batch[2], xs if axes == 0 else x0)


@pytest.mark.parametrize("rows", [1, 2, LANES, LANES + 1, 2 * LANES + 3])
def test_vmap_of_jacrev_over_groups_of_rows(m, rows):
    """More rows than a pass has lanes: each group starts from a copy of the forward's
    outputs; a last group with fewer rows than lanes fills the others with zeros."""
    rng = np.random.default_rng(rows)
    xs = rng.normal(size=(5, 3))
    got, = rlang.vmap(rlang.jacrev(m.wide_, "y!", argnums=(1,)))(np.zeros((5, rows)), xs)
    interp = rlang.loads(SOURCE)
    for k in range(5):
        expected = rlang.jacrev(interp.wide_, "y!", argnums=1)(np.zeros(rows), xs[k])
        np.testing.assert_array_equal(got[k], expected)


def test_vmap_of_jacrev_leaves_out_the_jacobians_nobody_reads(m):
    """argnums=1 on rot!: x, which rot! only reads, gets no Jacobian on llvm (its
    pass is built without x's gradient: Note [Gradients nobody reads],
    rlang/ad/derivatives.py); a's is the items' one by one."""
    rng = np.random.default_rng(5)
    count = 6
    ys, a, xs = np.zeros((count, 3)), rng.normal(size=count), rng.normal(size=(count, 3))
    got = rlang.vmap(rlang.jacrev(m.rot_, "y!", argnums=(1,)))(ys, a, xs, np.full(count, 2))
    jac = rlang.jacrev(m.rot_, "y!", argnums=1)
    expected = np.stack([np.asarray(jac(np.zeros(3), a[k], xs[k], 2)) for k in range(count)])
    assert len(got) == 1 and got[0].shape == (count, 3)
    np.testing.assert_allclose(got[0], expected, rtol=1e-14, atol=1e-15)
    if m.backend == "llvm":
        assert any(key[0] == "rot!" and key[3].startswith("grad") and key[3].endswith("-2")
                   for key in m.compiled._modules)


def test_vmap_of_jacrev_keeps_the_gradients_of_written_arguments(m):
    """argnums=2 on flow!: t! is not wanted, but flow! writes it and x's Jacobian
    reads its gradient, so the pass keeps it (and it starts from zeros)."""
    rng = np.random.default_rng(6)
    count = 5
    ts, xs = rng.normal(size=(count, 2)), rng.normal(size=(count, 2))
    got, = rlang.vmap(rlang.jacrev(m.flow_, "y!", argnums=(2,)))(np.zeros((count, 2)),
                                                                  ts.copy(), xs)
    for k in range(count):
        t0 = ts[k, 0] + xs[k, 0] * xs[k, 1]
        expected = [[2 * t0 * xs[k, 1], 2 * t0 * xs[k, 0]], [0.0, ts[k, 1]]]
        np.testing.assert_allclose(got[k], expected, rtol=1e-13, atol=1e-14)


def test_llvm_takes_one_forward_run_and_a_laned_pass_per_group(monkeypatch):
    m = rlang.loads(SOURCE, backend="llvm")
    from rlang.backends.llvm import backend

    symbols = []
    original = backend.LlvmFunctions.run_batch
    monkeypatch.setattr(backend.LlvmFunctions, "run_batch",
                        lambda self, *a: symbols.append(a[1]) or original(self, *a))
    rows = LANES + 1
    rlang.vmap(rlang.jacrev(m.wide_, "y!"))(np.zeros((50, rows)), np.ones((50, 3)))
    assert len(symbols) == 3                # the forward run, two laned passes
    assert symbols[0].startswith("rev_wide_")
    assert all(s.endswith(f"__x{LANES}") for s in symbols[1:])


def test_complex_arguments_are_taken_item_by_item_with_the_same_values():
    results = []
    for backend in BACKENDS:
        m = rlang.loads(SOURCE, backend=backend)
        results.append(rlang.vmap(rlang.jacrev(m.spin, "z"))(
            np.zeros(3, dtype=complex), np.array([0.5, 1.0, 2.0])))
    np.testing.assert_array_equal(results[0][1], [1.0, 2.0, 4.0])
    for a, b in zip(*results):
        np.testing.assert_array_equal(a, b)


@pytest.mark.parametrize("call, error, message", [
    (lambda m: rlang.jacrev(m.rot_, None), rlang.RlangTypeError, "the output is a parameter"),
    (lambda m: rlang.jacrev(m.rot_, "z"), rlang.RlangError, "`z` is not a parameter"),
    (lambda m: rlang.jacrev(m.rot_, "y!", argnums=5), rlang.RlangTypeError, "argnums"),
    (lambda m: rlang.jacrev(len, "y!"), rlang.RlangTypeError, "function of a loaded"),
    (lambda m: rlang.vmap(rlang.jacrev(m.rot_, "y!"))(
        np.zeros((0, 3)), np.zeros(0), np.zeros((0, 3)), np.zeros(0, dtype=np.int64)),
     rlang.RlangTypeError, "empty"),
])
def test_bad_uses_are_clear_errors(m, call, error, message):
    with pytest.raises(error, match=message):
        out = call(m)
        if callable(out):
            out(*_rot_args(np.random.default_rng(0)))
