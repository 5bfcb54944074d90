"""The adjoint rule of every primitive, seen through `rlang.gradient` (LANGUAGE.md §9).

Each built-in of §7 with partial derivatives, each differentiable operator, each
instruction of §6, ancillas and the updates that carry no gradient are run in a small
rev program and differentiated; the result is compared with central finite
differences computed here, independently of rlang's AD:

- for built-ins and operators, differences of a NumPy reference function
  (`REFERENCE`), so the oracle shares no code with rlang;
- for instructions and ancillas, differences of the loss over *forward* runs of the
  program (`numeric_gradient`), which uses the interpreter but none of the AD code.

A known problem would be marked xfail(strict=True) with its reason.
"""
from __future__ import annotations

import math

import numpy as np
import pytest

import rlang
from rlang.ad import gradient_interpreter as adjoint
from rlang.primitives import BUILTINS, INSTRUCTION_TABLE, OPERATOR_PARTIALS

from numeric_gradients import assert_gradients_close, numeric_gradient

STEP = 1e-6
RTOL = 1e-5
ATOL = 1e-7

# ------------------------------------------------------------------ helpers


def check_against_differences(source: str, name: str, args, loss: str, rtol=RTOL,
                              atol=ATOL):
    """gradient(...) of `loss` equals central differences over forward runs."""
    module = rlang.loads(source)
    fn = module[name]
    copies = [a.copy() if isinstance(a, np.ndarray) else a for a in args]
    grads = rlang.gradient(fn, args, loss=loss)
    expected = numeric_gradient(fn, copies, _loss_function(fn, loss))
    assert_gradients_close(grads, expected, rtol, atol)
    return grads


def _loss_function(fn, loss: str):
    """The loss view text (`y`, `y.re`, `a[2]`, `m[1, 0]`) as a function of outputs."""
    base, _, field = loss.partition(".")
    name, _, index_text = base.partition("[")
    position = fn.params.index(name)
    index = tuple(int(i) for i in index_text.rstrip("]").split(",")) if index_text else None

    def loss_of(outputs):
        value = outputs[position]
        if index is not None:
            value = value[index]
        if field == "re":
            return complex(value).real
        if field == "im":
            return complex(value).imag
        return complex(value).real

    return loss_of


def numpy_partials(reference, point, step=STEP) -> list[float]:
    """Central differences of a NumPy function at `point`, argument by argument."""
    partials = []
    for i in range(len(point)):
        up, down = list(point), list(point)
        up[i] += step
        down[i] -= step
        partials.append((float(reference(*up)) - float(reference(*down))) / (2 * step))
    return partials


# ------------------------------------------------------------------ built-ins

#: An independent NumPy reference for every real built-in of §7.
REFERENCE = {
    "sin": np.sin, "cos": np.cos, "tan": np.tan, "asin": np.arcsin, "acos": np.arccos,
    "atan": lambda y, x=None: np.arctan(y) if x is None else np.arctan2(y, x),
    "sinh": np.sinh, "cosh": np.cosh, "tanh": np.tanh, "exp": np.exp, "log": np.log,
    "log1p": np.log1p, "expm1": np.expm1, "sqrt": np.sqrt, "cbrt": np.cbrt, "abs": np.abs,
    "abs2": lambda x: x * x, "angle": np.angle, "real": np.real, "imag": np.imag,
    "conj": np.conj, "min": np.minimum, "max": np.maximum, "floor": np.floor,
    "ceil": np.ceil, "round": np.round, "sign": np.sign, "hypot": np.hypot,
}

#: Where each built-in is sampled (a union of intervals, away from kinks and poles).
DOMAIN = {
    "asin": [(-0.9, 0.9)], "acos": [(-0.9, 0.9)], "log": [(0.2, 3.0)],
    "log1p": [(-0.7, 3.0)], "sqrt": [(0.2, 3.0)], "cbrt": [(-2.0, -0.2), (0.2, 2.0)],
    "tan": [(-1.2, 1.2)], "abs": [(-2.0, -0.1), (0.1, 2.0)],
    "sign": [(-2.0, -0.1), (0.1, 2.0)], "angle": [(-2.0, -0.1), (0.1, 2.0)],
    "hypot": [(-2.0, -0.2), (0.2, 2.0)], "atan": [(-2.0, -0.2), (0.2, 2.0)],
}

