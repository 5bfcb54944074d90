"""Kernels agree with the interpreter (issue #6): forward, inverse and gradient.

Each function of tests/cuda/programs/kernels.rev runs on the cuda backend (its
`@parallel for` loops as kernels, under Numba's simulator in CI) and on the
interpreter: the same new arguments forward and backward, the inverse gives the
inputs back, and `rlang.gradient` agrees within 1e-12 — including gradients of
values that many iterations read (a scalar parameter, `x[0]`, one view passed for
two parameters), which the gradient kernels add atomically.
"""
from __future__ import annotations

import numpy as np
import pytest

import rlang

from agreement import KERNELS, assert_same_gradients, copy, kernel_cases, same

CASES = kernel_cases()


@pytest.fixture(scope="module")
def modules():
    return rlang.load(KERNELS), rlang.load(KERNELS, backend="cuda")


@pytest.mark.parametrize("name,args,loss", CASES, ids=[c[0] for c in CASES])
def test_forward_and_inverse_agree(modules, name, args, loss):
    interp, cuda = modules
    for direction in (lambda m: m[name], lambda m: ~m[name]):
        expected = direction(interp)(*copy(args))
        got = direction(cuda)(*copy(args))
        for a, b in zip(got, expected):
            assert same(a, b), f"{name}: cuda {a!r}, interpreter {b!r}"
    forward = cuda[name](*copy(args))
    back = (~cuda[name])(*copy(list(forward)))
    interp_back = (~interp[name])(*interp[name](*copy(args)))
    for a, b, c in zip(back, interp_back, args):      # rounding aside, the inputs
        assert same(a, b), name
        assert np.allclose(a, c, rtol=1e-6, atol=1e-6), name


@pytest.mark.parametrize("name,args,loss", [c for c in CASES if c[2] is not None],
                         ids=[c[0] for c in CASES if c[2] is not None])
def test_gradients_agree(modules, name, args, loss):
    interp, cuda = modules
    expected = rlang.gradient(interp[name], copy(args), loss=loss)
    cuda_args = copy(args)
    got = rlang.gradient(cuda[name], cuda_args, loss=loss)
    assert_same_gradients(got, expected, name)
    for before, after in zip(args, cuda_args):       # the gradient pass restores inputs
        if isinstance(before, np.ndarray):
            np.testing.assert_allclose(after, before, rtol=0, atol=1e-9)


def test_shared_read_gradients_are_sums_over_iterations(modules):
    """d/dw of Σ (y_i + w sin x_i)² is Σ 2 (y_i + w sin x_i) sin x_i: every iteration
    adds to the one gradient of w (an atomic add on the GPU)."""
    _, cuda = modules
    x = np.linspace(-1.0, 1.0, 50)
    y = np.linspace(0.0, 1.0, 50)
    w = 0.3
    grads = rlang.gradient(cuda.loss, [0.0, y.copy(), x.copy(), w], loss="l")
    expected = float(np.sum(2.0 * (y + w * np.sin(x)) * np.sin(x)))
    assert grads[3] == pytest.approx(expected, rel=1e-12)
    np.testing.assert_allclose(grads[2], 2.0 * (y + w * np.sin(x)) * w * np.cos(x),
                               rtol=1e-12)


def test_gradient_kernels_use_atomics_only_for_shared_gradients():
    """The gradient kernel of saxpy adds to w's gradient (a one-element device array)
    and to x's gradient atomically, and stores y's value and its own temporaries."""
    from rlang.backends.cuda import build_module
    from rlang.backends.cuda_emit import write_program
    from rlang.ir import ArrayType

    unit = rlang.load(KERNELS).unit
    types = (ArrayType("f64", 1), ArrayType("f64", 1), "f64")
    module, shadows = build_module(unit, "saxpy", types, False, True, "grad")
    program = write_program(module, shadows)
    kernel = program.device_source.split("def K0")[1]
    atomics = [line.strip() for line in kernel.splitlines() if "atomic.add" in line]
    assert len(atomics) == 2
    assert any(line.startswith("cuda.atomic.add(_box") for line in atomics)
    assert any("x_grad" in line for line in atomics)
    assert not any("y_grad" in line or "y_3" in line for line in atomics)
    module, shadows = build_module(unit, "saxpy", types, False, True)
    assert "atomic" not in write_program(module, shadows).device_source


def test_hessians_agree(modules):
    interp, cuda = modules
    args = [0.0, np.zeros(5), np.linspace(-1, 1, 5), 0.4]
    expected = rlang.hessian(interp.loss, copy(args), loss="l")
    got = rlang.hessian(cuda.loss, copy(args), loss="l")
    np.testing.assert_allclose(got, expected, rtol=1e-12, atol=1e-12)


def test_device_arrays_are_used_without_copies(modules):
    """Arguments with a device array interface stay on the device and are updated
    there; NumPy arguments are updated in place."""
    from numba import cuda as numba_cuda

    interp, cuda = modules
    x = np.linspace(0.0, 1.0, 12)
    expected = interp.saxpy(np.zeros(12), x.copy(), 2.0)[0]
    y_device = numba_cuda.to_device(np.zeros(12))
    result = cuda.saxpy(y_device, numba_cuda.to_device(x), 2.0)
    assert result[0] is y_device
    np.testing.assert_allclose(y_device.copy_to_host(), expected, rtol=1e-15)
    y = np.zeros(12)
    assert cuda.saxpy(y, x, 2.0)[0] is y
    np.testing.assert_allclose(y, expected, rtol=1e-15)


def test_invcheck_off_kernels_carry_no_error_buffer():
    from rlang.backends.cuda import build_module
    from rlang.backends.cuda_emit import write_program
    from rlang.ir import ArrayType

    unit = rlang.load(KERNELS).unit
    types = (ArrayType("f64", 1), ArrayType("f64", 1), "f64")
    for invcheck in (True, False):
        module, shadows = build_module(unit, "saxpy", types, False, invcheck, "grad")
        program = write_program(module, shadows)
        assert program.kernels[0].checked is invcheck
        assert ("publish" in program.device_source) is invcheck
        assert ("ldk1" in program.device_source) is invcheck
    m = rlang.load(KERNELS, backend="cuda", invcheck=False)
    y = m.saxpy(np.zeros(4), np.ones(4), 1.0)[0]
    np.testing.assert_allclose(y, np.sin(1.0))
