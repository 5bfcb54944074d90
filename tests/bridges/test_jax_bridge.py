"""`rlang.jax.wrap` (rlang/bridges/jax.py, Note [The JAX bridge]): a rev function
inside JAX under jit, grad, value_and_grad, hessian and vmap, its derivatives
rlang's own, on the interpreter and the llvm backend."""
from __future__ import annotations

import contextlib
import subprocess
import sys

import numpy as np
import pytest

jax = pytest.importorskip("jax")
import jax.numpy as jnp  # noqa: E402

import rlang  # noqa: E402

from bridge_programs import PROGRAMS  # noqa: E402

SOURCE = """
function energy(e!: f64, x: f64[:], s, k: i64)
    e! += x[0] * x[0] * x[1] + s * s * x[1] * k
end
"""
ARGS = (0.0, np.array([1.0, 2.0]), 3.0, 2)


def enable_x64():
    """64-bit floats inside the block (jax.enable_x64 since JAX 0.8)."""
    if callable(getattr(jax, "enable_x64", None)):
        return jax.enable_x64(True)
    from jax.experimental import enable_x64 as older

    return older()


@pytest.fixture(params=["interp", "llvm"])
def m(request):
    return rlang.loads(SOURCE, backend=request.param)


def test_a_loss_under_jit_grad_and_value_and_grad(m):
    with enable_x64():
        g = rlang.jax.wrap(m.energy, loss="e!")
        x = jnp.array(ARGS[1])
        assert float(g(0.0, x, 3.0, 2)) == 38.0
        assert float(jax.jit(g)(0.0, x, 3.0, 2)) == 38.0
        dx, ds = jax.jit(jax.grad(g, argnums=(1, 2)))(0.0, x, 3.0, 2)
        expected = rlang.gradient(m.energy, ARGS, loss="e!")
        np.testing.assert_array_equal(np.asarray(dx), expected[1])
        assert float(ds) == expected[2]
        value, dx = jax.value_and_grad(g, argnums=1)(0.0, x, 3.0, 2)
        assert float(value) == 38.0 and np.asarray(dx).tolist() == expected[1].tolist()
        assert dx.dtype == jnp.float64


def test_a_losss_hessian_is_rlangs(m):
    with enable_x64():
        g = rlang.jax.wrap(m.energy, loss="e!")
        blocks = jax.jit(jax.hessian(g, argnums=(0, 1, 2)))(0.0, jnp.array(ARGS[1]), 3.0, 2)
        full = np.block([[np.atleast_2d(np.asarray(b)).reshape(np.size(r), np.size(c))
                          for b, c in zip(row, ARGS[:3])] for row, r in zip(blocks, ARGS[:3])])
        np.testing.assert_array_equal(full, rlang.hessian(m.energy, ARGS, loss="e!"))


def test_vmap_maps_over_a_batch(m):
    with enable_x64():
        g = rlang.jax.wrap(m.energy, loss="e!")
        batch = jnp.array([[1.0, 2.0], [3.0, 4.0]])
        values = jax.vmap(g, in_axes=(None, 0, None, None))(0.0, batch, 3.0, 2)
        assert np.asarray(values).tolist() == [38.0, 3.0 * 3.0 * 4.0 + 9.0 * 4.0 * 2]
        grads = jax.vmap(jax.grad(g, argnums=1), in_axes=(None, 0, None, None))(
            0.0, batch, 3.0, 2)
        assert np.asarray(grads).tolist() == [[4.0, 19.0], [24.0, 27.0]]


def test_float32_arguments_come_back_in_float32(m):
    g = rlang.jax.wrap(m.energy, loss="e!")
    x = jnp.array([1.0, 2.0], dtype=jnp.float32)
    value, dx = jax.value_and_grad(g, argnums=1)(jnp.float32(0.0), x, jnp.float32(3.0), 2)
    assert value.dtype == jnp.float32 and dx.dtype == jnp.float32
    assert float(value) == 38.0 and np.asarray(dx).tolist() == [4.0, 19.0]


