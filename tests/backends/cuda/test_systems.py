"""fixed, ulog and complex numbers on the cuda backend agree with the interpreter
(issue #6: every number system of LANGUAGE.md §3 that the GPU can hold).

- host code runs the programs the llvm backend is compared on (tests/
  number_systems.py): arithmetic, conversions, arrays, `@safe` output, errors and
  gradients;
- kernels and the device functions they call (tests/backends/cuda/programs/systems.rev):
  forward, inverse and gradients — fixed results bit for bit, ulog logarithms and
  complex parts within 1e-12 — including the gradients of fixed, ulog and complex
  values that every iteration reads (atomic adds; a complex one part by part);
- failed checks inside kernels are the interpreter's errors, with the iteration;
  with invcheck off only the conversions (errors of meaning) are left;
- fixed `*` and `/` round bit for bit as rlang/numbers.py does: in kernels on
  generated raw values, and in the GPU helpers (backends/cuda/fixed.py: 64-bit integers
  only), which `numba.njit` compiles on the CPU here since the simulator runs the
  Python ones.
"""
from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

import rlang
from number_systems import ARITHMETIC, ARRAYS, COMPLEX, COMPLEX_GRADIENTS, ERROR_CASES, \
    ERRORS, GRADIENT_CASES, GRADIENTS, RAW, Z_VALUES, both, close, magnitude, run_both, \
    run_main_both
from number_systems import agree as agree_within
from rlang.numbers import FRACTION_BITS, Fixed, FixedArray, ULog, fixed_array, ulog_array

from agreement import HERE, assert_same_error, assert_same_gradients, copy, kernel_error

SYSTEMS = HERE / "programs" / "systems.rev"


def agree(a, b) -> bool:
    """fixed values bit for bit; ulog logarithms, floats and complex parts within
    1e-12; arrays of the same class and dtype."""
    if isinstance(b, np.ndarray):
        if type(a) is not type(b) or a.dtype != b.dtype:
            return False
        return np.array_equal(a, b) if isinstance(b, FixedArray) else close(a, b)
    return close(a, b)


def assert_agree(got, expected, context="", scale=None):
    """`agree` value by value; with a `scale` (the magnitude of the values involved),
    number_systems.agree: within 1e-12 of the larger of it and the value."""
    assert len(got) == len(expected)
    for a, b in zip(got, expected):
        ok = agree(a, b) if scale is None else agree_within(a, b, scale)
        assert ok, f"{context}: cuda {a!r}, interpreter {b!r}"


# ------------------------------------------------------------------ host code

@pytest.mark.parametrize("a, b", [(1.25, 0.75), (-0.3, -3.5), (1e5, 1e-4), (-2.0 ** 19, 2.0)])
def test_fixed_host_arithmetic(a, b):
    args = [Fixed.from_value(0.5), Fixed(0), Fixed(0), Fixed.from_value(a),
            Fixed.from_value(b), 7]
    expected, got = run_both(ARITHMETIC, "fixed_ops!", args, backend="cuda")
    assert_agree(got, expected)
    back_expected, back = run_both(ARITHMETIC, "fixed_ops!", list(expected), inverse=True,
                                   backend="cuda")
    assert back == back_expected == tuple(args)


@pytest.mark.parametrize("a, b", [(2.0, 3.0), (1e-300, 1e300), (7.0, 7.0)])
def test_ulog_host_arithmetic_and_conversions(a, b):
    args = [ULog.from_value(1.0), ULog.from_value(2.0), 1.5, ULog.from_value(a),
            ULog.from_value(b)]
    if (a + b) - b == 0:            # 1e-300 + 1e300 - 1e300 is 0: `*= 0` is refused
        errors = []
        for backend in ("interp", "cuda"):
            with pytest.raises(rlang.ReversibilityError) as error:
                rlang.loads(ARITHMETIC, backend=backend)["ulog_ops!"](*args)
            errors.append((error.value.message, error.value.span))
        assert errors[0] == errors[1]
    else:
        expected, got = run_both(ARITHMETIC, "ulog_ops!", args, backend="cuda")
        assert_agree(got, expected)
    args = [0.0, Fixed.from_value(1.75), ULog.from_value(a)]
    expected, got = run_both(ARITHMETIC, "mixed!", args, backend="cuda")
    assert_agree(got, expected)


