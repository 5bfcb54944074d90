"""The parts of LANGUAGE.md §13 built so far: `rlang.grad` and `rlang.value_and_grad`
(rlang/transforms.py: argnums, keyword arguments), keyword arguments in calls and
inverses, on the interpreter and the llvm backend; `rlang.Stack` and stacks on the
command line."""
from __future__ import annotations

import numpy as np
import pytest

import rlang
from rlang.numbers import ULog

SOURCE = """
function f(y!, a, x: f64[:])
    for i = 0:length(x) - 1
        y! += a * x[i] * x[i]
    end
end

function c(w: complex, z: complex, k: i64)
    w += z * z * k
end

function scaled(l: ulog, s)
    l *= s * s
end
"""

BACKENDS = ["interp", "llvm"]


@pytest.fixture(params=BACKENDS)
def m(request):
    return rlang.loads(SOURCE, backend=request.param)


def test_grad_is_the_gradient_of_every_argument(m):
    x = np.array([1.0, 2.0])
    got = rlang.grad(m.f, "y!")(0.5, 2.0, x)
    expected = rlang.gradient(m.f, [0.5, 2.0, x.copy()], loss="y!")
    assert got[:2] == expected[:2] == (1.0, 5.0)
    np.testing.assert_array_equal(got[2], expected[2])
    np.testing.assert_array_equal(x, [1.0, 2.0])          # the caller's array is kept


@pytest.mark.parametrize("argnums, expected", [
    (1, 5.0), (-2, 5.0), ((0, 1), (1.0, 5.0)), ((1, 0), (5.0, 1.0)), ((), ()),
    ([2, 1], None)])
def test_argnums_picks_gradients_in_order(m, argnums, expected):
    got = rlang.grad(m.f, "y!", argnums=argnums)(0.5, 2.0, np.array([1.0, 2.0]))
    if expected is None:                                 # a list of positions: a tuple
        assert isinstance(got, tuple) and got[1] == 5.0
        np.testing.assert_array_equal(got[0], [4.0, 8.0])
    else:
        assert got == expected


def test_value_and_grad_gives_the_losss_final_value(m):
    x = np.array([1.0, 2.0])
    value, gradient = rlang.value_and_grad(m.f, "y!", argnums=1)(0.5, 2.0, x)
    assert (value, gradient) == (0.5 + 2.0 * 5.0, 5.0)
    assert m.f(0.5, 2.0, x.copy())[0] == value
    value, gradients = rlang.value_and_grad(m.c, "w.im")(0j, 1 + 2j, 3)
    assert value == 12.0 and gradients[2] is None
    assert gradients == rlang.gradient(m.c, [0j, 1 + 2j, 3], loss="w.im")
    value, gradient = rlang.value_and_grad(m.c, "w", argnums=0)(1 + 1j, 1j, 2)
    assert value == complex(1 - 2, 1) and gradient == 1 + 0j
    value, _ = rlang.value_and_grad(m.scaled, "l")(ULog.from_value(2.0), 3.0)
    assert isinstance(value, ULog) and abs(float(value) - 18.0) < 1e-12


def test_value_and_grad_on_an_inverse(m):
    value, gradients = rlang.value_and_grad(~m.f, "y!")(10.5, 2.0, np.array([1.0, 2.0]))
    assert value == 0.5
    assert gradients[:2] == (1.0, -5.0) and gradients[2].tolist() == [-4.0, -8.0]


def test_repeated_calls_reuse_the_compiled_gradient(m):
    """The second call of a transformed function runs the same compiled passes; the
    value still comes from its own forward run."""
    g = rlang.value_and_grad(m.f, "y!", argnums=1)
    for a in (1.0, 2.0, 3.0):
        assert g(0.0, a, np.array([1.0, 2.0])) == (5.0 * a, 5.0)