def test_outputs_and_their_reverse_mode(m):
    with enable_x64():
        h = rlang.jax.wrap(m.energy)
        x = jnp.array(ARGS[1])
        outputs = jax.jit(h)(0.0, x, 3.0, 2)
        assert [np.asarray(o).tolist() for o in outputs] == [38.0, [1.0, 2.0], 3.0, 2]
        assert outputs[3].dtype == jnp.int64
        dx, ds = jax.grad(lambda x, s: h(0.0, x, s, 2)[0], argnums=(0, 1))(x, 3.0)
        _, pull = rlang.vjp(m.energy, *ARGS)
        expected = pull((1.0, None, None, None))
        assert np.asarray(dx).tolist() == expected[1].tolist() and float(ds) == expected[2]


def test_keyword_arguments_and_bad_wraps(m):
    with enable_x64():
        g = rlang.jax.wrap(m.energy, loss="e!")
        assert float(g(e_=0.0, x=jnp.array([1.0, 2.0]), s=3.0, k=2)) == 38.0
    with pytest.raises(rlang.RlangTypeError, match="takes a function of a loaded program"):
        rlang.jax.wrap(print)


def test_importing_rlang_imports_no_jax():
    code = "import sys, rlang; rlang.loads('function f(x)\\n    x += 1.0\\nend\\n').f(1.0); " \
           "print('jax' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True).stdout
    assert out.strip() == "False"


@pytest.mark.parametrize("backend", ["interp", "llvm"])
@pytest.mark.parametrize("program", PROGRAMS, ids=lambda p: p.name)
def test_derivatives_equal_jaxs_own_under_jit_vmap_and_hessian(program, backend):
    """tests/bridge_programs.py: each function in rev and in jax.numpy."""
    with enable_x64():
        m = rlang.loads(program.source, backend=backend)
        wrapped = rlang.jax.wrap(m.f, loss="y!")
        values = [jnp.asarray(v) for v in program.arguments(np.random.default_rng(7))]
        argnums = tuple(range(len(values)))

        def ours(*xs):
            return wrapped(0.0, *xs)

        def theirs(*xs):
            return program.reference(jnp, *xs)

        for got, expected in [
                (jax.jit(ours)(*values), theirs(*values)),
                (jax.jit(jax.grad(ours, argnums))(*values), jax.grad(theirs, argnums)(*values)),
                (jax.hessian(ours, argnums)(*values), jax.hessian(theirs, argnums)(*values))]:
            for a, b in zip(jax.tree_util.tree_leaves(got), jax.tree_util.tree_leaves(expected)):
                np.testing.assert_allclose(np.asarray(a), np.asarray(b), rtol=1e-12, atol=1e-12)
        batch = jnp.stack([values[0], 2.0 * values[0], -values[0]])
        axes = (0,) + (None,) * (len(values) - 1)
        got = jax.jit(jax.vmap(jax.grad(ours, argnums), in_axes=axes))(batch, *values[1:])
        expected = jax.vmap(jax.grad(theirs, argnums), in_axes=axes)(batch, *values[1:])
        for a, b in zip(jax.tree_util.tree_leaves(got), jax.tree_util.tree_leaves(expected)):
            np.testing.assert_allclose(np.asarray(a), np.asarray(b), rtol=1e-12, atol=1e-12)


def test_with_x64_the_compiled_code_is_called_through_the_ffi(monkeypatch):
    """rlang/bridges/jax_ffi.py: no pure_callback for f64 arguments on llvm, in the
    loss function, its gradient and the outputs mode's forward and backward."""
    with enable_x64():
        m = rlang.loads(SOURCE, backend="llvm")
        monkeypatch.setattr(jax, "pure_callback", None)     # would fail if called
        x = jnp.array([1.0, 2.0])
        energy = rlang.jax.wrap(m.energy, loss="e!")
        value, grads = jax.jit(jax.value_and_grad(energy, argnums=(1, 2)))(0.0, x, 3.0, 2)
        expected = rlang.gradient(m.energy, (0.0, np.array([1.0, 2.0]), 3.0, 2), loss="e!")
        assert float(value) == 38.0
        np.testing.assert_array_equal(grads[0], expected[1])
        assert float(grads[1]) == expected[2]
        element = rlang.jax.wrap(m.energy, loss=("x", 1))
        np.testing.assert_array_equal(jax.grad(element, argnums=1)(0.0, x, 3.0, 2), [0.0, 1.0])
        outputs = rlang.jax.wrap(m.energy)
        e, new_x, s, k = jax.jit(outputs)(0.0, x, 3.0, 2)
        assert float(e) == 38.0 and k.dtype == jnp.int64
        pulled = jax.grad(lambda x, s: outputs(0.0, x, s, 2)[0], argnums=(0, 1))(x, 3.0)
        np.testing.assert_array_equal(pulled[0], expected[1])
        batch = jax.vmap(jax.grad(energy, argnums=1), in_axes=(None, 0, None, None))(
            0.0, jnp.stack([x, 2 * x]), 3.0, 2)
        np.testing.assert_array_equal(batch[1], rlang.gradient(
            m.energy, (0.0, np.array([2.0, 4.0]), 3.0, 2), loss="e!")[1])


