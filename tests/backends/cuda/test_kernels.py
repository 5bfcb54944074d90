"""Kernels agree with the interpreter (issue #6): forward, inverse and gradient.

Each function of tests/backends/cuda/programs/kernels.rev runs on the cuda backend (its
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

from agreement import KERNELS, assert_same_gradients, copy, kernel_cases, magnitude, same

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
        scale = magnitude([*args, *expected])
        for a, b in zip(got, expected):
            assert same(a, b, scale), f"{name}: cuda {a!r}, interpreter {b!r}"
    forward = cuda[name](*copy(args))
    back = (~cuda[name])(*copy(list(forward)))
    interp_back = (~interp[name])(*interp[name](*copy(args)))
    scale = magnitude([*args, *forward])
    for a, b, c in zip(back, interp_back, args):      # rounding aside, the inputs
        assert same(a, b, scale), name
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
    """The gradient kernel of saxpy adds to w's gradient (a one-element device array,
    shared by every iteration) atomically; x's gradient, which iteration i alone adds
    to at x̄[i], takes a plain add; y's value and its own temporaries are stores."""
    from rlang.backends.cuda.backend import build_module
    from rlang.backends.cuda.emit import write_program
    from rlang.ir.nodes import ArrayType

    unit = rlang.load(KERNELS).unit
    types = (ArrayType("f64", 1), ArrayType("f64", 1), "f64")
    module, shadows = build_module(unit, "saxpy", types, False, True, "grad")
    program = write_program(module, shadows)
    kernel = program.device_source.split("def K0")[1]
    atomics = [line.strip() for line in kernel.splitlines() if "atomic.add" in line]
    assert len(atomics) == 1 and atomics[0].startswith("cuda.atomic.add(_box")
    assert any(line.strip().startswith("x_grad") and "+" in line
               for line in kernel.splitlines())
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


INBOUNDS_SAXPY = """
function saxpy(y: f64[:], x: f64[:], w)
    @parallel for i = 0:length(x) - 1
        @inbounds y[i] += w * sin(x[i])
    end
end
"""


def test_kernels_without_checks_carry_no_error_buffer():
    """A kernel gets an error buffer when its body checks something.  Bounds are
    checked with invcheck off too (Note [Checks invcheck does not turn off]); under
    `@inbounds`, with invcheck off, nothing is left to check."""
    from rlang.backends.cuda.backend import build_module
    from rlang.backends.cuda.emit import write_program
    from rlang.ir.nodes import ArrayType

    types = (ArrayType("f64", 1), ArrayType("f64", 1), "f64")
    for unit, invcheck, checked in ((rlang.load(KERNELS).unit, True, True),
                                    (rlang.load(KERNELS).unit, False, True),
                                    (rlang.loads(INBOUNDS_SAXPY).unit, True, False),
                                    (rlang.loads(INBOUNDS_SAXPY).unit, False, False)):
        module, shadows = build_module(unit, "saxpy", types, False, invcheck, "grad")
        program = write_program(module, shadows)
        assert program.kernels[0].checked is checked
        assert ("publish" in program.device_source) is checked
        assert ("ldk1" in program.device_source) is checked
    for source in (INBOUNDS_SAXPY, KERNELS.read_text()):
        m = rlang.loads(source, backend="cuda", invcheck=False)
        y = m.saxpy(np.zeros(4), np.ones(4), 1.0)[0]
        np.testing.assert_allclose(y, np.sin(1.0))
    checked = rlang.load(KERNELS, backend="cuda", invcheck=False)
    with pytest.raises(rlang.RlangRuntimeError, match="out of bounds"):
        checked.saxpy(np.zeros(3), np.ones(4), 1.0)


def test_device_arguments_that_overlap_a_written_one_are_refused(modules):
    """The interpreter's aliasing rule, for device arrays by address range: the same
    array twice or overlapping slices are refused, disjoint slices of one array run."""
    from numba import cuda as numba_cuda

    _, cuda = modules
    whole = numba_cuda.to_device(np.linspace(0.0, 1.0, 10))
    for y, x in ((whole, whole), (whole[0:6], whole[4:10]), (whole[::2], whole[1::2])):
        with pytest.raises(rlang.ReversibilityError, match="same device memory"):
            cuda.saxpy(y, x, 1.0)
    y, x = whole[0:5], whole[5:10]
    cuda.saxpy(y, x, 1.0)
    expected = np.linspace(0.0, 1.0, 10)
    expected[:5] += np.sin(expected[5:])
    np.testing.assert_allclose(whole.copy_to_host(), expected, rtol=1e-15)
    unchecked = rlang.load(KERNELS, backend="cuda", invcheck=False)
    unchecked.saxpy(whole, numba_cuda.to_device(np.zeros(10)), 1.0)      # no aliasing