def test_arguments_by_keyword(m):
    x = np.array([1.0, 2.0])
    assert m.f(y_=0.0, a=1.0, x=x)[0] == 5.0
    assert m.f(0.0, x=x, a=1.0)[0] == 5.0
    assert (~m.f)(5.0, 1.0, x=x)[0] == 0.0
    assert rlang.grad(m.f, "y!", argnums=1)(x=x, a=2.0, y_=0.0) == 5.0
    assert rlang.value_and_grad(m.c, "w.re", argnums=1)(w=0j, z=1j, k=1) == (-1.0, -2j)


@pytest.mark.parametrize("call, message", [
    (lambda m, x: m.f(1.0, y_=2.0, a=1.0, x=x), "argument `y!` of `f` is given twice"),
    (lambda m, x: m.f(1.0, b=2.0), "`f` has no parameter `b`; its parameters are y!, a, x"),
    (lambda m, x: m.f(1.0, a=2.0), "`f` is missing the argument(s) x"),
    (lambda m, x: rlang.grad(m.f, "y!", argnums=3), "argnums 3 is not a parameter of `f`"),
    (lambda m, x: rlang.grad(m.f, "y!", argnums=-4), "argnums -4 is not a parameter"),
    (lambda m, x: rlang.grad(m.f, "y!", argnums="a"), "argnums must be an int or a tuple"),
    (lambda m, x: rlang.grad(m.f, "y!", argnums=True), "argnums must be an int or a tuple"),
    (lambda m, x: rlang.grad(print, "y!"), "takes a function of a loaded program"),
    (lambda m, x: rlang.value_and_grad(m.f, "nope")(0.0, 1.0, x), "nope"),
    (lambda m, x: rlang.grad(m.f, "y!")(0.0, 1.0), "takes 3 argument"),
])
def test_bad_transform_calls_are_clear_errors(m, call, message):
    with pytest.raises(rlang.RlangError) as error:
        call(m, np.array([1.0]))
    assert message in error.value.message


def test_transforms_are_named_after_their_function(m):
    assert rlang.grad(m.f, "y!").__name__ == "grad(f)"
    assert rlang.value_and_grad(~m.f, "y!").__name__ == "value_and_grad(~f)"


def test_stacks_are_built_iterated_and_passed():
    s = rlang.Stack("f64", [1, 2.5, np.float32(3.0)])
    assert list(s) == [1.0, 2.5, 3.0] and len(s) == 3
    assert all(type(x) is float for x in s)
    assert list(rlang.Stack("i32", [1, 2])) == [1, 2]
    assert type(list(rlang.Stack("f32", [0.1]))[0]) is rlang.F32
    m = rlang.loads("function f(s: stack{f64}, x)\n    PUSH(s, x)\nend\n")
    pushed, x = m.f(s, 4.0)
    assert list(pushed) == [1.0, 2.5, 3.0, 4.0] and x == 0.0
    for elem, items, message in (("f65", [], "a stack holds bool"),
                                 ("i64", [1.5], "cannot put 1.5 in a stack{i64}"),
                                 ("f64", [1j], "in a stack{f64}")):
        with pytest.raises(rlang.RlangTypeError, match=message.replace("{", r"\{")):
            rlang.Stack(elem, items)


@pytest.mark.parametrize("text, printed", [
    ("stack[1.0, 2.0]", "s = [1.0, 2.0, 3.0]\nx = 0.0\n"),
    ("stack{f64}[]", "s = [3.0]\nx = 0.0\n"),
    ("stack{f64}[1, 2]", "s = [1.0, 2.0, 3.0]\nx = 0.0\n"),
])
def test_stacks_on_the_command_line(cli, write_rev, tmp_path, text, printed):
    path = write_rev(tmp_path, "s.rev", "function f(s: stack{f64}, x)\n    PUSH(s, x)\nend\n")
    assert cli("run", path, "f", text, "3.0") == (0, printed, "")