def test_fixed_and_ulog_arrays_store_and_output():
    (expected, expected_out), (got, got_out) = run_main_both(ARRAYS, "cuda")
    assert got_out == expected_out
    assert [n for n, _ in got] == [n for n, _ in expected]
    assert_agree([v for _, v in got], [v for _, v in expected])
    args = [np.zeros(3), fixed_array([0.5, -1.25, 3.0]), ulog_array([0.0, 2.0, 7.5])]
    expected, got = run_both(ARRAYS, "scale!", args, backend="cuda")
    assert_agree(got, expected)


@pytest.mark.parametrize("name, args", ERROR_CASES, ids=lambda c: str(c))
def test_host_errors_are_the_interpreters(name, args):
    errors = []
    for module in both(ERRORS, "cuda"):
        with pytest.raises(rlang.RlangError) as info:
            module[name](*args)
        errors.append(info.value)
    expected, got = errors
    assert (type(got), got.message, got.span) == (type(expected), expected.message,
                                                  expected.span)


@pytest.mark.parametrize("name, args, loss", GRADIENT_CASES, ids=[c[0] for c in GRADIENT_CASES])
def test_host_gradients(name, args, loss):
    interp, cuda = both(GRADIENTS, "cuda")
    expected = rlang.gradient(interp[name], args(), loss=loss)
    assert_same_gradients(rlang.gradient(cuda[name], args(), loss=loss), expected, name)


def test_hessians_through_ulog_agree_and_complex_are_refused_as_on_the_interpreter():
    interp, cuda = both(GRADIENTS, "cuda")
    args = [0.0, ULog.from_value(2.0), 1.25, np.array([0.5, 3.0])]
    np.testing.assert_allclose(rlang.hessian(cuda["ulog_loss!"], args, loss="y!"),
                               rlang.hessian(interp["ulog_loss!"], args, loss="y!"),
                               rtol=1e-12, atol=1e-14)
    _, cuda = both(COMPLEX_GRADIENTS, "cuda")
    with pytest.raises(rlang.RlangTypeError, match="Hessians through complex"):
        rlang.hessian(cuda["closs!"], [0j, 1.5 - 0.5j, np.array([0.3 + 0.2j, 2.0 - 1.0j]),
                                       0.75], loss="w!.re")


@pytest.mark.parametrize("z, v", Z_VALUES)
def test_complex_host_arithmetic_and_functions(z, v):
    expected, got = run_both(COMPLEX, "arith!", [0.5 - 0.5j, z, v, 1.25], backend="cuda")
    assert_agree(got, expected)
    expected, got = run_both(COMPLEX, "functions!", [0j, z], backend="cuda")
    assert_agree(got, expected)


def test_complex_host_instructions_store_output_and_checks():
    args = [1.0 + 2.0j, -3.0 + 0.5j, np.array([1.0 + 1.0j, 2.0 - 1.0j, 0.0 + 0.0j])]
    expected, got = run_both(COMPLEX, "instructions!", args, backend="cuda")
    assert_agree(got, expected)
    back_expected, back = run_both(COMPLEX, "instructions!", list(expected), inverse=True,
                                   backend="cuda")
    assert_agree(back, back_expected)
    (expected, expected_out), (got, got_out) = run_main_both(COMPLEX, "cuda")
    assert got_out == expected_out
    assert_agree([v for _, v in got], [v for _, v in expected])
    broken = COMPLEX.replace("t → 6.0 + 8.0im", "t → 6.0 + 8.5im")
    errors = []
    for module in both(broken, "cuda"):
        with pytest.raises(rlang.ReversibilityError) as info:
            module.run_main()
        errors.append(info.value)
    assert (errors[1].message, errors[1].span) == (errors[0].message, errors[0].span)


