"""Constructs the llvm backend once refused, compared with the interpreter: complex
`**`, complex asin/acos, array expressions as call arguments, array ancillas copied
from arrays or built from variable literals, stack copies, Hessians of functions
taking stacks, and errors raised in the gradient pass."""
import numpy as np
import pytest

import rlang
from rlang.values import Stack

pytestmark = pytest.mark.filterwarnings("ignore::RuntimeWarning")


def both(source):
    return rlang.loads(source), rlang.loads(source, backend="llvm")


def _copy(args):
    return [a.copy() if isinstance(a, (np.ndarray, Stack)) else a for a in args]


def close(got, expected, rtol=1e-12):
    """Equal within rtol of the larger magnitude (complex numbers as a whole); NaNs
    and infinities in the same places."""
    if isinstance(expected, Stack):
        assert isinstance(got, Stack) and got.elem == expected.elem
        assert len(got.items) == len(expected.items)
        for a, b in zip(got.items, expected.items):
            close(a, b, rtol)
        return
    if expected is None:
        assert got is None
        return
    got, expected = np.asarray(got, dtype=complex), np.asarray(expected, dtype=complex)
    assert got.shape == expected.shape
    for part in (np.real, np.imag):
        assert np.array_equal(np.isnan(part(got)), np.isnan(part(expected)))
        assert np.array_equal(np.isinf(part(got)), np.isinf(part(expected)))
    finite = np.isfinite(got) & np.isfinite(expected)
    scale = np.maximum(np.abs(got), np.abs(expected))
    assert np.all(np.abs(got - expected)[finite] <= rtol * scale[finite] + 1e-300)


def agree(source, name, args, loss="y!", hessian=True):
    """Forward, inverse, gradient (and Hessian) of `name` agree on both backends."""
    interp, llvm = both(source)
    outputs = interp[name](*_copy(args))
    got = llvm[name](*_copy(args))
    for a, b in zip(got, outputs):
        close(a, b)
    for a, b in zip((~llvm[name])(*_copy(got)), (~interp[name])(*_copy(outputs))):
        close(a, b)
    for a, b in zip(rlang.gradient(llvm[name], _copy(args), loss=loss),
                    rlang.gradient(interp[name], _copy(args), loss=loss)):
        close(a, b)
    if hessian:
        np.testing.assert_allclose(rlang.hessian(llvm[name], _copy(args), loss=loss),
                                   rlang.hessian(interp[name], _copy(args), loss=loss),
                                   rtol=1e-12, atol=1e-12)


def same_error(source, name, args, gradient=False):
    """Both backends raise the same error class, message and span."""
    caught = []
    for module in both(source):
        with pytest.raises(rlang.RlangError) as error:
            if gradient:
                rlang.gradient(module[name], _copy(args), loss="y!")
            else:
                module[name](*_copy(args))
        caught.append(error.value)
    assert type(caught[0]) is type(caught[1])
    assert caught[0].message == caught[1].message
    assert caught[0].span == caught[1].span
    return caught[1]


# ------------------------------------------------------------ complex powers

POWERS = """
function constant_powers(y!: complex, z: complex)
    y! += z ** 2 + 0.5 * z ** 3 - z ** -2 + z ** 13 + 2.0 * z ** 0
end
function hundredth(y!: complex, z: complex)
    y! += z ** 100 + z ** -7 + z ** 101
end
function general(y!: complex, z: complex, w: complex)
    y! += z ** w
end
function real_exponent(y!: complex, z: complex, w)
    y! += z ** w + z ** 0.5
end
function real_base(y!: complex, x, w: complex)
    y! += x ** w + 2.0 ** w
end
function in_a_loop(y!: complex, z: complex)
    for k = 1:4
        y! += z ** 3 * k
    end
end
function in_an_ancilla(y!: complex, z: complex)
    t ← z ** 3
    y! += t * z
    t → z ** 3
end
"""