@pytest.mark.parametrize("text, message", [
    ("stack[]", "an empty stack needs its element type"),
    ("stack[[1.0]]", "a stack holds scalars"),
    ("stack{f66}[1.0]", "argument 1 ('stack{f66}[1.0]'): a stack holds"),
    ("stack[1, 2]", "must be a stack{f64}, got a stack{i64} [1, 2]"),
])
def test_bad_stacks_on_the_command_line(cli, write_rev, tmp_path, text, message):
    path = write_rev(tmp_path, "s.rev", "function f(s: stack{f64}, x)\n    PUSH(s, x)\nend\n")
    code, out, err = cli("run", path, "f", text, "3.0")
    assert code == 1 and out == "" and message in err and "Traceback" not in err


ENERGY = """
function energy(e!: f64, x: f64[:], s, k: i64)
    e! += x[0] * x[0] * x[1] + s * s * x[1] * k
end
"""


@pytest.mark.parametrize("backend", BACKENDS)
def test_hvp_is_the_hessian_times_the_vector(backend):
    m = rlang.loads(ENERGY, backend=backend)
    x = np.array([1.0, 2.0])
    args = (0.0, x, 3.0, 2)
    hessian = rlang.hessian(m.energy, args, loss="e!")
    for vector in ((0.5, np.array([1.0, -1.0]), 2.0, None), (None, [0.0, 1.0], None, None),
                   (1.0, np.zeros(2), 0.0, 7)):
        got = rlang.hvp(m.energy, args, vector, loss="e!")
        direction = np.concatenate([[vector[0] or 0.0], vector[1], [vector[2] or 0.0]])
        expected = hessian @ direction
        assert got[0] == expected[0] and got[2] == expected[3] and got[3] is None
        np.testing.assert_array_equal(got[1], expected[1:3])
    np.testing.assert_array_equal(x, [1.0, 2.0])          # the caller's array is kept


@pytest.mark.parametrize("backend", BACKENDS)
def test_hessian_diag_is_shaped_like_the_arguments(backend):
    m = rlang.loads(ENERGY, backend=backend)
    args = (0.0, np.array([1.0, 2.0]), 3.0, 2)
    diagonal = rlang.hessian_diag(m.energy, args, loss="e!")
    assert diagonal[0] == 0.0 and diagonal[2] == 2 * 2.0 * 2 and diagonal[3] is None
    np.testing.assert_array_equal(diagonal[1], [2 * 2.0, 0.0])
    np.testing.assert_array_equal(np.concatenate([[diagonal[0]], diagonal[1], [diagonal[2]]]),
                                  np.diag(rlang.hessian(m.energy, args, loss="e!")))


@pytest.mark.parametrize("vector, message", [
    ((0.0, [1.0]), "the vector has 2 entries; `energy` takes 4 arguments"),
    ((0.0, [1.0], 0.0, None), "entry 1 has shape (1,); the argument's is (2,)"),
    ((0.0, [1.0, 2.0], [1.0], None), "entry 2 must be a number"),
    (5, "takes the vector as a list or a tuple"),
])
def test_bad_hvp_vectors_are_clear_errors(vector, message):
    m = rlang.loads(ENERGY)
    with pytest.raises(rlang.RlangTypeError) as error:
        rlang.hvp(m.energy, (0.0, np.array([1.0, 2.0]), 3.0, 2), vector, loss="e!")
    assert message in error.value.message


