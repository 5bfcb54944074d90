"""Reverse-mode AD as a user sees it (rlang/ad/drivers.py, rlang/ad/gradient_interpreter.py; LANGUAGE.md §9).

`rlang.gradient(m.f, args, loss=…)`: the loss forms, the shape of the result, the
inputs left as they were, `rlang.check_grad`, shared reads, gradients through every
kind of control flow, calls and uncalls, complex and fixed-point numbers, 2-D arrays,
and the `rlang grad` command.  Expected values are analytic or central differences of
the loss over forward runs (`numeric_gradient`), never rlang's own AD.

A known problem would be marked xfail(strict=True) with its reason.  The tests of
the problems found and since fixed stay as regression tests.
"""
from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pytest

import rlang
from rlang.values import Stack

from numeric_gradients import assert_gradients_close, numeric_gradient

REPO = Path(__file__).resolve().parents[3]

# ------------------------------------------------------------------ helpers


def copied(args):
    return [a.copy() if isinstance(a, np.ndarray) else a for a in args]


def agrees_with_differences(module, name, args, loss, loss_of, rtol=1e-5, atol=1e-7):
    fn = module[name]
    grads = rlang.gradient(fn, copied(args), loss=loss)
    assert_gradients_close(grads, numeric_gradient(fn, copied(args), loss_of), rtol, atol)
    return grads


def out(position, index=None, part="re"):
    """The loss as a function of the outputs: outputs[position][index], its .re/.im."""

    def loss_of(outputs):
        value = outputs[position] if index is None else outputs[position][index]
        return complex(value).real if part == "re" else complex(value).imag

    return loss_of


# ------------------------------------------------------------------ the loss

LOSS_SOURCE = """
function f(y: f64[:], z: complex, s, x: f64[:], n)
    for i = 0:n - 1
        y[i] += x[i] * x[i] * s
        z += x[i] * s * (1.0 + 2.0im)
    end
    s += x[0] * 3.0
end
function grid(m: f64[:, :], w: f64[:, :])
    for i = 0:1
        for j = 0:2
            m[i, j] += w[j, i] * w[j, (i + 1) % 2]
        end
    end
end
function mark!(y!, x)
    y! += 2.0 * x
end
"""


@pytest.fixture(scope="module")
def lm():
    return rlang.loads(LOSS_SOURCE)


def loss_args():
    return [np.zeros(3), 0j, 0.5, np.array([1.0, 2.0, 3.0]), 3]


@pytest.mark.parametrize("loss", ["s", 2])
def test_loss_by_name_or_position(lm, loss):
    grads = rlang.gradient(lm.f, loss_args(), loss=loss)
    # s_final = s + 3 x0
    assert grads[2] == 1.0
    np.testing.assert_array_equal(grads[3], [3.0, 0.0, 0.0])
    np.testing.assert_array_equal(grads[0], np.zeros(3))
    assert grads[1] == 0j


@pytest.mark.parametrize("loss", [("y", 1), ("y", (1,)), "y[1]", "y[ 2 - 1 ]"])
def test_loss_of_an_array_element(lm, loss):
    grads = rlang.gradient(lm.f, loss_args(), loss=loss)
    # y1_final = y1 + x1² s
    np.testing.assert_array_equal(grads[0], [0.0, 1.0, 0.0])
    assert grads[2] == 4.0
    np.testing.assert_array_equal(grads[3], [0.0, 2 * 2.0 * 0.5, 0.0])


@pytest.mark.parametrize("loss, dz, ds, dx", [
    ("z.re", 1.0, 6.0, 0.5),          # Re z_final = Re z + s Σ x
    ("z", 1.0, 6.0, 0.5),             # a complex loss is its real part
    ("z.im", 1j, 12.0, 1.0),          # Im z_final = Im z + 2 s Σ x
])
def test_loss_of_a_complex_field(lm, loss, dz, ds, dx):
    grads = rlang.gradient(lm.f, loss_args(), loss=loss)
    assert grads[1] == dz
    assert grads[2] == pytest.approx(ds)
    np.testing.assert_allclose(grads[3], [dx, dx, dx])


@pytest.mark.parametrize("loss", [("m", (1, 2)), "m[1, 2]"])
def test_loss_of_a_2d_element(lm, loss):
    w = np.arange(6.0).reshape(3, 2) + 1.0
    grads = rlang.gradient(lm.grid, (np.zeros((2, 3)), w), loss=loss)
    expected = np.zeros((3, 2))
    expected[2, 1], expected[2, 0] = w[2, 0], w[2, 1]      # m[1,2] += w[2,1] w[2,0]
    np.testing.assert_array_equal(grads[1], expected)
    assert grads[0].shape == (2, 3) and grads[0][1, 2] == 1.0 and grads[0].sum() == 1.0