def test_a_failed_check_inside_jit_is_the_rlang_error():
    with enable_x64():
        m = rlang.loads("""
function bad(y!, a)
    t ← a
    y! += t
    t → 1.0
end""", backend="llvm")
        wrapped = jax.jit(rlang.jax.wrap(m.bad, loss="y!"))
        assert float(wrapped(0.0, 1.0)) == 1.0
        with pytest.raises(Exception, match=r"deallocation check failed: t = 2.0, "
                                            r"expected 1.0") as caught:
            wrapped(0.0, 2.0)
        assert "<string>:5:5" in str(caught.value)


@pytest.mark.parametrize("backend", ["interp", "llvm"])
@pytest.mark.parametrize("program", PROGRAMS[:5], ids=lambda p: p.name)
def test_outputs_in_forward_and_reverse_mode(program, backend):
    """Note [Outputs in both modes]: without a loss, jvp, jacfwd, jacrev and vmap of
    the outputs equal JAX's own derivatives of the same function."""
    with enable_x64():
        m = rlang.loads(program.source, backend=backend)
        outputs = rlang.jax.wrap(m.f)
        values = [jnp.asarray(v) for v in program.arguments(np.random.default_rng(11))]
        argnums = tuple(range(len(values)))

        def ours(*xs):
            return outputs(0.0, *xs)[0]

        def theirs(*xs):
            return program.reference(jnp, *xs)

        directions = [jnp.ones_like(v) for v in values]
        got = jax.jvp(ours, values, directions)
        expected = jax.jvp(theirs, values, directions)
        np.testing.assert_allclose(got[1], expected[1], rtol=1e-12, atol=1e-12)
        for transform in (jax.jacfwd, jax.jacrev):
            got = jax.jit(transform(ours, argnums))(*values)
            expected = jax.grad(theirs, argnums)(*values)
            for a, b in zip(got, expected):
                np.testing.assert_allclose(np.asarray(a), np.asarray(b), rtol=1e-12, atol=1e-12)
        batch = jnp.stack([values[0], 2.0 * values[0]])
        axes = (0,) + (None,) * (len(values) - 1)
        got = jax.vmap(jax.jacfwd(ours), in_axes=axes)(batch, *values[1:])
        expected = jax.vmap(jax.grad(theirs), in_axes=axes)(batch, *values[1:])
        np.testing.assert_allclose(np.asarray(got), np.asarray(expected), rtol=1e-12, atol=1e-12)


def test_arguments_f_cannot_take_are_refused_where_the_call_is_traced():
    m = rlang.loads(SOURCE, backend="llvm")
    for wrapped in (rlang.jax.wrap(m.energy, loss="e!"), rlang.jax.wrap(m.energy)):
        with pytest.raises(rlang.RlangTypeError, match="takes 4 argument"):
            jax.jit(wrapped)(0.0, jnp.ones(2), 3.0)
        with pytest.raises(rlang.RlangTypeError, match=r"must be an f64\[:\], got an f64\[:,:\]"):
            jax.jit(wrapped)(0.0, jnp.ones((2, 2)), 3.0, 2)