@pytest.mark.parametrize("loss", ["w!.re", "w!.im", "w!"])
def test_complex_host_gradients(loss):
    def args():
        return [0.25 + 0.0j, 1.5 - 0.5j, np.array([0.3 + 0.2j, 2.0 - 1.0j]), 0.75]
    interp, cuda = both(COMPLEX_GRADIENTS, "cuda")
    expected = rlang.gradient(interp["closs!"], args(), loss=loss)
    assert_same_gradients(rlang.gradient(cuda["closs!"], args(), loss=loss), expected, loss)


# -------------------------------------------------------------------- kernels

def kernel_cases():
    """(function, arguments, loss) for each function of programs/systems.rev."""
    rng = np.random.default_rng(11)
    n = 21

    def z(*shape):
        return rng.uniform(-1, 1, shape) + 1j * rng.uniform(-1, 1, shape)

    divisors = rng.uniform(-3, 3, n)
    divisors[[0, 7]] = 0.0
    return [
        ("fixed_kernel", [fixed_array(rng.uniform(-3, 3, n)), fixed_array(rng.uniform(-3, 3, n)),
                          fixed_array(divisors), Fixed.from_value(0.3)], ("q", 3)),
        ("ulog_kernel", [ulog_array(rng.uniform(0.1, 3, n)), rng.uniform(0.1, 3, n),
                         ULog.from_value(1.7)], ("l", 4)),
        ("complex_kernel", [z(n), z(n), 0.7 - 0.4j, 0.3], ("zs", 2)),
        ("complex_instructions", [z(n, 2), 0.5 + 0.25j], ("zs", (2, 1))),
        ("complex_loss", [0.0, z(n), z(n), 0.7 - 0.4j, 0.3], "l"),
        ("mixed_kernel", [np.zeros(n), fixed_array(rng.uniform(-3, 3, n)),
                          ulog_array(rng.uniform(0.1, 3, n)), z(n)], ("y", 1)),
    ]


CASES = kernel_cases()


@pytest.fixture(scope="module")
def modules():
    return rlang.load(SYSTEMS), rlang.load(SYSTEMS, backend="cuda")


@pytest.mark.parametrize("name, args, loss", CASES, ids=[c[0] for c in CASES])
def test_kernels_forward_and_inverse(modules, name, args, loss):
    interp, cuda = modules
    expected = interp[name](*copy(args))
    got = cuda[name](*copy(args))
    scale = magnitude([*args, *expected])
    assert_agree(got, expected, name, scale)
    back = (~cuda[name])(*copy(list(got)))
    assert_agree(back, (~interp[name])(*copy(list(expected))), f"~{name}", scale)


@pytest.mark.parametrize("name, args, loss", CASES, ids=[c[0] for c in CASES])
def test_kernel_gradients(modules, name, args, loss):
    interp, cuda = modules
    expected = rlang.gradient(interp[name], copy(args), loss=loss)
    assert_same_gradients(rlang.gradient(cuda[name], copy(args), loss=loss), expected, name)


def test_shared_complex_gradients_are_atomic_part_by_part():
    """Every iteration of complex_kernel reads `c`: its gradient lives in a device
    array of two doubles that the gradient kernel adds to atomically; vs̄[i], added
    to by iteration i alone, takes plain adds, part by part."""
    from rlang.backends.cuda.backend import build_module
    from rlang.backends.cuda.emit import write_program
    from rlang.ir.nodes import ArrayType

    unit = rlang.load(SYSTEMS).unit
    types = (ArrayType("complex", 1), ArrayType("complex", 1), "complex", "f64")
    program = write_program(*build_module(unit, "complex_kernel", types, False, True, "grad"))
    kernel = program.device_source.split("def K0")[1]
    atomics = [line.strip() for line in kernel.splitlines() if "atomic.add" in line]
    assert any(line.startswith("cuda.atomic.add(_box") and ", 1, " in line for line in atomics)
    assert not any(line.startswith("cuda.atomic.add(vs_grad") for line in atomics)
    assert any(line.strip().startswith("vs_grad") and ", 1] = " in line
               for line in kernel.splitlines())