@pytest.mark.parametrize("z", [1.1 + 0.7j, 0.9 - 0.4j, -2.5 + 0.1j, 0.3j])
def test_constant_integer_powers(z):
    agree(POWERS, "constant_powers", [0j, z], hessian=False)
    agree(POWERS, "in_a_loop", [0j, z], hessian=False)
    agree(POWERS, "in_an_ancilla", [0j, z], hessian=False)


def test_integer_powers_are_the_interpreters_to_the_last_bit():
    interp, llvm = both(POWERS)
    for z in (1 + 1j, 1.01 + 0.02j, -0.7 + 0.3j):
        assert llvm.hundredth(0j, z) == interp.hundredth(0j, z)
        assert llvm.constant_powers(0j, z) == interp.constant_powers(0j, z)


@pytest.mark.parametrize("z, w", [(1.1 + 0.7j, 0.3 - 0.2j), (-2.0 + 0.5j, 1.5 + 1.0j),
                                  (0.4 - 3.0j, -0.5 + 0.25j), (2.0 + 0.0j, 0.0j)])
def test_general_powers(z, w):
    agree(POWERS, "general", [0j, z, w], hessian=False)


def test_real_exponents_and_real_bases():
    agree(POWERS, "real_exponent", [0j, 1.0 + 2.0j, 0.5], hessian=False)
    agree(POWERS, "real_exponent", [0j, -3.0 + 0.5j, 2.5], hessian=False)
    agree(POWERS, "real_base", [0j, 1.7, 0.4 - 1.2j], hessian=False)


def test_powers_at_zero_and_overflow_are_the_interpreters_values():
    interp, llvm = both(POWERS)
    for z, w in ((0j, -1 + 0j), (0j, 1j), (0j, 2.5 + 0j), (0j, 0j), (1e200 + 1j, 3 + 0.5j)):
        close(llvm.general(0j, z, w)[0], interp.general(0j, z, w)[0])
    for z in (0j, 1e200 + 1j, 1e-200 + 0j):
        close(llvm.constant_powers(0j, z)[0], interp.constant_powers(0j, z)[0])


# ------------------------------------------------------- complex asin, acos

ARCSINES = """
function arcsines(y!: complex, z: complex)
    y! += asin(z) + 2.0 * acos(z)
end
function real_arcs(y!, x)
    y! += asin(x) + acos(x) * atan(x) + atan(x, 2.0)
end
"""


@pytest.mark.parametrize("z", [0.3 + 0.4j, 3.0 - 2.0j, -0.9 + 1e-3j, -1.5 - 0.2j, 1e-9 + 2e-9j,
                               4e8 + 3e8j, -2e9 - 7e8j, 0.5 + 0j])
def test_complex_arcsines(z):
    agree(ARCSINES, "arcsines", [0j, z], hessian=False)


def test_complex_arcsines_of_huge_arguments():
    interp, llvm = both(ARCSINES)
    for z in (1e308 + 1e308j, -1e308 + 3.0j, 2.0 - 1e308j):
        close(llvm.arcsines(0j, z)[0], interp.arcsines(0j, z)[0])


def test_complex_functions_without_a_complex_form_are_the_interpreters_error():
    source = "function f(y!: complex, z: complex)\n    y! += atan(z)\nend\n"
    error = same_error(source, "f", [0j, 1j])
    assert "not defined for complex numbers" in error.message


def test_real_arcsines():
    for x in (0.3, -0.8, 0.0):
        agree(ARCSINES, "real_arcs", [0.0, x])


# ------------------------------------------------ arrays passed as expressions

ARGUMENTS = """
const K = [1.5, -2.0, 4.0]
const M = [[1.0, 2.0], [3.0, 4.0]]
function total(y!, xs)
    for i = 0:length(xs)-1
        y! += xs[i] * xs[i]
    end
end
function trace(y!, m)
    for i = 0:size(m, 0)-1
        y! += m[i, i]
    end
end
function literal(y!, x)
    total(y!, [1.0, 2.0, 3.0])
    total(y!, K)
    trace(y!, M)
    y! += x * x
end
function variable_literal(y!, x, v)
    total(y!, [x, 2.0 * x, v[1], 3])
    trace(y!, [[x, 1.0], [2.0, x * v[0]]])
end
function changes(xs)
    xs[0] += 1.0
end
function bad(y!)
    changes([1.0, 2.0])
end
"""