@pytest.mark.parametrize("backend", BACKENDS)
def test_jvp_gives_the_outputs_and_their_tangents(backend):
    m = rlang.loads(ENERGY, backend=backend)
    x = np.array([1.0, 2.0])
    outputs, tangents = rlang.jvp(m.energy, (0.0, x, 3.0, 2), (1.0, [1.0, 0.5], 0.0, None))
    assert outputs[0] == 1.0 * 2.0 + 9.0 * 2.0 * 2 and outputs[2:] == (3.0, 2)
    # de = de₀ + 2x₀x₁ dx₀ + x₀² dx₁ + s²k dx₁ (+ 2sx₁k ds, ds = 0)
    assert tangents[0] == 1.0 + 4.0 + 0.5 + 9.0 and tangents[3] is None
    np.testing.assert_array_equal(tangents[1], [1.0, 0.5])
    np.testing.assert_array_equal(x, [1.0, 2.0])          # the caller's array is kept
    # a tangent is a directional derivative: the gradient's dot product with it
    gradient = rlang.gradient(m.energy, (0.0, x, 3.0, 2), loss="e!")
    _, along = rlang.jvp(m.energy, (0.0, x, 3.0, 2), (0.0, [0.25, -1.0], 2.0, None))
    assert along[0] == pytest.approx(gradient[1] @ [0.25, -1.0] + gradient[2] * 2.0)
    _, back = rlang.jvp(~m.energy, (10.0, x, 3.0, 2), (0.0, [0.0, 1.0], 1.0, None))
    assert back[0] == -(1.0 + 9.0 * 2 + 2 * 3.0 * 2.0 * 2)


VJP = ENERGY + """
function scale!(y!: f64[:], a)
    for i = 0:length(y!) - 1
        y![i] += a * a
    end
end

function c(w: complex, z: complex)
    w += z * z
end

function u(l: ulog, s)
    l *= s * s
end
"""


@pytest.mark.parametrize("backend", BACKENDS)
def test_vjp_pulls_cotangents_back(backend):
    m = rlang.loads(VJP, backend=backend)
    x = np.array([1.0, 2.0])
    outputs, pull = rlang.vjp(m.energy, 0.0, x, 3.0, 2)
    assert outputs[0] == 38.0 and outputs[2:] == (3.0, 2)
    np.testing.assert_array_equal(x, [1.0, 2.0])          # the caller's array is kept
    got = pull((1.0, None, None, None))
    expected = rlang.gradient(m.energy, (0.0, x, 3.0, 2), loss="e!")
    assert got[0] == expected[0] and got[2:] == expected[2:]
    np.testing.assert_array_equal(got[1], expected[1])
    y = np.zeros(3)
    outputs, pull = rlang.vjp(m.scale_, y, 2.0)
    np.testing.assert_array_equal(outputs[0], [4.0, 4.0, 4.0])
    np.testing.assert_array_equal(y, np.zeros(3))
    weights, da = pull((np.array([1.0, 2.0, 3.0]), 0.0))       # Σ wᵢ · 2a = 24
    assert da == 24.0 and weights.tolist() == [1.0, 2.0, 3.0]
    assert pull((None, 1.0))[1] == 1.0                  # called again: its own pass
    _, pull = rlang.vjp(m.c, 0j, 1 + 2j)
    assert pull((1 + 0j, None)) == ((1 + 0j), (2 - 4j))
    assert pull((1j, 0j)) == (1j, (4 + 2j))
    outputs, pull = rlang.vjp(m.u, ULog.from_value(2.0), 3.0)
    dl, ds = pull((1.0, None))
    assert abs(float(outputs[0]) - 18.0) < 1e-12 and abs(dl - 9.0) < 1e-12 and \
        abs(ds - 12.0) < 1e-12


@pytest.mark.parametrize("cotangents, message", [
    ((1.0,), "takes 4 cotangents, one per output; got 1"),
    ((1.0, [1.0], None, None), "cotangent 1 has shape (1,); the output's is (2,)"),
    (7, "takes the cotangents as a list or a tuple"),
])
def test_bad_cotangents_are_clear_errors(cotangents, message):
    m = rlang.loads(VJP)
    _, pull = rlang.vjp(m.energy, 0.0, np.array([1.0, 2.0]), 3.0, 2)
    with pytest.raises(rlang.RlangTypeError) as error:
        pull(cotangents)
    assert message in error.value.message