def test_complex_device_arrays_are_used_in_place(modules):
    from numba import cuda as numba_cuda

    interp, cuda = modules
    name, args, _ = CASES[2]
    expected = interp[name](*copy(args))
    zs = numba_cuda.to_device(args[0])
    got = cuda[name](zs, numba_cuda.to_device(args[1]), *args[2:])
    assert got[0] is zs
    assert close(zs.copy_to_host(), expected[0])


FAILING = '''
function fixed_div(q: fixed[:], a: fixed[:], b: fixed[:])
    @parallel for i = 0:length(q) - 1
        q[i] += a[i] / b[i]
    end
end

function to_fixed(q: fixed[:], x: f64[:])
    @parallel for i = 0:length(q) - 1
        q[i] += fixed(x[i])
    end
end

function to_ulog(l: ulog[:], x: f64[:])
    @parallel for i = 0:length(l) - 1
        l[i] *= ulog(x[i])
    end
end

function ulog_sub(l: ulog[:], a: ulog[:], b: ulog[:])
    @parallel for i = 0:length(l) - 1
        l[i] *= a[i] - b[i]
    end
end

function int_to_ulog(l: ulog[:], n: i64[:])
    @parallel for i = 0:length(l) - 1
        l[i] *= ulog(n[i])
    end
end

function ulog_div(l: ulog[:], b: ulog[:])
    @parallel for i = 0:length(l) - 1
        l[i] /= b[i]
    end
end

function complex_dealloc(zs: complex[:], x: f64[:])
    @parallel for i = 0:length(zs) - 1
        t ← zs[i] * 2.0
        zs[i].im += x[i]
        t → zs[i] * 2.0
    end
end
'''

_FIXED_ONES = fixed_array(np.ones(6))
FAILING_CASES = [
    ("fixed_div", [fixed_array(np.zeros(6)), _FIXED_ONES,
                   fixed_array([1.0, 2.0, 0.0, 1.0, 0.0, 1.0])], 2),
    ("to_fixed", [fixed_array(np.zeros(6)), np.array([0.5, 1.0, 1.5, 2e6, np.nan, 1.0])], 3),
    ("to_fixed", [fixed_array(np.zeros(4)), np.array([0.5, np.nan, -np.inf, 1.0])], 1),
    ("to_ulog", [ulog_array(np.ones(5)), np.array([0.5, 0.25, 2.0, -1.5, 1.0])], 3),
    ("int_to_ulog", [ulog_array(np.ones(4)), np.array([2, 3, -(1 << 53) - 1, 1])], 2),
    ("ulog_sub", [ulog_array(np.ones(4)), ulog_array([3.0, 2.0, 1.0, 0.5]),
                  ulog_array([1.0, 1.0, 2.0, 1.0])], 2),
    ("ulog_div", [ulog_array(np.ones(4)), ulog_array([1.0, 0.0, 2.0, 0.0])], 1),
    ("complex_dealloc", [np.ones(5, dtype=complex), np.array([0.0, 0.0, 0.0, 0.5, 0.0])], 3),
]


@pytest.mark.parametrize("name, args, iteration", FAILING_CASES,
                         ids=[f"{c[0]}-{c[2]}" for c in FAILING_CASES])
def test_kernel_errors_are_the_interpreters(name, args, iteration):
    got, expected = kernel_error(FAILING, lambda m: m[name](*copy(args)))
    assert_same_error(got, expected)
    assert any(f"`i = {iteration}`" in note for note in got.notes)


def test_domain_errors_are_raised_with_invcheck_off_too():
    """Division by zero and ulog subtraction below zero are errors of meaning, not
    reversibility checks (Note [Checks invcheck does not turn off]): with invcheck off
    a kernel still raises the interpreter's error; so does a conversion."""
    cuda = rlang.loads(FAILING, backend="cuda", invcheck=False)
    interp = rlang.loads(FAILING, invcheck=False)
    for name in ("fixed_div", "ulog_sub", "ulog_div", "to_fixed"):
        args = next(c[1] for c in FAILING_CASES if c[0] == name)
        raised = []
        for module in (interp, cuda):
            with pytest.raises(rlang.RlangRuntimeError) as caught:
                module[name](*copy(args))
            raised.append(caught.value)
        assert raised[0].message == raised[1].message and raised[0].span == raised[1].span


