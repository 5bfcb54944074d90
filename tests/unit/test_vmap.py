"""`rlang.vmap` (LANGUAGE.md §13; rlang/batching.py): calls, inverses and gradients
over a batch axis, equal to the items run one by one; on the llvm backend one
native call per pass (rlang/backends/llvm/batch.py, rlang/ad/batched.py)."""
from __future__ import annotations

import numpy as np
import pytest

import rlang
from rlang.numbers import Fixed, FixedArray, ULog, ULogArray, fixed_array, ulog_array

SOURCE = """
function f(y!, a, x: f64[:])
    for i = 0:length(x) - 1
        y! += a * x[i] * x[i]
    end
end

function shift!(v!: f64[:], s: f64)
    for i = 0:length(v!) - 1
        v![i] += s * s
    end
end

function kinds(w: complex, z: complex, k: i32, q: fixed, l: ulog, h: f32, b: bool)
    w += z * z * k
    q += 0.5
    l *= ulog(2.0)
    h += 1.5
    if b
        k += 1
    end
end

function checked(y!, a)
    t ← a
    y! += t * t
    t → 1.0
end

function fact(n: i64, r!: f64)
    if n > 0
        r! += n
        fact(n - 1, r!)
    end
end
"""

BACKENDS = ["interp", "llvm"]


@pytest.fixture(params=BACKENDS)
def m(request):
    return rlang.loads(SOURCE, backend=request.param)


def one_by_one(call, *batches):
    """The outputs of `call` on each item, stacked (the reference)."""
    outputs = [call(*items) for items in zip(*batches)]
    return [np.array([o[j] for o in outputs]) for j in range(len(outputs[0]))]


def test_a_call_maps_every_argument(m):
    rng = np.random.default_rng(0)
    ys, a, x = rng.random(6), rng.random(6), rng.random((6, 4))
    expected = one_by_one(lambda y, b, v: m.f(y, b, v.copy()), ys, a, x)
    y_out, a_out, x_out = rlang.vmap(m.f)(ys, a, x)
    np.testing.assert_allclose(y_out, expected[0], rtol=1e-15)
    np.testing.assert_array_equal(a_out, a)
    assert x_out is not None and np.shares_memory(x_out, x)
    np.testing.assert_array_equal(ys, expected[0] * 0 + ys)     # scalars: new arrays


def test_in_axes_none_repeats_and_other_axes_move_to_the_front(m):
    v = np.arange(12.0).reshape(3, 4)              # items along axis 1
    before = v.copy()
    out_v, out_s = rlang.vmap(m.shift_, in_axes=(1, None))(v, 2.0)
    np.testing.assert_array_equal(v, before + 4.0)             # in place
    assert out_v.shape == (4, 3) and np.shares_memory(out_v, v)
    np.testing.assert_array_equal(out_s, [2.0] * 4)
    assert not out_s.flags.writeable
    (~m.shift_)(v[:, 0], 2.0)                   # the inverse runs over the batch too
    rlang.vmap(~m.shift_, in_axes=(1, None))(v[:, 1:], 2.0)
    np.testing.assert_array_equal(v, before)


def test_keyword_arguments_are_batched_on_axis_0(m):
    ys, x = np.zeros(3), np.ones((3, 2))
    out = rlang.vmap(m.f, in_axes=(0,))(ys, a=np.array([1.0, 2.0, 3.0]), x=x)
    np.testing.assert_array_equal(out[0], [2.0, 4.0, 6.0])


