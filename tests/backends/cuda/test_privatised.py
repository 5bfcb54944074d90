"""Gradients that every iteration of a kernel adds to, gathered per block in shared
memory or per thread in rows (deterministic mode) before they reach their arrays
(Note [Privatised gradients on the GPU], rlang/backends/cuda/privatised.py): every
variant agrees with the interpreter, deterministic mode gives the same bits on
every run, the launches are counted, and a failed check in a privatised kernel is
the interpreter's error."""
from __future__ import annotations

import re

import numpy as np
import pytest

import rlang
from rlang.ad.adjoint_ir import AdjointFunction
from rlang.backends.cuda import launches
from rlang.ir.nodes import symbol_of
from rlang.lower.statements import type_of_value

SOURCE = """
function point(o, x: f64[:,:], i, alphas: f64[:], means: f64[:,:])
    for k = 0:length(alphas) - 1
        for j = 0:size(x, 1) - 1
            o += alphas[k] * (x[i, j] - means[k, j]) ** 2
        end
    end
end

function mixture(out: f64[:], x: f64[:,:], alphas: f64[:], means: f64[:,:], w, c: complex[:], z)
    @parallel for i = 0:length(out) - 1
        point(out[i], x, i, alphas, means)
        out[i] += w * x[i, 0] + real(c[i % 3] * z)
    end
end

function spread(y: f64[:], v: f64[:])
    @parallel for i = 0:length(y) - 1
        for k = 0:length(v) - 1
            y[i] += v[k] * v[k]
        end
    end
end

function guarded(y: f64[:], x: f64[:], w)
    @parallel for i = 0:length(x) - 1
        if (x[i] > 0.0, y[i] > 0.0)
            y[i] += w * x[i]
        end
    end
end
"""
N = 37

CUDA, INTERP = (rlang.loads(SOURCE, backend=b) for b in ("cuda", "interp"))


def _inputs():
    rng = np.random.default_rng(3)
    return (np.zeros(N), rng.standard_normal((N, 3)), rng.standard_normal(4),
            rng.standard_normal((4, 3)), 0.7, rng.standard_normal(3) + 1j * rng.standard_normal(3),
            0.3 - 0.4j)


@pytest.fixture(params=["plain", "shared", "rows"])
def variant(request, monkeypatch):
    """Run the privatised kernels as `variant`: the plain kernel (sums too large for
    shared memory), the block copies in shared memory, or deterministic rows."""
    if request.param == "plain":
        monkeypatch.setattr(launches, "SHARED_BYTES", 0)
    launches.set_deterministic(request.param == "rows")
    yield request.param
    launches.set_deterministic(False)


def _gradient(module):
    return rlang.gradient(module.mixture, _inputs(), loss="out[5]")


def test_the_sums_of_the_mixture_are_privatised():
    """means̄, alphas̄, c̄ (complex pairs) and the boxes of w̄ and z̄ are the loop's
    private sums; x̄ (each pass its own row) is not."""
    _gradient(CUDA)
    program = next(p for key, p in CUDA.compiled._programs.items()
                   if key[0] == "mixture" and key[3] == "grad")
    plan, = program.program.kernels
    assert sorted(v.name for v in plan.private) == \
        ["alphas·grad", "c·grad", "means·grad", "w·grad", "z·grad"]
    source = program.program.device_source
    assert "def K0_shared(" in source and "def K0_rows(" in source and "def K0_sums(" in source
    # x̄[i, 0], added to by pass i alone, takes a plain add in the kernel's body
    plain = source[source.index("def K0("):source.index("def K0_shared(")]
    assert "x·grad" in {v.name for v in plan.own}
    assert "cuda.atomic.add(x_grad" not in plain
    assert re.search(r"x_grad_\d+\[_i\d+, _i\d+\] = \(", plain)


def test_every_variant_agrees_with_the_interpreter(variant):
    expected = _gradient(INTERP)
    rlang.cuda.reset_stats()
    got = _gradient(CUDA)
    launched = rlang.cuda.stats()["launches"]
    for g, e in zip(got, expected):
        np.testing.assert_allclose(g, e, rtol=1e-12, atol=1e-12)
    # forward, the gradient buffers' fill, the pass (and in deterministic mode the
    # kernel that adds the rows up)
    assert launched == (4 if variant == "rows" else 3)