def test_loss_names_with_a_bang(lm):
    assert rlang.gradient(lm.mark_, (0.0, 1.0), loss="y!") == (1.0, 2.0)
    assert rlang.gradient(lm["mark!"], (0.0, 1.0), loss=0) == (1.0, 2.0)


@pytest.mark.parametrize("loss", [
    "nosuch", ("nosuch", 1), 5, -1, True, 1.5, None, ["s"], ("y",), "s * 2.0", "f(s)",
    "", "y[", "n", "y", "x", "s.re", "s[0]", ("s", 0), "y[7]", "z.foo", "y[1.5]",
    "y[0, 1]", ("y", (0, 1)), ("y", -1), "y[i]", "z.re[0]", "y[0].re",
])
def test_bad_losses_are_rlang_errors(lm, loss):
    with pytest.raises(rlang.RlangError):
        rlang.gradient(lm.f, loss_args(), loss=loss)


@pytest.mark.parametrize("loss", ["z.re.re", "z.im.re", ("y", "a"), ("y", None), ("y", 1.5)])
def test_malformed_losses_are_rlang_errors(lm, loss):
    with pytest.raises(rlang.RlangError):
        rlang.gradient(lm.f, loss_args(), loss=loss)


def test_a_bad_loss_names_the_parameters(lm):
    with pytest.raises(rlang.RlangError, match="nosuch") as info:
        rlang.gradient(lm.f, loss_args(), loss="nosuch")
    assert "y, z, s, x, n" in str(info.value)


def test_an_integer_loss_is_a_type_error(lm):
    with pytest.raises(rlang.RlangTypeError, match="loss"):
        rlang.gradient(lm.f, loss_args(), loss="n")


# ------------------------------------------------------------------ the result


def test_one_result_per_argument_of_the_right_kind(lm):
    grads = rlang.gradient(lm.f, loss_args(), loss="y[0]")
    assert len(grads) == 5 and isinstance(grads, tuple)
    assert isinstance(grads[0], np.ndarray) and grads[0].shape == (3,)
    assert isinstance(grads[1], complex)
    assert type(grads[2]) is float
    assert isinstance(grads[3], np.ndarray) and grads[3].dtype == np.float64
    assert grads[4] is None


def test_ints_bools_and_integer_arrays_get_none():
    module = rlang.loads("""
function f(y, k: i32, b: bool, ks: i64[:], flags: bool[:], x)
    if b && flags[1]
        y += x * f64(k + ks[0])
    end
end
""")
    grads = rlang.gradient(module.f, (0.0, rlang.I32(2), True, np.array([3, 4]),
                                      np.array([False, True]), 1.5), loss="y")
    assert grads == (1.0, None, None, None, None, 5.0)


def test_complex_arrays_get_complex_gradients():
    module = rlang.loads("""
function f(zs: complex[:], w: complex)
    zs[0].re += zs[1].im * w.re
    zs[1].im += zs[0].re * zs[0].re
end
""")
    zs = np.array([0.3 + 0.4j, 0.5 - 0.2j])
    grads = agrees_with_differences(module, "f", (zs, 1.2 + 0.1j), "zs[1].im",
                                    out(0, 1, "im"))
    assert grads[0].dtype == np.complex128


def test_lists_are_accepted_and_give_array_gradients():
    module = rlang.loads("""
function g(y: f64[:], x: f64[:])
    y[0] += x[0] * x[1]
end
""")
    grads = rlang.gradient(module.g, ([0.0], [2.0, 3.0]), loss="y[0]")
    np.testing.assert_array_equal(grads[0], [1.0])
    np.testing.assert_array_equal(grads[1], [3.0, 2.0])


def test_f32_parameters_get_float_gradients():
    module = rlang.loads("""
function f(y: f32, x: f32)
    y += x * x
end
""")
    grads = rlang.gradient(module.f, (rlang.F32(0.5), rlang.F32(1.5)), loss="y")
    assert grads == (1.0, 3.0) and all(type(g) is float for g in grads)


def test_gradient_of_an_inverse_function():
    module = rlang.loads("""
function f(y, x)
    y += x * x * x
    x += sin(y)
end
""")
    args = (0.5, 0.7)
    assert_gradients_close(rlang.gradient(~module.f, args, loss="y"),
                           numeric_gradient(~module.f, args, out(0)))