SECOND_ORDER = [("hessian", jax.hessian),
                ("jacrev∘jacrev", lambda g, n: jax.jacrev(jax.jacrev(g, n), n)),
                ("jacfwd∘jacfwd", lambda g, n: jax.jacfwd(jax.jacfwd(g, n), n)),
                ("jacrev∘jacfwd", lambda g, n: jax.jacrev(jax.jacfwd(g, n), n))]


@contextlib.contextmanager
def global_x64():
    """64-bit floats for every thread inside the block: host callbacks inside loops
    (`lax.map`) may run on XLA's threads, which a `jax.enable_x64()` block does not
    reach (docs/interop.md)."""
    old = jax.config.jax_enable_x64
    jax.config.update("jax_enable_x64", True)
    try:
        yield
    finally:
        jax.config.update("jax_enable_x64", old)


def _assert_nested_close(got, expected):
    for a, b in zip(jax.tree_util.tree_leaves(got), jax.tree_util.tree_leaves(expected)):
        np.testing.assert_allclose(np.asarray(a), np.asarray(b), rtol=1e-10, atol=1e-10)


@pytest.mark.parametrize("backend", ["interp", "llvm"])
@pytest.mark.parametrize("program", PROGRAMS[:3], ids=lambda p: p.name)
def test_second_derivatives_of_outputs_in_every_composition(program, backend):
    """Note [Outputs in both modes]: without a loss, a function of the outputs has
    JAX's own Hessian under hessian, jacrev∘jacrev, jacfwd∘jacfwd and jacrev∘jacfwd,
    also when it is not linear in the outputs (the cotangents then depend on x)."""
    with global_x64():
        m = rlang.loads(program.source, backend=backend)
        outputs = rlang.jax.wrap(m.f)
        values = [jnp.asarray(v) for v in program.arguments(np.random.default_rng(5))]
        argnums = tuple(range(len(values)))

        def ours(*xs):
            outs = outputs(0.0, *xs)
            return outs[0] ** 2 + sum(jnp.sum(jnp.sin(o)) for o in outs[1:])

        def theirs(*xs):
            return program.reference(jnp, *xs) ** 2 + sum(jnp.sum(jnp.sin(x)) for x in xs)

        expected = jax.hessian(theirs, argnums)(*values)
        for name, transform in SECOND_ORDER:
            _assert_nested_close(jax.jit(transform(ours, argnums))(*values), expected)


@pytest.mark.parametrize("backend", ["interp", "llvm"])
def test_the_hessian_of_array_outputs_and_of_a_loss_in_reverse_over_reverse(backend):
    with global_x64():
        m = rlang.loads("""
function g(x: f64[:], y: f64[:], k: i64)
    for i = 0:length(x) - 1
        y[i] += sin(x[i]) * x[(i + 1) % length(x)] * k
    end
end
function h(e!: f64, x: f64[:])
    for i = 0:length(x) - 1
        e! += exp(x[i]) * x[(i + 1) % length(x)]
    end
end""", backend=backend)
        x, y = jnp.array([0.3, -0.7, 1.2]), jnp.array([1.0, 2.0, 3.0])

        def theirs(x, y):
            return y + jnp.sin(x) * jnp.roll(x, -1) * 2

        wrapped = rlang.jax.wrap(m.g)
        expected = jax.hessian(theirs, (0, 1))(x, y)
        for name, transform in SECOND_ORDER:
            got = jax.jit(transform(lambda x, y: wrapped(x, y, 2)[1], (0, 1)))(x, y)
            _assert_nested_close(got, expected)
        loss = rlang.jax.wrap(m.h, loss="e!")
        expected = jax.hessian(lambda x: jnp.sum(jnp.exp(x) * jnp.roll(x, -1)))(x)
        for name, transform in SECOND_ORDER:
            _assert_nested_close(jax.jit(transform(lambda x: loss(0.0, x), 0))(x), expected)


def test_a_third_derivative_is_refused_by_name():
    with global_x64():
        m = rlang.loads(SOURCE, backend="llvm")
        outputs = rlang.jax.wrap(m.energy)
        with pytest.raises(NotImplementedError, match="rlang_second"):
            jax.jacfwd(jax.hessian(lambda x: outputs(0.0, x, 3.0, 2)[0]))(jnp.array([1.0, 2.0]))