def test_constant_arrays_as_call_arguments():
    agree(ARGUMENTS, "literal", [0.25, 1.5])


def test_array_literals_with_variable_elements_as_call_arguments():
    # the interpreter's Hessian refuses dual numbers in array literals
    agree(ARGUMENTS, "variable_literal", [0.25, 1.5, np.array([0.5, -1.25])], hessian=False)
    _, llvm = both(ARGUMENTS)
    h = rlang.hessian(llvm.variable_literal, [0.25, 1.5, np.array([0.5, -1.25])], loss="y!")
    # y = x² + 4x² + v1² + 9 + x + x·v0 (+ consts): the Hessian over (y, x, v0, v1)
    np.testing.assert_allclose(h, [[0, 0, 0, 0], [0, 10, 1, 0], [0, 1, 0, 0], [0, 0, 0, 2]],
                               atol=1e-12)


def test_a_callee_changing_an_array_literal_argument_is_an_error_in_both():
    caught = []
    for module in both(ARGUMENTS):
        with pytest.raises(rlang.ReversibilityError) as error:
            module.bad(0.0)
        caught.append(error.value)
    assert caught[0].span == caught[1].span
    # compiled code counts the changed elements instead of showing the array
    assert "changed its argument 1 (`xs`), which is an expression" in caught[1].message
    assert "`[1.0, 2.0]` became different in 1 element(s)" in caught[1].message


# ------------------------------------------------------------ array ancillas

COPIES = """
const K = [2.0, 0.5]
function copied(y!, a)
    b ← a
    for i = 0:size(b, 0)-1
        for j = 0:size(b, 1)-1
            y! += b[i, j] * b[i, j] * (i + 2 * j + 1)
        end
    end
    b → a
end
function from_constant(y!, x)
    b ← K
    y! += b[0] * x * x + b[1]
    b → K
end
function from_variables(y!, x, z: complex)
    b ← [x, 2.0 * x, x * x]
    c ← [z, 1.0im * x]
    y! += b[0] * b[2] + b[1] + real(c[0] * c[1])
    c → [z, 1.0im * x]
    b → [x, 2.0 * x, x * x]
end
function integers(y!, n)
    b ← [n, 2 * n, 7]
    y! += b[0] + b[1] * b[2]
    b → [n, 2 * n, 7]
end
function copy_changed(y!, a)
    b ← a
    b[1] += 1.0
    y! += b[0]
    b → a
end
"""


def test_array_ancillas_copied_from_arrays():
    a = np.arange(12.0).reshape(3, 4) / 7.0
    agree(COPIES, "copied", [0.5, a])
    agree(COPIES, "copied", [0.5, a[::2, 1::2]])     # a strided view
    agree(COPIES, "from_constant", [0.5, 1.25])


def test_array_ancillas_from_literals_with_variable_elements():
    agree(COPIES, "from_variables", [0.5, 1.25, 0.3 - 0.7j], hessian=False)
    interp, llvm = both(COPIES)
    assert llvm.integers(1, 5) == interp.integers(1, 5) == (1 + 5 + 70, 5)
    assert (~llvm.integers)(76, 5) == (1, 5)


def test_a_copy_deallocated_against_a_changed_array_is_an_error_in_both():
    caught = []
    for module in both(COPIES):
        with pytest.raises(rlang.ReversibilityError) as error:
            module.copy_changed(0.0, np.array([1.0, 2.0]))
        caught.append(error.value)
    assert caught[0].span == caught[1].span
    assert "deallocation check failed" in caught[1].message


# ------------------------------------------------------- SWAP of whole arrays