def test_gradient_is_repeatable(lm):
    first = rlang.gradient(lm.f, loss_args(), loss="z.im")
    second = rlang.gradient(lm.f, loss_args(), loss="z.im")
    for a, b in zip(first, second):
        np.testing.assert_array_equal(np.asarray(a, dtype=object), np.asarray(b, dtype=object))


# ------------------------------------------------------------------ inputs left as they were


def test_float_arrays_are_restored_in_place_within_rounding():
    module = rlang.loads("""
function f(y: f64[:], x: f64[:])
    for i = 0:length(x) - 1
        y[i] += x[i] * x[(i + 1) % length(x)] * 0.1
        x[(i + 2) % length(x)] += y[i] / 3.0
    end
end
""")
    rng = np.random.default_rng(3)
    y, x = rng.normal(size=5), rng.normal(size=5)
    y0, x0 = y.copy(), x.copy()
    rlang.gradient(module.f, (y, x), loss="y[2]")
    np.testing.assert_allclose(y, y0, rtol=0, atol=1e-14)
    np.testing.assert_allclose(x, x0, rtol=0, atol=1e-14)


def test_integer_and_fixed_arrays_are_restored_exactly():
    module = rlang.loads("""
function f(y: fixed[:], x: fixed[:], ks: i64[:])
    for i = 0:length(x) - 1
        y[i] += x[i] * x[(i + 1) % length(x)]
        ks[i] += ks[(i + 1) % length(ks)] * 3
    end
end
""")
    y, x = rlang.fixed_array([0.1, 0.2, 0.3]), rlang.fixed_array([0.5, 1.5, 2.0])
    ks = np.array([1, 2, 3])
    saved = [y.copy(), x.copy(), ks.copy()]
    grads = rlang.gradient(module.f, (y, x, ks), loss="y[1]")
    np.testing.assert_array_equal(grads[1], [0.0, 2.0, 1.5])
    for now, before in zip((y, x, ks), saved):
        np.testing.assert_array_equal(now, before)


def test_complex_arrays_are_restored(lm):
    args = loss_args()
    x = args[3]
    rlang.gradient(lm.f, args, loss="z.im")
    np.testing.assert_array_equal(x, [1.0, 2.0, 3.0])
    np.testing.assert_array_equal(args[0], np.zeros(3))


def test_stack_arguments_are_left_as_they_were():
    module = rlang.loads("""
function f(s: stack{f64}, y, x)
    t ← 0.0
    POP(s, t)
    y += t * t * x
    PUSH(s, t)
    t → 0.0
end
""")
    s = Stack("f64", [1.0, 2.5])
    grads = rlang.gradient(module.f, (s, 0.0, 3.0), loss="y")
    assert grads[1:] == (1.0, 6.25)
    assert s == Stack("f64", [1.0, 2.5])
    assert all(type(item) is float for item in s.items)


# ------------------------------------------------------------------ check_grad


CHECK_SOURCE = """
function f(y: f64[:], x: f64[:], s, z: complex)
    for i = 0:length(x) - 1
        y[i] += sin(x[i]) * x[(i + 1) % length(x)] * s
    end
    s += exp(x[0]) * 0.25
    z += s * x[1]
end
function kink(y, x)
    y += floor(x) + max(x, 1.0)
end
"""


def test_check_grad_is_true_on_good_programs():
    module = rlang.loads(CHECK_SOURCE)
    args = (np.zeros(3), np.array([0.3, -0.7, 1.1]), 0.5, 0.25 + 0.5j)
    for loss in ("y[1]", "s", "z.re", "z.im"):
        assert rlang.check_grad(module.f, args, loss=loss) is True


def test_check_grad_leaves_arrays_as_they_were():
    module = rlang.loads(CHECK_SOURCE)
    y, x = np.zeros(3), np.array([0.3, -0.7, 1.1])
    rlang.check_grad(module.f, (y, x, 0.5, 0j), loss="y[2]")
    np.testing.assert_allclose(y, np.zeros(3), rtol=0, atol=1e-15)
    np.testing.assert_array_equal(x, [0.3, -0.7, 1.1])


@pytest.mark.parametrize("x", [1.0, 2.0])
def test_check_grad_raises_at_a_point_where_differences_disagree(x):
    # floor jumps at integers: the rule says 0, the finite difference ~1/(2 step)
    module = rlang.loads(CHECK_SOURCE)
    with pytest.raises(rlang.RlangError, match="gradient check failed at `x`"):
        rlang.check_grad(module.kink, (0.0, x), loss="y")
    assert rlang.check_grad(module.kink, (0.0, x + 0.5), loss="y") is True