@pytest.mark.parametrize("axes", [0, (0, 0, None), (0, None, 0)])
def test_gradients_have_the_batch_axis_for_every_argument(m, axes):
    rng = np.random.default_rng(1)
    ys, a, x = rng.random(5), rng.random(5), rng.random((5, 3))
    args = [ys, a, x]
    unbatched = {k for k, axis in enumerate(axes if isinstance(axes, tuple) else (0,) * 3)
                 if axis is None}
    args = [arg[0] if k in unbatched else arg for k, arg in enumerate(args)]
    kept = [np.array(arg, copy=True) for arg in args]
    value, grads = rlang.vmap(rlang.value_and_grad(m.f, "y!"), in_axes=axes)(*args)
    for k in range(5):
        items = [arg if j in unbatched else arg[k] for j, arg in enumerate(args)]
        items = [np.array(i, copy=True) if isinstance(i, np.ndarray) else i for i in items]
        v, g = rlang.value_and_grad(m.f, "y!")(*items)
        assert value[k] == pytest.approx(v, rel=1e-14)
        for j in range(3):
            np.testing.assert_allclose(grads[j][k], g[j], rtol=1e-14)
    for arg, saved in zip(args, kept):                  # the caller's arrays are kept
        np.testing.assert_array_equal(arg, saved)
    picked = rlang.vmap(rlang.grad(m.f, "y!", argnums=(2, 1)), in_axes=axes)(*args)
    np.testing.assert_array_equal(picked[0], grads[2])
    np.testing.assert_array_equal(picked[1], grads[1])


def test_every_scalar_kind_keeps_its_type(m):
    n = 3
    w = np.array([1 + 1j, 2 + 0j, 0 + 1j])
    z = np.array([0.5 + 0.5j, 1 + 0j, 2 - 1j])
    k = np.array([1, 2, 3], dtype=np.int32)
    q = fixed_array([0.25, 0.5, 1.0])
    l_ = ulog_array([1.0, 2.0, 4.0])
    h = np.array([0.5, 1.0, 1.5], dtype=np.float32)
    b = np.array([True, False, True])
    out = rlang.vmap(m.kinds)(w, z, k, q, l_, h, b)
    for j in range(n):
        single = m.kinds(w[j], z[j], int(k[j]), Fixed(int(q.view(np.ndarray)[j])),
                         ULog(float(l_.view(np.ndarray)[j])), float(h[j]), bool(b[j]))
        assert out[0][j] == single[0]
        assert int(out[2][j]) == single[2]
        assert out[3].view(np.ndarray)[j] == single[3].raw
        assert out[4].view(np.ndarray)[j] == single[4].log
        assert out[5][j] == single[5]
    assert out[2].dtype == np.int32 and out[5].dtype == np.float32
    assert isinstance(out[3], FixedArray) and isinstance(out[4], ULogArray)
    assert out[6].dtype == np.bool_


def test_ulog_and_complex_losses_seed_as_a_single_gradient_does(m):
    z = np.array([0.5 + 0.5j, 1 + 0j])
    w = np.array([1 + 1j, 2 + 0j])
    args = (w, z, np.int32([1, 2]), fixed_array([0.0, 0.0]), ulog_array([1.0, 3.0]),
            np.float32([0, 0]), np.array([False, False]))
    for loss in ("w.im", "w.re", "l"):
        got = rlang.vmap(rlang.grad(m.kinds, loss))(*args)
        for j in range(2):
            single = rlang.grad(m.kinds, loss)(w[j], z[j], int(args[2][j]), Fixed(0),
                                               ULog.from_value([1.0, 3.0][j]), 0.0, False)
            for position in (0, 1, 4):
                assert got[position][j] == pytest.approx(single[position], rel=1e-14)


def test_integer_batches_are_widened_for_read_only_float_parameters(m):
    x = np.arange(6).reshape(3, 2)                  # int64 items for `x: f64[:]`
    out = rlang.vmap(m.f)(np.zeros(3), np.ones(3, dtype=np.int64), x)
    np.testing.assert_array_equal(out[0], [1.0, 13.0, 41.0])
    assert out[2].dtype == np.float64


def test_strided_and_reversed_batches(m):
    x = np.arange(40.0).reshape(10, 4)[::-3, ::2]         # 4 items of 2, strided
    out = rlang.vmap(m.f)(np.zeros(4), np.ones(4), x)
    np.testing.assert_array_equal(out[0], (x * x).sum(axis=1))


def test_an_item_that_fails_is_named(m):
    with pytest.raises(rlang.ReversibilityError) as caught:
        rlang.vmap(m.checked)(np.zeros(4), np.array([1.0, 1.0, 3.0, 1.0]))
    assert caught.value.batch_item == 2
    assert "raised by item 2 of the batch" in caught.value.render()