DIFFERENTIABLE = sorted(name for name, b in BUILTINS.items() if b.partials is not None)
ARITIES = [(name, n) for name in DIFFERENTIABLE
           for n in range(BUILTINS[name].min_args, BUILTINS[name].max_args + 1)]


def sample_points(name: str, arity: int, count: int = 4, seed: int = 0) -> list[tuple]:
    rng = np.random.default_rng([seed, sum(map(ord, name)), arity])
    intervals = DOMAIN.get(name, [(-2.0, 2.0)])
    points = []
    while len(points) < count:
        point = []
        for _ in range(arity):
            low, high = intervals[rng.integers(len(intervals))]
            point.append(float(rng.uniform(low, high)))
        if name in ("min", "max") and abs(point[0] - point[1]) < 1e-3:
            continue
        if name in ("floor", "ceil", "round") and \
                min(abs(point[0] - round(point[0])), abs(point[0] % 1 - 0.5)) < 1e-3:
            continue
        points.append(tuple(point))
    return points


def _program(name: str, arity: int) -> str:
    params = ", ".join(f"x{i}" for i in range(arity))
    call = f"{name}({params})"
    return f"""
function plus(y, {params})
    y += {call}
end
function minus(y, {params})
    y -= {call}
end
function scaled(y, {params})
    y += x0 * {call}
end
"""


def test_every_builtin_with_partials_has_a_reference_here():
    assert set(DIFFERENTIABLE) <= set(REFERENCE), \
        f"add a NumPy reference for {sorted(set(DIFFERENTIABLE) - set(REFERENCE))}"


@pytest.mark.parametrize("name, arity", ARITIES)
def test_builtin_gradient_matches_finite_differences(name, arity):
    module = rlang.loads(_program(name, arity))
    reference = REFERENCE[name]
    for point in sample_points(name, arity):
        partials = numpy_partials(reference, point)
        value = float(reference(*point))
        expected = {
            "plus": [1.0, *partials],
            "minus": [1.0, *(-p for p in partials)],
            "scaled": [1.0, value + point[0] * partials[0],
                       *(point[0] * p for p in partials[1:])],
        }
        for form, want in expected.items():
            grads = rlang.gradient(module[form], (0.25, *point), loss="y")
            np.testing.assert_allclose(grads, want, rtol=RTOL, atol=ATOL,
                                       err_msg=f"{form}: {name}{point}")


@pytest.mark.parametrize("name", ["sin", "exp", "sqrt", "log", "tanh", "atan"])
def test_builtins_compose_by_the_chain_rule(name):
    source = f"""
function f(y, x, w)
    y += {name}(x * x * 0.5 + 0.25) * {name}(w + 0.5 * x) + w
end
"""
    reference = REFERENCE[name]

    def loss(x, w):
        return reference(x * x * 0.5 + 0.25) * reference(w + 0.5 * x) + w

    module = rlang.loads(source)
    for point in [(0.3, 0.4), (1.1, 0.25), (0.7, 1.5)]:
        grads = rlang.gradient(module.f, (0.0, *point), loss="y")
        np.testing.assert_allclose(grads, [1.0, *numpy_partials(loss, point)], rtol=RTOL,
                                   atol=ATOL)


#: The built-ins with a complex column (LANGUAGE.md §3: complex functions).
COMPLEX_BUILTINS = sorted(name for name, b in BUILTINS.items()
                          if b.partials is not None and b.complex_forward is not None)


@pytest.mark.parametrize("name", COMPLEX_BUILTINS)
def test_builtin_of_a_complex_argument_has_the_wirtinger_gradient(name):
    source = f"""
function f(y: complex, z: complex)
    y += complex({name}(z))
end
"""
    module = rlang.loads(source)
    forward = BUILTINS[name].complex_forward
    for z in [0.6 + 0.3j, -0.4 + 0.5j, 0.3 - 0.7j]:
        for part in ("re", "im"):
            def loss(a, b):
                value = complex(forward(complex(a, b)))
                return value.real if part == "re" else value.imag

            d_re, d_im = numpy_partials(loss, (z.real, z.imag))
            grads = rlang.gradient(module.f, (0j, z), loss=f"y.{part}")
            assert grads[0] == (1.0 if part == "re" else 1j)
            assert abs(grads[1] - complex(d_re, d_im)) < 1e-5, (name, z, part)


# ------------------------------------------------------------------ operators