CHECK_NUMBERS_SOURCE = """
function s(y: fixed, x: fixed)
    y += x * x
end
function a(y: fixed[:], x: fixed[:])
    for i = 0:length(x) - 1
        y[i] += x[i] * x[(i + 1) % length(x)]
    end
end
function u(out, x: ulog)
    out += f64(x) * 2.0
end
function ua(out, xs: ulog[:])
    out += f64(xs[0] * xs[1])
end
"""


@pytest.mark.parametrize("kind", ["fixed", "fixed array", "ulog", "ulog array"])
def test_check_grad_on_fixed_point_and_ulog_inputs(kind):
    module = rlang.loads(CHECK_NUMBERS_SOURCE)
    fx, ul = rlang.Fixed.from_value, rlang.ULog.from_value
    fn, args, loss = {
        "fixed": (module.s, (fx(0.5), fx(1.5)), "y"),
        "fixed array": (module.a, (rlang.fixed_array([0.0, 0.0, 0.0]),
                                   rlang.fixed_array([0.5, 1.5, 2.0])), "y[1]"),
        "ulog": (module.u, (0.0, ul(1.5)), "out"),
        "ulog array": (module.ua, (0.0, rlang.ulog_array([2.0, 3.0])), "out"),
    }[kind]
    assert rlang.check_grad(fn, args, loss=loss, step=1e-4) is True


# ------------------------------------------------------------------ shared reads


SHARED_SOURCE = """
function square(y, x)
    y += x * x
end
function xsin(y, x)
    y += x * sin(x)
end
function elements(a: f64[:], b: f64[:], i, j, k)
    a[i] += b[j] * b[k]
end
function three(y, x)
    y += x * x * x + x / (x + 1.0) - x ** x
end
function h2(p, q, r)
    p += q * r
end
function twice(y, x)
    h2(y, x, x)
end
function twice_element(y, v: f64[:])
    h2(y, v[1], v[1])
end
function view_after_expression(y, x)
    h2(y, x + 0.0, x)
end
function expression_after_view(y, x)
    h2(y, x, x + 0.0)
end
function two_expressions(y, x)
    h2(y, x * 1.0, x + 0.0)
end
function twice_array(y, v: f64[:], w: f64[:])
    dot(y, v, v)
    dot(y, w, v)
end
function dot(y, a: f64[:], b: f64[:])
    for i = 0:length(a) - 1
        y += a[i] * b[i]
    end
end
"""


@pytest.fixture(scope="module")
def sm():
    return rlang.loads(SHARED_SOURCE)


def test_shared_read_x_times_x(sm):
    assert rlang.gradient(sm.square, (0.5, 1.5), loss="y") == (1.0, 3.0)


def test_shared_read_x_sin_x(sm):
    grads = rlang.gradient(sm.xsin, (0.0, 1.3), loss="y")
    assert grads[1] == pytest.approx(math.sin(1.3) + 1.3 * math.cos(1.3), rel=1e-12)


def test_shared_read_of_many_kinds(sm):
    x = 0.8
    expected = 3 * x * x + 1 / (x + 1) ** 2 - x ** x * (math.log(x) + 1)
    assert rlang.gradient(sm.three, (0.0, x), loss="y")[1] == pytest.approx(expected)


@pytest.mark.parametrize("j, k", [(1, 1), (0, 1), (2, 2)])
def test_shared_read_of_array_elements_with_equal_indices(sm, j, k):
    b = np.array([0.5, 1.5, -2.0])
    grads = rlang.gradient(sm.elements, (np.zeros(2), b, 1, j, k), loss="a[1]")
    expected = np.zeros(3)
    expected[j] += b[k]
    expected[k] += b[j]
    np.testing.assert_array_equal(grads[1], expected)
    assert grads[2:] == (None, None, None)


def test_one_array_passed_for_two_read_parameters(sm):
    v, w = np.array([1.0, 2.0]), np.array([3.0, 5.0])
    grads = rlang.gradient(sm.twice_array, (0.0, v, w), loss="y")
    np.testing.assert_array_equal(grads[1], 2 * v + w)
    np.testing.assert_array_equal(grads[2], v)