@pytest.mark.parametrize("backend", BACKENDS)
def test_hessian_and_jacobian_take_argnums(backend):
    m = rlang.loads(ENERGY, backend=backend)
    args = (0.0, np.array([1.0, 2.0]), 3.0, 2)
    full = rlang.hessian(m.energy, args, loss="e!")
    np.testing.assert_array_equal(rlang.hessian(m.energy, args, loss="e!", argnums=1),
                                  full[1:3, 1:3])
    np.testing.assert_array_equal(rlang.hessian(m.energy, args, loss="e!", argnums=(2, -3)),
                                  full[1:4, 1:4])           # the inputs in argument order
    np.testing.assert_array_equal(rlang.jacobian(m.energy, args, argnums=(2, 1), outputs="e!"),
                                  rlang.jacobian(m.energy, args, inputs=["s", "x"],
                                                 outputs="e!"))
    with pytest.raises(rlang.RlangTypeError, match="argnums 4 is not a parameter"):
        rlang.hessian(m.energy, args, loss="e!", argnums=4)
    with pytest.raises(rlang.RlangTypeError, match="`inputs` or `argnums`, not both"):
        rlang.jacobian(m.energy, args, inputs="x", argnums=1)


# rlang.jvp of rlang.grad / rlang.value_and_grad: forward over reverse
# (Note [Transforms of transforms], rlang/transforms.py)

def test_jvp_of_grad_is_the_gradient_and_the_hessian_times_the_tangents(m):
    x = np.array([1.0, -2.0, 0.5])
    v = np.array([0.5, 1.0, -3.0])
    gradient, moved = rlang.jvp(rlang.grad(m.f, "y!"), (0.0, 1.5, x), (None, 2.0, v))
    assert gradient[1] == pytest.approx(np.sum(x * x))
    np.testing.assert_allclose(gradient[2], 2 * 1.5 * x)
    # H = [[0, 2x], [2x, 2a I]]: row a is 2x·v, rows x are 2x·2 + 2a v
    assert moved[1] == pytest.approx(2 * x @ v)
    np.testing.assert_allclose(moved[2], 2 * x * 2.0 + 2 * 1.5 * v)
    hvp = rlang.hvp(m.f, (0.0, 1.5, x), (None, 2.0, v), loss="y!")
    np.testing.assert_allclose(moved[2], hvp[2])
    assert moved[1] == hvp[1]


def test_jvp_of_grad_keeps_argnums_and_the_callers_arrays(m):
    x = np.array([1.0, -2.0, 0.5])
    before = x.copy()
    gradient, moved = rlang.jvp(rlang.grad(m.f, "y!", argnums=2), (0.0, 1.5, x),
                                (None, None, np.ones(3)))
    np.testing.assert_allclose(gradient, 3 * x)
    np.testing.assert_allclose(moved, 3 * np.ones(3))
    assert np.array_equal(x, before)


def test_jvp_of_value_and_grad_moves_the_value_by_the_gradient(m):
    """The slope is ⟨gradient, tangents⟩ over every argument with a tangent, picked
    by argnums or not, at the first call and at those a builtin makes."""
    x = np.array([1.0, 2.0])
    transform = rlang.value_and_grad(m.f, "y!", argnums=1)
    for _ in range(3):
        (value, gradient), (slope, moved) = rlang.jvp(transform, (0.0, 2.0, x),
                                                      (None, 0.5, x))
        assert value == pytest.approx(2.0 * 5.0)
        assert gradient == pytest.approx(5.0)
        assert slope == pytest.approx(0.5 * 5.0 + 2.0 * 2 * x @ x)
        assert moved == pytest.approx(2 * x @ x)


def test_jvp_of_a_transform_refuses_bad_arguments(m):
    with pytest.raises(rlang.RlangTypeError, match="list or a tuple"):
        rlang.jvp(rlang.grad(m.f, "y!"), 3.0, (None, 1.0, None))
    with pytest.raises(rlang.RlangTypeError, match="entries"):
        rlang.jvp(rlang.grad(m.f, "y!"), (0.0, 1.0, np.ones(2)), (None, 1.0))