OPERATORS = {
    "+": lambda a, b: a + b, "-": lambda a, b: a - b, "*": lambda a, b: a * b,
    "/": lambda a, b: a / b, "**": lambda a, b: a ** b, "%": lambda a, b: np.mod(a, b),
    "//": lambda a, b: np.floor_divide(a, b),
}

#: The operators that have a derivative on floats (// is piecewise constant).
DIFFERENTIABLE_OPERATORS = ["+", "-", "*", "/", "**", "%"]


@pytest.mark.parametrize("op", DIFFERENTIABLE_OPERATORS)
def test_every_differentiable_operator_has_partials(op):
    assert op in OPERATOR_PARTIALS


def test_every_builtin_has_partials_of_its_arity():
    # every numeric built-in of §7 is differentiable almost everywhere: each must
    # carry partials (constant ones, like floor, say 0)
    for name, builtin in BUILTINS.items():
        assert builtin.partials is not None, name
        for arity in range(builtin.min_args, builtin.max_args + 1):
            point = sample_points(name, arity, count=1)[0]
            partials = builtin.partials(*point)
            assert len(partials) == arity, name
            assert all(p is None or isinstance(p, (int, float)) for p in partials), name


def test_every_instruction_has_an_adjoint_rule():
    assert set(adjoint.ADJOINT_HANDLERS) == set(INSTRUCTION_TABLE)
    assert all(callable(handler) for handler in adjoint.ADJOINT_HANDLERS.values())


@pytest.mark.parametrize("op", ["+", "-", "*", "/", "**", "//", "%"])
def test_binary_operator_gradient_matches_finite_differences(op):
    source = f"""
function plus(y, a, b)
    y += a {op} b
end
function minus(y, a, b)
    y -= a {op} b
end
function shared(y, a, b)
    y += (a {op} b) * a
end
"""
    module = rlang.loads(source)
    reference = OPERATORS[op]
    rng = np.random.default_rng(7)
    for _ in range(4):
        a, b = (float(v) for v in rng.uniform(0.3, 2.5, 2))
        partials = numpy_partials(reference, (a, b))
        value = reference(a, b)
        expected = {"plus": [1.0, *partials], "minus": [1.0, -partials[0], -partials[1]],
                    "shared": [1.0, value + a * partials[0], a * partials[1]]}
        for form, want in expected.items():
            grads = rlang.gradient(module[form], (0.5, a, b), loss="y")
            np.testing.assert_allclose(grads, want, rtol=RTOL, atol=ATOL,
                                       err_msg=f"{form}: {a} {op} {b}")


def test_unary_minus_and_nested_expressions():
    check_against_differences("""
function f(y, a, b, c)
    y -= -(a * b - c / (a + 2.0)) * -(b ** 3 + a ** 2.5) + (c - a) * (c + b) / (1.0 + b * b)
end
""", "f", (0.1, 0.7, -0.4, 1.3), "y")


@pytest.mark.parametrize("op", ["+", "-", "*", "/"])
def test_complex_operator_gradient_is_wirtinger(op):
    # L = Re or Im of y; gradients reported as ∂L/∂re + i·∂L/∂im
    source = f"""
function f(y: complex, z: complex, w: complex, x)
    y += (z {op} w) * x
end
"""
    for loss in ("y.re", "y.im"):
        check_against_differences(source, "f", (0.5 - 0.25j, 0.6 + 0.3j, -0.4 + 1.1j, 0.7),
                                  loss)


def test_complex_power_with_an_integer_exponent():
    check_against_differences("""
function f(y: complex, z: complex)
    y += z ** 3 - z / (z + 2.0) + 1.5 * z
end
""", "f", (0j, 1.0 + 0.5j), "y.re")


def test_complex_power_with_a_complex_exponent():
    check_against_differences("""
function f(y: complex, z: complex, w: complex)
    y += z ** w
end
""", "f", (0j, 1.0 + 0.5j, 0.7 + 0.2j), "y.re")


# ------------------------------------------------------------------ conversions


@pytest.mark.parametrize("conversion", ["f64", "f32", "fixed"])
def test_conversions_pass_the_gradient_on(conversion):
    module = rlang.loads(f"""
function f(y, x)
    y += f64({conversion}(x * x)) * 3.0
end
""")
    grads = rlang.gradient(module.f, (0.0, 0.75), loss="y")
    assert grads == pytest.approx((1.0, 4.5), rel=1e-6)