@pytest.mark.parametrize("name", ["twice", "twice_element", "view_after_expression"])
def test_one_scalar_read_by_two_arguments(sm, name):
    if name == "twice_element":
        grads = rlang.gradient(sm.twice_element, (0.0, np.array([0.0, 1.5])), loss="y")
        np.testing.assert_array_equal(grads[1], [0.0, 3.0])
    else:
        assert rlang.gradient(sm[name], (0.0, 1.5), loss="y") == (1.0, 3.0)


@pytest.mark.parametrize("name", ["expression_after_view", "two_expressions"])
def test_one_scalar_read_by_a_view_and_a_later_expression_argument(sm, name):
    assert rlang.gradient(sm[name], (0.0, 1.5), loss="y") == (1.0, 3.0)


# ------------------------------------------------------------------ control flow


FLOW_SOURCE = """
function branch(y, x, k)
    if (k > 0, ~)
        y += x * x
    elseif (k == 0, ~)
        y += exp(x) * x
    else
        y -= sin(x)
    end
end
function float_branch(y, x)
    if (x > 0.0, ~)
        y += x * x
    else
        y -= sin(x)
    end
end
function branch_post(y, x, k)
    if (k > 0, y > 10.0)
        y += 20.0 + x * x
    else
        y += cos(x)
    end
end
function while_loop(y, x, n)
    i ← 0
    while (i < n, i > 0)
        y += x * x
        x += y * 0.5
        i += 1
    end
    i → n
end
function from_loop(y, x, n)
    i ← 0
    from i == 0 do
        i += 1
    loop
        y += x * cos(x)
        x -= y * 0.25
    until i == n
    i → n
end
function for_loop(y: f64[:], x: f64[:], a, s, b)
    for i = a:s:b
        y[i] += x[i] * x[(i + 1) % length(x)]
        x[(i + 2) % length(x)] += y[i] * 0.5
    end
end
function for_two(y, x, a, b)
    for i = a:b
        y += x * f64(i)
        x += sin(y) * 0.5
    end
end
function power(y, x, n)
    if (n > 0, ~)
        t ← 0.0
        t += x
        power(t, x, n - 1)
        y += t * x
        ~power(t, x, n - 1)
        t → x
    end
end
function horner(y, c: f64[:], x, k)
    if (k < length(c), ~)
        y += c[k]
        t ← 0.0
        horner(t, c, x, k + 1)
        y += t * x
        ~horner(t, c, x, k + 1)
        t → 0.0
    end
end
function cube(y, x)
    y += x * x * x
end
function calls(y, x, v: f64[:])
    cube(y, x)
    ~cube(y, x * 0.5)
    cube(y, sin(x))
    cube(v[1], v[0])
    ~cube(v[0], y)
end
function undo_block(y, x)
    ~begin
        y -= x * x
        x += y
    end
end
function unchecked(y, x)
    @invcheckoff begin
        t ← x * 2.0
        y += t * x
        t → x * 2.0
    end
    @invcheckoff y += sin(x)
end
"""


@pytest.fixture(scope="module")
def fm():
    return rlang.loads(FLOW_SOURCE)


@pytest.mark.parametrize("k, expected", [
    (1, lambda x: 2 * x), (0, lambda x: math.exp(x) * (1 + x)), (-1, lambda x: -math.cos(x))])
def test_every_branch_of_an_if(fm, k, expected):
    grads = rlang.gradient(fm.branch, (0.1, 0.7, k), loss="y")
    assert grads[0] == 1.0 and grads[2] is None
    assert grads[1] == pytest.approx(expected(0.7), rel=1e-12)


@pytest.mark.parametrize("x", [0.7, -0.7])
def test_both_branches_of_a_float_condition(fm, x):
    grads = rlang.gradient(fm.float_branch, (0.1, x), loss="y")
    assert grads[1] == pytest.approx(2 * x if x > 0 else -math.cos(x), rel=1e-12)


@pytest.mark.parametrize("k", [1, 0])
def test_branch_with_a_post_condition(fm, k):
    agrees_with_differences(fm, "branch_post", (0.1, 0.7, k), "y", out(0))


@pytest.mark.parametrize("n", [0, 1, 3])
def test_while_loop(fm, n):
    agrees_with_differences(fm, "while_loop", (0.1, 0.7, n), "y", out(0))
    agrees_with_differences(fm, "while_loop", (0.1, 0.7, n), "x", out(1))


@pytest.mark.parametrize("n", [1, 4])
def test_from_loop(fm, n):
    agrees_with_differences(fm, "from_loop", (0.1, 0.7, n), "y", out(0))
    agrees_with_differences(fm, "from_loop", (0.1, 0.7, n), "x", out(1))