SWAPS = """
function swapped(y, a: f64[:, :], b: f64[:, :])
    SWAP(a, b)
    y += a[0, 1] * b[1, 0] * a[1, 1]
end
function swapped_complex(y: complex, a: complex[:], b: complex[:])
    SWAP(a, b)
    y += a[0] * conj(b[1])
end
function mismatched(a: f64[:], b: f64[:, :])
    SWAP(a, b)
end
function other_type(a: f64[:], b: i64[:])
    SWAP(a, b)
end
"""


def test_swap_of_whole_arrays():
    """LANGUAGE.md's SWAP of two whole arrays (docs/language-decisions.md): compiled
    as element swaps after a shape check; the llvm backend refused it before."""
    rows = np.arange(4.0).reshape(2, 2)
    agree(SWAPS, "swapped", [0.0, rows, rows + 10.0], loss="y")
    agree(SWAPS, "swapped_complex", [0j, np.array([1 + 2j, -1j]), np.array([0.5j, 3 + 0j])],
          loss="y", hessian=False)
    assert same_error(SWAPS, "swapped", [0.0, np.ones((3, 2)), np.ones((2, 2))]) \
        .message.endswith("got f64[:,:] (3, 2) and f64[:,:] (2, 2)")
    assert same_error(SWAPS, "mismatched", [np.ones(2), np.ones((1, 2))]).message.endswith(
        "got f64[:] (2,) and f64[:,:] (1, 2)")
    assert same_error(SWAPS, "other_type", [np.ones(2), np.ones(2, dtype=np.int64)]) \
        .message.endswith("got f64[:] (2,) and i64[:] (2,)")


# ------------------------------------------------------------------- stacks

STACKS = """
function copy_of_argument(y!, s)
    t ← s
    y! += length(t)
    t → s
end
function through_a_copy(y!, x)
    s ← stack(f64)
    x2 ← 0.0
    x2 += x * x
    PUSH(s, x2)
    t ← s
    z ← 0.0
    POP(t, z)
    y! += z * x
    PUSH(t, z)
    z → 0.0
    t → s
    POP(s, x2)
    x2 -= x * x
    x2 → 0.0
    s → stack(f64)
end
function copy_changed(y!, s)
    t ← s
    z ← 0.0
    POP(t, z)
    z += 1.0
    PUSH(t, z)
    z → 0.0
    t → s
end
function stash(y!, x, s)
    t ← 0.0
    t += x * x
    PUSH(s, t)
    t → 0.0
    z ← 0.0
    POP(s, z)
    y! += z * x
    PUSH(s, z)
    z → 0.0
end
"""


def test_stack_copies():
    agree(STACKS, "copy_of_argument", [0.0, Stack("f64", [1.0, 2.0])])
    agree(STACKS, "copy_of_argument", [0.0, Stack("i64", [])])
    agree(STACKS, "through_a_copy", [0.0, 1.5])


def _complex_version(source: str) -> str:
    """through_a_copy over complex values: `complex_copy`, reading conj(x)."""
    return (source.replace("through_a_copy(y!, x)", "complex_copy(y!: complex, x: complex)")
            .replace("stack(f64)", "stack(complex)").replace("0.0", "(0.0 + 0.0im)")
            .replace("z * x", "z * conj(x)"))


COPY_GRADIENTS = STACKS + _complex_version(STACKS[STACKS.index("function through_a_copy"):
                                                  STACKS.index("function copy_changed")]) + """
# with invcheck off `t → s` frees t although it has one item more than s
function grown(y!, x)
    z ← 0.0
    z += x * 2.0
    s ← stack(f64)
    a ← x * x
    PUSH(s, a)
    t ← s
    PUSH(t, z)
    z → 0.0
    y! += x
    t → s
    POP(s, a)
    a → x * x
    s → stack(f64)
end
"""