def test_complex_constructor_splits_the_gradient():
    check_against_differences("""
function f(y: complex, a, b)
    y += complex(a * b, a - b) * complex(b, 2.0)
end
""", "f", (0j, 0.3, -0.8), "y.im")


def test_ulog_conversion_passes_the_gradient_on():
    module = rlang.loads("""
function f(y, x)
    l ← ulog(x)
    y += f64(l) * 3.0
    l → ulog(x)
end
""")
    assert rlang.gradient(module.f, (0.0, 1.7), loss="y") == pytest.approx((1.0, 3.0))


# ------------------------------------------------------------------ instructions


def test_swap_exchanges_gradients():
    grads = check_against_differences("""
function f(a, b, y)
    SWAP(a, b)
    y += a * 2.0 + b * b * 3.0
end
""", "f", (0.3, 0.7, 0.1), "y")
    assert grads == pytest.approx((1.8, 2.0, 1.0))


def test_swap_of_array_elements_and_whole_arrays():
    source = """
function f(a: f64[:], b: f64[:], y)
    a[0] <=> b[1]
    SWAP(a, b)
    y += a[0] * 2.0 + b[0] * 3.0 + a[1] * b[1]
end
"""
    grads = check_against_differences(source, "f", (np.array([1.0, 2.0]),
                                                     np.array([3.0, 4.0]), 0.0), "y")
    # after the swaps a = [b0, a0] and b = [b1, a1]: y = 2 b0 + 3 b1 + a0 a1
    np.testing.assert_allclose(grads[0], [2.0, 1.0])
    np.testing.assert_allclose(grads[1], [2.0, 3.0])


def test_neg_negates_the_gradient():
    grads = check_against_differences("""
function f(a, y)
    NEG(a)
    y += a * a * a
end
""", "f", (0.3, 0.1), "y")
    assert grads[0] == pytest.approx(-3 * 0.09)          # y += (-a)³


def test_an_integer_stepped_by_inc_and_dec_scales_the_gradient():
    module = rlang.loads("""
function f(a, y, k: i64)
    INC(k)
    y += a * a * k
    DEC(k)
    DEC(k)
    y += sin(a * k)
end
""")
    grads = rlang.gradient(module.f, (0.3, 0.1, 2), loss="y")
    assert grads[0] == pytest.approx(2 * 3 * 0.3 + math.cos(0.3))
    assert grads[1] == 1.0


def test_inc_and_dec_of_a_float_are_refused_in_gradients():
    """INC and DEC step integers (LANGUAGE.md §3): the gradient run refuses a float
    as the forward run does, rather than differentiating a step of 1."""
    module = rlang.loads("function f(a, y)\n    INC(a)\n    y += a * a\nend\n")
    with pytest.raises(rlang.RlangTypeError, match="INC needs an integer, got an f64"):
        rlang.gradient(module.f, (0.3, 0.1), loss="y")


@pytest.mark.parametrize("instr", ["ROT", "IROT"])
@pytest.mark.parametrize("loss", ["y", "a", "b"])
def test_rotations_transform_the_gradient_pair_and_reach_the_angle(instr, loss):
    source = f"""
function f(a, b, t, y)
    {instr}(a, b, t * t + 0.5 * t)
    y += a * a * 0.3 + b * 5.0 + a * b
end
"""
    grads = check_against_differences(source, "f", (0.3, 0.7, 0.4, 0.1), loss)
    assert grads[2] != 0.0                      # the angle's gradient is there


def test_rotation_of_array_elements_by_an_array_angle():
    check_against_differences("""
function f(x: f64[:, :], t: f64[:], y)
    ROT(x[0, 1], x[1, 0], t[1])
    IROT(x[1, 1], x[0, 1], t[0] * x[0, 0])
    y += x[0, 1] * x[1, 1] + x[1, 0]
end
""", "f", (np.array([[0.5, -0.3], [1.2, 0.8]]), np.array([0.3, -1.1]), 0.0), "y")


@pytest.mark.parametrize("loss", ["y", "a", "b"])
def test_hadamard_transforms_the_gradient_pair(loss):
    check_against_differences("""
function f(a, b, y)
    HADAMARD(a, b)
    y += a * a * 0.3 + b * 5.0 + a * b
end
""", "f", (0.3, 0.7, 0.1), loss)


@pytest.mark.parametrize("loss", ["c.re", "c.im", "z.im", "z.re"])
def test_conj_conjugates_the_gradient(loss):
    check_against_differences("""
function f(z: complex, c: complex)
    CONJ(z)
    c += z * z * (0.5 + 1.5im)
end
""", "f", (1.0 + 2.0j, 0.5j), loss)