@pytest.mark.parametrize("a, s, b", [(0, 1, 4), (4, -1, 0), (0, 2, 4), (1, 2, 4), (4, -3, 0),
                                     (3, -2, 0), (1, 3, 0), (0, 1, -1), (2, 1, 2)])
@pytest.mark.parametrize("loss, position, index", [("y[1]", 0, 1), ("x[2]", 1, 2),
                                                   ("y[0]", 0, 0)])
def test_for_loop_with_every_step_kind(fm, a, s, b, loss, position, index):
    y, x = np.array([0.1, 0.2, 0.3, 0.4, 0.5]), np.array([0.3, -0.5, 0.9, 1.2, 0.4])
    grads = agrees_with_differences(fm, "for_loop", (y, x, a, s, b), loss, out(position, index))
    assert grads[2:] == (None, None, None)


def test_for_loop_without_a_step(fm):
    agrees_with_differences(fm, "for_two", (0.1, 0.7, 2, 5), "y", out(0))


@pytest.mark.parametrize("n", [0, 1, 3, 5])
def test_recursive_power(fm, n):
    x = 1.3
    grads = rlang.gradient(fm.power, (0.25, x, n), loss="y")
    # power(y, x, n) adds P(n) = x (x + P(n - 1)) = x² + x³ + … + x^(n+1)
    expected = sum(k * x ** (k - 1) for k in range(2, n + 2))
    assert grads[:2] == pytest.approx((1.0, expected), rel=1e-12)
    assert grads[2] is None


def test_recursive_horner_scheme(fm):
    c, x = np.array([1.0, -2.0, 3.0, 0.5]), 0.7
    grads = rlang.gradient(fm.horner, (0.0, c.copy(), x, 0), loss="y")
    np.testing.assert_allclose(grads[1], x ** np.arange(4), rtol=1e-12)
    assert grads[2] == pytest.approx(sum(k * c[k] * x ** (k - 1) for k in range(1, 4)))
    assert grads[3] is None


def test_calls_and_uncalls_with_views_and_expressions(fm):
    args = (0.1, 0.7, np.array([0.4, -0.6]))
    agrees_with_differences(fm, "calls", args, "y", out(0))
    agrees_with_differences(fm, "calls", args, "v[0]", out(2, 0))
    agrees_with_differences(fm, "calls", args, "v[1]", out(2, 1))


def test_inverted_block(fm):
    grads = agrees_with_differences(fm, "undo_block", (0.1, 0.7), "y", out(0))
    # ~begin: x -= y; y += x * x → y + (x - y)²
    assert grads == pytest.approx((1 - 2 * (0.7 - 0.1), 2 * (0.7 - 0.1)))


def test_invcheckoff(fm):
    grads = rlang.gradient(fm.unchecked, (0.1, 0.7), loss="y")
    assert grads == pytest.approx((1.0, 4 * 0.7 + math.cos(0.7)))


def test_a_module_without_checks():
    module = rlang.loads(FLOW_SOURCE, invcheck=False)
    agrees_with_differences(module, "while_loop", (0.1, 0.7, 3), "y", out(0))
    agrees_with_differences(module, "calls", (0.1, 0.7, np.array([0.4, -0.6])), "y", out(0))


# ------------------------------------------------------------------ numbers


COMPLEX_SOURCE = """
function f(y: complex, z: complex, w: complex)
    y += z * z * w
end
function g(y: complex, x, w: complex)
    y += w * x + x * x * 2.0im - (1.5 - 0.5im) * x / w
end
function field_times_im(y: complex, w: complex)
    y += w.re * 1.0im
end
function through_real(y: complex, z: complex, w: complex)
    t ← 0.0
    t += z.re
    y += w * t
    t -= z.re
    t → 0.0
end
"""


@pytest.mark.parametrize("z, w", [(1 + 2j, 0.5 - 1j), (-0.3 + 0.1j, 2 + 0.5j)])
def test_complex_gradients_are_wirtinger(z, w):
    module = rlang.loads(COMPLEX_SOURCE)
    # holomorphic f = z² w: ∂Re f = conj(f'), ∂Im f = i·conj(f')
    grads = rlang.gradient(module.f, (0j, z, w), loss="y.re")
    assert grads[0] == 1.0
    assert grads[1] == pytest.approx((2 * z * w).conjugate())
    assert grads[2] == pytest.approx((z * z).conjugate())
    grads = rlang.gradient(module.f, (0j, z, w), loss="y.im")
    assert grads[0] == 1j
    assert grads[1] == pytest.approx(1j * (2 * z * w).conjugate())
    assert grads[2] == pytest.approx(1j * (z * z).conjugate())