ROUNDING = '''
function rounding(p: fixed[:], q: fixed[:], a: fixed[:], b: fixed[:])
    @parallel for i = 0:length(p) - 1
        p[i] += a[i] * b[i]
        if (b[i] != fixed(0), ~)
            q[i] += a[i] / b[i]
        end
    end
end
'''


@settings(max_examples=25, deadline=None)
@given(st.lists(st.tuples(RAW, RAW), min_size=1, max_size=24))
def test_fixed_rounding_in_kernels(pairs):
    a = np.array([x for x, _ in pairs], dtype=np.int64).view(FixedArray)
    b = np.array([y for _, y in pairs], dtype=np.int64).view(FixedArray)
    zeros = np.zeros(len(pairs), dtype=np.int64).view(FixedArray)
    expected, got = run_both(ROUNDING, "rounding", [zeros, zeros, a, b], backend="cuda")
    assert np.array_equal(got[0], expected[0]) and np.array_equal(got[1], expected[1])


@pytest.fixture(scope="module")
def gpu_helpers():
    """The GPU versions of the helpers, compiled for the CPU."""
    import numba

    from rlang.backends.cuda.device import gpu_namespace

    return gpu_namespace(numba.njit)


@settings(max_examples=300, deadline=None)
@given(RAW, RAW)
def test_gpu_fixed_multiply_and_divide_round_as_the_interpreter(gpu_helpers, a, b):
    from rlang.backends.cuda import fixed as cuda_fixed

    assert cuda_fixed._FRACTION_BITS == FRACTION_BITS
    assert gpu_helpers["fxmul"](a, b) == Fixed(a).mul(Fixed(b)).raw
    if b != 0:
        assert gpu_helpers["fxdiv"](a, b) == Fixed(a).div(Fixed(b)).raw
    else:
        assert gpu_helpers["fxdiv"](a, b) == 0


FLOATS_IN_RANGE = st.one_of(
    st.floats(-1048576.0, 1048576.0, exclude_max=True),
    st.integers(-(1 << 53), 1 << 53).map(lambda k: k * 2.0 ** -44),      # ties
    st.sampled_from([1048576.0 - 2.0 ** -33, -1048576.0, 2.0 ** -44, -3 * 2.0 ** -44]))


@settings(max_examples=300, deadline=None)
@given(FLOATS_IN_RANGE)
def test_gpu_fixed_conversions_round_as_the_interpreter(gpu_helpers, x):
    raw = Fixed.from_value(x).raw
    assert gpu_helpers["fxof"](x) == raw
    assert gpu_helpers["fxval"](raw) == float(Fixed(raw))
    ctx, ctxf = np.zeros(100, dtype=np.int64), np.zeros(4)
    assert gpu_helpers["cvf_fixed"](x, 0, ctx, ctxf) == raw and ctx[0] == 0
    gpu_helpers["cvf_fixed"](2e6, 4, ctx, ctxf)
    assert ctx[0] == 5 and ctxf[0] == 2e6


@pytest.mark.parametrize("a, s, b", [
    (0, 1, (1 << 63) - 1), (-(1 << 63), 1, (1 << 63) - 1), ((1 << 63) - 1, -1, -(1 << 63)),
    (-(1 << 63), (1 << 62) + 1, (1 << 63) - 2), (0, 3, 10), (10, -3, 0), (5, 2, 4)])
def test_gpu_loop_counts_of_ranges_wider_than_2_to_the_63(gpu_helpers, a, s, b):
    """Kernels count a `for` loop's passes in an i64: a count of 2^63 or more is held
    at 2^63 - 1 (it was negative: no pass ran), and the first value of the loop
    run backward comes from the exact number of steps."""
    count = max(0, (b - a) // s + 1)            # (len(range(…)) overflows here)
    assert gpu_helpers["fcount"](a, s, b) == min(count, (1 << 63) - 1)
    if count:
        steps = gpu_helpers["fsteps"](a, s, b)
        assert (a + steps * s + (1 << 63)) % (1 << 64) - (1 << 63) == a + (count - 1) * s