def test_a_stack_copy_gives_its_gradients_back():
    """`t ← s` copies s, so what is read through t is read from s: at `t → s` the
    gradient pass adds t's item gradients to s's (it used to drop them on both
    backends, giving 3 of d(x³)/dx = 3x²)."""
    for backend in ("interp", "llvm"):
        module = rlang.loads(COPY_GRADIENTS, backend=backend)
        _, g = rlang.gradient(module.through_a_copy, [0.0, 1.5], loss="y!")
        assert g == pytest.approx(3 * 1.5 ** 2, rel=1e-12)
        hessian = rlang.hessian(module.through_a_copy, [0.0, 1.5], loss="y!")
        assert hessian[1, 1] == pytest.approx(6 * 1.5, rel=1e-12)
        assert rlang.check_grad(module.through_a_copy, [0.0, 1.5], loss="y!")
        assert rlang.check_grad(module.complex_copy, [0j, 0.5 - 1.25j], loss="y!")
    agree(COPY_GRADIENTS, "complex_copy", [0j, 0.5 - 1.25j], hessian=False)


def test_a_stack_copy_of_another_length_drops_its_gradients_alike():
    """With invcheck off nothing makes t equal s at `t → s`; where their lengths
    differ both backends drop t's gradients (the values are the interpreter's)."""
    interp = rlang.loads(COPY_GRADIENTS, backend="interp", invcheck=False)
    llvm = rlang.loads(COPY_GRADIENTS, backend="llvm", invcheck=False)
    assert llvm.grown(0.0, 1.5) == interp.grown(0.0, 1.5)
    for a, b in zip(rlang.gradient(llvm.grown, [0.0, 1.5], loss="y!"),
                    rlang.gradient(interp.grown, [0.0, 1.5], loss="y!")):
        assert a == pytest.approx(b, rel=1e-12)


def test_a_stack_copy_deallocated_against_a_changed_stack_is_the_interpreters_error():
    error = same_error(STACKS, "copy_changed", [0.0, Stack("f64", [1.0, 2.5])])
    assert error.message == "deallocation check failed: t = [1.0, 3.5], expected [1.0, 2.5]"
    long = Stack("i64", list(range(12)))
    error = same_error(STACKS.replace("z ← 0.0", "z ← 0").replace("z += 1.0", "z += 1")
                       .replace("z → 0.0", "z → 0"), "copy_changed", [0.0, long])
    assert "…12 items…" in error.message


def test_hessians_of_functions_taking_stacks():
    agree(STACKS, "stash", [0.5, 2.0, Stack("f64", [1.5])])
    agree(STACKS, "stash", [0.5, -0.75, Stack("f64", [])])


# ------------------------------------------------------ the gradient pass

def test_an_empty_pop_in_the_gradient_pass_is_the_interpreters_error():
    source = """
function f(y!, x)
    s ← stack(f64)
    z ← 0.0
    z += x
    PUSH(s, z)
    z → 0.0
    y! += x
    @invcheckoff s → stack(f64)
end
"""
    error = same_error(source, "f", [0.0, 2.0], gradient=True)
    assert isinstance(error, rlang.ReversibilityError)
    assert error.message == "POP from the empty stack `s`"


COMPLEX_ARGUMENTS = """
function take!(y!: f64, z: complex[:])
    y! += z[1].re
end

function change!(y!: f64, z: complex[:])
    z[0] += 1.0im
    y! += z[1].re
end
"""


def test_complex_array_literals_as_call_arguments():
    """Their unchanged-check compares (re, im) pairs (it was an LLVM type error)."""
    source = COMPLEX_ARGUMENTS + """
function main()
    r ← 0.0
    take!(r, [1.0 + 2.0im, 3.0 - 1.0im])
    @safe show(r)
end

function bad()
    r ← 0.0
    change!(r, [1.0 + 2.0im, 3.0 - 1.0im])
    r → 3.0
end
"""
    interp, llvm = both(source)
    assert [v for _, v in llvm.run_main()] == [v for _, v in interp.run_main()] == [3.0]
    caught = []
    for module in (interp, llvm):
        with pytest.raises(rlang.ReversibilityError) as error:
            module.bad()
        caught.append(error.value)
    assert caught[0].span == caught[1].span
    assert "became different in 1 element(s)" in caught[1].message