@pytest.mark.parametrize("loss", ["y.re", "y.im", "w.im"])
def test_swap_and_neg_of_complex_values(loss):
    check_against_differences("""
function f(z: complex, w: complex, y: complex)
    SWAP(z, w)
    NEG(w)
    y += z * w
end
""", "f", (1.0 + 2.0j, 0.5 - 1.0j, 0j), loss)


def test_push_and_pop_move_gradients_through_a_stack():
    # the values come off the stack in reverse order: v ends reversed
    source = """
function f(v: f64[:], w: f64[:])
    s ← stack(f64)
    for i = 0:2
        PUSH(s, v[i])
    end
    for i = 0:2
        POP(s, v[i])
        w[i] += v[i] * v[i] * (1.0 + f64(i))
    end
    s → stack(f64)
end
"""
    v = np.array([1.0, 2.0, 3.0])
    grads = check_against_differences(source, "f", (v, np.zeros(3)), "w[2]")
    np.testing.assert_allclose(grads[0], [2 * 1.0 * 3.0, 0.0, 0.0])
    grads = check_against_differences(source, "f", (v, np.zeros(3)), "v[1]")
    np.testing.assert_allclose(grads[0], [0.0, 1.0, 0.0])


def test_push_pop_of_scalars_in_one_function():
    check_against_differences("""
function f(a, b, c)
    s ← stack(f64)
    PUSH(s, a)
    PUSH(s, b)
    POP(s, a)
    POP(s, b)
    c += a * 2.0 + b * b * 3.0
    s → stack(f64)
end
""", "f", (0.3, 0.7, 0.1), "c")


def test_push_and_pop_inside_called_functions():
    # a and b come back exchanged: y += b0 · a0²
    grads = check_against_differences("""
function pushit(s: stack{f64}, x)
    PUSH(s, x)
end
function f(y, a, b)
    s ← stack(f64)
    pushit(s, a)
    pushit(s, b)
    ~pushit(s, a)
    ~pushit(s, b)
    y += a * b * b
    s → stack(f64)
end
""", "f", (0.0, 0.5, 0.7), "y")
    assert grads == pytest.approx((1.0, 0.7, 0.25))


# ------------------------------------------------------------------ ancillas


def test_ancilla_compute_copy_uncompute_with_a_routine():
    grads = check_against_differences("""
function f(y, x, w)
    @routine begin
        t ← 0.0
        t += x * w + sin(x)
        u ← 0.0
        u += t * t
    end
    y += u * w + t
    ~@routine
end
""", "f", (0.1, 0.7, -0.3), "y")
    assert grads[0] == 1.0


def test_allocation_with_a_non_constant_value():
    check_against_differences("""
function f(y, x)
    t ← x * x + 1.0
    y += log(t) * x
    t → x * x + 1.0
end
""", "f", (0.0, 0.7), "y")


def test_allocation_whose_ancilla_is_changed_before_it_is_freed():
    check_against_differences("""
function f(y, x, w)
    t ← x * w
    t += sin(w)
    y += t * t
    t -= sin(w)
    t → x * w
end
""", "f", (0.2, 0.7, 1.3), "y")


def test_array_ancilla_in_a_routine():
    check_against_differences("""
function f(y, x: f64[:])
    @routine begin
        v ← zeros(f64, 3)
        for k = 0:2
            v[k] += x[k] * x[(k + 1) % 3]
        end
    end
    for k = 0:2
        y += v[k] * v[k] + x[k]
    end
    ~@routine
end
""", "f", (0.0, np.array([0.3, -0.7, 1.1])), "y")


def test_array_ancilla_copied_from_an_array():
    check_against_differences("""
function f(y: f64[:], x: f64[:])
    t ← x
    y[0] += t[0] * t[1]
    t → x
end
""", "f", (np.zeros(2), np.array([2.0, 3.0])), "y[0]")


def test_array_ancilla_from_a_literal_of_variables():
    check_against_differences("""
function f(y, a, b)
    t ← [a, b * 2.0]
    y += t[0] * t[1]
    t → [a, b * 2.0]
end
""", "f", (0.0, 0.5, 0.7), "y")