def test_deterministic_mode_gives_the_same_bits_on_every_run():
    launches.set_deterministic(True)
    try:
        runs = [_gradient(CUDA) for _ in range(3)]
    finally:
        launches.set_deterministic(False)
    for run in runs[1:]:
        for a, b in zip(run, runs[0]):
            assert np.array_equal(np.asarray(a), np.asarray(b))


def test_the_public_switch():
    assert not rlang.cuda.is_deterministic()
    rlang.cuda.set_deterministic(True)
    try:
        assert rlang.cuda.is_deterministic() and launches.is_deterministic()
    finally:
        rlang.cuda.set_deterministic(False)
    assert not rlang.cuda.is_deterministic()


def _pass_from(module, y, x, w):
    """The gradient pass of `guarded` run from outputs given here (not from f's)."""
    functions = module.compiled
    outputs = [y, x, w]
    types = tuple(type_of_value(v) for v in outputs)
    native = functions.native("guarded", types, False, derivative="grad")
    symbol = AdjointFunction.symbol(symbol_of("guarded", types, True))
    return functions.run(native, symbol, outputs + [np.ones(N), np.zeros(N), 0.0])


def test_a_failed_check_in_a_privatised_kernel_is_the_interpreters_error(variant):
    """Backward, `if (y[i] > 0, x[i] > 0)` finds y[i] = 0 where x[i] > 0: the
    iterations that fail leave early, the others reach the block's barrier, and the
    error is the one the plain kernel reports: the first failure in the order of the
    backward loop, i = 36 down to 0."""
    x = np.linspace(-1.0, 1.0, N)
    with pytest.raises(rlang.RlangError) as caught:
        _pass_from(CUDA, np.zeros(N), x, 2.0)
    launches.set_deterministic(False)
    with pytest.raises(rlang.RlangError) as plain:
        with pytest.MonkeyPatch.context() as patch:
            patch.setattr(launches, "SHARED_BYTES", 0)
            _pass_from(CUDA, np.zeros(N), x, 2.0)
    assert caught.value.message == plain.value.message
    assert caught.value.notes == plain.value.notes
    assert "iteration `i = 36`" in " ".join(caught.value.notes)
    program = next(p for key, p in CUDA.compiled._programs.items()
                   if key[0] == "guarded" and key[3] == "grad")
    assert [v.name for v in program.program.kernels[0].private] == ["w·grad"]


def test_sums_with_no_elements(variant):
    """v̄ is the loop's only sum; with an empty v there is nothing to gather."""
    for v in (np.array([0.5, -2.0]), np.zeros(0)):
        got = rlang.gradient(CUDA.spread, (np.zeros(6), v), loss="y[2]")
        expected = rlang.gradient(INTERP.spread, (np.zeros(6), v), loss="y[2]")
        for g, e in zip(got, expected):
            np.testing.assert_allclose(g, e, rtol=1e-13)


def test_rows_beyond_their_memory_take_fewer_blocks_then_fewer_threads(monkeypatch):
    """The mixture's pass gathers 25 words per thread; with room for 3 rows the
    launch is one block of 3 threads, and the gradients are still the sums."""
    from rlang.backends.cuda import launches as module

    monkeypatch.setattr(module, "ROWS_BYTES", 8 * 25 * 3)
    shapes = []
    launch_kernel = module.launch_kernel
    monkeypatch.setattr(module, "launch_kernel",
                        lambda kernel, shape, args: shapes.append(shape) or
                        launch_kernel(kernel, shape, args))
    launches.set_deterministic(True)
    try:
        got = _gradient(CUDA)
    finally:
        launches.set_deterministic(False)
    assert (1, 3) in shapes
    for g, e in zip(got, _gradient(INTERP)):
        np.testing.assert_allclose(g, e, rtol=1e-12, atol=1e-12)