@pytest.mark.parametrize("loss, part", [("y.re", "re"), ("y.im", "im")])
def test_real_parameters_of_complex_expressions(loss, part):
    module = rlang.loads(COMPLEX_SOURCE)
    grads = agrees_with_differences(module, "g", (0j, 1.5, 3 + 4j), loss, out(0, None, part))
    assert type(grads[1]) is float


@pytest.mark.parametrize("name, loss, part", [
    ("through_real", "y.re", "re"), ("through_real", "y.im", "im"),
    ("field_times_im", "y.re", "re")])
def test_complex_gradient_through_a_field_view(name, loss, part):
    module = rlang.loads(COMPLEX_SOURCE)
    args = (0j, 1 + 2j, 3 + 4j) if name == "through_real" else (0j, 1 + 2j)
    agrees_with_differences(module, name, args, loss, out(0, None, part))


def test_fixed_point_gradients_are_floats():
    module = rlang.loads("""
function f(y: fixed, x: fixed)
    y += x * x * 0.5
    SWAP(x, y)
    NEG(y)
    x += 1.0
end
""")
    fx = rlang.Fixed.from_value
    grads = rlang.gradient(module.f, (fx(0.25), fx(1.5)), loss="x")
    assert grads == (1.0, 1.5) and all(type(g) is float for g in grads)
    assert rlang.gradient(module.f, (fx(0.25), fx(1.5)), loss="y") == (0.0, -1.0)


def test_fixed_point_agrees_with_the_same_program_in_f64():
    source = """
function step(x!, v!, dt, n)
    for s = 1:n
        x! += v! * dt
        v! -= x! * dt * x!
    end
end
"""
    module = rlang.loads(source)
    fx = rlang.Fixed.from_value
    fixed = rlang.gradient(module.step, (fx(0.75), fx(0.25), fx(0.125), 20), loss="v!")
    floats = rlang.gradient(module.step, (0.75, 0.25, 0.125, 20), loss="v!")
    assert fixed[3] is None and floats[3] is None
    np.testing.assert_allclose(fixed[:3], floats[:3], rtol=1e-9)


def test_2d_arrays():
    module = rlang.loads("""
function mm(c: f64[:, :], a: f64[:, :], b: f64[:, :])
    for i = 0:size(a, 0) - 1
        for j = 0:size(b, 1) - 1
            for k = 0:size(a, 1) - 1
                c[i, j] += a[i, k] * b[k, j]
            end
        end
    end
end
""")
    rng = np.random.default_rng(5)
    a, b = rng.normal(size=(2, 3)), rng.normal(size=(3, 2))
    grads = rlang.gradient(module.mm, (np.zeros((2, 2)), a, b), loss="c[1, 0]")
    expected_a = np.zeros((2, 3))
    expected_a[1] = b[:, 0]
    expected_b = np.zeros((3, 2))
    expected_b[:, 0] = a[1]
    np.testing.assert_allclose(grads[1], expected_a, rtol=1e-12)
    np.testing.assert_allclose(grads[2], expected_b, rtol=1e-12)


# ------------------------------------------------------------------ constants, expression arguments


@pytest.mark.parametrize("expr", ["C * x", "pi * x", "x * GM"])
@pytest.mark.parametrize("form", ["update", "argument"])
def test_named_constants_in_expressions(expr, form):
    body = f"y += {expr}" if form == "update" else f"g(y, {expr})"
    module = rlang.loads(f"""
const C = 2.0
const GM = 4.0 * pi * pi
function g(y, a)
    y += a * a
end
function f(y, x)
    {body}
end
""")
    constant = {"C * x": 2.0, "pi * x": math.pi, "x * GM": 4 * math.pi ** 2}[expr]
    grads = rlang.gradient(module.f, (0.0, 0.75), loss="y")
    expected = constant if form == "update" else 2 * constant * constant * 0.75
    assert grads == pytest.approx((1.0, expected))


def test_constant_array_elements_in_expressions():
    module = rlang.loads("""
const K = [1.0, 2.5]
function f(y, x)
    y += K[1] * x
end
""")
    assert rlang.gradient(module.f, (0.0, 0.75), loss="y") == (1.0, 2.5)