def test_recursion_runs_in_a_batch(m):
    out = rlang.vmap(m.fact)(np.array([3, 10, 0]), np.zeros(3))
    np.testing.assert_array_equal(out[1], [6.0, 55.0, 0.0])


def test_an_empty_batch_of_calls_runs_nothing(m):
    out = rlang.vmap(m.f)(np.zeros(0), np.zeros(0), np.zeros((0, 3)))
    assert out[0].shape == (0,) and out[2].shape == (0, 3)


@pytest.mark.parametrize("call, message", [
    (lambda m: rlang.vmap(m.shift_, in_axes=(None, 0))(np.zeros(2), np.ones(3)),
     "writes its argument `v!`, which is not batched"),
    (lambda m: rlang.vmap(m.f)(np.zeros(2), np.ones(3), np.ones((3, 2))),
     "the batch sizes differ: `y!` has 2 items, `a` has 3"),
    (lambda m: rlang.vmap(m.f, in_axes=(0, 0, 2))(np.zeros(2), np.ones(2), np.ones((2, 3))),
     "has no axis 2 to map over"),
    (lambda m: rlang.vmap(m.f, in_axes=None)(0.0, 1.0, np.ones(2)),
     "needs at least one batched argument"),
    (lambda m: rlang.vmap(m.f, in_axes=(0, 0))(np.zeros(2), np.ones(2), np.ones((2, 2))),
     "in_axes has 2 entries for 3 positional argument(s)"),
    (lambda m: rlang.vmap(m.f)(0.0, np.ones(2), np.ones((2, 2))),
     "is a scalar, which has no axis to map over"),
    (lambda m: rlang.vmap(m.f, in_axes=1.5), "in_axes takes ints"),
    (lambda m: rlang.vmap(m.f)(np.zeros(2), [1.0, 2.0], [[1.0], [2.0, 3.0]]),
     "argument `x` is not an array NumPy can read"),
    (lambda m: rlang.vmap(3), "takes a function"),
])
def test_bad_batches_are_clear_errors(m, call, message):
    with pytest.raises(rlang.RlangTypeError, match=message.replace("(", r"\(")
                       .replace(")", r"\)")):
        call(m)


def test_a_python_function_is_mapped_item_by_item(m):
    def energy(a, x):
        return rlang.grad(m.f, "y!", argnums=2)(0.0, a, x), float(a) * 2
    gx, twice = rlang.vmap(energy, in_axes=(0, None))(np.array([1.0, 2.0]), np.array([1.0, 3.0]))
    np.testing.assert_array_equal(gx, [[2.0, 6.0], [4.0, 12.0]])
    np.testing.assert_array_equal(twice, [2.0, 4.0])


def test_llvm_batches_make_one_native_call_per_pass(monkeypatch):
    m = rlang.loads(SOURCE, backend="llvm")
    from rlang.backends.llvm import backend

    calls = []
    monkeypatch.setattr(backend.LlvmFunctions, "run", lambda *a: calls.append(a))
    batched = []
    original = backend.LlvmFunctions.run_batch
    monkeypatch.setattr(backend.LlvmFunctions, "run_batch",
                        lambda self, *a: batched.append(a[1]) or original(self, *a))
    rlang.vmap(rlang.grad(m.f, "y!"))(np.zeros(100), np.ones(100), np.ones((100, 3)))
    assert calls == [] and len(batched) == 2            # the forward pass, the gradient pass


def test_the_cuda_backend_runs_the_items_one_by_one_with_the_same_results():
    source = """
function f(y!: f64[:], x: f64[:])
    @parallel for i = 0:length(x) - 1
        y![i] += x[i] * x[i]
    end
end"""
    x = np.arange(12.0).reshape(3, 4)
    results = []
    for backend in ("cuda", "llvm"):
        m = rlang.loads(source, backend=backend)
        y = np.zeros((3, 4))
        results.append((rlang.vmap(m.f)(y, x)[0].copy(),
                        rlang.vmap(rlang.grad(m.f, ("y!", 1)))(y, x)[1]))
    np.testing.assert_array_equal(results[0][0], x * x)
    for a, b in zip(*results):
        np.testing.assert_array_equal(a, b)