def test_device_bytes_from_the_cuda_array_interface():
    from rlang.backends.cuda.runtime import device_bytes

    class Interface:
        def __init__(self, shape, strides, typestr="<f8", ptr=4096):
            self.__cuda_array_interface__ = {"shape": shape, "strides": strides,
                                             "typestr": typestr, "data": (ptr, False),
                                             "version": 3}

    assert device_bytes(Interface((3, 4), None)) == (4096, 4096 + 96)
    assert device_bytes(Interface((3, 4), (8, 24))) == (4096, 4096 + 96)    # Fortran order
    assert device_bytes(Interface((5,), (-16,))) == (4096 - 64, 4096 + 8)   # backward
    assert device_bytes(Interface((4,), None, "<i4")) == (4096, 4096 + 16)
    assert device_bytes(Interface((0, 3), None)) == (0, 0)


@pytest.mark.parametrize("make,message", [
    (lambda cuda: cuda.to_device(np.zeros(())), "at least one dimension"),
    (lambda cuda: cuda.to_device(np.zeros(3, np.uint8)), "device arrays of uint8"),
    (lambda cuda: cuda.to_device(np.zeros(3, np.float32)), "must be an f64\\[:\\], got an f32"),
    (lambda cuda: cuda.to_device(np.zeros((3, 2))), "must be an f64\\[:\\], got an f64\\[:,:\\]"),
    (lambda cuda: np.zeros(3, np.int64), "must be an f64\\[:\\], got an i64"),
    (lambda cuda: np.zeros((3, 2)), "must be an f64\\[:\\], got an f64\\[:,:\\]"),
    (lambda cuda: "y", "must be an f64\\[:\\], got a string"),
])
def test_bad_arguments_are_type_errors(modules, make, message):
    from numba import cuda as numba_cuda

    _, cuda = modules
    with pytest.raises(rlang.RlangTypeError, match=message):
        cuda.saxpy(make(numba_cuda), np.ones(3), 1.0)


def test_non_contiguous_arguments_are_updated_where_they_lie(modules):
    """Strided NumPy views and device views: the kernel sees their elements, and the
    caller's memory between them is untouched."""
    from numba import cuda as numba_cuda

    interp, cuda = modules
    x = np.linspace(-1.0, 1.0, 14)[::2]
    expected = interp.saxpy(np.zeros(7), x.copy(), 0.5)[0]
    host = np.full(21, 7.0)
    cuda.saxpy(host[::3], x, 0.5)
    np.testing.assert_allclose(host[::3], expected + 7.0, rtol=1e-15)
    assert np.all(np.delete(host, np.arange(0, 21, 3)) == 7.0)
    device = numba_cuda.to_device(np.full(21, 7.0))
    cuda.saxpy(device[::3], numba_cuda.to_device(np.ascontiguousarray(x)), 0.5)
    back = device.copy_to_host()
    np.testing.assert_allclose(back[::3], expected + 7.0, rtol=1e-15)
    assert np.all(np.delete(back, np.arange(0, 21, 3)) == 7.0)
    with pytest.raises(rlang.RlangRuntimeError, match="out of bounds"):   # shapes differ
        cuda.saxpy(np.zeros(2), np.ones(3), 1.0)


@pytest.mark.parametrize("name,args,loss", [c for c in CASES if c[0] in
                                             ("saxpy", "loss", "calls_loss", "rows")],
                         ids=lambda v: v if isinstance(v, str) else "")
def test_gradients_of_device_arrays_stay_on_the_device(modules, name, args, loss):
    """Device array arguments get device arrays of gradients (no copy back), equal to
    the interpreter's; the gradient pass leaves the inputs as they were."""
    from numba import cuda as numba_cuda

    from rlang.backends.cuda.runtime import is_device_array

    interp, cuda = modules
    expected = rlang.gradient(interp[name], copy(args), loss=loss)
    device = [numba_cuda.to_device(a) if isinstance(a, np.ndarray) else a for a in args]
    got = rlang.gradient(cuda[name], device, loss=loss)
    for g, a in zip(got, args):
        assert is_device_array(g) == isinstance(a, np.ndarray)
    assert_same_gradients([g.copy_to_host() if is_device_array(g) else g for g in got],
                          expected, name)
    for before, after in zip(args, device):
        if isinstance(before, np.ndarray):
            np.testing.assert_allclose(after.copy_to_host(), before, rtol=0, atol=1e-9)


def test_device_array_losses_and_hessians(modules):
    from numba import cuda as numba_cuda

    interp, cuda = modules
    host = [np.arange(4, dtype=np.int64), np.zeros(4, np.int32), np.zeros(4, bool),
            np.zeros(4, np.float32), 5]
    k0 = interp.mixed(*copy(host))[0][0]        # the loss's value after the forward run
    device = [numba_cuda.to_device(a) if isinstance(a, np.ndarray) else a for a in host]
    with pytest.raises(rlang.RlangTypeError, match=rf"`k\[0\]` must be a float.*got {k0}$"):
        rlang.gradient(cuda.mixed, device, loss=("k", 0))
    with pytest.raises(rlang.RlangTypeError, match="NumPy arrays, not device arrays"):
        rlang.hessian(cuda.loss, [0.0, numba_cuda.to_device(np.zeros(3)),
                                  numba_cuda.to_device(np.ones(3)), 0.5], loss="l")