def test_expression_argument_reading_a_written_argument():
    source = """
function h(p, q)
    p += q * q
end
function f(a, b)
    h(a, a * 2.0 + b)
end
"""
    try:
        module = rlang.loads(source)
        grads = rlang.gradient(module.f, (0.3, 0.7), loss="a")
    except rlang.RlangError:
        return                              # refusing the program is fine too
    # a_final = a + (2a + b)²
    assert grads == pytest.approx((1 + 4 * 1.3, 2 * 1.3))


# ------------------------------------------------------------------ the command line


CLI_SOURCE = """
function f(y: complex, z: complex, x: f64[:], n, s)
    for i = 0:n - 1
        y += z * x[i] * s
    end
end
"""


@pytest.fixture
def cli_file(tmp_path, write_rev):
    return write_rev(tmp_path, "grad.rev", CLI_SOURCE)


CLI_ARGS = ["0.0+0.0im", "1.0+2.0im", "[1.0, 2.0]", "2", "0.5"]


def test_cli_grad_text(cli, cli_file):
    code, stdout, stderr = cli("grad", cli_file, "f", *CLI_ARGS, "--loss", "y.re")
    assert code == 0, stderr
    # Re y = Re y + s Re(z) Σx: int n is left out, complex as [∂/∂re, ∂/∂im]
    assert stdout == "y = [1.0, 0.0]\nz = [1.5, 0.0]\nx = [0.5, 0.5]\ns = 3.0\n"


def test_cli_grad_json(cli, cli_file):
    code, stdout, stderr = cli("grad", cli_file, "f", *CLI_ARGS, "--loss", "y.im", "--json")
    assert code == 0, stderr
    assert json.loads(stdout.strip().splitlines()[-1]) == \
        {"y": [0.0, 1.0], "z": [0.0, 1.5], "x": [1.0, 1.0], "s": 6.0}


def test_cli_grad_of_an_element(cli, cli_file):
    code, stdout, _ = cli("grad", cli_file, "f", *CLI_ARGS, "--loss", "x[1]", "--json")
    assert code == 0
    assert json.loads(stdout.strip().splitlines()[-1]) == \
        {"y": [0.0, 0.0], "z": [0.0, 0.0], "x": [0.0, 1.0], "s": 0.0}


def test_cli_grad_of_an_example(cli):
    code, stdout, stderr = cli("grad", str(REPO / "examples/multiplier.rev"), "multiplier",
                               "2.0", "3.0", "5.0", "--loss", "y!")
    assert (code, stdout, stderr) == (0, "y! = 1.0\na = 5.0\nb = 3.0\n", "")


def test_cli_grad_complex_array_json(cli, tmp_path, write_rev):
    path = write_rev(tmp_path, "c.rev", """
function f(zs: complex[:], w: complex)
    zs[0] += zs[1] * w
end
""")
    code, stdout, stderr = cli("grad", path, "f", "[1.0+0.0im, 2.0+1.0im]", "0.0+1.0im",
                               "--loss", "zs[0].re", "--json")
    assert code == 0, stderr
    # Re zs0' = Re zs0 + Re(zs1 w): ∂/∂zs1 = conj(w) = -i, ∂/∂w = conj(zs1)
    assert json.loads(stdout.strip().splitlines()[-1]) == \
        {"zs": [[1.0, 0.0], [0.0, -1.0]], "w": [2.0, -1.0]}


@pytest.mark.parametrize("loss, message", [
    ("q", "not a parameter"), ("n", "must be a float"), ("x", "must be a float"),
    ("x[5]", "out of bounds"), ("s * 2", "not a view"), ("y +", "expected"),
])
def test_cli_grad_bad_losses(cli, cli_file, loss, message):
    code, stdout, stderr = cli("grad", cli_file, "f", *CLI_ARGS, "--loss", loss)
    assert code == 1 and stdout == ""
    assert message in stderr and "Traceback" not in stderr


def test_cli_grad_needs_a_loss(cli, cli_file):
    code, _, stderr = cli("grad", cli_file, "f", *CLI_ARGS)
    assert code == 2 and "--loss" in stderr


def test_cli_grad_wrong_argument_count(cli, cli_file):
    code, _, stderr = cli("grad", cli_file, "f", "1.0", "--loss", "s")
    assert code == 1 and "takes 5 argument" in stderr


def test_cli_grad_prints_nothing_but_the_result(run_cli, cli_file):
    code, stdout, stderr = run_cli("grad", cli_file, "f", *CLI_ARGS, "--loss", "y.im")
    assert code == 0
    assert stdout == "y = [0.0, 1.0]\nz = [0.0, 1.5]\nx = [1.0, 1.0]\ns = 6.0\n"
    assert stderr == ""