def test_array_ancilla_from_a_literal_of_arrays():
    """Rows of a 2-D literal that are array variables get their rows' gradients (this
    was a Python traceback: the row's gradient is an array)."""
    check_against_differences("""
function f(y, a: f64[:], b: f64[:])
    t ← [a, b]
    y += t[1, 0] * t[0, 1] + t[0, 0] * t[0, 0]
    t → [a, b]
end
""", "f", (0.0, np.array([0.5, 0.7]), np.array([1.5, -0.25])), "y")


ZEROS_SOURCE = """
function f(y: f64[:], x: f64[:])
    @zeros f64 a b
    a += x[0] * x[1]
    b += sin(a)
    y[0] += b * a
    b -= sin(a)
    a -= x[0] * x[1]
    ~@zeros f64 a b
end
"""


def test_zeros_ancillas_without_checks():
    module = rlang.loads(ZEROS_SOURCE, invcheck=False)
    x = np.array([0.5, 0.7])
    grads = rlang.gradient(module.f, (np.zeros(2), x.copy()), loss="y[0]")
    expected = numeric_gradient(module.f, (np.zeros(2), x.copy()), lambda o: o[0][0])
    assert_gradients_close(grads, expected)


def test_zeros_ancillas_with_checks():
    check_against_differences(ZEROS_SOURCE, "f", (np.zeros(2), np.array([0.5, 0.7])),
                              "y[0]")


# ------------------------------------------------------------------ no gradient


def test_xor_and_integer_updates_carry_no_gradient():
    module = rlang.loads("""
function f(y, x, k, flag: bool, ks: i64[:])
    k ^= 5
    k += 3
    INC(k)
    NEG(k)
    flag ^= true
    FLIP(flag)
    ks[0] -= k
    SWAP(ks[0], ks[1])
    y += x * f64(k) + f64(ks[1])
end
""")
    ks = np.array([1, 2])
    grads = rlang.gradient(module.f, (0.0, 1.5, 2, False, ks), loss="y")
    k_final = -(((2 ^ 5) + 3) + 1)
    assert grads[:4] == (1.0, float(k_final), None, None)
    assert grads[4] is None
    np.testing.assert_array_equal(ks, [1, 2])


def test_integer_and_bool_parameters_get_none():
    module = rlang.loads("""
function f(y, n: i32, m, b: bool, x)
    if b
        y += x * f64(n + m)
    end
end
""")
    grads = rlang.gradient(module.f, (0.0, rlang.I32(3), 4, True, 0.5), loss="y")
    assert grads == (1.0, None, None, None, 7.0)


def test_ulog_multiply_and_divide_carry_the_gradient():
    # out += a ** 1.5 computed through a ulog ancilla
    module = rlang.loads("""
function f(out, a)
    @routine begin
        l ← one(ulog)
        l *= a
        l *= a
        l /= sqrt(a)
    end
    out += f64(l)
    ~@routine
end
""")
    assert rlang.gradient(module.f, (0.0, 1.7), loss="out") == \
        pytest.approx((1.0, 1.5 * math.sqrt(1.7)), rel=1e-9)


def test_ulog_parameters_get_a_gradient():
    module = rlang.loads("""
function f(y: ulog, x: ulog, out)
    y *= x
    out += f64(y) * 2.0
end
""")
    grads = rlang.gradient(module.f, (rlang.ULog.from_value(2.0), rlang.ULog.from_value(3.0),
                                      0.0), loss="out")
    assert grads == pytest.approx((6.0, 4.0, 1.0))


def test_ulog_losses_and_ulog_arrays():
    module = rlang.loads("""
function r(y: ulog, x: ulog)
    y *= x
end
function w(ys: ulog[:], x: ulog)
    ys[0] *= x
    ys[1] /= x * ys[0]
end
""")
    ul = rlang.ULog.from_value
    assert rlang.gradient(module.r, (ul(2.0), ul(3.0)), loss="y") == pytest.approx((3.0, 2.0))
    # ys[1] ends as ys1 / (x² ys0): gradients with respect to the values
    ys, x = rlang.ulog_array([2.0, 3.0]), 1.5
    grads = rlang.gradient(module.w, (ys, ul(x)), loss="ys[1]")
    np.testing.assert_allclose(grads[0], [-3.0 / (x * x * 4.0), 1.0 / (x * x * 2.0)])
    assert grads[1] == pytest.approx(-2 * 3.0 / (x ** 3 * 2.0))
    np.testing.assert_allclose(rlang.to_floats(ys), [2.0, 3.0])      # restored
